// Copyright 2026 The kbisect Authors.
//
// `kbisect nightly`'s logic: a JSON-lines history of nightly benchmark results, each with its
// measurement manifest, and the decision taken on it after tonight's result was added. Pure
// except for the file helpers (ReadHistoryFile, WriteHistoryFile).
//
// History file: one JSON object per line, oldest first.
//   {"kind":"nightly","date":"2026-11-09","sha":"1a2b3c4","full_sha":"1a2b...","benchmark":"attn",
//    "hardware_class":"h100","metric":"latency","unit":"ms","value":1.23,"run_id":42,
//    "manifest":{...v1.MeasurementManifest as proto3 JSON...}}
//   {"kind":"bisect","benchmark":"attn","hardware_class":"h100","last_good":"<sha>",
//    "last_good_date":"...","first_bad":"<sha>","first_bad_date":"...","request_id":"...",
//    "job_id":"...","date":"2026-11-11"}
// A missing "kind" means "nightly"; unknown fields are ignored, so older lines stay readable.
//
//   ASSIGN_OR_RETURN(History h, ReadHistoryFile(path));
//   AddNightly(&h, tonight);
//   ASSIGN_OR_RETURN(NightlyDecision d, DecideNightly(h, "attn", "h100", request, repo.get()));
//   if (d.action == NightlyAction::kSubmitBisect) ... submit with d.request_id ...
#ifndef KBISECT_TRIAGE_NIGHTLY_H_
#define KBISECT_TRIAGE_NIGHTLY_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/git/git_repo.h"
#include "common/manifest/manifest.h"
#include "kbisect/v1/kbisect.pb.h"
#include "triage/commit_window.h"
#include "triage/triage.h"

