// Copyright 2026 The kbisect Authors.
//
// Crash consistency of the real kbisect-coordinator, swept over every state change of a job.
// The coordinator is armed with a test-only crash point (coordinator/crash_points.h): it ends
// with _exit right after its N-th journal commit, or right before the reply of its N-th mutating
// RPC. Each time it dies the test restarts it on the same state directory and port, armed again
// S steps later, so one job dies at its steps K, K+S, K+2S, ... (the count restarts with each
// process, and a commit that preceded a crash is on disk, so the steps are those of the job's
// history however the workers' calls interleave). Sweeping K over 1..S covers every step of
// the job. The job descends into a merged branch, so its follow-up job is swept too.
//
// After each job, whatever the crashes:
//   * the job and its follow-up end with the planted culprit (merge and branch commit);
//   * a probe that a status read showed finished is finished in every later read (a read shows
//     only what was committed);
//   * no probe is lost or counted twice and bench_runs is the sum of the probes' runs (plus,
//     for the job, its follow-up's bench_runs), for the job and for its follow-up
//     (ExpectNothingLostOrDuplicated);
//   * a watcher that followed WatchJob across every restart (resuming after the last sequence
//     number it saw, as `kbisect watch` does) saw sequence numbers 1, 2, 3, ... without a gap
//     or a repeat, ending with FINISHED, and each event it saw is the one a watcher that reads
//     the whole log after the end sees under that number.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <iostream>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "common/sync/mutex.h"
#include "gmock/gmock.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/support/channel_arguments.h"
#include "gtest/gtest.h"
#include "kbisect/v1/kbisect.grpc.pb.h"
#include "nlohmann/json.hpp"
#include "tests/integration/job_checks.h"
#include "tests/testing/git_fixture.h"
#include "tests/testing/process.h"

namespace kbisect {
namespace {

using ::kbisect::testing::Bin;
using ::kbisect::testing::CommandResult;
using ::kbisect::testing::ExpectNothingLostOrDuplicated;
using ::kbisect::testing::Process;
using ::kbisect::testing::ReadFile;
using ::kbisect::testing::RunShell;
using ::kbisect::testing::ShellQuote;
using ::kbisect::testing::Trim;
using ::kbisect::testing::WaitFor;
using ::testing::HasSubstr;

// The exit status of a crash point (coordinator/crash_points.h, kCrashPointExitCode).
constexpr int kCrashExit = 86;
// One run per probe keeps each job short; the demo benchmark's 1% noise against its 45% step
// still gives every probe a clear verdict. The confidence stop is off: its end check extends a
// finished probe with more runs (it runs again, with two reports' samples), which the checks
// below would read as a probe lost or counted twice; its journal entries are the same kinds
// (TakeTasks, OnTaskFinished) this sweep crashes around.
constexpr char kJobFlags[] = " --runs 1 --no-cache --descend-merges --confidence off -- ./bench.sh";

// A channel that reconnects within 100 ms of the coordinator's return (gRPC waits 1 s and more
// by default), as the worker's does. Its subchannel is its own: channels with the same arguments
// share one from gRPC's global pool, and the watcher's retries every 20 ms while the coordinator
// is down kept that one backing off for 5-10 s after the coordinator was back (12 jobs took
// 153 s, 34 s with subchannels of their own).
std::shared_ptr<grpc::Channel> Channel(const std::string& address) {
  grpc::ChannelArguments arguments;
  arguments.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  arguments.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  arguments.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  return grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), arguments);
}

// Follows one job's WatchJob stream on its own thread, resuming after the last sequence number
// it received whenever the stream breaks, and records what it saw.
class ResumingWatcher {
 public:
  ResumingWatcher(const std::string& address, std::string job_id)
      : address_(address), job_id_(std::move(job_id)), thread_([this] { Follow(); }) {}

  ~ResumingWatcher() {
    {
      kbisect::MutexLock lock(&mu_);
      stop_ = true;
      if (context_ != nullptr) context_->TryCancel();
    }
    thread_.join();
  }

  // Waits until the FINISHED event arrived; false after `timeout`.
  bool WaitFinished(absl::Duration timeout) {
    kbisect::MutexLock lock(&mu_);
    return mu_.AwaitWithTimeout(kbisect::Condition(&finished_), timeout);
  }

