// Copyright 2026 The kbisect Authors.
#include "coordinator/job/calibration.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "common/spec/job_spec.h"
#include "common/stats/stats.h"
#include "coordinator/job/probe_book.h"
#include "coordinator/job/probe_classifier.h"

namespace kbisect {

Calibration::Calibration(const JobFrame* frame, const ProbeRows* probes, bool pass_fail)
    : frame_(frame), probes_(probes), pass_fail_(pass_fail) {}

bool Calibration::Measured(const v1::Probe& probe) const { return IsMeasured(probe, pass_fail_); }

void Calibration::SetReference(const std::string& worker, int good_probe) {
  reference_worker_ = worker;
  good_probe_ = good_probe;
}

bool Calibration::AdoptBadWorkersReference(int calibration) {
  const v1::Probe& probe = this->probe(calibration);
  const std::string bad_worker = BadWorker();
  if (pass_fail_ || probe.kind() != v1::PROBE_KIND_BASELINE_GOOD || probe.worker() != bad_worker ||
      reference_worker_ == bad_worker || !Measured(probe) ||
      workers_[bad_worker].calibration != calibration) {
    return false;
  }
  SetReference(bad_worker, calibration);
  bad_offset_checked_ = true;
  return true;
}

bool Calibration::ReferenceNotStarted() const {
  if (good_probe_ < 0) return false;
  const v1::Probe& probe = this->probe(good_probe_);
  return probe.state() == v1::PROBE_STATE_PENDING && !probe.has_start_time() &&
         probe.worker().empty();
}

int Calibration::RunsNeeded() const {
  // A calibration must tell an offset of a third of the step (an outlier) from noise, by three
  // standard errors: with the noise the job has seen far below that, fewer runs than --runs do.
  // The step is known once the baselines are settled, while the search runs and while the
  // confirmation does (the calibrations still owed run beside it).
  const int floor = frame_->spec.runs_per_commit();
  if (pass_fail_ ||
      (frame_->state != v1::JOB_STATE_BISECTING && frame_->state != v1::JOB_STATE_CONFIRMING)) {
    return floor;
  }
  // A benchmark that repeats exactly: one run matches the reference GOOD's value or shows the
  // offset (decision 229).
  if (RepeatsExactly()) return 1;
  const double step = std::fabs(frame_->bad_baseline().median() - frame_->good_baseline().median());
  const double noise = JobNoise();
  if (step == 0 || noise == 0) return floor;
  const double z = 3.0 * noise / (step / 3.0);
  // Compared before the cast, which an infinite or huge z would make undefined.
  const double runs = std::ceil(2.0 * z * z);
  if (!(runs < floor)) return floor;
  return std::clamp(static_cast<int>(runs), 1, floor);
}

int Calibration::RunsAtHandOut(const std::string& worker, bool reuses_cached) const {
  // The worker that will hold the reference GOOD (see Calibrate) measures it as sharply as
  // --runs asks: the endpoint verdict and every other calibration are judged against it.
  const bool reference = (good_probe_ < 0 && pass_fail_) ||
                         (!pass_fail_ && ReferenceNotStarted() && worker != BadWorker());
  return RunsForRole(reference, reuses_cached);
}

int Calibration::RunsForRole(bool reference, bool reuses_cached) const {
  const bool settled =
      frame_->state == v1::JOB_STATE_BISECTING || frame_->state == v1::JOB_STATE_CONFIRMING;
  // Before the step is known, a calibration takes one run where the cache's samples or a
  // benchmark that has repeated exactly so far make one likely enough; TopUps adds what the
  // settled step needs.
  if (pass_fail_ || settled || reference || (!reuses_cached && !RepeatedSoFar())) {
    return RunsNeeded();
  }
  return 1;
}

int Calibration::ActiveWorkers(int max_workers) const {
  int workers = 0;
  for (const auto& [name, state] : workers_) {
    workers += !state.quarantined && !state.gone && state.checked_out >= 0 ? 1 : 0;
  }
  if (max_workers > 0) workers = std::min(workers, max_workers);
  return std::max(workers, 1);
}

std::vector<Calibration::TopUp> Calibration::TopUps() const {
  std::vector<TopUp> top_ups;
  if (pass_fail_) return top_ups;
  const int needed = RunsNeeded();
  for (const auto& [worker, state] : workers_) {
    if (state.quarantined || state.gone || state.calibration < 0) continue;
    if (state.calibration == good_probe_) continue;  // The reference: --runs.
    const v1::Probe& calibration = probe(state.calibration);
    if (calibration.state() != v1::PROBE_STATE_FINISHED || !Measured(calibration)) continue;
    const int missing = needed - calibration.samples_size();
    if (missing > 0) top_ups.push_back({state.calibration, missing});
  }
  return top_ups;
}

std::set<std::string> Calibration::OwingCalibration(const std::vector<int>& awaiting) const {
  std::set<std::string> workers;
  if (pass_fail_) return workers;
  for (const v1::Probe& probe : *probes_) {
    if (probe.kind() != v1::PROBE_KIND_BISECT) continue;
    if (probe.provisional() || probe.state() == v1::PROBE_STATE_PENDING ||
        probe.state() == v1::PROBE_STATE_RUNNING ||
        (probe.state() == v1::PROBE_STATE_FINISHED && IsMeasured(probe, pass_fail_))) {
      workers.insert(probe.worker());
    }
  }
  for (int position : awaiting) workers.insert(probe(position).worker());
  return workers;
}

bool Calibration::Settled(const std::vector<int>& awaiting) const {
  for (const v1::Probe& probe : *probes_) {
    if (probe.provisional()) return false;
  }
  const std::set<std::string> owing = OwingCalibration(awaiting);
  for (const auto& [name, state] : workers_) {
    if (!state.quarantined && !state.gone && !CalibrationDone(name) && owing.count(name) > 0) {
      return false;
    }
  }
  return true;
}

bool Calibration::IsProvisional(const v1::Probe& probe) const {
  if (pass_fail_ || probe.kind() != v1::PROBE_KIND_BISECT || !JudgedAgainstBaselines(probe)) {
    return false;
  }
  return !CalibrationDone(probe.worker()) || !CalibrationDone(BadWorker());
}

ProbeClassification Calibration::Judge(const v1::Probe& probe) const {
  std::vector<double> good;
  std::vector<double> bad;
  BaselinesFor(probe.worker(), &good, &bad);
  ClassifierOptions options;
  options.threshold_fraction = frame_->spec.threshold_fraction();
  options.max_runs = frame_->spec.max_runs();
  options.min_runs = frame_->spec.runs_per_commit();
  // The job's noise, brought from the reference's frame to this worker's.
  const double to_reference = InReferenceFrame(probe.worker(), 1.0);
  options.noise_floor = to_reference > 0 ? ObservedNoise() / to_reference : 0;
  if (RepeatsExactly()) {
    if (RepeatsABaseline(probe.samples(), good, bad)) {
      options.min_runs = 1;
    } else if (probe.samples_size() < options.min_runs) {
      ProbeClassification more;
      more.median = MedianOrZero(probe.samples());
      more.more_runs = options.min_runs - probe.samples_size();
      more.reason = "its run matches neither baseline's value: measured as often as --runs says";
      return more;
    }
  }
  return ClassifyProbe(probe.samples(), good, bad, options);
}

bool Calibration::RepeatedSoFar() const {
  if (pass_fail_ || !MayRunOncePerProbe(frame_->spec)) return false;
  bool repeated = false;
  for (const v1::Probe& row : *probes_) {
    for (double sample : row.samples()) {
      if (sample != row.samples(0)) return false;
    }
    repeated = repeated || row.samples_size() >= 2;
  }
  return repeated;
}

bool Calibration::RepeatsExactly() const {
  if (good_probe_ < 0 || bad_probe_ < 0 || !RepeatedSoFar()) return false;
  const v1::Probe& good = probe(good_probe_);
  const v1::Probe& bad = probe(bad_probe_);
  if (good.samples_size() < 2 || bad.samples_size() < 2 || good.samples(0) == bad.samples(0)) {
    return false;
  }
  // A commit decided on a value that is neither GOOD's nor BAD's (a partial step, or a GPU with
  // an offset) joins the pooled baselines or moves the frame: one run no longer matches them.
  for (const v1::Probe& row : *probes_) {
    if (row.kind() != v1::PROBE_KIND_BISECT || row.samples_size() == 0 ||
        (row.verdict() != v1::VERDICT_GOOD && row.verdict() != v1::VERDICT_BAD)) {
      continue;
    }
    if (row.samples(0) != good.samples(0) && row.samples(0) != bad.samples(0)) return false;
  }
  return true;
}

int Calibration::RunsPerProbe() const {
  return RepeatsExactly() ? 1 : frame_->spec.runs_per_commit();
}

double Calibration::MedianAt(int index) const {
  // The reference baselines at the ends; inside, the probe that decided the commit, scaled to the
  // reference worker by the ratio of the GOOD calibrations (workers' offsets cancel out).
  if (index == 0 && good_probe_ >= 0) return probe(good_probe_).median();
  if (index == frame_->commit_count && bad_probe_ >= 0) return ReferenceBadMedian();
  for (const v1::Probe& row : *probes_) {
    if (row.index() != index || row.kind() != v1::PROBE_KIND_BISECT ||
        (row.verdict() != v1::VERDICT_GOOD && row.verdict() != v1::VERDICT_BAD)) {
      continue;
    }
    return InReferenceFrame(row.worker(), row.median());
  }
  return 0;
}

std::string Calibration::BadWorker() const {
  return bad_probe_ < 0 ? "" : probe(bad_probe_).worker();
}

bool Calibration::EndpointsOnOneGpu() const {
  if (pass_fail_) return true;
  const std::string bad = BadWorker();
  return bad == reference_worker_ || CalibrationDone(bad);
}

void Calibration::ResetReference() {
  const std::string old = reference_worker_;
  good_probe_ = -1;
  reference_worker_.clear();
  // Another worker with a finished calibration becomes the reference at once; without one, the
  // next worker to calibrate does.
  for (const auto& [name, state] : workers_) {
    if (name == old || state.quarantined || state.gone || !CalibrationDone(name)) continue;
    good_probe_ = state.calibration;
    reference_worker_ = name;
    return;
  }
}

const Calibration::Worker* Calibration::Find(const std::string& name) const {
  auto it = workers_.find(name);
  return it == workers_.end() ? nullptr : &it->second;
}

bool Calibration::Quarantined(const std::string& worker) const {
  const Worker* state = Find(worker);
  return state != nullptr && state->quarantined;
}

bool Calibration::CalibrationDone(const std::string& worker) const {
  const Worker* state = Find(worker);
  if (state == nullptr || state->calibration < 0) return false;
  const v1::Probe& calibration = probe(state->calibration);
  return calibration.state() == v1::PROBE_STATE_FINISHED && Measured(calibration);
}

bool Calibration::CalibrationUsable(const std::string& worker) const {
  const Worker* state = Find(worker);
  if (state == nullptr || state->quarantined || state->calibration < 0) return false;
  const v1::Probe& calibration = probe(state->calibration);
  if (calibration.state() != v1::PROBE_STATE_FINISHED || !Measured(calibration)) return false;
  return !Bisecting() || calibration.samples_size() >= CalibrationRuns() || !HasOffset(worker);
}

bool Calibration::HasOffset(const std::string& worker) const {
  if (pass_fail_ || worker == reference_worker_ || good_probe_ < 0) return false;
  const Worker* state = Find(worker);
  if (state == nullptr || state->calibration < 0) return false;
  const v1::Probe& calibration = probe(state->calibration);
  const v1::Probe& reference = probe(good_probe_);
  if (!Measured(calibration) || !Measured(reference)) return false;
  return OffsetIsSignificant(calibration.samples(), reference.samples());
}

bool Calibration::MeasureGoodAlike(const std::string& a, const std::string& b) const {
  if (pass_fail_ || good_probe_ < 0 || !Measured(probe(good_probe_))) return false;
  const double value = probe(good_probe_).samples(0);
  // Every GOOD sample `worker` has equals the reference's one value, and it has one at least.
  auto alike = [&](const std::string& worker) {
    const Worker* state = Find(worker);
    if (state == nullptr || state->quarantined) return false;
    std::vector<const v1::Probe*> rows;
    if (worker == reference_worker_) rows.push_back(&probe(good_probe_));
    if (CalibrationDone(worker)) rows.push_back(&probe(state->calibration));
    for (const v1::Probe* row : rows) {
      for (double sample : row->samples()) {
        if (sample != value) return false;
      }
    }
    return !rows.empty();
  };
  return alike(a) && alike(b);
}

bool Calibration::WorkerReady(const std::string& worker) const {
  if (!Bisecting()) return false;
  const Worker* state = Find(worker);
  if (state == nullptr || state->quarantined) return false;
  // Without a finished calibration its probes are judged against the pool, provisionally,
  // unless one of them already needs its calibration.
  if (!CalibrationDone(worker)) return !state->must_calibrate;
  return probe(state->calibration).samples_size() >= CalibrationRuns() || !HasOffset(worker);
}

bool Calibration::AnotherWorkerLeft(const std::string& worker) const {
  return std::any_of(workers_.begin(), workers_.end(), [&](const auto& entry) {
    const Worker& state = entry.second;
    return entry.first != worker && !state.quarantined && !state.gone && state.checked_out >= 0;
  });
}

bool Calibration::MoreCalibrationsComing() const {
  return std::any_of(workers_.begin(), workers_.end(), [&](const auto& entry) {
    const Worker& state = entry.second;
    return !state.quarantined && !state.gone && state.checked_out >= 0 &&
           !CalibrationDone(entry.first);
  });
}

bool Calibration::AnyoneLeft() const {
  return std::any_of(workers_.begin(), workers_.end(),
                     [](const auto& entry) { return !entry.second.quarantined; });
}

int Calibration::CalibrationRuns() const {
  // A worker's GOOD must be as sharp as the reference's: the baselines were re-measured until
  // GOOD and BAD were clearly apart, and every verdict of the worker is measured against it.
  return pass_fail_ || good_probe_ < 0 ? 0 : probe(good_probe_).samples_size();
}

std::set<std::string> Calibration::PoolMembers() const {
  std::set<std::string> members = {reference_worker_};
  for (const auto& [name, state] : workers_) {
    if (name == reference_worker_ || state.quarantined || state.calibration < 0) continue;
    const v1::Probe& calibration = probe(state.calibration);
    if (calibration.state() == v1::PROBE_STATE_FINISHED && Measured(calibration) &&
        !HasOffset(name)) {
      members.insert(name);
    }
  }
  return members;
}

std::vector<double> Calibration::PooledSamples(v1::Verdict side) const {
  const bool good = side == v1::VERDICT_GOOD;
  std::vector<double> pooled;
  if (good) {
    const v1::Probe& reference = probe(good_probe_);
    pooled.assign(reference.samples().begin(), reference.samples().end());
  } else {
    pooled = ReferenceBadSamples();
  }
  const std::set<std::string> members = PoolMembers();
  if (good) {
    for (const std::string& name : members) {
      if (name == reference_worker_) continue;
      const v1::Probe& calibration = probe(workers_.at(name).calibration);
      pooled.insert(pooled.end(), calibration.samples().begin(), calibration.samples().end());
    }
  }
  if (!Bisecting()) return pooled;
  for (const v1::Probe& row : *probes_) {
    if (row.kind() != v1::PROBE_KIND_BISECT || row.verdict() != side ||
        row.state() != v1::PROBE_STATE_FINISHED || row.provisional() ||
        members.count(row.worker()) == 0) {
      continue;
    }
    const double p = good ? row.p_value_vs_good() : row.p_value_vs_bad();
    if (p < kPoolAlpha) continue;
    pooled.insert(pooled.end(), row.samples().begin(), row.samples().end());
  }
  return pooled;
}

std::vector<double> Calibration::ReferenceBadSamples() const {
  const v1::Probe& bad = probe(bad_probe_);
  std::vector<double> samples(bad.samples().begin(), bad.samples().end());
  // A BAD measured on a worker with an offset is brought to the reference's frame by the ratio
  // of the two GOOD measurements.
  const std::string& worker = bad.worker();
  if (HasOffset(worker)) {
    const double own = probe(workers_.at(worker).calibration).median();
    const double reference = probe(good_probe_).median();
    if (own != 0) {
      for (double& sample : samples) sample *= reference / own;
    }
  }
  return samples;
}

double Calibration::ReferenceBadMedian() const { return MedianOrZero(ReferenceBadSamples()); }

void Calibration::BaselinesFor(const std::string& worker, std::vector<double>* good,
                               std::vector<double>* bad) const {
  if (!HasOffset(worker)) {
    *good = PooledSamples(v1::VERDICT_GOOD);
    *bad = PooledSamples(v1::VERDICT_BAD);
    return;
  }
  *bad = ReferenceBadSamples();
  const v1::Probe& calibration = probe(workers_.at(worker).calibration);
  good->assign(calibration.samples().begin(), calibration.samples().end());
  const double reference_good = probe(good_probe_).median();
  if (reference_good != 0) {
    for (double& sample : *bad) sample *= calibration.median() / reference_good;
  }
}

double Calibration::ObservedNoise() const {
  if (pass_fail_ || good_probe_ < 0 || bad_probe_ < 0) return 0;
  const double good = probe(good_probe_).median();
  const double bad = ReferenceBadMedian();
  double squares = 0;
  int count = 0;
  auto add = [&](double value, double center) {
    squares += (value - center) * (value - center);
    ++count;
  };
  for (double v : probe(good_probe_).samples()) add(v, good);
  for (double v : ReferenceBadSamples()) add(v, bad);
  for (const v1::Probe& row : *probes_) {
    if (row.kind() != v1::PROBE_KIND_BISECT || row.state() != v1::PROBE_STATE_FINISHED ||
        (row.verdict() != v1::VERDICT_GOOD && row.verdict() != v1::VERDICT_BAD)) {
      continue;
    }
    const Worker* state = Find(row.worker());
    if (state == nullptr || state->quarantined) continue;
    const double center = row.verdict() == v1::VERDICT_GOOD ? good : bad;
    for (double v : row.samples()) add(InReferenceFrame(row.worker(), v), center);
  }
  return count > 2 ? std::sqrt(squares / (count - 2)) : 0;
}

double Calibration::JobNoise() const {
  if (pass_fail_ || good_probe_ < 0 || bad_probe_ < 0) return 0;
  return std::max(ObservedNoise(),
                  BaselineNoise(PooledSamples(v1::VERDICT_GOOD), PooledSamples(v1::VERDICT_BAD)));
}

double Calibration::InReferenceFrame(const std::string& worker, double value) const {
  const Worker* state = Find(worker);
  if (state == nullptr || state->calibration < 0 || good_probe_ < 0) return value;
  const double own = probe(state->calibration).median();
  return own == 0 ? value : value * probe(good_probe_).median() / own;
}

std::vector<QuarantineDecision> Calibration::FindOutliers() const {
  std::vector<QuarantineDecision> outliers;
  if (pass_fail_ || good_probe_ < 0) return outliers;
  const double reference = probe(good_probe_).median();
  const double step = ReferenceBadMedian() - reference;
  std::vector<std::pair<std::string, double>> calibrated;
  std::vector<double> medians;
  for (const auto& [name, state] : workers_) {
    if (state.calibration < 0) continue;
    const v1::Probe& calibration = probe(state.calibration);
    if (calibration.state() != v1::PROBE_STATE_FINISHED || !Measured(calibration)) continue;
    calibrated.emplace_back(name, calibration.median());
    medians.push_back(calibration.median());
  }
  // With three or more calibrations the pool's median is the centre (robust to one odd GPU,
  // the reference's included). With fewer, the reference's GOOD, but only once no other worker
  // of the job is still to calibrate: two GPUs that disagree cannot tell which one is odd.
  if (medians.size() < 3 && MoreCalibrationsComing()) return outliers;
  const double center = medians.size() >= 3 ? MedianOrZero(medians) : reference;
  const v1::Probe& reference_good = probe(good_probe_);
  for (const auto& [name, median] : calibrated) {
    const Worker& state = workers_.at(name);
    if (state.quarantined || center == 0) continue;
    const double offset = median - center;
    const v1::Probe& calibration = probe(state.calibration);
    if (std::fabs(offset) > std::fabs(step) / 3 &&
        OffsetExceeds(calibration.samples(), reference_good.samples(), center,
                      std::fabs(step) / 3)) {
      QuarantineDecision decision;
      decision.worker = name;
      decision.kind = v1::DRIFT_KIND_BASELINE_OUTLIER;
      decision.offset_fraction = offset / center;
      decision.median = median;
      decision.center = center;
      decision.regression_fraction = step / reference;
      outliers.push_back(std::move(decision));
    }
  }
  return outliers;
}

std::optional<QuarantineDecision> Calibration::CheckControl(const std::string& worker,
                                                            const v1::Probe& control) const {
  const v1::Probe& calibration = probe(workers_.at(worker).calibration);
  const double moved = control.median() - calibration.median();
  const double step = frame_->bad_baseline().median() - frame_->good_baseline().median();
  if (step == 0 || !OffsetExceeds(control.samples(), calibration.samples(),
                                  Mean(calibration.samples()).value_or(0), std::fabs(step) / 3)) {
    return std::nullopt;
  }
  QuarantineDecision decision;
  decision.worker = worker;
  decision.kind = v1::DRIFT_KIND_CONTROL_MOVED;
  decision.offset_fraction = moved / calibration.median();
  return decision;
}

std::vector<v1::JobWorker> Calibration::WorkerReport(
    const std::vector<v1::DriftEvent>& drift_events) const {
  std::vector<v1::JobWorker> report;
  for (const auto& [name, state] : workers_) {
    v1::JobWorker* out = &report.emplace_back();
    out->set_worker(name);
    if (state.calibration >= 0) {
      const double good = probe(state.calibration).median();
      out->set_calibration_good(good);
      if (good_probe_ >= 0 && bad_probe_ >= 0 && probe(good_probe_).median() != 0) {
        out->set_calibration_bad(ReferenceBadMedian() * good / probe(good_probe_).median());
      }
    }
    out->set_quarantined(state.quarantined);
    for (const v1::DriftEvent& event : drift_events) {
      if (event.worker() != name) continue;
      out->set_drift(true);
      out->set_reason(event.detail());
    }
    int probes = 0;
    for (const v1::Probe& row : *probes_) {
      probes += row.worker() == name && row.kind() == v1::PROBE_KIND_BISECT ? 1 : 0;
    }
    out->set_probes(probes);
  }
  return report;
}

}  // namespace kbisect
