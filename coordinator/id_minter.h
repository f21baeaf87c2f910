// Copyright 2026 The kbisect Authors.
//
// IdMinter makes the coordinator's ids (jobs, sessions, leases, anonymous workers): a prefix, a
// salt drawn once per process, and a counter. A restarted coordinator counts from 1 again; the
// salt keeps its ids apart from those its predecessor gave out (a recovered job's, a late
// result's lease). Thread-compatible: the coordinator keeps it under its mutex.
#ifndef KBISECT_COORDINATOR_ID_MINTER_H_
#define KBISECT_COORDINATOR_ID_MINTER_H_

#include <cstdint>
#include <string>
#include <utility>

#include "absl/strings/string_view.h"

namespace kbisect {

class IdMinter {
 public:
  // A random salt of six hex digits.
  IdMinter();
  explicit IdMinter(std::string salt) : salt_(std::move(salt)) {}

  // "<prefix><salt>-<n>", n = 1, 2, ... over every prefix: never the same id twice.
  std::string Next(absl::string_view prefix);

  const std::string& salt() const { return salt_; }

 private:
  std::string salt_;
  uint64_t count_ = 0;
};

}  // namespace kbisect

#endif  // KBISECT_COORDINATOR_ID_MINTER_H_
