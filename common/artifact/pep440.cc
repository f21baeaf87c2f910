// Copyright 2026 The kbisect Authors.
#include "common/artifact/pep440.h"

#include <algorithm>
#include <tuple>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/time/civil_time.h"
#include "common/status_macros.h"
#include "re2/re2.h"

namespace kbisect {
namespace {

// packaging.version's VERSION_PATTERN, without its whitespace, matched case-insensitively.
constexpr char kPep440Pattern[] =
    "v?"
    "(?:([0-9]+)!)?"                                             // 1 epoch
    "([0-9]+(?:\\.[0-9]+)*)"                                     // 2 release
    "([-_.]?(alpha|a|beta|b|preview|pre|c|rc)[-_.]?([0-9]+)?)?"  // 3 pre, 4 kind, 5 n
    "((?:-([0-9]+))|(?:[-_.]?(post|rev|r)[-_.]?([0-9]+)?))?"     // 6 post, 7 n, 8, 9 n
    "([-_.]?(dev)[-_.]?([0-9]+)?)?"                              // 10 dev, 11, 12 n
    "(?:\\+([a-z0-9]+(?:[-_.][a-z0-9]+)*))?";                    // 13 local
constexpr int kPep440Groups = 14;                                // Including the whole match.

const RE2& Pep440Regex() {
  static const RE2* const kRegex = [] {
    RE2::Options options;
    options.set_case_sensitive(false);
    return new RE2(kPep440Pattern, options);
  }();
  return *kRegex;
}

bool Matched(const re2::StringPiece& group) { return group.data() != nullptr; }

std::string GroupText(const re2::StringPiece& group) {
  return std::string(group.data(), group.size());
}

absl::Status TooLarge(const std::string& text) {
  return absl::InvalidArgumentError(
      absl::StrCat("'", text, "' is not a usable PEP 440 version: a number is too large"));
}

// The number in `group`, 0 when the group did not match (an implicit number).
absl::StatusOr<int64_t> GroupNumber(const re2::StringPiece& group, const std::string& text) {
  if (!Matched(group) || group.empty()) return 0;
  int64_t number = 0;
  if (!absl::SimpleAtoi(absl::string_view(group.data(), group.size()), &number)) {
    return TooLarge(text);
  }
  return number;
}

Pep440Version::PreKind PreKindOf(const std::string& spelling) {
  const std::string s = absl::AsciiStrToLower(spelling);
  if (s == "a" || s == "alpha") return Pep440Version::PreKind::kAlpha;
  if (s == "b" || s == "beta") return Pep440Version::PreKind::kBeta;
  return Pep440Version::PreKind::kRc;  // c, rc, pre, preview.
}

absl::StatusOr<std::vector<int64_t>> ParseRelease(const re2::StringPiece& group,
                                                  const std::string& text) {
  std::vector<int64_t> release;
  for (absl::string_view part : absl::StrSplit(GroupText(group), '.')) {
    int64_t number = 0;
    if (!absl::SimpleAtoi(part, &number)) return TooLarge(text);
    release.push_back(number);
  }
  return release;
}

absl::StatusOr<std::vector<Pep440Version::LocalSegment>> ParseLocal(const re2::StringPiece& group,
                                                                    const std::string& text) {
  std::vector<Pep440Version::LocalSegment> local;
  if (!Matched(group)) return local;
  for (absl::string_view part : absl::StrSplit(GroupText(group), absl::ByAnyChar("-_."))) {
    const bool numeric = std::all_of(part.begin(), part.end(), absl::ascii_isdigit);
    if (!numeric) {
      local.emplace_back(absl::AsciiStrToLower(part));
      continue;
    }
    int64_t number = 0;
    if (!absl::SimpleAtoi(part, &number)) return TooLarge(text);
    local.emplace_back(number);
  }
  return local;
}

// Fills the pre-, post- and dev-release parts of `v` from the regex's groups.
absl::Status FillSuffixes(const re2::StringPiece* g, Pep440Version& v) {
  if (Matched(g[3])) {
    ASSIGN_OR_RETURN(const int64_t n, GroupNumber(g[5], v.text));
    v.pre = Pep440Version::Pre{PreKindOf(GroupText(g[4])), n};
  }
  if (Matched(g[6])) {
    ASSIGN_OR_RETURN(v.post, GroupNumber(Matched(g[7]) ? g[7] : g[9], v.text));
  }
  if (Matched(g[10])) {
    ASSIGN_OR_RETURN(v.dev, GroupNumber(g[12], v.text));
  }
  return absl::OkStatus();
}

// -1, 0 or 1 as a < b, a == b, a > b.
template <typename T>
int Sign(const T& a, const T& b) {
  if (a < b) return -1;
  return b < a ? 1 : 0;
}

std::vector<int64_t> WithoutTrailingZeros(std::vector<int64_t> release) {
  while (!release.empty() && release.back() == 0) release.pop_back();
  return release;
}

// packaging's pre key: -infinity for a final's dev-release (it sorts before every pre-release),
// +infinity for no pre-release, else (kind, number).
std::tuple<int, int, int64_t> PreKey(const Pep440Version& v) {
  if (!v.pre && !v.post && v.dev) return {0, 0, 0};
  if (!v.pre) return {2, 0, 0};
  return {1, static_cast<int>(v.pre->kind), v.pre->number};
}

// Absent post sorts first; absent dev sorts last.
std::pair<int, int64_t> PostKey(const Pep440Version& v) {
  return v.post ? std::make_pair(1, *v.post) : std::make_pair(0, int64_t{0});
}
std::pair<int, int64_t> DevKey(const Pep440Version& v) {
  return v.dev ? std::make_pair(0, *v.dev) : std::make_pair(1, int64_t{0});
}

// A string segment sorts before a number; numbers compare numerically, strings as text.
int CompareLocalSegment(const Pep440Version::LocalSegment& a,
                        const Pep440Version::LocalSegment& b) {
  const bool a_number = std::holds_alternative<int64_t>(a);
  const bool b_number = std::holds_alternative<int64_t>(b);
  if (a_number != b_number) return a_number ? 1 : -1;
  if (a_number) return Sign(std::get<int64_t>(a), std::get<int64_t>(b));
  return Sign(std::get<std::string>(a), std::get<std::string>(b));
}

// No label sorts first; otherwise segment by segment, a label before any it is a prefix of.
int CompareLocal(const Pep440Version& a, const Pep440Version& b) {
  const size_t common = std::min(a.local.size(), b.local.size());
  for (size_t i = 0; i < common; ++i) {
    if (int c = CompareLocalSegment(a.local[i], b.local[i]); c != 0) return c;
  }
  return Sign(a.local.size(), b.local.size());
}

// True when `n` is YYYYMMDD of a calendar day from 1970 on.
bool IsNightlyDateNumber(int64_t n) {
  if (n < 19700101 || n > 99991231) return false;
  const int64_t year = n / 10000;
  const int month = static_cast<int>(n / 100 % 100);
  const int day = static_cast<int>(n % 100);
  const absl::CivilDay civil(year, month, day);  // Normalises a day that does not exist.
  return civil.year() == year && civil.month() == month && civil.day() == day;
}

// The public numbers that may carry a date after the dev number, in the order they are tried.
std::vector<int64_t> OtherPublicNumbers(const Pep440Version& v) {
  std::vector<int64_t> numbers;
  if (v.post) numbers.push_back(*v.post);
  if (v.pre) numbers.push_back(v.pre->number);
  numbers.insert(numbers.end(), v.release.rbegin(), v.release.rend());
  return numbers;
}

bool IsHex(absl::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return absl::ascii_isxdigit(c); });
}

