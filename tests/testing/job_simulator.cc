// Copyright 2026 The kbisect Authors.
#include "tests/testing/job_simulator.h"

#include <algorithm>
#include <limits>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/time.h"
#include "coordinator/job/bisect_job.h"
#include "coordinator/job/build_ahead.h"
#include "coordinator/job/result_reuse.h"

namespace kbisect {
namespace {

const absl::Time kStart = absl::FromUnixSeconds(1'800'000'000);

struct Running {
  std::string worker;
  v1::Task task;
  double end = 0;
};

// The shared build cache of the simulated host: when each commit's build is (or will be) ready,
// and which task builds it while it is not.
struct SimulatedBuild {
  double ready = 0;
  std::string task_id;  // The task building it (kAheadTask: a build ahead).
};

constexpr char kAheadTask[] = "build-ahead";

// A SimulatedLoss as two events: the worker leaves, and (when it does) comes back.
struct LossEvent {
  double at = 0;
  std::string worker;
  bool back = false;
};

std::vector<LossEvent> LossEvents(const std::vector<SimulatedLoss>& losses) {
  std::vector<LossEvent> events;
  for (const SimulatedLoss& loss : losses) {
    events.push_back({loss.at, loss.worker, false});
    if (loss.back_after >= 0) events.push_back({loss.at + loss.back_after, loss.worker, true});
  }
  std::stable_sort(events.begin(), events.end(),
                   [](const LossEvent& a, const LossEvent& b) { return a.at < b.at; });
  return events;
}

}  // namespace

std::vector<SimulatedWorker> SimulatedWorkers(int count) {
  std::vector<SimulatedWorker> workers;
  for (int i = 0; i < count; ++i) workers.push_back({absl::StrCat("w", i), 1.0});
  return workers;
}

v1::JobSpec SimulationSpec() {
  v1::JobSpec spec;
  spec.set_repository("/sim");
  spec.set_good("good");
  spec.add_bench_command("./bench.sh");
  spec.set_direction(v1::DIRECTION_LOWER_IS_BETTER);
  spec.set_confirm(true);  // As `kbisect run` does by default.
  return spec;
}

v1::JobSpec SuiteSimulationSpec() {
  v1::JobSpec spec;
  spec.set_repository("/sim");
  spec.set_good("g");
  spec.add_bench_command("bench");
  spec.mutable_metric()->set_suite("auto");
  spec.mutable_metric()->set_lead("lead");
  spec.set_direction(v1::DIRECTION_LOWER_IS_BETTER);
  return spec;
}

std::vector<v1::CommitRef> SimulatedCommits(int n) {
  std::vector<v1::CommitRef> commits(n + 1);
  for (int i = 0; i <= n; ++i) {
    commits[i].set_sha(absl::StrFormat("%040d", i));
    commits[i].set_index(i);
  }
  return commits;
}

SimulationResult SimulateJob(const v1::JobSpec& spec, const SimulationOptions& options) {
  std::vector<v1::CommitRef> commits;
  std::map<std::string, int> index_of;
  for (int i = 0; i <= options.commits; ++i) {
    const int global = options.first_commit + i;
    v1::CommitRef ref;
    ref.set_sha(absl::StrFormat("%040d", global));
    ref.set_tree_sha(absl::StrFormat("%040x", global));
    ref.set_index(i);
    ref.set_subject(absl::StrCat("commit ", global));
    index_of[ref.sha()] = i;
    commits.push_back(std::move(ref));
  }
  std::mt19937_64 rng(options.seed);
  std::map<std::string, double> factor;
  std::map<std::string, double> time_factor;
  std::map<std::string, double> setup_factor;
  std::map<std::string, double> start_seconds;
  std::set<std::string> broken;
  std::vector<std::string> order;
  for (const SimulatedWorker& worker : options.workers) {
    factor[worker.name] = worker.metric_factor;
    time_factor[worker.name] = worker.time_factor;
    setup_factor[worker.name] = worker.setup_factor;
    start_seconds[worker.name] = worker.start_seconds;
    if (worker.broken) broken.insert(worker.name);
    order.push_back(worker.name);
  }
  auto sample = [&](const std::string& worker, int index, double at) {
    const double value =
        options.first_commit + index >= options.culprit ? options.bad_value : options.good_value;
    const double noise =
        options.noise_cv > 0 ? std::normal_distribution<double>(0, options.noise_cv)(rng) : 0;
    const double machine = options.machine_factor ? options.machine_factor(at) : 1.0;
    return value * factor[worker] * machine * (1 + noise);
  };

  BisectJob job(absl::StrCat("sim-", options.first_commit, "-", options.seed), spec, commits,
                kStart, options.cached);
  SimulationResult out;
  std::map<std::string, Running> running;  // By task id.
  std::set<std::string> busy;
  std::map<int, SimulatedBuild> builds;     // By commit index.
  std::map<std::string, size_t> log_index;  // Task id -> its entry in out.task_log.
  double now = 0;
  // When a task starting at `start` has commit `index` built: now if built, when the running
  // build ends, or after a build of its own.
  auto built_at = [&](int index, double start, const std::string& task_id) {
    if (options.build_seconds <= 0) return start;
    auto it = builds.find(index);
    if (it != builds.end()) return std::max(start, it->second.ready);
    ++out.builds;
    const double ready = start + options.build_seconds;
    builds[index] = {ready, task_id};
    return ready;
  };
  auto cancel = [&](const std::vector<std::string>& ids) {
    for (const std::string& id : ids) {
      auto it = running.find(id);
      if (it == running.end()) continue;
      busy.erase(it->second.worker);
      running.erase(it);
      if (auto logged = log_index.find(id); logged != log_index.end()) {
        out.task_log[logged->second].end = now;
      }
      // Its unfinished builds are killed with it.
      for (auto b = builds.begin(); b != builds.end();) {
        b = b->second.task_id == id && b->second.ready > now ? builds.erase(b) : std::next(b);
      }
    }
  };
  // Applies a task's result as the coordinator does: the job's, then the result cache's records.
  auto finish = [&](const std::string& task_id, const v1::TaskResult& result) {
    cancel(job.OnTaskFinished(task_id, result, kStart + absl::Seconds(now)));
    for (v1::CachedResult& record : job.CacheRecordsOf(task_id, result)) {
      out.cache_records.push_back(std::move(record));
    }
    if (options.observe) options.observe(job.status());
  };
  // Keeps the host's builds ahead in line with the job's hints (see SimulationOptions).
  auto build_ahead = [&]() {
    if (options.build_ahead <= 0 || options.build_seconds <= 0) return;
    std::set<int> hinted;
    for (const v1::Task& hint :
         job.BuildAheadTasks(kBuildAheadHintsPerSlot * options.build_ahead)) {
      hinted.insert(hint.commit_index());
    }
    int running_ahead = 0;
    for (auto b = builds.begin(); b != builds.end();) {
      const bool ahead = b->second.task_id == kAheadTask && b->second.ready > now;
      if (ahead && hinted.count(b->first) == 0) {
        b = builds.erase(b);  // Cancelled: nobody hints it any longer.
        continue;
      }
      running_ahead += ahead ? 1 : 0;
      ++b;
    }
    for (const v1::Task& hint :
         job.BuildAheadTasks(kBuildAheadHintsPerSlot * options.build_ahead)) {
      if (running_ahead >= options.build_ahead) break;
      if (builds.count(hint.commit_index()) > 0) continue;
      builds[hint.commit_index()] = {now + options.build_seconds, kAheadTask};
      ++out.builds;
      ++out.builds_ahead;
      ++running_ahead;
    }
  };
  const std::vector<LossEvent> losses = LossEvents(options.losses);
  size_t next_loss = 0;
  std::set<std::string> absent;  // Lost and not back.
  auto next_loss_at = [&]() {
    return next_loss < losses.size() ? losses[next_loss].at : std::numeric_limits<double>::max();
  };
  // Applies the loss events due by now, as the coordinator does when heartbeats stop: the
  // running task's lease expires, then the worker is gone.
  auto apply_losses = [&]() {
    while (next_loss < losses.size() && losses[next_loss].at <= now) {
      const LossEvent& event = losses[next_loss++];
      if (event.back) {
        absent.erase(event.worker);
        continue;
      }
      if (!absent.insert(event.worker).second) continue;
      const absl::Time at = kStart + absl::Seconds(now);
      std::vector<std::string> lost;
      for (const auto& [id, task] : running) {
        if (task.worker == event.worker) lost.push_back(id);
      }
      for (const std::string& id : lost) {
        cancel({id});
        ++out.tasks_lost;
        cancel(job.OnTaskLost(id, "its lease expired (no heartbeat)", at));
      }
      cancel(job.OnWorkerGone(event.worker, "it stopped heartbeating", at));
    }
  };
  while (!job.finished() && now < 100'000) {
    apply_losses();
    if (job.finished()) break;
    std::vector<std::string> idle;
    for (const std::string& worker : order) {
      if (busy.count(worker) == 0 && absent.count(worker) == 0 && start_seconds[worker] <= now) {
        idle.push_back(worker);
      }
    }
    if (!idle.empty()) {
      const absl::Time at = kStart + absl::Seconds(now);
      for (BisectJob::Assignment& a : job.TakeTasks(idle, at)) {
        job.OnTaskStarted(a.task.task_id(), a.worker, 1, at);
        const double spread = options.jitter > 0 ? std::uniform_real_distribution<double>(
                                                       -options.jitter, options.jitter)(rng)
                                                 : 0;
        const bool paired = !a.task.paired_commit_sha().empty();
        const int runs = std::max(1, a.task.runs()) * (paired ? 2 : 1);
        const double checked_out =
            now + options.setup_seconds * setup_factor[a.worker] * (1 + spread);
        double ready = built_at(a.task.commit_index(), checked_out, a.task.task_id());
        if (paired) {
          ready = std::max(ready,
                           built_at(index_of[a.task.paired_commit_sha()], ready, a.task.task_id()));
        }
        out.build_wait[a.task.task_id()] = ready - checked_out;
        const double span =
            ready - now + runs * options.run_seconds * time_factor[a.worker] * (1 + spread);
        busy.insert(a.worker);
        ++out.tasks;
        log_index[a.task.task_id()] = out.task_log.size();
        out.task_log.push_back(
            {a.task.task_id(), a.task.kind(), a.worker, now, -1, std::max(1, a.task.runs())});
        running[a.task.task_id()] = {a.worker, a.task, now + span};
      }
    }
    build_ahead();
    if (running.empty()) {
      if (job.finished()) break;
      now = next_loss_at() > now ? std::min(now + options.poll_seconds, next_loss_at())
                                 : now + options.poll_seconds;
      continue;
    }
    auto next = std::min_element(running.begin(), running.end(), [](const auto& a, const auto& b) {
      return a.second.end < b.second.end;
    });
    const double next_end = next->second.end;
    const bool waiting = busy.size() + absent.size() < order.size();
    if (next_loss_at() < next_end && (!waiting || next_loss_at() <= now + options.poll_seconds)) {
      now = std::max(now, next_loss_at());  // A worker is lost (or back) first.
      continue;
    }
    if (waiting && next_end > now + options.poll_seconds) {
      now += options.poll_seconds;  // Idle workers ask again.
      continue;
    }
    now = std::max(now, next_end);
    Running done = next->second;
    running.erase(next);
    busy.erase(done.worker);
    out.task_log[log_index[done.task.task_id()]].end = now;
    v1::TaskResult result;
    if (broken.count(done.worker) > 0) {
      result.set_outcome(v1::TASK_OUTCOME_BENCH_FAILED);
      result.set_message("benchmark exited 1: no CUDA device");
      result.add_runs()->set_exit_code(1);
      finish(done.task.task_id(), result);
      continue;
    }
    result.set_outcome(v1::TASK_OUTCOME_SUCCEEDED);
    if (options.harness_change >= 0) {
      v1::MeasurementManifest* manifest = result.mutable_manifest();
      v1::HarnessFile* file = manifest->add_harness_files();
      file->set_path("benchmarks/harness.cfg");
      const bool changed =
          options.first_commit + done.task.commit_index() >= options.harness_change;
      file->set_blob_id(std::string(40, changed ? 'b' : 'a'));
      manifest->set_harness_digest(file->blob_id());
      manifest->set_gpu_uuid(absl::StrCat("GPU-", done.worker));
    }
    result.set_metric_name("latency");
    result.set_metric_unit("ms");
    const int index = done.task.commit_index();
    const bool paired = !done.task.paired_commit_sha().empty();
    const int paired_index = paired ? index_of[done.task.paired_commit_sha()] : 0;
    // Run k of the task's `total` ended (total - k - 1) runs before the task did.
    const int runs = std::max(1, done.task.runs());
    const int total = runs * (paired ? 2 : 1);
    const double run_time = options.run_seconds * time_factor[done.worker];
    int k = 0;
    auto run_at = [&] { return now - (total - 1 - k++) * run_time; };
    for (int r = 0; r < runs; ++r) {
      if (paired) {
        const double value = sample(done.worker, paired_index, run_at());
        result.add_paired_samples(value);
        result.add_runs()->set_value(value);
      }
      const double value = sample(done.worker, index, run_at());
      result.add_samples(value);
      result.add_runs()->set_value(value);
    }
    out.bench_runs += result.runs_size();
    finish(done.task.task_id(), result);
  }
  out.status = job.status();
  out.events = job.TakeEvents();
  out.wall_seconds = now;
  out.commits = std::move(commits);
  return out;
}

std::string DescribeProbes(const SimulationResult& result) {
  std::string out = absl::StrCat("outcome=", v1::Outcome_Name(result.status.status()),
                                 " state=", v1::JobState_Name(result.status.state()),
                                 " error=", result.status.error(), "\n");
  for (const v1::Probe& probe : result.status.probes()) {
    absl::StrAppend(&out, "  ", v1::ProbeKind_Name(probe.kind()), " i=", probe.index(),
                    " w=", probe.worker(), " round=", probe.round(),
                    " verdict=", v1::Verdict_Name(probe.verdict()), " median=", probe.median(),
                    " n=", probe.samples_size(), " state=", v1::ProbeState_Name(probe.state()),
                    probe.cached() ? " cached" : "", probe.provisional() ? " provisional" : "",
                    "\n");
  }
  return out;
}

std::vector<v1::CachedResult> CachedResultsOf(const SimulationResult& result) {
  return result.cache_records;
}

}  // namespace kbisect
