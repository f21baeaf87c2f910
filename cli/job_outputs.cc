// Copyright 2026 The kbisect Authors.
#include "cli/job_outputs.h"

#include <fstream>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "cli/notify.h"
#include "cli/report/status_json.h"
#include "report/html/job_page.h"
#include "report/markdown_summary.h"

namespace kbisect {
namespace {

absl::Status WriteFile(const std::string& path, const std::string& text, const char* flag) {
  std::ofstream out(path);
  out << text;
  out.close();
  if (!out) return absl::UnavailableError(absl::StrCat("cannot write ", flag, " ", path));
  return absl::OkStatus();
}

}  // namespace

void AddJobOutputFlags(CLI::App* app, JobOutputs* outputs, bool notify) {
  app->add_option("--html", outputs->html_file,
                  "Write the job page to FILE: one self-contained HTML file (every sample "
                  "plotted, the worker timeline, the report)");
  app->add_option("--markdown", outputs->markdown_file,
                  "Write a short Markdown summary to FILE, for an issue or a PR comment");
  if (notify) {
    app->add_option("--notify-url", outputs->notify_url,
                    "When the job ends, POST its JSON result to URL (retried; no credentials "
                    "are sent)");
  }
}

absl::Status WriteJobOutputs(const v1::JobStatus& job, const JobOutputs& outputs) {
  absl::Status first;
  auto keep = [&first](absl::Status s) {
    if (first.ok()) first = std::move(s);
  };
  std::string json;
  if (!outputs.json_file.empty() || !outputs.notify_url.empty()) json = StatusToJson(job) + "\n";
  if (!outputs.json_file.empty()) keep(WriteFile(outputs.json_file, json, "--json"));
  if (!outputs.html_file.empty()) {
    html::PageOptions options;
    options.now = absl::Now();
    absl::StatusOr<std::string> page = html::RenderJobPage(job, options);
    keep(page.ok() ? WriteFile(outputs.html_file, *page, "--html") : page.status());
  }
  if (!outputs.markdown_file.empty()) {
    keep(WriteFile(outputs.markdown_file, MarkdownSummary(job), "--markdown"));
  }
  if (!outputs.notify_url.empty()) keep(PostJobResult(outputs.notify_url, json));
  return first;
}

}  // namespace kbisect
