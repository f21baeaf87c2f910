// Copyright 2026 The kbisect Authors.
#include "report/html/page_format.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"
#include "common/rpc/enum_label.h"
#include "report/words.h"

namespace kbisect::html {

std::string Value(double value, absl::string_view unit) {
  return absl::StrCat(absl::StrFormat("%.4g", value), unit);
}

std::string Seconds(double seconds) {
  if (seconds < 0) seconds = 0;
  if (seconds < 10) return absl::StrFormat("%.2gs", seconds < 0.01 ? 0.0 : seconds);
  if (seconds < 60) return absl::StrFormat("%.0fs", seconds);
  const int64_t s = static_cast<int64_t>(std::llround(seconds));
  if (s < 3600) return absl::StrFormat("%dm%02ds", s / 60, s % 60);
  return absl::StrFormat("%dh%02dm", s / 3600, (s % 3600) / 60);
}

std::string VerdictClass(const v1::Probe& probe) {
  switch (probe.kind()) {
    case v1::PROBE_KIND_BASELINE_GOOD:
      return "baseline-good";
    case v1::PROBE_KIND_BASELINE_BAD:
      return "baseline-bad";
    case v1::PROBE_KIND_CONFIRM:
      return "confirm";
    default:
      break;
  }
  switch (probe.verdict()) {
    case v1::VERDICT_GOOD:
      return "good";
    case v1::VERDICT_BAD:
      return "bad";
    case v1::VERDICT_SKIP:
      return "skip";
    case v1::VERDICT_AMBIGUOUS:
      return "ambiguous";
    default:
      return "pending";
  }
}

bool IsQuarantined(const v1::JobStatus& job, absl::string_view worker) {
  for (const v1::JobWorker& w : job.workers()) {
    if (w.worker() == worker) return w.quarantined();
  }
  return false;
}

std::string GpuMarkClass(GpuRunMark mark) {
  switch (mark) {
    case GpuRunMark::kThrottled:
      return "gpu-throttled";
    case GpuRunMark::kCapped:
      return "gpu-capped";
    case GpuRunMark::kShared:
      return "gpu-shared";
    case GpuRunMark::kClean:
      break;
  }
  return "";
}

std::string Headline(const v1::JobStatus& job) {
  const bool ended =
      job.status() == v1::OUTCOME_CULPRIT_FOUND || job.status() == v1::OUTCOME_NO_REGRESSION;
  if (job.spec().has_try_change() && ended) {
    return absl::StrCat("Try ", job.spec().try_change().description(), ": ", TryResultWords(job));
  }
  switch (job.status()) {
    case v1::OUTCOME_CULPRIT_FOUND:
      return absl::StrCat(job.spec().find_fix() ? "Fixed by: " : "Culprit found: ",
                          job.culprit().short_sha(), " ", job.culprit().subject());
    case v1::OUTCOME_CANDIDATES_FOUND:
      return absl::StrCat(job.candidates_size(),
                          " candidate commits (untestable commits border "
                          "the step)");
    case v1::OUTCOME_NO_REGRESSION:
      return job.spec().find_fix() ? "No fix between GOOD and BAD"
                                   : "No regression between GOOD and BAD";
    case v1::OUTCOME_INCONCLUSIVE:
      return "Inconclusive";
    case v1::OUTCOME_ERROR:
      return absl::StrCat("Error: ", job.error());
    case v1::OUTCOME_CANCELLED:
      return "Cancelled";
    default:
      return absl::StrCat("Running (", EnumLabel(job.state()), ")");
  }
}

std::string KnownSubject(const v1::JobStatus& job, int index) {
  if (job.has_culprit() && job.culprit().index() == index) return job.culprit().subject();
  if (job.has_last_good() && job.last_good().index() == index) return job.last_good().subject();
  for (const v1::Culprit& c : job.culprits()) {
    if (c.commit().index() == index) return c.commit().subject();
  }
  return "";
}

}  // namespace kbisect::html
