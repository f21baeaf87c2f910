// Copyright 2026 The kbisect Authors.
#include "common/text/count.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace kbisect {
namespace {

// Debian's abseil keeps its own absl::string_view; the public API uses std::string_view.
absl::string_view ToAbsl(std::string_view s) { return absl::string_view(s.data(), s.size()); }

}  // namespace

std::string Noun(int64_t n, std::string_view singular, std::string_view plural) {
  if (n == 1) return std::string(singular);
  if (!plural.empty()) return std::string(plural);
  return absl::StrCat(ToAbsl(singular), "s");
}

std::string Count(int64_t n, std::string_view singular, std::string_view plural) {
  return absl::StrCat(n, " ", Noun(n, singular, plural));
}

}  // namespace kbisect
