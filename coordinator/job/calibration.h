// Copyright 2026 The kbisect Authors.
//
// Calibration is a job's knowledge of its workers' hardware: each worker's GOOD calibration, the
// reference GOOD and the BAD baseline (the roles), which workers share one pool of samples,
// which have a significant offset (and are judged against their own GOOD), and which are odd
// enough to be quarantined. Queries are pure over the probe table; the checks (outliers, A/A
// controls) return quarantine decisions as facts, and BisectJob applies them. It also writes the
// worker section of the report.
//
// Frames: the reference worker's GOOD and BAD define the job's frame. A BAD measured on a worker
// with an offset is brought into it by the ratio of the two GOOD measurements; a worker with an
// offset is judged against its own GOOD and the reference BAD scaled by its GOOD/reference
// ratio (the multiplicative offset of an "identical" GPU).
#ifndef KBISECT_COORDINATOR_JOB_CALIBRATION_H_
#define KBISECT_COORDINATOR_JOB_CALIBRATION_H_

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "coordinator/job/job_frame.h"
#include "coordinator/job/probe_book.h"
#include "coordinator/job/probe_classifier.h"
#include "kbisect/v1/kbisect.pb.h"

namespace kbisect {

// A decision to quarantine a worker, with the facts the report words it from.
struct QuarantineDecision {
  std::string worker;
  // Why (v1::DriftKind, the wire's enum): an outlier, a control that moved, a calibration that
  // failed, an identity that changed.
  v1::DriftKind kind = v1::DRIFT_KIND_BASELINE_OUTLIER;
  // Relative offset: (its GOOD - the centre) / centre, or the control's move / its calibration.
  double offset_fraction = 0;
  double median = 0;               // kBaselineOutlier: its GOOD median.
  double center = 0;               // kBaselineOutlier: the pool's centre.
  double regression_fraction = 0;  // kBaselineOutlier: the step / the reference GOOD.
  std::string failure;             // kCalibrationFailed: the benchmark's error.
};

class Calibration {
 public:
  // A worker's part in the job.
  struct Worker {
    int calibration = -1;  // Probe row of its GOOD calibration, -1 before it has one.
    bool quarantined = false;
    int classified = 0;    // Probes classified since its calibration or last A/A control.
    bool gone = false;     // Left (or lost its lease); cleared when it takes work again.
    int checked_out = -1;  // Commit index of the last task handed to it (its checkout), or -1.
    // Before it has calibrated, one of its probes failed or could not be decided against the
    // pool: it calibrates next, and that probe waits for the calibration (a broken or odd GPU
    // is found before its failures count as untestable commits or its samples take more runs).
    bool must_calibrate = false;
  };

  // `frame` (the state and baselines) and `probes` (the job's probe table, ProbeBook's) must
  // outlive this. `pass_fail`: verdicts come from exit codes and nothing is calibrated.
  Calibration(const JobFrame* frame, const ProbeRows* probes, bool pass_fail);

  // True for a pass/fail test (--exit-code): the job's one record of its mode, which the parts
  // that read the calibration ask here.
  bool pass_fail() const { return pass_fail_; }

  // --- Roles. ---
  // Probe rows of the reference GOOD and the BAD baseline, -1 until created.
  int good_probe() const { return good_probe_; }
  int bad_probe() const { return bad_probe_; }
  const std::string& reference_worker() const { return reference_worker_; }
  void SetReference(const std::string& worker, int good_probe);
  void SetBadProbe(int bad_probe) { bad_probe_ = bad_probe; }
  // The worker that measured the BAD baseline ("" before it is handed out).
  std::string BadWorker() const;
  // Picks another reference GOOD (the old reference left or was quarantined): a worker with a
  // finished calibration, else none until the next worker calibrates.
  void ResetReference();
  // True when GOOD and BAD can be compared without a GPU's offset: BAD's worker is the
  // reference, or it has calibrated (its own GOOD brings BAD into the reference's frame).
  bool EndpointsOnOneGpu() const;
  // True when the reference GOOD is queued and not handed out yet (BAD's worker's, waiting
  // for BAD to finish): another worker's calibration starting now may take its role.
  bool ReferenceNotStarted() const;
  // When row `calibration` is BAD's worker's GOOD, measured, and another worker's GOOD stood in
  // as the reference: makes it the reference (GOOD and BAD on one GPU; its offset is checked)
  // and returns true.
  bool AdoptBadWorkersReference(int calibration);
  // True once the BAD worker's calibration was compared with the reference.
  bool bad_offset_checked() const { return bad_offset_checked_; }
  void set_bad_offset_checked(bool checked) { bad_offset_checked_ = checked; }

