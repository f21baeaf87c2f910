// Copyright 2026 The kbisect Authors.
//
// An asynchronous, event-driven simulation of one BisectJob run by a pool of workers, as the
// coordinator runs it: idle workers ask for work whenever something happens (a result, a
// cancellation, or a poll every `poll_seconds` while they wait), each task takes a setup time
// (checkout + build) plus its runs, results arrive in time order, and cancelled tasks free their
// worker at once. No git, no processes, no threads: deterministic for a seed.
//
// It exists so that tests can check the job's promises (round bound, drift, blame) over many
// culprit positions, seeds and worker counts the way the product meets them, with the
// asynchrony that synchronous "rounds of TakeTasks" hide.
#ifndef KBISECT_TESTS_TESTING_JOB_SIMULATOR_H_
#define KBISECT_TESTS_TESTING_JOB_SIMULATOR_H_

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "kbisect/v1/kbisect.pb.h"

namespace kbisect {

struct SimulatedWorker {
  std::string name;
  // Every sample this GPU measures is multiplied by this (1.35: a GPU 35% slower).
  double metric_factor = 1.0;
  // Every task fails on this GPU (the benchmark exits 1: no GPU, a broken driver).
  bool broken = false;
  // Each benchmark run takes this many times the run's time (a slow GPU is slow in time too).
  double time_factor = 1.0;
  // Its checkout and build take this many times setup_seconds (a slower host, a colder cache).
  double setup_factor = 1.0;
  // It first asks for work at this many seconds (a worker that registers late).
  double start_seconds = 0;
};

// The coordinator loses `worker` at `at` seconds, as when its heartbeats stop: the lease of the
// task it runs expires (OnTaskLost), and then the worker is gone (OnWorkerGone). With
// `back_after` >= 0 the same worker asks for work again that many seconds later (a reconnect
// under its name); otherwise it never comes back.
struct SimulatedLoss {
  std::string worker;
  double at = 0;
  double back_after = -1;
};

struct SimulationOptions {
  int commits = 100;  // n: index 0 = GOOD, n = BAD.
  int culprit = 50;   // First index measuring `bad_value`.
  double good_value = 100;
  double bad_value = 125;
  double noise_cv = 0;  // Gaussian noise per sample, relative.
  uint64_t seed = 1;
  std::vector<SimulatedWorker> workers;  // In the order they first ask.
  double setup_seconds = 0.2;            // Checkout (and build, without build_seconds) of one task.
  // A build step of this many seconds at each commit a task measures, paid once per commit: the
  // workers share one build cache (the slots of `kbisect run` on one host), so a task at a
  // commit built before pays nothing and one at a commit being built waits for that build. A
  // build cancelled with its task is lost. 0: no build step (setup_seconds covers it).
  double build_seconds = 0;
  // Builds ahead (`--build-ahead`): after every event the host takes the job's BuildAheadTasks
  // (kBuildAheadHintsPerSlot per build) and keeps up to this many of them building, most useful
  // first; a running one no longer hinted is cancelled. They cost build_seconds of no worker's
  // time. 0: none.
  int build_ahead = 0;
  double run_seconds = 0.4;   // One benchmark run.
  double jitter = 0.05;       // Relative spread of each task's duration.
  double poll_seconds = 0.5;  // How often waiting idle workers ask again.
  // The job's GOOD is commit `first_commit` of a longer history: shas and the culprit are
  // positions in that history, so two jobs over overlapping ranges share commits.
  int first_commit = 0;
  // When >= 0, every result carries a measurement manifest whose harness file
  // benchmarks/harness.cfg changes at this commit (a history position, like `culprit`), and whose
  // GPU uuid is the worker's name. -1: results carry no manifest.
  int harness_change = -1;
  // Results of earlier jobs (the result cache's lookup), passed to the job.
  std::vector<v1::CachedResult> cached;
  // The machine's speed at a simulated second: every sample of a run that ends then is
  // multiplied by it, on every worker (a VM whose speed drifts under load, a GPU warming up:
  // `[](double t) { return 1 + 0.001 * t; }`, or a step at some second). Unset: 1.
  std::function<double(double seconds)> machine_factor;
  // Workers the coordinator loses during the job (see SimulatedLoss).
  std::vector<SimulatedLoss> losses;
  // Called with the job's status after each result it takes (what a client polling the job could
  // have seen), when set.
  std::function<void(const v1::JobStatus&)> observe;
};

// One task as the simulated workers ran it (an extension of a probe is a task of its own, where
// the probe table keeps only the probe's latest start).
struct SimulatedTask {
  std::string task_id;
  v1::ProbeKind kind = v1::PROBE_KIND_UNSPECIFIED;
  std::string worker;
  double start = 0;
  double end = -1;  // When it finished or was cancelled; -1 if still running at the end.
  int runs = 0;     // Runs asked for (pairs for a confirmation).
};

struct SimulationResult {
  v1::JobStatus status;
  std::vector<v1::JobEvent> events;
  double wall_seconds = 0;
  int tasks = 0;         // Tasks handed out (cancelled ones included).
  int builds = 0;        // Builds started (build_seconds > 0), cancelled included.
  int builds_ahead = 0;  // Of those, builds ahead.
  // Seconds each task (by id) waited for its commit's build after its checkout.
  std::map<std::string, double> build_wait;
  int bench_runs = 0;                   // Benchmark runs of finished tasks.
  std::vector<v1::CommitRef> commits;   // The job's commit list.
  std::vector<SimulatedTask> task_log;  // Every task handed out, in hand-out order.
  int tasks_lost = 0;                   // Tasks lost with their worker (SimulatedLoss).
  // What the coordinator would store in the result cache (BisectJob::CacheRecordsOf of every
  // task's result as it finished), in that order.
  std::vector<v1::CachedResult> cache_records;
};

// Names "w0" .. "w<count-1>", all with factor 1.
std::vector<SimulatedWorker> SimulatedWorkers(int count);

// Runs the job over `options.commits` synthetic commits with `spec` (defaults filled by the job)
// to its end (or 100,000 simulated seconds).
SimulationResult SimulateJob(const v1::JobSpec& spec, const SimulationOptions& options);

// The outcome and every probe of a simulated job, one line each, for a failed assertion.
std::string DescribeProbes(const SimulationResult& result);

// What the coordinator would store in the result cache from a finished simulated job (its
// cache_records).
std::vector<v1::CachedResult> CachedResultsOf(const SimulationResult& result);

// The spec the simulations use: lower is better, confirmation on (as `kbisect run`), defaults
// otherwise.
v1::JobSpec SimulationSpec();

// The spec of a simulated suite job (the job driven call by call by suite_ledger_test and
// bench/suite_accuracy_bench): every metric a run prints ("auto"), led by "lead", lower is
// better, defaults otherwise.
v1::JobSpec SuiteSimulationSpec();

// Commits 0..n of a simulated job: sha the index written as 40 digits, index set.
std::vector<v1::CommitRef> SimulatedCommits(int n);

}  // namespace kbisect

#endif  // KBISECT_TESTS_TESTING_JOB_SIMULATOR_H_