  std::vector<v1::JobEvent> events() const {
    kbisect::MutexLock lock(&mu_);
    return events_;
  }
  std::vector<std::string> problems() const {
    kbisect::MutexLock lock(&mu_);
    return problems_;
  }

 private:
  void Follow() {
    while (true) {
      grpc::ClientContext context;
      v1::WatchJobRequest request;
      {
        kbisect::MutexLock lock(&mu_);
        if (stop_ || finished_) return;
        context_ = &context;
        request.set_job_id(job_id_);
        request.set_after_sequence(events_.empty() ? 0 : events_.back().sequence());
      }
      // A fresh channel for each try: one that failed to connect waits out its backoff.
      const std::unique_ptr<v1::CoordinatorService::Stub> stub =
          v1::CoordinatorService::NewStub(Channel(address_));
      std::unique_ptr<grpc::ClientReader<v1::WatchJobResponse>> reader =
          stub->WatchJob(&context, request);
      v1::WatchJobResponse response;
      while (reader->Read(&response)) {
        kbisect::MutexLock lock(&mu_);
        const int64_t expected = events_.empty() ? 1 : events_.back().sequence() + 1;
        if (response.event().sequence() != expected) {
          problems_.push_back(absl::StrCat("expected event ", expected, ", got ",
                                           response.event().sequence(), ": ",
                                           response.event().message()));
        }
        events_.push_back(response.event());
        if (response.event().kind() == v1::JOB_EVENT_KIND_FINISHED) finished_ = true;
      }
      (void)reader->Finish();
      {
        kbisect::MutexLock lock(&mu_);
        context_ = nullptr;
        if (stop_ || finished_) return;
      }
      // The coordinator is down (killed by its crash point): try again shortly.
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }

  const std::string address_;
  const std::string job_id_;
  mutable kbisect::Mutex mu_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  grpc::ClientContext* context_ ABSL_GUARDED_BY(mu_) = nullptr;
  std::vector<v1::JobEvent> events_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> problems_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;
};

class CrashSweepTest : public ::kbisect::testing::ClusterFixture {
 protected:
  // Starts the coordinator on listen_ with the crash point `variable` armed at `n` (nothing
  // armed when `variable` is empty); waits until it serves or has died.
  void StartCoordinator(const std::string& variable, int n) {
    const std::string port_file = tmp_.Join("coordinator.port");
    RunShell("rm -f " + port_file);
    const std::string env = variable.empty() ? "" : absl::StrCat("env ", variable, "=", n, " ");
    coordinator_ = std::make_unique<Process>(
        absl::StrCat(env, Bin("kbisect-coordinator"), " --listen ", listen_, " --state-dir ",
                     ShellQuote(tmp_.Join("state")), " --port-file ", port_file,
                     " --lease-duration 5"),
        tmp_.Join("coordinator.log"));
    ASSERT_TRUE(WaitFor(
        [&] {
          return access(port_file.c_str(), F_OK) == 0 ||
                 coordinator_->Wait(std::chrono::milliseconds(0)) != Process::kRunning;
        },
        std::chrono::seconds(15)))
        << coordinator_->log();
    if (listen_ == "127.0.0.1:0") {
      listen_ = absl::StrCat("127.0.0.1:", Trim(ReadFile(port_file)));
      address_ = listen_;
    }
  }

  // If the coordinator died, checks that its crash point ended it and restarts it armed again
  // `stride` steps later; returns whether it had died.
  bool RestartIfCrashed(const std::string& variable, int stride) {
    const int exit_code = coordinator_->Wait(std::chrono::milliseconds(0));
    if (exit_code == Process::kRunning) return false;
    EXPECT_EQ(exit_code, kCrashExit) << coordinator_->log();
    ++crashes_;
    StartCoordinator(variable, stride);
    return true;
  }