  // --- Workers. ---
  // The worker's record, created on first use.
  Worker& worker(const std::string& name) { return workers_[name]; }
  // The worker's record, or null when the job never saw it.
  const Worker* Find(const std::string& name) const;
  std::map<std::string, Worker>& workers() { return workers_; }
  const std::map<std::string, Worker>& workers() const { return workers_; }

  // True when the job quarantined `worker` (false for a worker it never saw).
  bool Quarantined(const std::string& worker) const;
  // True when `worker` has a finished, measured GOOD calibration.
  bool CalibrationDone(const std::string& worker) const;
  // True when the worker's calibration is complete enough to classify its probes.
  bool CalibrationUsable(const std::string& worker) const;
  // True when `worker`'s GOOD differs significantly from the reference GOOD
  // (OffsetIsSignificant): its verdicts are judged against its own, sharpened calibration.
  bool HasOffset(const std::string& worker) const;
  // True when workers `a` and `b` measure GOOD exactly alike: neither is quarantined, each has
  // GOOD samples (the reference GOOD, or a finished calibration), and all of them, of both
  // workers and of the reference GOOD, are one value. A commit measured on one of them and
  // another commit on the other then compare as if one worker had measured both: there is no
  // offset to cancel (a deterministic metric; decision 232). Never with --exit-code.
  bool MeasureGoodAlike(const std::string& a, const std::string& b) const;
  // True when probes measured by `worker` can be classified now: provisionally while it has no
  // finished calibration, for good once it has one (sharpened when it has an offset).
  bool WorkerReady(const std::string& worker) const;
  // True when a worker other than `worker` has worked in this job and is neither quarantined
  // nor gone.
  bool AnotherWorkerLeft(const std::string& worker) const;
  // True when a worker of the job (not quarantined, not gone) has no finished calibration yet.
  bool MoreCalibrationsComing() const;
  // True when some worker is not quarantined.
  bool AnyoneLeft() const;
  // Samples a worker's GOOD calibration needs before its verdicts count, when it has an offset:
  // as many as the reference GOOD has.
  int CalibrationRuns() const;
  // The workers taking part in the job now (checked a commit out, not quarantined, not gone),
  // capped by `max_workers` (0: no cap); at least 1. Progress estimates are for this many.
  int ActiveWorkers(int max_workers) const;
  // True when the bisect probe's verdict (GOOD, BAD or ambiguous) was reached before its worker
  // or the BAD baseline's worker calibrated: it steers the search but does not count yet.
  bool IsProvisional(const v1::Probe& probe) const;
  // The workers that owe a calibration before the job ends: those holding provisional verdicts,
  // bisect probes measured (even ones the search no longer needs: each says how its GPU
  // measures, so an odd GPU is named in every report) or running, or rows in `awaiting` (probe
  // rows waiting for a verdict). None with --exit-code.
  std::set<std::string> OwingCalibration(const std::vector<int>& awaiting) const;
  // True when no verdict is provisional and every worker that owes a calibration
  // (OwingCalibration) has one, is quarantined or gone.
  bool Settled(const std::vector<int>& awaiting) const;

  // --- Runs of a GOOD calibration. ---
  // More runs for a finished GOOD calibration: its probe row and how many.
  struct TopUp {
    int row = -1;
    int runs = 0;
  };
  // The finished calibrations (not the reference GOOD, which has --runs; not of a quarantined or
  // gone worker) with fewer runs than RunsNeeded(), one handed out before the step was known,
  // each with the runs it lacks; their workers' verdicts wait for them. None with --exit-code.
  std::vector<TopUp> TopUps() const;
  // Runs a GOOD calibration needs: --runs before the baselines settle; then (while the search
  // and the confirmation run) as many as telling a third of the step from the noise seen needs
  // (at least 1, at most --runs).
  int RunsNeeded() const;
  // The same for a calibration that will (`reference`) or will not hold the reference GOOD. In a
  // job that reuses cached results (`reuses_cached`) before its baselines are settled (the step
  // is not known yet), one run for a worker that does not stand in as the reference, topped up
  // once the step is known: its anchors take one run, so such calibrations start long before the
  // baselines end, and the cached probes decide most of the search when they do; a worker that
  // took --runs would be busy when the last points need it (decision 111). The same one run
  // where the benchmark has repeated exactly so far (RepeatedSoFar, decision 229).
  int RunsForRole(bool reference, bool reuses_cached) const;
  // RunsForRole for the GOOD calibration `worker` is handed now: it holds the reference when the
  // job has no reference GOOD yet (pass/fail), or when the reference waits unstarted for BAD's
  // worker and `worker` is another (it stands in: see BisectJob::Calibrate).
  int RunsAtHandOut(const std::string& worker, bool reuses_cached) const;