// The hex digits after `prefix` in `segment` when they are 7 to 40 of them.
std::optional<std::string> CommitAfter(absl::string_view segment, absl::string_view prefix) {
  if (segment.substr(0, prefix.size()) != prefix) return std::nullopt;
  const absl::string_view hex = segment.substr(prefix.size());
  if (hex.size() < 7 || hex.size() > 40 || !IsHex(hex)) return std::nullopt;
  return std::string(hex);
}

}  // namespace

absl::StatusOr<Pep440Version> ParsePep440(const std::string& text) {
  Pep440Version v;
  v.text = std::string(absl::StripAsciiWhitespace(text));
  re2::StringPiece g[kPep440Groups];
  if (!Pep440Regex().Match(v.text, 0, v.text.size(), RE2::ANCHOR_BOTH, g, kPep440Groups)) {
    return absl::InvalidArgumentError(absl::StrCat("'", text, "' is not a PEP 440 version"));
  }
  if (Matched(g[1]) && !absl::SimpleAtoi(absl::string_view(g[1].data(), g[1].size()), &v.epoch)) {
    return TooLarge(v.text);
  }
  ASSIGN_OR_RETURN(v.release, ParseRelease(g[2], v.text));
  RETURN_IF_ERROR(FillSuffixes(g, v));
  ASSIGN_OR_RETURN(v.local, ParseLocal(g[13], v.text));
  return v;
}

int ComparePep440(const Pep440Version& a, const Pep440Version& b) {
  if (int c = Sign(a.epoch, b.epoch); c != 0) return c;
  if (int c = Sign(WithoutTrailingZeros(a.release), WithoutTrailingZeros(b.release)); c != 0) {
    return c;
  }
  if (int c = Sign(PreKey(a), PreKey(b)); c != 0) return c;
  if (int c = Sign(PostKey(a), PostKey(b)); c != 0) return c;
  if (int c = Sign(DevKey(a), DevKey(b)); c != 0) return c;
  return CompareLocal(a, b);
}

bool operator<(const Pep440Version& a, const Pep440Version& b) { return ComparePep440(a, b) < 0; }

std::optional<std::string> NightlyDate(const Pep440Version& v) {
  if (v.dev && IsNightlyDateNumber(*v.dev)) return absl::StrCat(*v.dev);
  for (int64_t n : OtherPublicNumbers(v)) {
    if (IsNightlyDateNumber(n)) return absl::StrCat(n);
  }
  for (const Pep440Version::LocalSegment& segment : v.local) {
    const int64_t* n = std::get_if<int64_t>(&segment);
    if (n != nullptr && IsNightlyDateNumber(*n)) return absl::StrCat(*n);
  }
  return std::nullopt;
}

std::optional<std::string> LocalCommit(const Pep440Version& v) {
  for (const Pep440Version::LocalSegment& segment : v.local) {
    const std::string* text = std::get_if<std::string>(&segment);
    if (text == nullptr) continue;
    if (std::optional<std::string> hex = CommitAfter(*text, "git")) return hex;
    if (std::optional<std::string> hex = CommitAfter(*text, "g")) return hex;
  }
  return std::nullopt;
}

std::string NormalizeProjectName(const std::string& name) {
  std::string out;
  for (char c : name) {
    const bool separator = c == '-' || c == '_' || c == '.';
    if (!separator) {
      out.push_back(absl::ascii_tolower(static_cast<unsigned char>(c)));
    } else if (out.empty() || out.back() != '-') {
      out.push_back('-');
    }
  }
  return out;
}

}  // namespace kbisect