  absl::StatusOr<v1::JobStatus> GetJob(const std::string& job_id) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(2));
    v1::GetJobRequest request;
    request.set_job_id(job_id);
    v1::GetJobResponse response;
    const grpc::Status status = Stub()->GetJob(&context, request, &response);
    if (!status.ok()) return absl::UnavailableError(status.error_message());
    return response.job();
  }

  v1::CoordinatorService::Stub* Stub() {
    if (stub_ == nullptr) {
      stub_ = v1::CoordinatorService::NewStub(Channel(listen_));
    }
    return stub_.get();
  }

  // Runs one job to its end with the crash point `variable` first armed at `first` and then
  // every `stride` steps, and checks it (see the top of this file).
  void SweepJob(const std::string& variable, int first, int stride) {
    SCOPED_TRACE(absl::StrCat(variable, " first at ", first, ", then every ", stride));
    const int crashes_before = crashes_;
    if (coordinator_ != nullptr) {
      coordinator_->Signal(SIGKILL);
      coordinator_->Wait(std::chrono::seconds(5));
    }
    StartCoordinator(variable, first);
    // The submission itself may be what kills it: submit again under the same request id.
    const std::string request_id = absl::StrCat("sweep-", variable, "-", first);
    std::string job_id;
    for (int attempt = 0; attempt < 20 && job_id.empty(); ++attempt) {
      CommandResult submitted = Kbisect(
          absl::StrCat("submit v1.0 HEAD --repo ", repo_, " --request-id ", request_id, kJobFlags));
      if (submitted.exit_code == 0) {
        job_id = Trim(submitted.out);
        RestartIfCrashed(variable, stride);
        continue;
      }
      // The call failed: its coordinator is gone, or going (give it a moment to be reaped).
      coordinator_->Wait(std::chrono::seconds(2));
      if (!RestartIfCrashed(variable, stride)) {
        ADD_FAILURE() << "submit failed without a crash: " << submitted.err;
        return;
      }
    }
    ASSERT_FALSE(job_id.empty());
    ResumingWatcher watcher(listen_, job_id);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    std::set<std::string> seen_finished;
    while (true) {
      ASSERT_LT(std::chrono::steady_clock::now(), deadline)
          << "job " << job_id << " did not finish\n"
          << coordinator_->log();
      if (RestartIfCrashed(variable, stride)) continue;
      absl::StatusOr<v1::JobStatus> job = GetJob(job_id);
      if (!job.ok()) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        continue;
      }
      // A status read shows only what was committed: a probe seen finished stays finished,
      // whatever crashes next.
      std::set<std::string> finished;
      for (const v1::Probe& probe : job->probes()) {
        if (probe.state() == v1::PROBE_STATE_FINISHED) finished.insert(probe.probe_id());
      }
      for (const std::string& probe : seen_finished) {
        EXPECT_EQ(finished.count(probe), 1u) << "probe " << probe << " was finished, then lost";
      }
      seen_finished = std::move(finished);
      if (job->state() == v1::JOB_STATE_DONE || job->state() == v1::JOB_STATE_FAILED ||
          job->state() == v1::JOB_STATE_CANCELLED) {
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    // Workers reconnecting after the last crash may still trip the armed point: the checks talk
    // to an unarmed coordinator.
    coordinator_->Signal(SIGKILL);
    coordinator_->Wait(std::chrono::seconds(5));
    StartCoordinator("", 0);
    if (!watcher.WaitFinished(absl::Seconds(30))) {
      std::string seen;
      for (const v1::JobEvent& event : watcher.events()) {
        absl::StrAppend(&seen, event.sequence(), " ", event.message().substr(0, 60), "\n");
      }
      ResumingWatcher fresh(listen_, job_id);
      (void)fresh.WaitFinished(absl::Seconds(10));
      std::string all;
      for (const v1::JobEvent& event : fresh.events()) {
        absl::StrAppend(&all, event.sequence(), " ", event.message().substr(0, 60), "\n");
      }
      FAIL() << "the watcher did not see FINISHED; it saw:\n" << seen << "\nthe log is:\n" << all;
    }
    EXPECT_GT(crashes_, crashes_before) << "the crash point never fired";

    const nlohmann::json job = Json("status --json " + job_id);
    EXPECT_EQ(job["status"], "culprit_found") << job.dump(2);
    EXPECT_EQ(job["culprit"]["sha"], merge_);
    EXPECT_EQ(job["merged_culprit"]["sha"], branch_culprit_) << job.dump(2);
    ASSERT_EQ(job["follow_up_job_ids"].size(), 1u) << job.dump(2);
    const nlohmann::json branch =
        Json("status --json " + job["follow_up_job_ids"][0].get<std::string>());
    EXPECT_EQ(branch["culprit"]["sha"], branch_culprit_) << branch.dump(2);
    ExpectNothingLostOrDuplicated(branch, 1);
    ExpectNothingLostOrDuplicated(job, 1, branch.value("bench_runs", 0));

    // The watcher's log across the restarts: contiguous, and the same as the whole log now.
    for (const std::string& problem : watcher.problems()) ADD_FAILURE() << problem;
    const std::vector<v1::JobEvent> seen = watcher.events();
    ResumingWatcher fresh(listen_, job_id);
    ASSERT_TRUE(fresh.WaitFinished(absl::Seconds(10)));
    const std::vector<v1::JobEvent> all = fresh.events();
    ASSERT_EQ(seen.size(), all.size());
    for (size_t i = 0; i < seen.size(); ++i) {
      EXPECT_EQ(seen[i].sequence(), all[i].sequence());
      EXPECT_EQ(seen[i].kind(), all[i].kind()) << "event " << all[i].sequence();
      EXPECT_EQ(seen[i].message(), all[i].message()) << "event " << all[i].sequence();
    }
    points_ += crashes_ - crashes_before;
  }

  void SetUp() override {
    const std::string made = MakeRepo(repo_, "--commits 12 --merge-branch 8:5:3 --files 2");
    for (const std::string line : {"culprit=", "merge="}) {
      const size_t at = made.find(line);
      ASSERT_NE(at, std::string::npos) << made;
      (line == std::string("merge=") ? merge_ : branch_culprit_) =
          made.substr(at + line.size(), 40);
    }
    StartCoordinator("", 0);
    for (int i = 0; i < 2; ++i) workers_.push_back(StartWorker(absl::StrCat("w", i), i, "0.01"));
  }

  std::string repo_ = tmp_.Join("repo");
  std::string merge_;
  std::string branch_culprit_;
  std::string listen_ = "127.0.0.1:0";
  std::unique_ptr<Process> coordinator_;
  std::vector<std::unique_ptr<Process>> workers_;
  std::unique_ptr<v1::CoordinatorService::Stub> stub_;
  int crashes_ = 0;
  int points_ = 0;
};

