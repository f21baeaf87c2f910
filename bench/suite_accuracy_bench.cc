// Copyright 2026 The kbisect Authors.
//
// How right a suite job's judgement on shared runs is (SuiteLedger, decision 188), in the
// simulation: the real BisectJob driven with simulated samples, no git and no processes. Each
// run prints 14 metrics: the lead, with a step at commit C; 5 metrics with the same step ("same");
// 3 with a step of the same size at another commit D ("other"); 5 that never move ("flat"); all
// with the same noise. The job's own search follows the lead; every other metric is judged on its
// rows. A metric the rows cannot place is left to a suite follow-up (an ordinary job led by it,
// whose accuracy is a single-metric job's), so what matters here is what the shared rows decide:
//   lead exact       the lead's culprit is C (the single-metric job's accuracy, as a reference);
//   same: culprit    given C on the lead's rows; wrong: a culprit other than C, or a range (for a
//                    follow-up) without C, or unchanged; deferred: a range with C, or too close;
//   other: placed    its culprit D, or a range with D left to a follow-up; culprit: D itself
//                    (the job's own suite probes found it, decision 223); wrong: anything else;
//   flat: right      unchanged (or too close to tell); wrong: a culprit or a range.
// Nothing is asserted; docs/benchmarks.md quotes the table.
//
//   build/bin/suite_accuracy_bench [--trials 200] [--commits 100] [--workers 1,4] [--seed 1]
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/time.h"
#include "bench/noise_models.h"
#include "coordinator/job/bisect_job.h"
#include "tests/testing/job_simulator.h"

