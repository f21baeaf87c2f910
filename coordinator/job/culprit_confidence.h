// Copyright 2026 The kbisect Authors.
//
// CulpritConfidence: `--confidence P` with a metric. Once the search has named one culprit, the
// end check measures a boundary commit again until the culprit posterior puts P on the culprit
// (or both boundaries ran --max-runs); a commit whose new samples put it on the other side has
// its verdict taken back; a probe the classifier leaves AMBIGUOUS at --max-runs is put on the
// posterior's side. The rules are confidence_stop.h's; this part reads the job's frame,
// calibration, search and probe table through the pointers it is given, and returns what to do:
// the job emits the events, extends the probes and records the verdicts. A flaky pass/fail test
// has its own rules (flaky_verdicts.h). Thread-compatible.
#ifndef KBISECT_COORDINATOR_JOB_CULPRIT_CONFIDENCE_H_
#define KBISECT_COORDINATOR_JOB_CULPRIT_CONFIDENCE_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/search/culprit_posterior.h"
#include "coordinator/job/calibration.h"
#include "coordinator/job/confirmation_stage.h"
#include "coordinator/job/job_frame.h"
#include "coordinator/job/probe_book.h"
#include "coordinator/job/verdict_ledger.h"
#include "kbisect/v1/kbisect.pb.h"

namespace kbisect {

class CulpritConfidence {
 public:
  // All must outlive the part; they may be constructed after it.
  CulpritConfidence(const JobFrame* frame, const std::vector<v1::CommitRef>* commits,
                    const Calibration* calibration, const VerdictLedger* ledger,
                    const ProbeBook* book, const ConfirmationStage* confirmation)
      : frame_(frame),
        commits_(commits),
        calibration_(calibration),
        ledger_(ledger),
        book_(book),
        confirmation_(confirmation) {}

  // The end check of a job whose search named one culprit.
  struct EndCheck {
    // The job waits: a boundary commit runs again (one still running, or `extend_row`).
    bool wait = false;
    // The row of the boundary probe to give `more_runs` more runs now, -1 when none, and the
    // warning event that says so (a confidence_remeasure).
    int extend_row = -1;
    int more_runs = 0;
    v1::JobWarning event;
    // Set (a short_of_confidence) when the culprit stands short of P with both boundaries at
    // --max-runs: the warning the result keeps.
    std::optional<v1::JobWarning> warning;
  };
  // Nothing to do (wait false, no warning) for a pass/fail test, without --confidence, before the
  // search named one culprit, or when the posterior cannot be computed.
  EndCheck CheckCulprit() const;

  // A probe the end check measured again (it has a GOOD or BAD verdict): the side its samples
  // put it on now and the warning saying so (a confidence_retracted), when that is not its
  // verdict.
  struct Reversal {
    v1::Verdict side = v1::VERDICT_UNSPECIFIED;
    v1::JobWarning warning;
  };
  std::optional<Reversal> Reverse(int probe_position) const;

  // The classifier's `verdict` of the probe at `probe_position`, or with --confidence, for one
  // it left AMBIGUOUS, the side the posterior puts the commit on (its samples still count
  // there) with the note appended to the probe's message.
  struct Side {
    v1::Verdict verdict = v1::VERDICT_UNSPECIFIED;
    std::string note;  // Empty when the verdict stands.
  };
  Side Resolve(int probe_position, v1::Verdict verdict) const;

 private:
  // The posterior over the first bad commit from every measurement that counts.
  absl::StatusOr<CulpritPosterior> Posterior() const;

  const JobFrame* frame_;
  const std::vector<v1::CommitRef>* commits_;
  const Calibration* calibration_;
  const VerdictLedger* ledger_;
  const ProbeBook* book_;
  const ConfirmationStage* confirmation_;  // Its pairs count in the posterior.
};

}  // namespace kbisect

#endif  // KBISECT_COORDINATOR_JOB_CULPRIT_CONFIDENCE_H_
