// Copyright 2026 The kbisect Authors.
#include "coordinator/job/journal_entry.h"

#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
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
      auto commits = built.find(worker);
      std::vector<std::string> parts = {worker};
      if (pool != pools.end() || commits != built.end()) {
        const BuildPool none;
        const BuildPool& announced = pool != pools.end() ? pool->second : none;
        parts.push_back(announced.name);
        parts.push_back(absl::StrCat(announced.slots));
      }
      if (commits != built.end()) parts.push_back(absl::StrJoin(commits->second, ","));
      AppendChunk(absl::StrJoin(parts, std::string(1, '\0')), &payload);
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
      if (parts.size() >= 3 && !parts[1].empty() && absl::SimpleAtoi(parts[2], &slots)) {
        pools[parts[0]] = BuildPool{parts[1], slots};
      }
      if (parts.size() == 4) {
        std::vector<int>& indices = built[parts[0]];
        for (absl::string_view text : absl::StrSplit(parts[3], ',', absl::SkipEmpty())) {
          int index = 0;
          if (!absl::SimpleAtoi(text, &index)) return false;
          indices.push_back(index);
        }
      }
    }
    return true;
  }
  if (kind == Kind::kTaskFinished) return result.ParseFromString(payload);
  return true;
}

}  // namespace kbisect
