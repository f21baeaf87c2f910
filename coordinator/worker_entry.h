// Copyright 2026 The kbisect Authors.
//
// WorkerEntry: what the coordinator knows of one worker (its session, identity, leases, and the
// probes it ran before a coordinator restart), and the rules read from it: whether it may be
// handed a task now, what its mailbox must know of it, when it was last heard of, and whether it
// stopped heartbeating or did not come back after a restart.
// Thread-compatible: the coordinator keeps its entries under its mutex.
#ifndef KBISECT_COORDINATOR_WORKER_ENTRY_H_
#define KBISECT_COORDINATOR_WORKER_ENTRY_H_

#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/time/time.h"
#include "coordinator/job/build_capacity.h"
#include "coordinator/worker_mailbox.h"
#include "kbisect/v1/kbisect.pb.h"

namespace kbisect {

struct WorkerEntry {
  std::string worker_id;
  std::string name;
  std::string session_id;
  v1::RunnerIdentity identity;
  // The host's build slots its builds take, as it announced them when it connected
  // (OpenSessionRequest.build_pool): unnamed without a build cache.
  BuildPool build_pool;
  // The shared build store it publishes builds to and fetches them from, as it named it when it
  // connected (OpenSessionRequest.build_store): empty without one.
  std::string build_store;
  v1::WorkerState state = v1::WORKER_STATE_IDLE;
  bool ready = false;
  bool draining = false;
  std::vector<std::string> leases;  // Active lease ids.
  // Its session's mailbox (coordinator/worker_mailbox.h): the assignments and cancellations
  // its long poll picks up, and the poll's sequence; null while it has no session. Every
  // assignment waiting there is of a lease in `leases`. A new session gets a new mailbox and
  // the old one is closed, so a poll of the old session never takes what the new one is given.
  std::shared_ptr<WorkerMailbox> mailbox;
  // Its last call under the coordinator's mutex (LastSeen adds the mailbox's heartbeat).
  absl::Time last_seen;
  absl::Time connect_time;
  int tasks_completed = 0;
  // Known from before a coordinator restart and not reconnected yet.
  bool awaiting_reconnect = false;
  // Probes (job id, task id) it was running when the coordinator restarted; handed back to it
  // under new leases once it is idle, or lost if it does not come back.
  std::vector<std::pair<std::string, v1::Task>> orphans;
  // Its latest sessions that a newer OpenSession of the same name replaced (at most
  // kReplacedSessionsKept): a process still calling on one was taken over by another.
  std::vector<std::string> replaced_sessions;
  static constexpr size_t kReplacedSessionsKept = 8;

  // True when it may be handed a task now. Every assignment waiting in its mailbox is of one of
  // its leases, so no lease means nothing waits there.
  bool Idle() const {
    return !session_id.empty() && ready && !draining && leases.empty() &&
           state != v1::WORKER_STATE_LOST;
  }
  // Tells its mailbox what WorkerMailbox::TakeWithoutChanges needs to know (ready for work, its
  // active leases). Called after every change of those.
  void StandingChanged() const {
    if (mailbox == nullptr) return;
    mailbox->SetStanding(
        !session_id.empty() && ready && !draining && state != v1::WORKER_STATE_LOST,
        static_cast<int>(leases.size()));
  }
  // When it was last heard of: its last call under the coordinator's mutex or its last
  // Synchronize answered from its mailbox alone, whichever is later.
  absl::Time LastSeen() const {
    if (mailbox == nullptr) return last_seen;
    return std::max(last_seen, mailbox->heartbeat());
  }
  // True when it has a session, is not lost yet, and was last heard of more than
  // `lease_duration` before `now`: it stopped heartbeating.
  bool HeartbeatOverdue(absl::Time now, absl::Duration lease_duration) const {
    return !session_id.empty() && LastSeen() + lease_duration < now &&
           state != v1::WORKER_STATE_LOST;
  }
  // True when it is known from before a coordinator restart and did not open a session within
  // `grace` of the restart.
  bool ReconnectOverdue(absl::Time now, absl::Duration grace) const {
    return awaiting_reconnect && last_seen + grace < now;
  }
};

}  // namespace kbisect

#endif  // KBISECT_COORDINATOR_WORKER_ENTRY_H_
