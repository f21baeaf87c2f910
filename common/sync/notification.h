// Copyright 2026 The kbisect Authors.
//
// kbisect::Notification: absl::Notification made visible to ThreadSanitizer, as common/sync/
// mutex.h does for the locks (docs/decisions.md 86). In a normal build it is absl's type behind
// inline forwarding functions. In a TSan build Notify() is announced as a release and every
// wait or query that sees the notification as an acquire of the same address, so what the
// notifying thread wrote before Notify() is ordered before what the woken thread reads after.
#ifndef KBISECT_COMMON_SYNC_NOTIFICATION_H_
#define KBISECT_COMMON_SYNC_NOTIFICATION_H_

#include "absl/base/attributes.h"
#include "absl/base/config.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"

#ifdef ABSL_HAVE_THREAD_SANITIZER
#include <sanitizer/tsan_interface.h>
#endif

namespace kbisect {

// A one-shot event: Notify() once, then every wait returns at once (absl::Notification's
// contract; calling Notify() twice is an error).
class Notification {
 public:
  Notification() = default;
  Notification(const Notification&) = delete;
  Notification& operator=(const Notification&) = delete;

  // Returns whether Notify() has been called.
  ABSL_MUST_USE_RESULT bool HasBeenNotified() const { return Seen(n_.HasBeenNotified()); }

  // Blocks until Notify() has been called.
  void WaitForNotification() const {
    n_.WaitForNotification();
    Seen(true);
  }

  // Blocks until Notify() has been called or `timeout` passed; returns whether it was called.
  bool WaitForNotificationWithTimeout(absl::Duration timeout) const {
    return Seen(n_.WaitForNotificationWithTimeout(timeout));
  }

  // Blocks until Notify() has been called or `deadline` passed; returns whether it was called.
  bool WaitForNotificationWithDeadline(absl::Time deadline) const {
    return Seen(n_.WaitForNotificationWithDeadline(deadline));
  }

  // Wakes every waiter, now and later.
  void Notify() {
#ifdef ABSL_HAVE_THREAD_SANITIZER
    __tsan_release(const_cast<absl::Notification*>(&n_));
#endif
    n_.Notify();
  }

 private:
  // Returns `notified`, announcing to TSan that the notifier's writes are now visible.
  bool Seen(bool notified) const {
#ifdef ABSL_HAVE_THREAD_SANITIZER
    if (notified) __tsan_acquire(const_cast<absl::Notification*>(&n_));
#endif
    return notified;
  }

  absl::Notification n_;
};

}  // namespace kbisect

#endif  // KBISECT_COMMON_SYNC_NOTIFICATION_H_
