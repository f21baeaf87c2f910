// Copyright 2026 The kbisect Authors.
#include "report/markdown_summary.h"

#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/string_view.h"
#include "common/metric/percent.h"
#include "common/rpc/enum_label.h"
#include "common/text/count.h"
#include "report/event_words.h"
#include "report/html/page_format.h"
#include "report/reproduce.h"
#include "report/submodule_bump.h"
#include "report/suite_groups.h"

namespace kbisect {
namespace {

std::string Cell(absl::string_view text) {
  return absl::StrReplaceAll(text, {{"|", "\\|"}, {"\n", " "}});
}

std::string Code(absl::string_view text) { return absl::StrCat("`", Cell(text), "`"); }

// "`softmax_fwd` +18.0% (1.2ms -> 1.416ms), `layernorm` +12.1% (...)".
std::string MetricList(const std::vector<const v1::SuiteMetricResult*>& rows) {
  std::vector<std::string> items;
  for (const v1::SuiteMetricResult* row : rows) {
    items.push_back(absl::StrCat(Code(row->name()), " ", Cell(SuiteMetricChange(*row))));
  }
  return absl::StrJoin(items, ", ");
}

// The suite grouped by culprit (report/suite_groups.h).
std::string SuiteSection(const v1::JobStatus& job) {
  const SuiteGroups groups = GroupSuite(job);
  std::string out = absl::StrCat("\n**Suite (", Count(groups.metrics, "metric"), "):** ",
                                 Cell(SuiteHeadline(groups)), "\n\n");
  for (const SuiteCulpritGroup& group : groups.culprits) {
    absl::StrAppend(&out, "- ", Count(static_cast<int>(group.metrics.size()), "metric"),
                    " regressed at ", Code(group.culprit.short_sha()), " ",
                    Cell(group.culprit.subject()), ": ", MetricList(group.metrics), "\n");
  }
  for (const v1::SuiteMetricResult* row : groups.unresolved) {
    absl::StrAppend(&out, "- no culprit for ", Code(row->name()), " ",
                    Cell(SuiteMetricChange(*row)), ": ", Cell(row->reason()), "\n");
  }
  if (!groups.searching.empty()) {
    absl::StrAppend(&out, "- still searched: ", MetricList(groups.searching), "\n");
  }
  if (!groups.improved.empty()) {
    absl::StrAppend(&out, "- improved: ", MetricList(groups.improved), "\n");
  }
  if (!groups.unchanged.empty()) {
    std::vector<std::string> names;
    for (const v1::SuiteMetricResult* row : groups.unchanged) names.push_back(Code(row->name()));
    absl::StrAppend(&out, "- unchanged: ", absl::StrJoin(names, ", "), "\n");
  }
  return out;
}

}  // namespace

std::string MarkdownSummary(const v1::JobStatus& job) {
  const std::string& unit = job.metric_unit();
  std::string out;
  // A try's answer is its headline (html::Headline, TryResultWords): there is no culprit.
  if (job.has_culprit() && !job.spec().has_try_change()) {
    const v1::CommitRef& c = job.culprit();
    const double pct = job.culprit_regression_pct();
    absl::StrAppend(&out, "### kbisect: ", job.spec().find_fix() ? "fixed by " : "culprit ",
                    Code(c.short_sha()), " ", Cell(c.subject()),
                    "\n\n**Author:** ", Cell(c.author()), " · **Date:** ", Cell(c.date()),
                    " · **Commit:** ", Code(c.sha()), "\n\n**Change:** ", Cell(job.metric_name()),
                    " ", html::Value(job.before(), unit), " → ", html::Value(job.after(), unit),
                    absl::StrCat(" (", FormatPercent(std::fabs(pct)), pct < 0 ? " better)" : " worse)"));
    if (job.has_confirmation()) {
      const v1::Confirmation& k = job.confirmation();
      absl::StrAppend(&out, ", ", k.confirmed() ? "confirmed" : "**not confirmed**",
                      absl::StrFormat(": ratio %.4g (95%% CI %.4g to %.4g)", k.ratio(), k.ci_low(),
                                      k.ci_high()));
    }
    absl::StrAppend(&out, "\n");
    if (job.root_cause_hints_size() > 0) {
      const v1::RootCauseHint& h = job.root_cause_hints(0);
      absl::StrAppend(&out, "\n**Likely cause:** ", Cell(h.pattern()), " in ", Code(h.file()), ": ",
                      Cell(h.likely_cause()), " (", Code(h.line()), ")\n");
    }
    for (const v1::SubmoduleBump& bump : job.submodule_bumps()) {
      absl::StrAppend(&out, "\n**Dependency bump:** ", Cell(DescribeSubmoduleBump(bump)), "\n");
      for (const std::string& line : SubmoduleBumpCommitLines(bump)) {
        absl::StrAppend(&out, "- ", Cell(line), "\n");
      }
    }
    if (job.has_merged_culprit()) {
      absl::StrAppend(&out, "\n**Inside the merged branch:** ",
                      Code(job.merged_culprit().short_sha()), " ",
                      Cell(job.merged_culprit().subject()), "\n");
    }
    for (const v1::DependencyCulprit& found : job.dependency_culprits()) {
      absl::StrAppend(&out, "\n**Inside the dependency ", Code(found.path()), ":** ",
                      Code(found.commit().short_sha()), " ", Cell(found.commit().subject()), " (",
                      Cell(found.repository()), ", ", Code(found.old_sha().substr(0, 7)), "..",
                      Code(found.new_sha().substr(0, 7)), ")\n");
    }
    if (job.has_revert_check()) {
      absl::StrAppend(&out, "\n**Revert check:** ", Cell(RevertCheckWords(job.revert_check())),
                      "\n");
    }
    if (job.culprits_size() > 1) {
      absl::StrAppend(&out, "\n**Every step:** ");
      for (int i = 0; i < job.culprits_size(); ++i) {
        const v1::Culprit& s = job.culprits(i);
        absl::StrAppend(
            &out, i ? "; " : "", Code(s.commit().short_sha()),
            absl::StrFormat(" %s (%.0f%% of the change)", FormatPercent(s.regression_pct()),
                            100 * s.share_of_total()));
      }
      absl::StrAppend(&out, "\n");
    }
  } else {
    absl::StrAppend(&out, "### kbisect: ", Cell(html::Headline(job)), "\n");
    if (job.candidates_size() > 0) {
      absl::StrAppend(&out, "\n**Candidates:**");
      for (const std::string& sha : job.candidates())
        absl::StrAppend(&out, " ", Code(sha.substr(0, 7)));
      absl::StrAppend(&out, "\n");
    }
  }
  if (job.suite_size() > 0) absl::StrAppend(&out, SuiteSection(job));
  absl::StrAppend(&out, "\nRange ", Code(ShortSha(job.good_sha())), "..",
                  Code(ShortSha(job.bad_sha())), " (", Count(job.commit_count(), "commit"),
                  "): ", Count(job.rounds(), "round"), ", ", Count(job.bench_runs(), "bench run"),
                  ", ", html::Seconds(job.wall_seconds()), "\n\n");
  absl::StrAppend(&out,
                  "| # | commit | worker | round | median | runs | verdict |\n"
                  "|--:|---|---|--:|--:|--:|---|\n");
  for (const v1::Probe& p : job.probes()) {
    if (p.kind() != v1::PROBE_KIND_BISECT || p.state() != v1::PROBE_STATE_FINISHED) continue;
    absl::StrAppend(&out, "| ", p.index(), " | ", Code(ShortSha(p.sha())), " | ", Cell(p.worker()),
                    " | ", p.round(), " | ",
                    p.samples_size() > 0 ? html::Value(p.median(), unit) : "", " | ",
                    p.samples_size(), " | ", ProbeVerdictWord(p),
                    p.provisional() ? " (provisional)" : "", p.cached() ? " (cached)" : "", " |\n");
  }
  absl::StrAppend(&out, "\n<details><summary>Reproduce</summary>\n\n```sh\n", ReproduceCommand(job),
                  "\n```\n</details>\n");
  return out;
}

}  // namespace kbisect
