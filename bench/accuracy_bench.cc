// Copyright 2026 The kbisect Authors.
//
// Accuracy of the verdict logic under synthetic noise, with no git and no processes: the real
// BisectJob (baselines, statistical classifier, adaptive repeats, k-ary search) is driven with
// simulated benchmark samples, side by side with two fixed rules over the same BisectSearch:
//   * seed:      3 runs per commit, median, the 30% threshold rule (the manual procedure);
//   * fixed-10:  10 runs per commit, median, the same threshold (Pinpoint-style fixed repeats).
// Prints, per noise model, effect size and worker count: exact-culprit accuracy, mean bench runs
// per bisect and mean rounds. Nothing is asserted; docs/benchmarks.md quotes the table.
//
//   build/bin/accuracy_bench [--trials 1000] [--commits 100] [--seed 1]
#include <cmath>
#include <cstdio>
#include <functional>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/time.h"
#include "common/search/bisect_search.h"
#include "coordinator/job/bisect_job.h"
#include "coordinator/job/probe_classifier.h"

namespace kbisect {
namespace {

const absl::Time kNow = absl::FromUnixSeconds(1'800'000'000);

struct NoiseModel {
  std::string name;
  // Returns one sample of a commit whose true value is `value`.
  std::function<double(double value, std::mt19937_64& rng)> sample;
};

std::vector<NoiseModel> NoiseModels() {
  std::vector<NoiseModel> models;
  for (double cv : {0.01, 0.03, 0.05, 0.10}) {
    models.push_back({absl::StrFormat("gauss cv=%g%%", cv * 100),
                      [cv](double v, std::mt19937_64& rng) {
                        return v * (1 + std::normal_distribution<double>(0, cv)(rng));
                      }});
  }
  // Student t with 3 degrees of freedom scaled to a 5% standard deviation: rare large outliers.
  models.push_back({"heavy-tail t3 5%", [](double v, std::mt19937_64& rng) {
                      const double t = std::student_t_distribution<double>(3)(rng);
                      return v * (1 + 0.05 * t / std::sqrt(3.0));
                    }});
  // 2% gaussian noise plus a slow mode (+15%) one run in five, as with a noisy neighbour.
  models.push_back({"bimodal 2%+15%@20%", [](double v, std::mt19937_64& rng) {
                      const double base = v * (1 + std::normal_distribution<double>(0, 0.02)(rng));
                      return std::bernoulli_distribution(0.2)(rng) ? base * 1.15 : base;
                    }});
  return models;
}

struct Outcome {
  bool exact = false;
  int bench_runs = 0;
  int rounds = 0;
};

std::vector<v1::CommitRef> Commits(int n) {
  std::vector<v1::CommitRef> commits(n + 1);
  for (int i = 0; i <= n; ++i) {
    commits[i].set_sha(absl::StrFormat("%040d", i));
    commits[i].set_index(i);
  }
  return commits;
}

// kbisect's full verdict logic, synchronous rounds of `workers` tasks.
Outcome RunKbisect(int n, int culprit, double effect, int workers, const NoiseModel& noise,
                   std::mt19937_64& rng) {
  v1::JobSpec spec;
  spec.set_repository("/sim");
  spec.set_good("g");
  spec.add_bench_command("bench");
  spec.set_direction(v1::DIRECTION_LOWER_IS_BETTER);
  BisectJob job("sim", spec, Commits(n), kNow);
  for (int guard = 0; guard < 10000 && !job.finished(); ++guard) {
    std::vector<v1::Task> tasks = job.TakeTasks(workers, kNow);
    if (tasks.empty()) break;
    std::vector<std::string> cancelled;
    for (const v1::Task& task : tasks) {
      if (std::find(cancelled.begin(), cancelled.end(), task.task_id()) != cancelled.end()) {
        continue;
      }
      v1::TaskResult result;
      result.set_outcome(v1::TASK_OUTCOME_SUCCEEDED);
      const double value = task.commit_index() >= culprit ? 1.0 + effect : 1.0;
      for (int r = 0; r < task.runs(); ++r) {
        const double sample = noise.sample(value, rng);
        result.add_samples(sample);
        result.add_runs()->set_value(sample);
      }
      for (const std::string& id : job.OnTaskFinished(task.task_id(), result, kNow)) {
        cancelled.push_back(id);
      }
    }
  }
  const v1::JobStatus& status = job.status();
  if (std::getenv("ACCURACY_DEBUG") != nullptr && !(status.status() == v1::OUTCOME_CULPRIT_FOUND &&
                                                    status.culprit().index() == culprit)) {
    int ambiguous = 0;
    int max_samples = 0;
    for (const auto& p : status.probes()) {
      ambiguous += p.verdict() == v1::VERDICT_AMBIGUOUS;
      max_samples = std::max(max_samples, p.samples_size());
    }
    std::fprintf(stderr, "miss: status=%d culprit=%d found=%d cands=%d ambiguous=%d base=%d max=%d\n",
                 status.status(), culprit, status.culprit().index(), status.candidates_size(),
                 ambiguous, status.baseline().good().samples_size(), max_samples);
    for (const v1::Probe& p : status.probes()) {
      std::fprintf(stderr, "  %s index=%d truth=%s verdict=%s runs=%d median=%.4f worker=%s\n",
                   v1::ProbeKind_Name(p.kind()).c_str(), p.index(),
                   p.index() >= culprit ? "BAD" : "GOOD", VerdictWord(p.verdict()).c_str(),
                   p.samples_size(), p.median(), p.worker().c_str());
    }
  }
  Outcome out;
  out.exact = status.status() == v1::OUTCOME_CULPRIT_FOUND && status.culprit().index() == culprit;
  out.bench_runs = status.bench_runs();
  out.rounds = status.rounds();
  return out;
}

// A fixed number of runs per commit, median, threshold rule; synchronous k-ary rounds.
Outcome RunFixed(int n, int culprit, double effect, int workers, int runs,
                 const NoiseModel& noise, std::mt19937_64& rng) {
  auto measure = [&](int index) {
    std::vector<double> samples;
    for (int r = 0; r < runs; ++r) {
      samples.push_back(noise.sample(index >= culprit ? 1.0 + effect : 1.0, rng));
    }
    return samples;
  };
  Outcome out;
  const std::vector<double> good = measure(0);
  const std::vector<double> bad = measure(n);
  out.bench_runs = 2 * runs;
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
  };
  const double g = median(good);
  const double b = median(bad);
  if (b <= g) return out;  // The fixed rule would stop here (swapped or no regression).
  BisectSearch search(n);
  while (!search.Done()) {
    std::vector<int> probes = search.NextProbes(workers);
    if (probes.empty()) break;
    ++out.rounds;
    for (int index : probes) {
      const std::vector<double> samples = measure(index);
      out.bench_runs += runs;
      const v1::Verdict verdict = ClassifyByThreshold(samples, g, b, 0.3);
      (void)search.Record(index, verdict == v1::VERDICT_BAD ? Verdict::kBad : Verdict::kGood);
    }
  }
  const std::vector<int> candidates = search.Candidates();
  out.exact = candidates.size() == 1 && candidates[0] == culprit;
  return out;
}

}  // namespace
}  // namespace kbisect

