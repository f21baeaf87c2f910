// Copyright 2026 The kbisect Authors.
//
// The HTML triage page of `kbisect triage --html FILE`: one self-contained file (inline SVG, CSS
// and script, no network fetches), like the job page (job_page.h) and with its style sheet and
// template helper. It shows the triage's result, nothing recomputed:
//
//   - the headline: the cause and its confidence, kernel, platform and metric;
//   - the move: its shape, before -> after, the last-good and first-bad nightlies, p-values;
//   - the series around the date: one chart per metric on a shared nightly axis, the primary
//     (Helion speedup) first, then the baselines' speedups and the independent timer (latency);
//     one point per nightly (`class="point role-..."`, `data-nightly` = its index), every
//     change point as a dashed line (`class="change-point"`), the one explained marked
//     (`class="change-point focus"`, with data-last-good / data-first-bad dates), its levels,
//     the last-good and first-bad points, spikes ringed;
//   - the evidence rows (every metric across the split, runner and method attributes, the other
//     kernels and platforms), the reasons for the cause and the true value;
//   - the ranked commit window (or why there is none), the bisect command, notes, the other
//     kernels of the platform, and every nightly in a table.
#ifndef KBISECT_REPORT_HTML_TRIAGE_PAGE_H_
#define KBISECT_REPORT_HTML_TRIAGE_PAGE_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "triage/report.h"
#include "triage/triage.h"

namespace kbisect::html {

// The whole page, "<!DOCTYPE html>..." to "</html>"; `now` is the footer's time.
absl::StatusOr<std::string> RenderTriagePage(const triage::TriageResult& result,
                                             const triage::ReportExtras& extras, absl::Time now);

// How many points the series charts of the headline kernel draw: one per nightly of the primary
// metric plus one per value of each companion series (what a test counts in the DOM).
int TriagePointCount(const triage::TriageResult& result);

}  // namespace kbisect::html

#endif  // KBISECT_REPORT_HTML_TRIAGE_PAGE_H_
