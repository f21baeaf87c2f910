// Copyright 2026 The kbisect Authors.
#include "worker/build_key.h"

#include <cstdint>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace kbisect {
namespace {

// Appends `name`, then `value` preceded by its length, on a line of its own.
void AppendField(std::string* text, const char* name, const std::string& value) {
  absl::StrAppend(text, name, " ", value.size(), ":", value, "\n");
}

}  // namespace

std::string BuildKey::Text() const {
  // Version 2: builds made in layers of their own (build_layer.h) and the isolation in the key.
  std::string text = "kbisect-build-key 2\n";
  AppendField(&text, "tree", tree);
  AppendField(&text, "command", command);
  for (const auto& [name, value] : env) {
    AppendField(&text, "env-name", name);
    AppendField(&text, "env-value", value);
  }
  AppendField(&text, "isolation", absl::StrCat(isolation));
  return text;
}

std::string BuildKey::Digest() const { return KeyDigest(Text()); }

std::string KeyDigest(std::string_view text) {
  // FNV-1a, 128 bits: stable across builds and platforms, unlike std::hash.
  using uint128 = unsigned __int128;
  const uint128 prime = (static_cast<uint128>(1) << 88) + 0x13b;
  uint128 hash = (static_cast<uint128>(0x6c62272e07bb0142ull) << 64) | 0x62b821756295c58dull;
  for (unsigned char c : text) {
    hash ^= c;
    hash *= prime;
  }
  return absl::StrFormat("%016x%016x", static_cast<uint64_t>(hash >> 64),
                         static_cast<uint64_t>(hash));
}

}  // namespace kbisect