  // --- Samples in the reference's frame. ---
  // The workers whose measurements are judged together: the reference and every calibrated
  // worker that is not quarantined and has no significant offset.
  std::set<std::string> PoolMembers() const;
  // The pooled GOOD (side VERDICT_GOOD) or BAD samples: the reference baseline's, the pool's
  // calibrations (GOOD only), and, while bisecting, the samples of the pool's final bisect
  // verdicts of that side that agree with that baseline (p >= kPoolAlpha): under one step they
  // measure the same value, and every verdict after them is judged against sharper baselines.
  std::vector<double> PooledSamples(v1::Verdict side) const;
  static constexpr double kPoolAlpha = 0.05;
  // The BAD baseline's samples in the reference worker's frame.
  std::vector<double> ReferenceBadSamples() const;
  double ReferenceBadMedian() const;
  // Classifies `probe`'s samples against the baselines its worker is judged by (BaselinesFor),
  // with the spec's threshold and runs and the job's noise brought into the worker's frame.
  // While RepeatsExactly, a probe whose every run equals GOOD's value or BAD's is decided on one
  // run; one whose runs match neither runs --runs times before it is classified.
  ProbeClassification Judge(const v1::Probe& probe) const;
  // True when the spec allows one run a probe (MayRunOncePerProbe) and the benchmark has
  // repeated exactly so far: the reference GOOD and the BAD baseline have two or more runs each,
  // all of one value, the two values differ, and every commit the job has measured (baselines,
  // calibrations, controls, probes, cached rows) gave one value on all its runs, and every bisect
  // verdict so far was decided on GOOD's value or BAD's (decision 229).
  bool RepeatsExactly() const;
  // True when the spec allows one run a probe and every commit measured so far gave one value on
  // all its runs, one of them on two runs or more: before the baselines are in, a calibration
  // then takes one run (RunsForRole).
  bool RepeatedSoFar() const;
  // The runs a bisect probe handed out now takes: one while RepeatsExactly, else --runs.
  int RunsPerProbe() const;
  // The median at commit `index` in the reference's frame: the baselines at the ends (0 and
  // the job's commit count); inside, the bisect probe that decided the commit, scaled by the
  // ratio of the GOOD calibrations (workers' offsets cancel out); 0 when none did.
  double MedianAt(int index) const;
  // The GOOD and BAD samples a probe of `worker` is judged against: the pool's, or, for a worker
  // with an offset, its own GOOD and the reference BAD scaled to it.
  void BaselinesFor(const std::string& worker, std::vector<double>* good,
                    std::vector<double>* bad) const;
  // The metric's noise as the job has seen it, in the reference's frame: the root mean square of
  // every sample's distance to its side's median (the baselines' samples, and the samples of
  // finished GOOD and BAD bisect verdicts of workers that are not quarantined), over the samples
  // less one per side. 0 when nothing repeated was seen (a deterministic benchmark, or too few
  // samples). Single runs (--runs 1) show noise here that no one probe's samples can.
  double ObservedNoise() const;
  // The noise the job's decisions are sized by: the larger of ObservedNoise and the spread of
  // the pooled GOOD and BAD samples (BaselineNoise).
  double JobNoise() const;
  // `value` measured on `worker` in the reference's frame (scaled by the ratio of the GOOD
  // calibrations); unchanged without a calibration.
  double InReferenceFrame(const std::string& worker, double value) const;

  // --- Checks. ---
  // Compares calibrated workers' GOOD medians: with three or more the pool's median is the
  // centre, with fewer the reference's GOOD once nobody else is still to calibrate (two GPUs
  // that disagree cannot tell which one is odd). A worker more than a third of the regression
  // off the centre, by two standard errors, is an outlier.
  std::vector<QuarantineDecision> FindOutliers() const;
  // Judges `worker`'s A/A control of GOOD (`control`, measured) against its calibration: a move
  // of more than a third of the regression (by two standard errors) is drift.
  std::optional<QuarantineDecision> CheckControl(const std::string& worker,
                                                 const v1::Probe& control) const;

  // The worker section of the report: one entry per worker, its calibration in the reference's
  // frame, quarantine and drift (from `drift_events`, the job's), and its bisect probe count (in
  // the probe table).
  std::vector<v1::JobWorker> WorkerReport(const std::vector<v1::DriftEvent>& drift_events) const;

 private:
  bool Measured(const v1::Probe& probe) const;
  const v1::Probe& probe(int position) const { return probes_->Get(position); }
  bool Bisecting() const { return frame_->bisecting(); }

  const JobFrame* frame_;
  const ProbeRows* probes_;
  bool pass_fail_;
  std::map<std::string, Worker> workers_;
  // The reference GOOD (the first calibration handed out; its worker is the reference) and BAD
  // (measured by whichever worker asked first).
  int good_probe_ = -1;
  int bad_probe_ = -1;
  std::string reference_worker_;
  bool bad_offset_checked_ = false;
};

}  // namespace kbisect

#endif  // KBISECT_COORDINATOR_JOB_CALIBRATION_H_