// Whether this binary was built with a sanitizer (the trees of scripts/test.sh --sanitize).
#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define KBISECT_SANITIZED_BUILD 1
#endif
#endif

// The offsets K of the sweep. The plain tree sweeps 1..S, every step of the job. A sanitizer
// tree sweeps K = 1 and 4, a third of the steps of each kind: what it looks for is a memory
// error or a race on the way down or back up, not a step the plain tree did not cover, and
// each job under it takes about 2.5 times as long (docs/decisions.md 225).
std::vector<int> SweptOffsets(int stride) {
#ifdef KBISECT_SANITIZED_BUILD
  return {1, 1 + stride / 2};
#else
  std::vector<int> offsets;
  for (int first = 1; first <= stride; ++first) offsets.push_back(first);
  return offsets;
#endif
}

TEST_F(CrashSweepTest, EveryJournalCommitAndEveryReplyOfAJobAndItsFollowUp) {
  constexpr int kStride = 6;
  const std::vector<int> offsets = SweptOffsets(kStride);
  const auto start = std::chrono::steady_clock::now();
  for (const char* variable :
       {"KBISECT_TEST_CRASH_AFTER_COMMIT", "KBISECT_TEST_CRASH_BEFORE_REPLY"}) {
    for (int first : offsets) {
      SweepJob(variable, first, kStride);
      if (HasFatalFailure()) return;
    }
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const int jobs = 2 * static_cast<int>(offsets.size());
  std::cout << "crash points swept: " << points_ << " (" << jobs << " jobs, " << seconds << " s)\n";
  RecordProperty("crash_points", points_);
  // About 7 crash points a job (83 in 12 jobs under ThreadSanitizer, 2026-12-07); at least 4.
  EXPECT_GE(points_, 4 * jobs);
}

}  // namespace
}  // namespace kbisect
