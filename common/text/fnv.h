// Copyright 2026 The kbisect Authors.
//
// FNV-1a, 64 bits: a hash of a string that is the same in every build and on every host, unlike
// std::hash, for names and choices that must not change between runs (a mirror's directory, the
// order of an interleaved pair). Not for security.
#ifndef KBISECT_COMMON_TEXT_FNV_H_
#define KBISECT_COMMON_TEXT_FNV_H_

#include <cstdint>

#include "absl/strings/string_view.h"

namespace kbisect {

// The 64-bit FNV-1a hash of `text`.
inline uint64_t Fnv1a64(absl::string_view text) {
  uint64_t hash = 1469598103934665603ull;
  for (unsigned char c : text) {
    hash ^= c;
    hash *= 1099511628211ull;
  }
  return hash;
}

}  // namespace kbisect

#endif  // KBISECT_COMMON_TEXT_FNV_H_
