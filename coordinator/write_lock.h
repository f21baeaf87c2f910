// Copyright 2026 The kbisect Authors.
//
// WriteLock and ReplyPoint, shared by the parts that serve mutating calls under the
// coordinator's mutex (Coordinator, WorkerSessions). WriteLock locks the mutex and, on unlocking,
// first waits until the journal entries collected meanwhile are committed (JournalWriter::Flush,
// with those of the calls unlocking alongside), so a reply never acknowledges a change a restart
// would lose. ReplyPoint is the test-only crash point before a mutating RPC's reply, counted by
// MutatingReplies across every part. Private to coordinator/.
#ifndef KBISECT_COORDINATOR_WRITE_LOCK_H_
#define KBISECT_COORDINATOR_WRITE_LOCK_H_

#include <atomic>
#include <cstdint>

#include "absl/base/thread_annotations.h"
#include "common/sync/mutex.h"
#include "coordinator/crash_points.h"
#include "coordinator/journal_writer.h"

namespace kbisect {

class ABSL_SCOPED_LOCKABLE WriteLock {
 public:
  // Locks `mu`, the mutex `journal` was given. With `wait` false the changes are committed
  // without waiting for the commit in flight (JournalWriter::Kick): only for a call whose reply
  // shows none of its changes until they are durable by other means.
  WriteLock(kbisect::Mutex& mu, JournalWriter& journal, bool wait = true)
      ABSL_EXCLUSIVE_LOCK_FUNCTION(mu)
      : mu_(mu), journal_(journal), wait_(wait) {
    mu_.Lock();
  }
  ~WriteLock() ABSL_UNLOCK_FUNCTION() {
    // Calls that reply flush first and check the result; this catches every other change.
    if (wait_) {
      (void)journal_.Flush(mu_);
    } else {
      journal_.Kick(mu_);
    }
    mu_.Unlock();
  }
  WriteLock(const WriteLock&) = delete;
  WriteLock& operator=(const WriteLock&) = delete;

 private:
  kbisect::Mutex& mu_;
  JournalWriter& journal_;
  const bool wait_;
};

// The mutating RPCs' replies since this process started, for the before_reply crash point.
// Thread-safe.
class MutatingReplies {
 public:
  // `crash_at`: the reply before which the process dies (CrashPoints::before_reply); 0: never.
  explicit MutatingReplies(int64_t crash_at) : crash_at_(crash_at) {}
  MutatingReplies(const MutatingReplies&) = delete;
  MutatingReplies& operator=(const MutatingReplies&) = delete;

  // Whether the crash point is armed (only then are replies counted).
  bool armed() const { return crash_at_ > 0; }
  // Counts a reply, and dies before it when it is the armed one.
  void Count() {
    const int64_t n = ++count_;
    if (n == crash_at_) CrashAtPoint("before the reply of mutating RPC", n);
  }

 private:
  const int64_t crash_at_;
  std::atomic<int64_t> count_{0};
};

// Marks a mutating RPC: on leaving it, after the WriteLock's release, it counts the RPC as
// mutating if the calling thread sealed changes for commit meanwhile (MutatingReplies::Count).
class ReplyPoint {
 public:
  explicit ReplyPoint(MutatingReplies& replies)
      : replies_(replies), commits_(JournalWriter::BatchesSealedByThisThread()) {}
  ~ReplyPoint() {
    if (!replies_.armed() || JournalWriter::BatchesSealedByThisThread() == commits_) return;
    replies_.Count();
  }
  ReplyPoint(const ReplyPoint&) = delete;
  ReplyPoint& operator=(const ReplyPoint&) = delete;

 private:
  MutatingReplies& replies_;
  const int64_t commits_;
};

}  // namespace kbisect

#endif  // KBISECT_COORDINATOR_WRITE_LOCK_H_
