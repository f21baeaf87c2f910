// Copyright 2026 The kbisect Authors.
//
// Coordinator::WriteLock, shared by the files that implement Coordinator: it locks the
// coordinator's mutex and, on unlocking, first waits until the journal entries collected meanwhile
// are committed (FlushLocked, with those of the calls unlocking alongside), so a reply never
// acknowledges a change a restart would lose. Private to coordinator/.
#ifndef KBISECT_COORDINATOR_WRITE_LOCK_H_
#define KBISECT_COORDINATOR_WRITE_LOCK_H_

#include "absl/base/thread_annotations.h"
#include "coordinator/coordinator.h"

namespace kbisect {

class ABSL_SCOPED_LOCKABLE Coordinator::WriteLock {
 public:
  explicit WriteLock(Coordinator* coordinator) ABSL_EXCLUSIVE_LOCK_FUNCTION(coordinator->mu_)
      : coordinator_(coordinator) {
    coordinator_->mu_.Lock();
  }
  ~WriteLock() ABSL_UNLOCK_FUNCTION() {
    coordinator_->FlushLocked();
    coordinator_->mu_.Unlock();
  }
  WriteLock(const WriteLock&) = delete;
  WriteLock& operator=(const WriteLock&) = delete;

 private:
  Coordinator* const coordinator_;
};

}  // namespace kbisect

#endif  // KBISECT_COORDINATOR_WRITE_LOCK_H_
