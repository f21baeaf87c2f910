// Copyright 2026 The kbisect Authors.
#include "coordinator/job/suite_ledger.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <map>
#include <set>
#include <string>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/metric/percent.h"
#include "common/search/culprit_posterior.h"
#include "common/spec/job_spec.h"
#include "coordinator/job/probe_classifier.h"

namespace kbisect {
namespace {

// The significance AssessBaselines asks of one metric at max_runs; a suite's metric other than
// its lead needs it divided by the metrics judged.
constexpr double kSuiteAlpha = 0.05;
// The posterior probability a metric's range (for a follow-up) may leave out on either side:
// a range without the step would make its follow-up answer wrong, a wider one costs a probe.
constexpr double kRangeTail = 0.00001;

// The samples of `metric` in `probe`'s runs.
std::vector<double> SamplesOf(const v1::Probe& probe, const std::string& metric) {
  std::vector<double> samples;
  for (const v1::RunRecord& run : probe.runs()) {
    if (!run.has_value()) continue;
    for (const v1::SuiteValue& value : run.suite_values()) {
      if (value.name() == metric) samples.push_back(value.value());
    }
  }
  return samples;
}

// A probe row that measured one commit of the range (a confirmation's interleaved runs mix two).
bool MeasuresOneCommit(const v1::Probe& probe) {
  return probe.kind() != v1::PROBE_KIND_CONFIRM && probe.kind() != v1::PROBE_KIND_BUILD &&
         probe.runs_size() > 0;
}

// The commit as a suite row names it (without its message body: the job's own culprit has it).
v1::CommitRef RowCommit(const v1::CommitRef& commit) {
  v1::CommitRef row = commit;
  row.clear_body();
  row.clear_parent_indices();
  return row;
}

// The direction of `info`: the spec's for the lead when it gives one, else the one the worker
// inferred, else lower is better (as for the job's own metric).
v1::Direction DirectionOf(const JobFrame& frame, const v1::SuiteMetricInfo& info, bool lead) {
  if (lead && frame.spec.direction() != v1::DIRECTION_UNSPECIFIED) {
    return frame.spec.direction();
  }
  return info.direction() == v1::DIRECTION_UNSPECIFIED ? v1::DIRECTION_LOWER_IS_BETTER
                                                       : info.direction();
}

class MetricJudge {
 public:
  MetricJudge(const ProbeRows& probes, const std::vector<v1::CommitRef>& commits,
              const std::string& metric, const std::string& reference)
      : probes_(probes), commits_(commits), metric_(metric), reference_(reference) {
    const int last = static_cast<int>(commits.size()) - 1;
    for (const v1::Probe& probe : probes) {
      if (!MeasuresOneCommit(probe)) continue;
      std::vector<double> samples = SamplesOf(probe, metric);
      if (samples.empty()) continue;
      if (probe.index() == 0) {
        auto& good = good_[probe.worker()];
        good.insert(good.end(), samples.begin(), samples.end());
      } else if (probe.index() == last && probe.worker() == reference) {
        bad_.insert(bad_.end(), samples.begin(), samples.end());
      }
    }
  }

  const std::vector<double>* ReferenceGood() const {
    auto it = good_.find(reference_);
    return it == good_.end() ? nullptr : &it->second;
  }
  const std::vector<double>& Bad() const { return bad_; }

  // The metric's samples by commit index in the reference worker's frame: its GOOD and BAD at
  // the range's ends, and every row inside the range whose worker measured its own GOOD. As the
  // job's calibration does, a worker whose GOOD differs from the reference's by more than noise
  // (OffsetIsSignificant) has its samples scaled by the ratio of the GOOD medians; the others
  // share the reference's frame (scaling by a noisy GOOD of a few runs would add its noise).
  std::map<int, std::vector<double>> Samples() const {
    const std::vector<double>& good = *ReferenceGood();
    const double reference_good = MedianOrZero(good);
    const int last = static_cast<int>(commits_.size()) - 1;
    std::map<int, std::vector<double>> samples_at = {{0, good}, {last, bad_}};
    for (const v1::Probe& probe : probes_) {
      if (!MeasuresOneCommit(probe) || probe.index() <= 0 || probe.index() >= last) continue;
      auto own_good = good_.find(probe.worker());
      if (own_good == good_.end()) continue;
      std::vector<double> samples = SamplesOf(probe, metric_);
      const double own = MedianOrZero(own_good->second);
      if (samples.empty() || own == 0) continue;
      if (probe.worker() != reference_ && OffsetIsSignificant(own_good->second, good)) {
        for (double& sample : samples) sample *= reference_good / own;
      }
      auto& at = samples_at[probe.index()];
      at.insert(at.end(), samples.begin(), samples.end());
    }
    return samples_at;
  }

