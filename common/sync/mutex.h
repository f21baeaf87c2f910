// Copyright 2026 The kbisect Authors.
//
// The project's lock types: kbisect::Mutex, kbisect::MutexLock, kbisect::CondVar and
// kbisect::Condition, used everywhere instead of their absl namesakes (docs/decisions.md 86).
//
// In a normal build each is absl's own type behind inline forwarding functions: the same code,
// the same cost, the same ABSL_LOCKABLE / ABSL_SCOPED_LOCKABLE attributes for clang's
// -Wthread-safety analysis. In a ThreadSanitizer build (-DKBISECT_SANITIZE=thread, which makes
// absl define ABSL_HAVE_THREAD_SANITIZER) every operation is also announced to TSan with its
// mutex annotation API, the calls absl itself makes when abseil is compiled with TSan. Debian's
// abseil is not, so without them TSan sees none of the happens-before edges an absl::Mutex
// makes and reports every hand-off of guarded data between threads (issue 16 counted 20,125
// reports over the suite).
//
// The annotations follow the lock as absl holds it: a lock is announced after absl acquired it,
// an unlock before absl releases it. A wait (Mutex::Await*, CondVar::Wait*) releases and
// reacquires the mutex inside absl: it is announced as an unlock before the wait and a lock
// after it, and the wait itself runs with TSan ignoring memory accesses, because absl evaluates
// a waiter's Condition with the mutex held in whichever thread holds it (often another one,
// inside its Unlock) where TSan cannot tell it is held. A Condition is first evaluated by the
// wrapper itself with the lock visibly held, so that evaluation is still checked.
#ifndef KBISECT_COMMON_SYNC_MUTEX_H_
#define KBISECT_COMMON_SYNC_MUTEX_H_

#include "absl/base/config.h"
#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

#ifdef ABSL_HAVE_THREAD_SANITIZER
#include <sanitizer/tsan_interface.h>
#endif

namespace kbisect {

// A predicate for Mutex::Await and friends; absl's own type (it holds a function and an
// argument, no lock state, so TSan needs nothing from it).
using Condition = absl::Condition;

namespace sync_internal {

// The TSan annotations, empty inline functions in other builds. Each takes the address that
// names the mutex to TSan (the kbisect::Mutex, which is also where its absl::Mutex lives).
#ifdef ABSL_HAVE_THREAD_SANITIZER
inline void TsanCreate(void* mu) { __tsan_mutex_create(mu, __tsan_mutex_not_static); }
inline void TsanDestroy(void* mu) { __tsan_mutex_destroy(mu, __tsan_mutex_not_static); }
inline void TsanPreLock(void* mu, unsigned flags) { __tsan_mutex_pre_lock(mu, flags); }
inline void TsanPostLock(void* mu, unsigned flags) { __tsan_mutex_post_lock(mu, flags, 0); }
inline void TsanPreUnlock(void* mu) { __tsan_mutex_pre_unlock(mu, 0); }
inline void TsanPostUnlock(void* mu) { __tsan_mutex_post_unlock(mu, 0); }
inline constexpr unsigned kTsanTryLock = __tsan_mutex_try_lock;
inline constexpr unsigned kTsanTryLockFailed = __tsan_mutex_try_lock_failed;
#else
inline void TsanCreate(void*) {}
inline void TsanDestroy(void*) {}
inline void TsanPreLock(void*, unsigned) {}
inline void TsanPostLock(void*, unsigned) {}
inline void TsanPreUnlock(void*) {}
inline void TsanPostUnlock(void*) {}
inline constexpr unsigned kTsanTryLock = 0;
inline constexpr unsigned kTsanTryLockFailed = 0;
#endif

// Announces a wait inside absl that releases and reacquires the mutex at `mu`, which the
// calling thread holds: an unlock now (and TSan ignores this thread's memory accesses while
// the wait runs), a lock again when the scope ends.
class TsanWaitScope {
 public:
  explicit TsanWaitScope(void* mu) : mu_(mu) { TsanPreUnlock(mu_); }
  ~TsanWaitScope() {
    TsanPostUnlock(mu_);
    TsanPreLock(mu_, 0);
    TsanPostLock(mu_, 0);
  }
  TsanWaitScope(const TsanWaitScope&) = delete;
  TsanWaitScope& operator=(const TsanWaitScope&) = delete;

