// Copyright 2026 The kbisect Authors.
#include "coordinator/job/journal_entry.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/text/chunks.h"

namespace kbisect {

const char* JournalEntry::KindName(Kind kind) {
  switch (kind) {
    case Kind::kTakeTasks:
      return "take_tasks";
    case Kind::kTaskStarted:
      return "task_started";
    case Kind::kTaskFinished:
      return "task_finished";
    case Kind::kTaskLost:
      return "task_lost";
    case Kind::kWorkerGone:
      return "worker_gone";
    case Kind::kForgetWorker:
      return "forget_worker";
    case Kind::kCancel:
      return "cancel";
  }
  return "unknown";
}

bool JournalEntry::KindFromName(const std::string& name, Kind* kind) {
  for (int k = 1; k <= 7; ++k) {
    const auto candidate = static_cast<Kind>(k);
    if (name == KindName(candidate)) {
      *kind = candidate;
      return true;
    }
  }
  return false;
}

std::string JournalEntry::EncodePayload() const {
  std::string payload;
  if (kind == Kind::kTakeTasks) {
    for (const std::string& worker : workers) {
      auto pool = pools.find(worker);
      if (pool == pools.end()) {
        AppendChunk(worker, &payload);
      } else {
        AppendChunk(absl::StrJoin({worker, pool->second.name, absl::StrCat(pool->second.slots)},
                                  std::string(1, '\0')),
                    &payload);
      }
    }
  } else if (kind == Kind::kTaskFinished) {
    payload = result.SerializeAsString();
  }
  return payload;
}

bool JournalEntry::DecodePayload(const std::string& payload) {
  if (kind == Kind::kTakeTasks) {
    std::vector<std::string> chunks;
    if (!SplitChunks(payload, &chunks)) return false;
    for (const std::string& chunk : chunks) {
      const std::vector<std::string> parts = absl::StrSplit(chunk, '\0');
      workers.push_back(parts[0]);
      int slots = 0;
      if (parts.size() == 3 && absl::SimpleAtoi(parts[2], &slots)) {
        pools[parts[0]] = BuildPool{parts[1], slots};
      }
    }
    return true;
  }
  if (kind == Kind::kTaskFinished) return result.ParseFromString(payload);
  return true;
}

}  // namespace kbisect
