// Copyright 2026 The kbisect Authors.
//
// PEP 440 versions in the order pip gives them (packaging.version), and what a nightly's version
// says about where it was built from. Bisecting prebuilt nightly wheels (torch, triton, jax)
// sorts an index's versions the way pip does and finds a night by the date or commit the version
// carries. Pure: no files, no network.
//
//   ASSIGN_OR_RETURN(Pep440Version v, ParsePep440("2.6.0.dev20250101+cpu"));
//   NightlyDate(v);   // "20250101"
//   ASSIGN_OR_RETURN(Pep440Version t, ParsePep440("3.2.0+git4b3bb1f8"));
//   LocalCommit(t);   // "4b3bb1f8"
//   ComparePep440(v, t) < 0;
#ifndef KBISECT_COMMON_ARTIFACT_PEP440_H_
#define KBISECT_COMMON_ARTIFACT_PEP440_H_

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "absl/status/statusor.h"

namespace kbisect {

// One parsed version, normalised (lowercase letters, implicit numbers made explicit).
struct Pep440Version {
  // The kind of a pre-release, in PEP 440's order: a < b < rc.
  enum class PreKind { kAlpha, kBeta, kRc };
  // A pre-release: 1.0a1 is {kAlpha, 1}; "alpha", "beta", "c", "pre" and "preview" are spellings.
  struct Pre {
    PreKind kind = PreKind::kAlpha;
    int64_t number = 0;
  };
  // One segment of a local label: a number when it is all digits, otherwise its lowercase text.
  using LocalSegment = std::variant<int64_t, std::string>;

  int64_t epoch = 0;                // N in "N!"; 0 when absent.
  std::vector<int64_t> release;     // 1.2.3 is {1, 2, 3}; never empty once parsed.
  std::optional<Pre> pre;           // The pre-release, if any.
  std::optional<int64_t> post;      // The post-release number, if any ("1.0-1" is post 1).
  std::optional<int64_t> dev;       // The dev-release number, if any ("1.0.dev" is dev 0).
  std::vector<LocalSegment> local;  // The segments after '+'; empty when there is no local label.
  std::string text;                 // The text as given (without surrounding whitespace).
};

// Parses `text` as pip does: case-insensitive, an optional leading 'v', the spellings and
// separators ('-', '_', '.') PEP 440 allows, implicit numbers ("1.0.dev" is dev 0, "1.0-1" post
// 1, "1.0a" a0), a local label after '+' whose segments are separated by '.', '-' or '_'.
// Surrounding whitespace is ignored. InvalidArgument naming the text when it is not a PEP 440
// version, or when one of its numbers does not fit in 64 bits.
absl::StatusOr<Pep440Version> ParsePep440(const std::string& text);

// Compares two versions in PEP 440's order (packaging.version's): -1 when a < b, 0 when they are
// equal, 1 when a > b. Trailing zeros of the release do not count (1.0 == 1.0.0); a final's
// dev-release sorts before its pre-releases (1.0.dev0 < 1.0a1 < 1.0 < 1.0.post1); a dev-release
// sorts before what it leads to (1.0a1.dev1 < 1.0a1, 1.0.post1.dev1 < 1.0.post1); a local version
// sorts after the same public version, its segments compared numerically when both are numbers,
// a number after a string, and the longer label after one that is its prefix.
int ComparePep440(const Pep440Version& a, const Pep440Version& b);

// True when ComparePep440(a, b) < 0.
bool operator<(const Pep440Version& a, const Pep440Version& b);

// The day a nightly was built, as "YYYYMMDD", read the way torch, triton and jax nightlies carry
// it: the dev number when it has exactly 8 digits and is a date (2.6.0.dev20250101), otherwise
// the first 8-digit number that is a date among the other public numbers (post, pre, release from
// the last) and then the local label's numeric segments. A date here is a valid calendar day of
// a year from 1970 on. nullopt when the version has none (3.2.0+git4b3bb1f8).
std::optional<std::string> NightlyDate(const Pep440Version& v);

// The commit a local label names: a segment "g<hex>" or "git<hex>" with 7 to 40 hex digits
// ("+git4b3bb1f8", "+g4b3bb1f8", "+cu124.git4b3bb1f8"); the first such segment's hex digits
// (lowercase). nullopt when the label names none.
std::optional<std::string> LocalCommit(const Pep440Version& v);

// The PEP 503 normal form of a project name: lowercase, each run of '-', '_' and '.' replaced
// by one '-' ("Triton_Nightly" is "triton-nightly").
std::string NormalizeProjectName(const std::string& name);

}  // namespace kbisect

#endif  // KBISECT_COMMON_ARTIFACT_PEP440_H_