int main(int argc, char** argv) {
  int trials = 1000;
  int commits = 100;
  uint64_t seed = 1;
  std::string only_noise;
  std::vector<double> effects = {0.05, 0.10, 0.20, 0.50};
  std::vector<int> worker_counts = {1, 4, 8};
  CLI::App app{"Accuracy of kbisect's verdicts against fixed rules under synthetic noise"};
  app.add_option("--trials", trials)->capture_default_str();
  app.add_option("--commits", commits)->capture_default_str();
  app.add_option("--seed", seed)->capture_default_str();
  app.add_option("--noise", only_noise, "Only noise models whose name starts with this");
  app.add_option("--effects", effects, "Effect sizes (fractions)")->delimiter(',');
  app.add_option("--workers", worker_counts, "Worker counts")->delimiter(',');
  CLI11_PARSE(app, argc, argv);

  std::cout << absl::StrFormat(
      "%d trials per cell, %d commits, culprit uniform in 1..%d, lower is better.\n"
      "Columns per method: exact-culprit accuracy %% / mean bench runs / mean rounds.\n\n",
      trials, commits, commits);
  std::cout << absl::StrFormat("%-20s %6s %3s | %-24s | %-24s | %-24s\n", "noise", "effect", "W",
                               "kbisect (adaptive)", "seed (3 runs)", "fixed 10 runs");
  std::mt19937_64 rng(seed);
  for (const kbisect::NoiseModel& noise : kbisect::NoiseModels()) {
    if (!only_noise.empty() && noise.name.rfind(only_noise, 0) != 0) continue;
    for (double effect : effects) {
      for (int workers : worker_counts) {
        struct Sum {
          int exact = 0;
          long runs = 0;
          long rounds = 0;
        } sums[3];
        for (int t = 0; t < trials; ++t) {
          const int culprit = std::uniform_int_distribution<int>(1, commits)(rng);
          const kbisect::Outcome outcomes[3] = {
              kbisect::RunKbisect(commits, culprit, effect, workers, noise, rng),
              kbisect::RunFixed(commits, culprit, effect, workers, 3, noise, rng),
              kbisect::RunFixed(commits, culprit, effect, workers, 10, noise, rng)};
          for (int m = 0; m < 3; ++m) {
            sums[m].exact += outcomes[m].exact ? 1 : 0;
            sums[m].runs += outcomes[m].bench_runs;
            sums[m].rounds += outcomes[m].rounds;
          }
        }
        std::string cells[3];
        for (int m = 0; m < 3; ++m) {
          cells[m] = absl::StrFormat("%6.1f%% %6.1f %5.1f", 100.0 * sums[m].exact / trials,
                                     static_cast<double>(sums[m].runs) / trials,
                                     static_cast<double>(sums[m].rounds) / trials);
        }
        std::cout << absl::StrFormat("%-20s %5.0f%% %3d | %-24s | %-24s | %-24s\n", noise.name,
                                     effect * 100, workers, cells[0], cells[1], cells[2])
                  << std::flush;
      }
    }
  }
  return 0;
}
