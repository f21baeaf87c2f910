// Copyright 2026 The kbisect Authors.
//
// Coordinator::WriteLock, shared by the files that implement Coordinator: it locks the
// coordinator's mutex and, on unlocking, first waits until the journal entries collected meanwhile
// are committed (JournalWriter::Flush, with those of the calls unlocking alongside), so a reply
// never acknowledges a change a restart would lose; and Coordinator::ReplyPoint, the test-only
// crash point before a mutating RPC's reply. Private to coordinator/.
#ifndef KBISECT_COORDINATOR_WRITE_LOCK_H_
#define KBISECT_COORDINATOR_WRITE_LOCK_H_

#include <cstdint>

#include "absl/base/thread_annotations.h"
#include "coordinator/coordinator.h"
#include "coordinator/crash_points.h"

namespace kbisect {

class ABSL_SCOPED_LOCKABLE Coordinator::WriteLock {
 public:
  // With `wait` false the changes are committed without waiting for the commit in flight
  // (JournalWriter::Kick): only for a call whose reply shows none of its changes until they are
  // durable by other means.
  explicit WriteLock(Coordinator* coordinator, bool wait = true)
      ABSL_EXCLUSIVE_LOCK_FUNCTION(coordinator->mu_)
      : coordinator_(coordinator), wait_(wait) {
    coordinator_->mu_.Lock();
  }
  ~WriteLock() ABSL_UNLOCK_FUNCTION() {
    // Calls that reply flush first and check the result; this catches every other change.
    if (wait_) {
      (void)coordinator_->journal_.Flush(coordinator_->mu_);
    } else {
      coordinator_->journal_.Kick(coordinator_->mu_);
    }
    coordinator_->mu_.Unlock();
  }
  WriteLock(const WriteLock&) = delete;
  WriteLock& operator=(const WriteLock&) = delete;

 private:
  Coordinator* const coordinator_;
  const bool wait_;
};

class Coordinator::ReplyPoint {
 public:
  explicit ReplyPoint(Coordinator* coordinator)
      : coordinator_(coordinator), commits_(JournalWriter::BatchesSealedByThisThread()) {}
  ~ReplyPoint() {
    const int64_t armed = coordinator_->options_.crash_points.before_reply;
    if (armed <= 0 || JournalWriter::BatchesSealedByThisThread() == commits_) return;
    const int64_t n = ++coordinator_->mutating_replies_;
    if (n == armed) CrashAtPoint("before the reply of mutating RPC", n);
  }
  ReplyPoint(const ReplyPoint&) = delete;
  ReplyPoint& operator=(const ReplyPoint&) = delete;

 private:
  Coordinator* const coordinator_;
  const int64_t commits_;
};

}  // namespace kbisect

#endif  // KBISECT_COORDINATOR_WRITE_LOCK_H_
