// Copyright 2026 The kbisect Authors.
//
// The outputs of `kbisect triage`: a human-readable report and the JSON document of --json
// (schema "kbisect.triage.v1", described field by field in docs/triage.md). Pure formatting.
#ifndef KBISECT_TRIAGE_REPORT_H_
#define KBISECT_TRIAGE_REPORT_H_

#include <optional>
#include <string>

#include "nlohmann/json.hpp"
#include "triage/commit_window.h"
#include "triage/triage.h"

namespace kbisect {
namespace triage {

// What the command learned beyond the analysis of the data, for the headline kernel.
struct ReportExtras {
  // The ranked commit window, when a repository was given and the move is a step or drift.
  std::optional<CommitWindow> window;
  // Why there is no window although one was asked for (e.g. the commit is not in the clone).
  std::string window_error;
  // The exact `kbisect run ...` command that bisects the window, when one applies.
  std::string bisect_command;
  // The most commits the text report lists (the JSON lists all).
  int max_commits_shown = 15;
};

// Returns the text report: the cause and confidence, the move, the evidence, the cross-checks,
// the true value, the commit window and what to do next; then one line per other kernel.
std::string FormatReport(const TriageResult& result, const ReportExtras& extras);

// Returns the --json document. Top level: schema, source, format, platform, kernel, metric,
// cause, confidence, shape, move ("regression", "improvement" or "none"), last_good and first_bad
// ({sha, full_sha, date, run_id} or null), change, evidence, reasons, true_value, change_points,
// spikes, window, window_error, bisect_command, notes and kernels (a summary per kernel).
nlohmann::json ToJson(const TriageResult& result, const ReportExtras& extras);

}  // namespace triage
}  // namespace kbisect

#endif  // KBISECT_TRIAGE_REPORT_H_