namespace kbisect {
namespace triage {

// One night's result of one benchmark on one hardware class.
struct NightlyRecord {
  std::string date;  // YYYY-MM-DD.
  std::string sha;
  std::string full_sha;
  std::string benchmark;
  std::string hardware_class;  // "" when unknown; one series per (benchmark, hardware_class).
  std::string metric;          // The metric's name ("latency").
  std::string unit;            // Its unit ("ms"), "" when none.
  double value = 0;
  int64_t run_id = 0;
  std::optional<v1::MeasurementManifest> manifest;
};

// A bisect the nightly flow submitted, kept so that later nights do not submit it again.
struct BisectRecord {
  std::string benchmark;
  std::string hardware_class;
  std::string last_good;  // Full shas and dates of the window's ends.
  std::string last_good_date;
  std::string first_bad;
  std::string first_bad_date;
  std::string request_id;
  std::string job_id;
  std::string date;  // The night that submitted it.
};

struct History {
  std::vector<NightlyRecord> nightlies;
  std::vector<BisectRecord> bisects;
};

// Parses a history (format above). Blank lines are skipped. Errors: InvalidArgument naming the
// line and the field ("line 7: \"value\": expected a number").
absl::StatusOr<History> ParseHistory(const std::string& text);
// Returns the history as JSON lines (nightlies in order, then the bisects), one per line.
std::string FormatHistory(const History& history);
// Reads `path`; a file that does not exist is an empty history.
absl::StatusOr<History> ReadHistoryFile(const std::string& path);
// Writes `path` atomically (a temporary file renamed over it).
absl::Status WriteHistoryFile(const std::string& path, const History& history);

// Adds `record` in date order. A record of the same benchmark, hardware class and date (a rerun
// of the night) replaces the earlier one; returns true in that case.
bool AddNightly(History* history, NightlyRecord record);

// Returns the history of (benchmark, hardware_class) as a triage Dataset: one series, kernel =
// benchmark, platform_short = hardware_class (or "default"), the value as metric `metric`, and
// the manifest as attributes: "harness" (the harness digest) and "bench_args" (method), "gpu",
// "driver_version", "cuda_version", "gpu_clock" (identity).
Dataset HistoryToDataset(const History& history, const std::string& benchmark,
                         const std::string& hardware_class);

// The idempotency key of the bisect of one window: "nightly-<benchmark>-<class>-<good12>-<bad12>"
// (lower-case, characters outside [a-z0-9._-] replaced by '-'). The same night rerun, or a later
// night that finds the same step, yields the same id, and the coordinator then returns the job
// submitted first.
std::string NightlyRequestId(const std::string& benchmark, const std::string& hardware_class,
                             const std::string& last_good, const std::string& first_bad);

// What the nightly does.
enum class NightlyAction {
  kNothing,           // No move (or an improvement, or too little history).
  kSubmitBisect,      // A real regression step: bisect last-good..first-bad.
  kAlreadySubmitted,  // The same step was submitted on an earlier night (or this one).
  kMethodChange,      // The step is the measurement's: nothing to bisect.
  kHardware,          // The machine changed: nothing to bisect.
  kNoise,             // A spike or a reverted excursion.
  kDrift,             // A real but gradual regression: no single commit to bisect.
  // Only a tracked package moved across the step (the project's code did not): the regression
  // came with a dependency's build; bisect that package's artifacts, not this project.
  kDependencyChange,
};

// Returns "nothing", "submit_bisect", "already_submitted", "method_change", "hardware", "noise",
// "drift" or "dependency_change".
const char* NightlyActionName(NightlyAction action);

// The exit code of `kbisect nightly` for `action`: 0 nothing, 3 submit/already submitted, 4
// method change, 5 hardware, 6 noise, 7 drift, 8 dependency change (1 error and 2 usage are the
// command's own).
int NightlyExitCode(NightlyAction action);

struct NightlyDecision {
  NightlyAction action = NightlyAction::kNothing;
  // The triage of the series (cause, confidence, evidence, reasons), with the manifest evidence
  // folded in.
  KernelTriage triage;
  // The manifest difference between the last good and the first bad nightly.
  std::vector<ManifestChange> manifest_changes;
  // The window's commits when a repository was given; window_error otherwise explains.
  std::optional<CommitWindow> window;
  std::string window_error;
  // For kSubmitBisect / kAlreadySubmitted: the request id, and the earlier submission if any.
  std::string request_id;
  std::optional<BisectRecord> existing;
  // One sentence saying what was decided and why.
  std::string summary;
};

// Decides what tonight's history calls for: triages the (benchmark, hardware_class) series
// (`request` gives the metric roles and thresholds; its platform and kernel are set here), folds
// in the manifest difference across the step (harness files, flags or environment changed and no
// hardware change: method change, naming them; GPU, driver or clocks changed: hardware issue) and,
// when `repo` is not null, the commit window (only harness commits in it: method change). A real
// regression step gets a request id; if `history` already has a bisect of an overlapping window
// of the same series, the action is kAlreadySubmitted. Errors: NotFound when the history has no
// nightly of the series; those of Triage.
absl::StatusOr<NightlyDecision> DecideNightly(const History& history, const std::string& benchmark,
                                              const std::string& hardware_class,
                                              TriageRequest request, const GitRepo* repo,
                                              const std::vector<std::string>& harness_globs);

// When both the project's code and a tracked package moved across a real regression step, the
// project's last good commit is measured again with the first bad night's packages (issue 47):
// if that is already slow, the packages moved the metric; if it is as fast as the last good
// night, the project's commits did.
enum class StepOwner {
  kProject,   // The last good commit with the new packages measures like the last good night.
  kPackages,  // It measures like the first bad night: the packages' step.
  kBoth,      // Between the two: each moved part of it.
};

// Returns "project", "packages" or "both".
const char* StepOwnerName(StepOwner owner);

// Where `measured` (the last good commit with the first bad night's packages) falls on the step
// from `last_good` to `first_bad` (the two nights' values, any direction).
struct StepAttribution {
  // The share of the step the packages account for: 0 at `last_good`, 1 at `first_bad`.
  double share = 0;
  // kProject under a quarter of the step, kPackages over three quarters, kBoth between.
  StepOwner owner = StepOwner::kBoth;
};
// Requires first_bad != last_good. Pure.
StepAttribution AttributeStep(double last_good, double first_bad, double measured);

// Applies what the measurement found to a kSubmitBisect decision whose step moved the tracked
// packages named in `packages` (ManifestChange::Describe lines) as well as the code: kPackages
// makes it a kDependencyChange (not bisected in the project); kProject and kBoth keep the
// bisect and say why in the summary. Decisions of other actions are left as they are.
void ApplyStepAttribution(const StepAttribution& attribution, double measured,
                          const std::vector<std::string>& packages, NightlyDecision* decision);

// The decision as text: the action, cause, confidence, window, manifest changes, reasons.
std::string FormatNightlyDecision(const NightlyDecision& decision);

}  // namespace triage
}  // namespace kbisect

#endif  // KBISECT_TRIAGE_NIGHTLY_H_