namespace kbisect {
namespace {

const absl::Time kNow = absl::FromUnixSeconds(1'800'000'000);

// The shared models but the 10% CV and the bimodal one (the accuracy tables' extremes).
std::vector<NoiseModel> Noises() {
  std::vector<NoiseModel> noises;
  for (NoiseModel& model : NoiseModels()) {
    if (model.name != "gauss cv=10%" && model.name.rfind("bimodal", 0) != 0) {
      noises.push_back(std::move(model));
    }
  }
  return noises;
}

struct Metric {
  std::string name;
  int step = -1;  // The commit from which it is `1 + effect`; -1: never.
};

struct Tally {
  int trials = 0;
  int lead_exact = 0;
  long runs = 0;
  int same = 0, same_culprit = 0, same_wrong = 0;
  int other = 0, other_placed = 0, other_exact = 0, other_wrong = 0;
  int flat = 0, flat_right = 0, flat_wrong = 0;
};

bool Contains(const v1::SuiteMetricResult& row, int commit) {
  return row.last_good().index() < commit && commit <= row.first_bad().index();
}

void RunTrial(int n, double effect, int workers, const NoiseModel& noise, std::mt19937_64& rng,
              Tally* tally) {
  std::uniform_int_distribution<int> position(1, n);
  const int c = position(rng);
  int d = position(rng);
  while (d == c) d = position(rng);
  std::vector<Metric> metrics = {{"lead", c}};
  for (int i = 0; i < 5; ++i) metrics.push_back({absl::StrCat("same", i), c});
  for (int i = 0; i < 3; ++i) metrics.push_back({absl::StrCat("other", i), d});
  for (int i = 0; i < 5; ++i) metrics.push_back({absl::StrCat("flat", i), -1});

  BisectJob job("sim", SuiteSimulationSpec(), SimulatedCommits(n), kNow);
  for (int round = 0; round < 10000 && !job.finished(); ++round) {
    std::vector<v1::Task> tasks = job.TakeTasks(workers, kNow);
    if (tasks.empty()) break;
    std::vector<std::string> cancelled;
    for (const v1::Task& task : tasks) {
      if (std::find(cancelled.begin(), cancelled.end(), task.task_id()) != cancelled.end()) {
        continue;
      }
      v1::TaskResult result;
      result.set_outcome(v1::TASK_OUTCOME_SUCCEEDED);
      result.set_metric_name("lead");
      result.set_metric_unit("ms");
      for (const Metric& m : metrics) {
        v1::SuiteMetricInfo* info = result.add_suite_metrics();
        info->set_name(m.name);
        info->set_unit("ms");
        info->set_direction(v1::DIRECTION_LOWER_IS_BETTER);
      }
      for (int r = 0; r < task.runs(); ++r) {
        v1::RunRecord* run = result.add_runs();
        run->set_has_value(true);
        for (const Metric& m : metrics) {
          const double truth = m.step >= 0 && task.commit_index() >= m.step ? 1 + effect : 1.0;
          const double sample = noise.sample(truth, rng);
          v1::SuiteValue* value = run->add_suite_values();
          value->set_name(m.name);
          value->set_value(sample);
          if (m.name == "lead") {
            run->set_value(sample);
            result.add_samples(sample);
          }
        }
      }
      for (const std::string& id : job.OnTaskFinished(task.task_id(), result, kNow)) {
        cancelled.push_back(id);
      }
    }
  }
  const v1::JobStatus& status = job.status();
  ++tally->trials;
  tally->runs += status.bench_runs();
  tally->lead_exact +=
      status.status() == v1::OUTCOME_CULPRIT_FOUND && status.culprit().index() == c;
  for (const v1::SuiteMetricResult& row : status.suite()) {
    const bool culprit = row.state() == v1::SUITE_METRIC_STATE_CULPRIT;
    const bool range = row.state() == v1::SUITE_METRIC_STATE_SEARCHING;
    const bool quiet = row.state() == v1::SUITE_METRIC_STATE_UNCHANGED ||
                       row.state() == v1::SUITE_METRIC_STATE_UNRESOLVED;
    if (row.name().rfind("same", 0) == 0) {
      ++tally->same;
      if (culprit && row.culprit().index() == c) {
        ++tally->same_culprit;
      } else if (culprit || (range && !Contains(row, c)) ||
                 row.state() == v1::SUITE_METRIC_STATE_UNCHANGED) {
        ++tally->same_wrong;
        if (std::getenv("SUITE_DEBUG") != nullptr) {
          std::fprintf(stderr, "same wrong: c=%d state=%d lg=%d fb=%d culprit=%d reason=%s\n", c,
                       row.state(), row.last_good().index(), row.first_bad().index(),
                       row.culprit().index(), row.reason().c_str());
        }
      }
    } else if (row.name().rfind("other", 0) == 0) {
      ++tally->other;
      if ((culprit && row.culprit().index() == d) || (range && Contains(row, d))) {
        ++tally->other_placed;
        tally->other_exact += culprit;
      } else {
        ++tally->other_wrong;
        if (std::getenv("SUITE_DEBUG") != nullptr) {
          std::fprintf(stderr, "other wrong: d=%d state=%d lg=%d fb=%d culprit=%d reason=%s\n", d,
                       row.state(), row.last_good().index(), row.first_bad().index(),
                       row.culprit().index(), row.reason().c_str());
        }
      }
    } else if (row.name().rfind("flat", 0) == 0) {
      ++tally->flat;
      if (quiet) {
        ++tally->flat_right;
      } else {
        ++tally->flat_wrong;
        if (std::getenv("SUITE_DEBUG") != nullptr) {
          std::fprintf(stderr, "flat wrong: %s state=%d pct=%.2f good=%.4f bad=%.4f reason=%s\n",
                       row.name().c_str(), row.state(), row.regression_pct(), row.good_median(),
                       row.bad_median(), row.reason().c_str());
        }
      }
    }
  }
}

std::string Share(int part, int whole) {
  return whole == 0 ? "-" : absl::StrFormat("%.1f%%", 100.0 * part / whole);
}

}  // namespace
}  // namespace kbisect

int main(int argc, char** argv) {
  using namespace kbisect;
  CLI::App app{"A suite job's judgement on shared runs, in the simulation"};
  int trials = 200;
  int commits = 100;
  std::vector<int> worker_counts = {1, 4};
  std::vector<double> effects = {0.1, 0.3};
  uint64_t seed = 1;
  app.add_option("--trials", trials, "Jobs per cell");
  app.add_option("--commits", commits, "Commits in the range");
  app.add_option("--workers", worker_counts, "Worker counts")->delimiter(',');
  app.add_option("--effects", effects, "Step sizes (fractions)")->delimiter(',');
  app.add_option("--seed", seed, "Random seed");
  CLI11_PARSE(app, argc, argv);

  std::printf(
      "%d jobs per cell, %d commits; 14 metrics a run: lead + 5 same step + 3 other "
      "step + 5 flat\n\n",
      trials, commits);
  std::printf(
      "| noise | effect | W | lead exact | same: culprit | same: wrong | other: placed | "
      "other: culprit | other: wrong | flat: right | flat: wrong | runs/job |\n");
  std::printf("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n");
  for (const NoiseModel& noise : Noises()) {
    for (double effect : effects) {
      for (int workers : worker_counts) {
        std::mt19937_64 rng(seed);
        Tally t;
        for (int i = 0; i < trials; ++i) RunTrial(commits, effect, workers, noise, rng, &t);
        std::printf("| %s | %.0f%% | %d | %s | %s | %s | %s | %s | %s | %s | %s | %.1f |\n",
                    noise.name.c_str(), 100 * effect, workers,
                    Share(t.lead_exact, t.trials).c_str(), Share(t.same_culprit, t.same).c_str(),
                    Share(t.same_wrong, t.same).c_str(), Share(t.other_placed, t.other).c_str(),
                    Share(t.other_exact, t.other).c_str(), Share(t.other_wrong, t.other).c_str(),
                    Share(t.flat_right, t.flat).c_str(), Share(t.flat_wrong, t.flat).c_str(),
                    static_cast<double>(t.runs) / t.trials);
        std::fflush(stdout);
      }
    }
  }
  return 0;
}