 private:
  void* const mu_;
};

}  // namespace sync_internal

// A mutual-exclusion lock with absl::Mutex's interface (the part kbisect uses) and semantics:
// not reentrant, Await/AwaitWith* wait with it held for a Condition to become true.
class ABSL_LOCKABLE Mutex {
 public:
  Mutex() { sync_internal::TsanCreate(this); }
  ~Mutex() { sync_internal::TsanDestroy(this); }
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  // Blocks until the mutex is free, then holds it.
  void Lock() ABSL_EXCLUSIVE_LOCK_FUNCTION() {
    sync_internal::TsanPreLock(this, 0);
    mu_.Lock();
    sync_internal::TsanPostLock(this, 0);
  }

  // Releases the mutex, which the calling thread holds.
  void Unlock() ABSL_UNLOCK_FUNCTION() {
    sync_internal::TsanPreUnlock(this);
    mu_.Unlock();
    sync_internal::TsanPostUnlock(this);
  }

  // Holds the mutex and returns true when it is free; returns false at once otherwise.
  bool TryLock() ABSL_EXCLUSIVE_TRYLOCK_FUNCTION(true) {
    sync_internal::TsanPreLock(this, sync_internal::kTsanTryLock);
    const bool locked = mu_.TryLock();
    sync_internal::TsanPostLock(
        this, locked ? sync_internal::kTsanTryLock
                     : sync_internal::kTsanTryLock | sync_internal::kTsanTryLockFailed);
    return locked;
  }

  // Dies (in debug builds of abseil) unless the calling thread holds the mutex; tells the
  // thread-safety analysis that it does.
  void AssertHeld() const ABSL_ASSERT_EXCLUSIVE_LOCK() { mu_.AssertHeld(); }

  // With the mutex held, releases it until `condition` is true and returns with it held again.
  void Await(const Condition& condition) {
    if (condition.Eval()) return;
    sync_internal::TsanWaitScope wait(this);
    mu_.Await(condition);
  }

  // Like Await, but gives up after `timeout`; returns the value of `condition` at return.
  bool AwaitWithTimeout(const Condition& condition, absl::Duration timeout) {
    if (condition.Eval()) return true;
    sync_internal::TsanWaitScope wait(this);
    return mu_.AwaitWithTimeout(condition, timeout);
  }

  // Like Await, but gives up at `deadline`; returns the value of `condition` at return.
  bool AwaitWithDeadline(const Condition& condition, absl::Time deadline) {
    if (condition.Eval()) return true;
    sync_internal::TsanWaitScope wait(this);
    return mu_.AwaitWithDeadline(condition, deadline);
  }

 private:
  friend class CondVar;

  absl::Mutex mu_;
};

// Holds a Mutex for the lifetime of the object (absl::MutexLock's contract).
class ABSL_SCOPED_LOCKABLE MutexLock {
 public:
  explicit MutexLock(Mutex* mu) ABSL_EXCLUSIVE_LOCK_FUNCTION(mu) : mu_(mu) { mu_->Lock(); }
  ~MutexLock() ABSL_UNLOCK_FUNCTION() { mu_->Unlock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  Mutex* const mu_;
};

// A condition variable over a kbisect::Mutex (absl::CondVar's contract: every wait may also
// return spuriously, so callers loop on their predicate).
class CondVar {
 public:
  CondVar() = default;
  CondVar(const CondVar&) = delete;
  CondVar& operator=(const CondVar&) = delete;

  // With `mu` held, releases it until signalled and returns with it held again.
  void Wait(Mutex* mu) {
    sync_internal::TsanWaitScope wait(mu);
    cv_.Wait(&mu->mu_);
  }

  // Like Wait, but gives up after `timeout`; returns true when it timed out.
  bool WaitWithTimeout(Mutex* mu, absl::Duration timeout) {
    sync_internal::TsanWaitScope wait(mu);
    return cv_.WaitWithTimeout(&mu->mu_, timeout);
  }

  // Like Wait, but gives up at `deadline`; returns true when it timed out.
  bool WaitWithDeadline(Mutex* mu, absl::Time deadline) {
    sync_internal::TsanWaitScope wait(mu);
    return cv_.WaitWithDeadline(&mu->mu_, deadline);
  }

  // Wakes one waiting thread, if any.
  void Signal() { cv_.Signal(); }

  // Wakes every waiting thread.
  void SignalAll() { cv_.SignalAll(); }

 private:
  absl::CondVar cv_;
};

}  // namespace kbisect

#endif  // KBISECT_COMMON_SYNC_MUTEX_H_
