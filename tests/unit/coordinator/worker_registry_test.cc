// Copyright 2026 The kbisect Authors.
//
// WorkerRegistry on its own: sessions and their mailboxes kept consistent with the lookups, the
// error for an unknown or taken-over session, a job's hardware class, and the workers' list.
#include "coordinator/worker_registry.h"

#include <atomic>
#include <cstdint>
#include <string>

#include "common/clock/clock.h"
#include "gtest/gtest.h"

namespace kbisect {
namespace {

const absl::Time kNow = absl::FromUnixSeconds(1'800'000'000);

class WorkerRegistryTest : public ::testing::Test {
 protected:
  FakeClock clock_{kNow};
  std::atomic<uint64_t> durable_{0};
  SessionMailboxes mailboxes_;
  WorkerRegistry registry_{&mailboxes_};
};

TEST_F(WorkerRegistryTest, AStartedSessionIsFoundByItsIdAndItsMailboxWithoutTheRegistry) {
  WorkerEntry& worker = registry_.FindOrAdd("w0");
  worker.name = "w0";
  EXPECT_EQ(registry_.ForSession("s1"), nullptr);
  registry_.StartSession(worker, "s1", &durable_);
  EXPECT_EQ(worker.session_id, "s1");
  EXPECT_EQ(registry_.ForSession("s1"), &worker);
  ASSERT_NE(worker.mailbox, nullptr);
  EXPECT_EQ(mailboxes_.Find("s1"), worker.mailbox);
  EXPECT_EQ(registry_.FindByName("w0"), &worker);
  EXPECT_EQ(registry_.Find("w0"), &worker);
  EXPECT_EQ(registry_.Find("w1"), nullptr);
}

TEST_F(WorkerRegistryTest, EndingASessionClosesItsMailboxAndDropsBothLookups) {
  WorkerEntry& worker = registry_.FindOrAdd("w0");
  registry_.StartSession(worker, "s1", &durable_);
  const std::shared_ptr<WorkerMailbox> mailbox = worker.mailbox;
  registry_.EndSession(worker, /*superseded=*/false);
  EXPECT_TRUE(worker.session_id.empty());
  EXPECT_EQ(worker.mailbox, nullptr);
  EXPECT_EQ(registry_.ForSession("s1"), nullptr);
  EXPECT_EQ(mailboxes_.Find("s1"), nullptr);
  // A poll on the closed mailbox returns at once, as closed.
  WorkerMailbox::Delivery delivery;
  EXPECT_EQ(mailbox->Await(mailbox->BeginPoll(), &clock_, absl::InfinitePast(), &delivery),
            WorkerMailbox::Outcome::kClosed);
  // Ended without a successor: the session is simply unknown.
  EXPECT_TRUE(absl::IsNotFound(registry_.UnknownSession("s1", "gone")));
  EXPECT_EQ(registry_.UnknownSession("s1", "gone").message(), "gone");
}

TEST_F(WorkerRegistryTest, ASupersededSessionSaysAnotherProcessTookOverTheName) {
  WorkerEntry& worker = registry_.FindOrAdd("gpu-7");
  worker.name = "gpu-7";
  registry_.StartSession(worker, "s1", &durable_);
  registry_.EndSession(worker, /*superseded=*/true);
  registry_.StartSession(worker, "s2", &durable_);
  const absl::Status status = registry_.UnknownSession("s1", "gone");
  EXPECT_TRUE(absl::IsFailedPrecondition(status));
  EXPECT_NE(status.message().find("another process took over the worker name 'gpu-7'"),
            std::string::npos);
  EXPECT_EQ(registry_.ForSession("s2"), &worker);
  // Only the latest kReplacedSessionsKept are remembered.
  for (size_t i = 0; i < WorkerEntry::kReplacedSessionsKept; ++i) {
    registry_.EndSession(worker, /*superseded=*/true);
    registry_.StartSession(worker, "s" + std::to_string(3 + i), &durable_);
  }
  EXPECT_TRUE(absl::IsNotFound(registry_.UnknownSession("s1", "gone")));
  EXPECT_TRUE(absl::IsFailedPrecondition(registry_.UnknownSession("s2", "gone")));
}

TEST_F(WorkerRegistryTest, AJobRunsOnTheSpecsHardwareClassElseOnItsFirstWorkers) {
  WorkerEntry& h100 = registry_.FindOrAdd("w0");
  h100.identity.set_hardware_class("h100");
  v1::JobStatus job;
  EXPECT_EQ(registry_.HardwareClassOf(job), "");
  job.add_probes();  // Not handed out yet: no worker.
  job.add_probes()->set_worker("w0");
  job.add_probes()->set_worker("w-unknown");
  EXPECT_EQ(registry_.HardwareClassOf(job), "h100");
  job.mutable_spec()->set_hardware_class("b200");
  EXPECT_EQ(registry_.HardwareClassOf(job), "b200");
  v1::JobStatus unknown_first;
  unknown_first.add_probes()->set_worker("w-unknown");
  unknown_first.add_probes()->set_worker("w0");
  EXPECT_EQ(registry_.HardwareClassOf(unknown_first), "");
}

TEST_F(WorkerRegistryTest, TheListShowsEachWorkerWithItsFirstLeaseAndThatLeasesJob) {
  LeaseTable leases;
  WorkerEntry& busy = registry_.FindOrAdd("w0");
  busy.state = v1::WORKER_STATE_BUSY;
  busy.last_seen = kNow;
  busy.tasks_completed = 3;
  leases.Grant("lease-1", "job-1", "task-1", "w0", kNow);
  busy.leases.push_back("lease-1");
  registry_.FindOrAdd("w1").state = v1::WORKER_STATE_LOST;
  const v1::ListWorkersResponse list = registry_.List(leases);
  ASSERT_EQ(list.workers_size(), 2);
  EXPECT_EQ(list.workers(0).worker_id(), "w0");
  EXPECT_EQ(list.workers(0).current_lease_id(), "lease-1");
  EXPECT_EQ(list.workers(0).current_job_id(), "job-1");
  EXPECT_EQ(list.workers(0).tasks_completed(), 3);
  EXPECT_EQ(list.workers(0).last_seen().seconds(), absl::ToUnixSeconds(kNow));
  EXPECT_EQ(list.workers(1).state(), v1::WORKER_STATE_LOST);
  EXPECT_TRUE(list.workers(1).current_job_id().empty());
}

TEST_F(WorkerRegistryTest, ClearEndsEverySessionAndForgetsEveryWorker) {
  WorkerEntry& worker = registry_.FindOrAdd("w0");
  registry_.StartSession(worker, "s1", &durable_);
  const std::shared_ptr<WorkerMailbox> mailbox = worker.mailbox;
  registry_.Clear();
  EXPECT_TRUE(registry_.empty());
  EXPECT_EQ(mailboxes_.Find("s1"), nullptr);
  EXPECT_EQ(registry_.ForSession("s1"), nullptr);
  WorkerMailbox::Delivery delivery;
  EXPECT_EQ(mailbox->Await(mailbox->BeginPoll(), &clock_, absl::InfinitePast(), &delivery),
            WorkerMailbox::Outcome::kClosed);
}

}  // namespace
}  // namespace kbisect
