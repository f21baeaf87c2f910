// Copyright 2026 The kbisect Authors.
//
// What a command writes when a job ends, besides the report on stdout: `--json FILE` (the
// result), `--html FILE` (the job page, report/html/job_page.h), `--markdown FILE` (the
// summary for an issue, report/markdown_summary.h) and `--notify-url URL` (a POST of the JSON
// result, cli/notify.h). Shared by run, submit --wait, watch and status JOB.
#ifndef KBISECT_CLI_JOB_OUTPUTS_H_
#define KBISECT_CLI_JOB_OUTPUTS_H_

#include <string>

#include "absl/status/status.h"
#include "kbisect/v1/kbisect.pb.h"

// CLI11 is included only where flags are registered: it costs seconds per translation unit.
namespace CLI {
class App;
}  // namespace CLI

namespace kbisect {

struct JobOutputs {
  std::string json_file;
  std::string html_file;
  std::string markdown_file;
  std::string notify_url;  // Only where the job ends under the command (not status).
};

// Registers --html and --markdown (and --notify-url when `notify`) on `app`; --json stays
// with each command, whose help for it differs.
void AddJobOutputFlags(CLI::App* app, JobOutputs* outputs, bool notify);

// Writes every output asked for. The first failure is returned (named by its flag), after the
// others were still tried.
absl::Status WriteJobOutputs(const v1::JobStatus& job, const JobOutputs& outputs);

}  // namespace kbisect

#endif  // KBISECT_CLI_JOB_OUTPUTS_H_