 private:
  const ProbeRows& probes_;
  const std::vector<v1::CommitRef>& commits_;
  const std::string& metric_;
  const std::string& reference_;
  std::map<std::string, std::vector<double>> good_;  // By worker.
  std::vector<double> bad_;                          // The reference worker's.
};

// `more_runs`: set to the runs of each baseline AssessBaselines asks for when the metric is too
// close to tell (0 otherwise).
// `suite_size`: the metrics judged, for the significance a move of a metric other than the lead
// needs when the baselines reached max_runs (AssessBaselines then decides by a p-value).
v1::SuiteMetricResult JudgeMetric(const JobFrame& frame, const ProbeRows& probes,
                                  const std::vector<v1::CommitRef>& commits,
                                  const v1::SuiteMetricInfo& info, const std::string& reference,
                                  int suite_size, int* more_runs) {
  *more_runs = 0;
  const v1::JobSpec& spec = frame.spec;
  v1::SuiteMetricResult row;
  row.set_name(info.name());
  row.set_unit(info.unit());
  row.set_lead(info.name() == frame.metric_name);
  const v1::Direction direction = DirectionOf(frame, info, row.lead());
  row.set_direction(direction);
  const MetricJudge judge(probes, commits, info.name(), reference);
  const std::vector<double>* good = judge.ReferenceGood();
  if (good == nullptr || judge.Bad().empty()) return row;  // Not judged yet.
  const BaselineAssessment baselines =
      AssessBaselines(*good, judge.Bad(), direction, spec.min_effect_fraction(), spec.max_runs());
  row.set_good_median(baselines.good_median);
  row.set_bad_median(baselines.bad_median);
  row.set_regression_pct(baselines.regression_pct);
  // At max_runs AssessBaselines takes p < 0.05 as a move: one metric in twenty that never moved
  // would. A metric the user did not point at must stand out among the suite's (Bonferroni).
  const bool moved = baselines.regression || baselines.improvement;
  const int runs = static_cast<int>(std::min(good->size(), judge.Bad().size()));
  const double alpha = kSuiteAlpha / std::max(1, suite_size);
  if (moved && !row.lead() && runs >= spec.max_runs() && baselines.p_value >= alpha) {
    row.set_state(v1::SUITE_METRIC_STATE_UNCHANGED);
    row.set_reason(absl::StrFormat(
        "GOOD and BAD differ by %s, which after %d runs each does not stand out among the "
        "suite's %d metrics (p=%.3g, %.3g needed)",
        FormatPercent(std::fabs(baselines.regression_pct)), runs, suite_size, baselines.p_value,
        alpha));
    return row;
  }
  const bool step = baselines.regression || (baselines.improvement && spec.allow_improvement());
  if (!step) {
    if (baselines.improvement) {
      row.set_state(v1::SUITE_METRIC_STATE_IMPROVED);
    } else if (baselines.more_runs > 0) {
      *more_runs = baselines.more_runs;
      row.set_state(v1::SUITE_METRIC_STATE_UNRESOLVED);
      row.set_reason(absl::StrCat("GOOD and BAD are too close to tell on ", good->size(), " and ",
                                  judge.Bad().size(), " runs (", baselines.reason,
                                  "): bisect it alone with --lead ", info.name(),
                                  " and more --runs"));
    } else {
      row.set_state(v1::SUITE_METRIC_STATE_UNCHANGED);
      row.set_reason(baselines.reason);
    }
    return row;
  }

  // Where its step lies: the posterior over the first-bad positions given every sample of it
  // (the one-step model the job's own answer is judged by, culprit_posterior.h).
  const std::map<int, std::vector<double>> samples_at = judge.Samples();
  std::vector<CommitEvidence> evidence;
  for (const auto& [index, samples] : samples_at) evidence.push_back({index, samples, 0, 0});
  const int last = static_cast<int>(commits.size()) - 1;
  const absl::StatusOr<CulpritPosterior> posterior = ComputeCulpritPosterior(last, evidence);
  int last_good = 0;
  int first_bad = last;
  if (posterior.ok()) {
    // The smallest range holding all but kRangeTail of the probability on either side.
    double below = 0;
    while (last_good + 1 < last && below + posterior->probability[last_good + 1] <= kRangeTail) {
      below += posterior->probability[++last_good];
    }
    double above = 0;
    while (first_bad - 1 > last_good && above + posterior->probability[first_bad] <= kRangeTail) {
      above += posterior->probability[first_bad--];
    }
  }
  *row.mutable_last_good() = RowCommit(commits[last_good]);
  *row.mutable_first_bad() = RowCommit(commits[first_bad]);
  const double confidence = spec.confidence() > 0 ? spec.confidence() : kDefaultMetricConfidence;
  if (!posterior.ok() || posterior->probability[posterior->most_likely] < confidence) {
    row.set_state(v1::SUITE_METRIC_STATE_SEARCHING);
    return row;
  }
  // Its culprit: the medians of the nearest measured commits on either side.
  const int culprit = posterior->most_likely;
  auto below = samples_at.lower_bound(culprit);
  const std::vector<double>& before = std::prev(below)->second;
  const std::vector<double>& after = below->second;
  row.set_state(v1::SUITE_METRIC_STATE_CULPRIT);
  *row.mutable_culprit() = RowCommit(commits[culprit]);
  *row.mutable_last_good() = RowCommit(commits[std::prev(below)->first]);
  row.clear_first_bad();
  row.set_before(MedianOrZero(before));
  row.set_after(MedianOrZero(after));
  row.set_culprit_regression_pct(RegressionPercent(row.before(), row.after(), direction));
  row.set_job_id(frame.job_id);
  return row;
}

// A range a suite's metric still has its step in: (last_good, first_bad], by commit index.
struct OpenRange {
  int last_good = 0;
  int first_bad = 0;
  std::string metric;  // The first row's of that range.
  int width() const { return first_bad - last_good; }
};

// True when `range` holds, strictly inside, as many finished suite probes as a bisect of it
// takes plus one: they did not narrow it (a metric whose step the rows cannot place, or none at
// all, judged moved by chance), and a follow-up with its own baselines and confirmation judges it.
bool ProbedInVain(const OpenRange& range, const ProbeRows& probes) {
  const int inside =
      static_cast<int>(std::count_if(probes.begin(), probes.end(), [&](const v1::Probe& probe) {
        return probe.kind() == v1::PROBE_KIND_SUITE && probe.state() == v1::PROBE_STATE_FINISHED &&
               probe.index() > range.last_good && probe.index() < range.first_bad;
      }));
  return inside > std::ceil(std::log2(std::max(2, range.width())));
}

// The SEARCHING rows' ranges, each once, widest first (the rows' order among equals), leaving out
// those with a suite probe pending or running inside and those probed in vain.
std::vector<OpenRange> RangesToProbe(const std::vector<v1::SuiteMetricResult>& rows,
                                     const ProbeRows& probes) {
  std::vector<OpenRange> ranges;
  std::set<std::pair<int, int>> seen;
  for (const v1::SuiteMetricResult& row : rows) {
    if (row.state() != v1::SUITE_METRIC_STATE_SEARCHING) continue;
    const OpenRange range{row.last_good().index(), row.first_bad().index(), row.name()};
    if (range.width() < 1 || !seen.insert({range.last_good, range.first_bad}).second) continue;
    const bool busy = std::any_of(probes.begin(), probes.end(), [&](const v1::Probe& probe) {
      return probe.kind() == v1::PROBE_KIND_SUITE && probe.index() >= range.last_good &&
             probe.index() <= range.first_bad &&
             (probe.state() == v1::PROBE_STATE_PENDING || probe.state() == v1::PROBE_STATE_RUNNING);
    });
    if (!busy && !ProbedInVain(range, probes)) ranges.push_back(range);
  }
  std::stable_sort(ranges.begin(), ranges.end(),
                   [](const OpenRange& a, const OpenRange& b) { return a.width() > b.width(); });
  return ranges;
}

// How many samples of `metric` the rows measuring one commit hold at each index, and the
// indices measured without one.
struct MetricCoverage {
  std::map<int, int> samples;
  std::set<int> failed;
};

MetricCoverage CoverageOf(const ProbeRows& probes, const std::string& metric) {
  MetricCoverage coverage;
  for (const v1::Probe& probe : probes) {
    if (probe.kind() == v1::PROBE_KIND_CONFIRM || probe.kind() == v1::PROBE_KIND_BUILD ||
        probe.state() != v1::PROBE_STATE_FINISHED) {
      continue;
    }
    const int count = static_cast<int>(SamplesOf(probe, metric).size());
    coverage.samples[probe.index()] += count;
    if (count == 0) coverage.failed.insert(probe.index());
  }
  return coverage;
}

// The commit strictly inside `range` nearest `ideal` (the lower one on a tie) that can still be
// measured for its metric and is not in `taken`; -1 when none is.
int NearestOpenCommit(const OpenRange& range, int ideal, const MetricCoverage& coverage,
                      int max_runs, const std::set<int>& taken) {
  auto open = [&](int index) {
    auto count = coverage.samples.find(index);
    return index > range.last_good && index < range.first_bad && taken.count(index) == 0 &&
           coverage.failed.count(index) == 0 &&
           (count == coverage.samples.end() || count->second < max_runs);
  };
  for (int distance = 0; distance < range.width(); ++distance) {
    if (open(ideal - distance)) return ideal - distance;
    if (open(ideal + distance)) return ideal + distance;
  }
  return -1;
}

}  // namespace

std::vector<int> PlanSuiteProbes(const std::vector<v1::SuiteMetricResult>& rows,
                                 const ProbeRows& probes, int workers, int max_runs) {
  std::vector<int> points;
  const std::vector<OpenRange> ranges = RangesToProbe(rows, probes);
  // The workers go to the ranges in turn; a range takes at most one per untested commit (one
  // for two neighbours).
  std::vector<int> share(ranges.size(), 0);
  for (bool placed = true; workers > 0 && placed;) {
    placed = false;
    for (size_t i = 0; i < ranges.size() && workers > 0; ++i) {
      if (share[i] >= std::max(1, ranges[i].width() - 1)) continue;
      ++share[i];
      --workers;
      placed = true;
    }
  }
  std::set<int> taken;
  for (size_t i = 0; i < ranges.size(); ++i) {
    const OpenRange& range = ranges[i];
    const MetricCoverage coverage = CoverageOf(probes, range.metric);
    if (range.width() == 1) {
      // Two neighbours: more samples of the end that has fewer.
      auto samples_at = [&](int index) {
        auto count = coverage.samples.find(index);
        return count == coverage.samples.end() ? 0 : count->second;
      };
      const int end = samples_at(range.last_good) <= samples_at(range.first_bad) ? range.last_good
                                                                                 : range.first_bad;
      if (samples_at(end) < max_runs && taken.insert(end).second) points.push_back(end);
      continue;
    }
    for (int j = 1; j <= share[i]; ++j) {
      const int ideal =
          range.last_good + static_cast<int>(std::lround(static_cast<double>(range.width()) * j /
                                                         static_cast<double>(share[i] + 1)));
      const int point = NearestOpenCommit(range, ideal, coverage, max_runs, taken);
      if (point < 0) continue;
      taken.insert(point);
      points.push_back(point);
    }
  }
  return points;
}

bool SuiteFollowsUp(v1::Outcome outcome, const v1::JobSpec& spec) {
  return (outcome == v1::OUTCOME_CULPRIT_FOUND || outcome == v1::OUTCOME_NO_REGRESSION) &&
         spec.follow_up_depth() < kMaxSuiteFollowUpDepth;
}

std::vector<v1::SuiteMetricResult> JudgeSuite(const JobFrame& frame, const ProbeRows& probes,
                                              const std::vector<v1::CommitRef>& commits,
                                              const std::vector<v1::SuiteMetricInfo>& metrics,
                                              int* more_baseline_runs) {
  int unused = 0;
  if (more_baseline_runs == nullptr) more_baseline_runs = &unused;
  *more_baseline_runs = 0;
  std::vector<v1::SuiteMetricResult> rows;
  if (commits.size() < 2) return rows;
  const absl::flat_hash_set<std::string> members(frame.spec.metric().members().begin(),
                                                 frame.spec.metric().members().end());
  // The reference worker measured BAD; before BAD is measured nothing is judged.
  const std::string& reference = frame.bad_baseline().worker();
  for (const v1::SuiteMetricInfo& info : metrics) {
    if (!members.empty() && !members.contains(info.name())) continue;
    int more_runs = 0;
    rows.push_back(JudgeMetric(
        frame, probes, commits, info, reference,
        members.empty() ? static_cast<int>(metrics.size()) : static_cast<int>(members.size()),
        &more_runs));
    *more_baseline_runs = std::max(*more_baseline_runs, more_runs);
  }
  const bool finished =
      frame.outcome != v1::OUTCOME_UNSPECIFIED && frame.outcome != v1::OUTCOME_RUNNING;
  if (!finished || SuiteFollowsUp(frame.outcome, frame.spec)) return rows;
  for (v1::SuiteMetricResult& row : rows) {
    if (row.state() != v1::SUITE_METRIC_STATE_SEARCHING) continue;
    row.set_state(v1::SUITE_METRIC_STATE_UNRESOLVED);
    row.set_reason(absl::StrCat(
        "its step lies after ", row.last_good().short_sha(), ", at or before ",
        row.first_bad().short_sha(),
        frame.spec.follow_up_depth() >= kMaxSuiteFollowUpDepth
            ? absl::StrCat(", deeper than ", kMaxSuiteFollowUpDepth,
                           " follow-ups search: bisect that range with --lead ", row.name())
            : "; the job ended before it was searched"));
  }
  return rows;
}

void ProjectOnLead(const std::string& lead, v1::TaskResult* result) {
  if (result->outcome() != v1::TASK_OUTCOME_SUCCEEDED || result->metric_name() == lead) return;
  result->clear_samples();
  for (v1::RunRecord& run : *result->mutable_runs()) {
    const auto value = std::find_if(run.suite_values().begin(), run.suite_values().end(),
                                    [&](const v1::SuiteValue& v) { return v.name() == lead; });
    const bool has = run.has_value() && value != run.suite_values().end();
    run.set_has_value(has);
    run.set_value(has ? value->value() : 0);
    if (has) result->add_samples(value->value());
  }
  for (const v1::SuiteMetricInfo& info : result->suite_metrics()) {
    if (info.name() != lead) continue;
    result->set_metric_name(info.name());
    result->set_metric_unit(info.unit());
    result->set_metric_direction(info.direction());
  }
  if (result->samples_size() == 0) {
    result->set_outcome(v1::TASK_OUTCOME_METRIC_MISSING);
    result->set_message(absl::StrCat("the suite's output has no metric '", lead,
                                     "' (the lead); its runs led with '", result->metric_name(),
                                     "'"));
  }
}

void SuiteLedger::Learn(const v1::TaskResult& result) {
  if (!active()) return;
  for (const v1::SuiteMetricInfo& info : result.suite_metrics()) {
    const bool known =
        std::any_of(metrics_.begin(), metrics_.end(),
                    [&](const v1::SuiteMetricInfo& seen) { return seen.name() == info.name(); });
    if (!known) metrics_.push_back(info);
  }
}

void SuiteLedger::Judge() {
  if (!active()) return;
  rows_ = JudgeSuite(*frame_, *probes_, *commits_, metrics_, &more_baseline_runs_);
}

}  // namespace kbisect
