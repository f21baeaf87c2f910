// Copyright 2026 The kbisect Authors.
//
// ParseAge: the ages and durations people type on command lines (`kbisect cache prune
// --older-than`, `--cache-max-age`, `kbisect-coordinator --retain`).
#ifndef KBISECT_COMMON_CLOCK_AGE_H_
#define KBISECT_COMMON_CLOCK_AGE_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace kbisect {

// Parses an age such as "30d", "12h", "1d12h", "90m" or "0s": the units of absl::ParseDuration
// ("h", "m", "s", "ms", ...) after an optional leading number of days ("d", 24 hours each).
// InvalidArgument, saying what is accepted, for anything else and for negative or infinite ages.
absl::StatusOr<absl::Duration> ParseAge(const std::string& text);

}  // namespace kbisect

#endif  // KBISECT_COMMON_CLOCK_AGE_H_
