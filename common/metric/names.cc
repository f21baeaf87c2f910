// Copyright 2026 The kbisect Authors.
#include "common/metric/names.h"

#include <algorithm>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"

namespace kbisect {
namespace metric_internal {
namespace {

// At most this many trailing words of a label make a metric name.
constexpr size_t kMaxNameTokens = 3;

bool IsAsciiAlnum(char c) { return absl::ascii_isalnum(static_cast<unsigned char>(c)); }

// Splits a label or key into lower-case words: camelCase and any non-alphanumeric character
// separate words, micro signs become 'u', and words that are pure numbers are dropped.
std::vector<std::string> NameTokens(absl::string_view raw) {
  const std::string s = ReplaceMicro(raw);
  std::vector<std::string> tokens;
  std::string current;
  auto flush = [&] {
    if (!current.empty() && !std::all_of(current.begin(), current.end(), [](char c) {
          return absl::ascii_isdigit(static_cast<unsigned char>(c));
        })) {
      tokens.push_back(absl::AsciiStrToLower(current));
    }
    current.clear();
  };
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (!IsAsciiAlnum(c)) {
      flush();
      continue;
    }
    if (absl::ascii_isupper(static_cast<unsigned char>(c)) && i > 0 &&
        absl::ascii_islower(static_cast<unsigned char>(s[i - 1]))) {
      flush();
    }
    current.push_back(c);
  }
  flush();
  return tokens;
}

bool Contains(std::initializer_list<const char*> words, absl::string_view token) {
  for (const char* w : words) {
    if (token == w) return true;
  }
  return false;
}

bool IsLowerWord(absl::string_view t) {
  return Contains({"time", "latency", "lat", "duration", "elapsed", "runtime", "walltime", "wall",
                   "ttft", "tpot", "itl", "cycles", "ms", "us", "ns"},
                  t) ||
         absl::StrContains(t, "latency") || absl::StrContains(t, "duration");
}

bool IsHigherWord(absl::string_view t) {
  return Contains({"throughput", "bandwidth", "bw", "flops", "tflops", "gflops", "pflops", "mflops",
                   "speedup", "qps", "fps", "rps", "tps", "iops", "goodput"},
                  t) ||
         absl::StrContains(t, "throughput") || absl::StrContains(t, "bandwidth");
}

bool IsSecondsWord(absl::string_view t) {
  return Contains({"s", "sec", "secs", "second", "seconds"}, t);
}

}  // namespace

absl::string_view CleanLabel(absl::string_view label) {
  label = absl::StripAsciiWhitespace(label);
  if (const size_t stop = label.rfind(". "); stop != absl::string_view::npos) {
    label = absl::StripAsciiWhitespace(label.substr(stop + 2));
  }
  size_t words_end = label.size();
  if (!label.empty() && (label.back() == ')' || label.back() == ']')) {
    const size_t open = label.rfind(label.back() == ')' ? '(' : '[');
    if (open != absl::string_view::npos) words_end = open;
  }
  while (words_end > 0 && label[words_end - 1] == ' ') --words_end;
  size_t start = words_end;
  while (start > 0) {
    const size_t space = label.rfind(' ', start - 1);
    const size_t word_begin = space == absl::string_view::npos ? 0 : space + 1;
    const absl::string_view word = label.substr(word_begin, start - word_begin);
    if (word.find_first_of("./") != absl::string_view::npos) {
      if (start == words_end) start = word_begin;  // The label is this one word.
      break;
    }
    start = space == absl::string_view::npos ? 0 : space;
    if (space == absl::string_view::npos) break;
  }
  return absl::StripAsciiWhitespace(label.substr(start));
}

absl::string_view LabelBefore(absl::string_view line, size_t pos) {
  absl::string_view prefix = line.substr(0, pos);
  while (!prefix.empty() && (prefix.back() == ':' || prefix.back() == '=' ||
                             absl::ascii_isspace(static_cast<unsigned char>(prefix.back())))) {
    prefix.remove_suffix(1);
  }
  size_t start = prefix.size();
  while (start > 0) {
    const char c = prefix[start - 1];
    if (IsAsciiAlnum(c) || c == '_' || c == ' ' || c == '-' || c == '.' || c == '/' || c == '(' ||
        c == ')' || c == '[' || c == ']') {
      --start;
    } else {
      break;
    }
  }
  return CleanLabel(prefix.substr(start));
}

NameInfo AnalyzeName(absl::string_view raw) {
  NameInfo info;
  absl::string_view label = absl::StripAsciiWhitespace(raw);
  // "Bandwidth (GB/s)" / "time [ms]".
  if (!label.empty() && (label.back() == ')' || label.back() == ']')) {
    const char open = label.back() == ')' ? '(' : '[';
    const size_t pos = label.rfind(open);
    if (pos != absl::string_view::npos) {
      info.unit = LookupUnit(label.substr(pos + 1, label.size() - pos - 2));
      label = absl::StripAsciiWhitespace(label.substr(0, pos));
    }
  }
  const std::string lower = absl::AsciiStrToLower(label);
  for (const char* rate : {"/s", "/sec", "/second"}) {
    if (absl::EndsWith(lower, rate)) info.per_second = true;
  }
  std::vector<std::string> tokens = NameTokens(label);
  const size_t n = tokens.size();
  size_t strip = 0;
  std::optional<UnitInfo> suffix_unit;
  if (n >= 2 && IsSecondsWord(tokens[n - 1]) && tokens[n - 2] == "per") {
    info.per_second = true;
  } else if (n >= 2 && tokens[n - 1] == "s" && !info.per_second &&
             (suffix_unit = LookupUnit(absl::StrCat(tokens[n - 2], "/s"))).has_value() &&
             suffix_unit->kind != UnitKind::kRate) {
    strip = 2;  // "bandwidth_gb_s", "gib_s"
  } else if (n >= 1 && !info.per_second) {
    const std::string& last = tokens[n - 1];
    const bool earlier_time_word = std::any_of(tokens.begin(), tokens.end() - 1,
                                               [](const std::string& t) { return IsLowerWord(t); });
    std::optional<UnitInfo> unit = LookupUnit(last);
    if (unit.has_value() &&
        ((unit->kind == UnitKind::kTime && (!IsSecondsWord(last) || n == 1 || earlier_time_word) &&
          !Contains({"min", "mins", "minute", "minutes"}, last)) ||
         unit->kind == UnitKind::kBandwidth ||
         (unit->kind == UnitKind::kFlops && last != "flops"))) {
      suffix_unit = unit;
      strip = 1;
    } else {
      suffix_unit.reset();
    }
  }
  if (strip > 0) {
    if (!info.unit.has_value()) info.unit = suffix_unit;
    tokens.resize(n - strip);
    if (tokens.empty()) {
      switch (suffix_unit->kind) {
        case UnitKind::kTime:
          tokens.push_back("time");
          break;
        case UnitKind::kBandwidth:
          tokens.push_back("bandwidth");
          break;
        default:
          tokens.push_back("flops");
          break;
      }
    }
  }
  if (tokens.size() > kMaxNameTokens) {
    tokens.erase(tokens.begin(), tokens.end() - kMaxNameTokens);
  }
  info.name = absl::StrJoin(tokens, "_");
  return info;
}

Direction DirectionOfUnit(const UnitInfo& unit) {
  switch (unit.kind) {
    case UnitKind::kTime:
      return Direction::kLowerIsBetter;
    case UnitKind::kBandwidth:
    case UnitKind::kFlops:
    case UnitKind::kRate:
    case UnitKind::kRatio:
      return Direction::kHigherIsBetter;
    case UnitKind::kPercent:
      break;
  }
  return Direction::kUnknown;
}

Direction DirectionOfName(const NameInfo& info) {
  if (info.unit.has_value()) {
    const Direction d = DirectionOfUnit(*info.unit);
    if (d != Direction::kUnknown) return d;
  }
  if (info.per_second) return Direction::kHigherIsBetter;
  const std::vector<std::string> tokens = NameTokens(info.name);
  for (const std::string& t : tokens) {
    if (IsHigherWord(t)) return Direction::kHigherIsBetter;
  }
  for (const std::string& t : tokens) {
    if (IsLowerWord(t)) return Direction::kLowerIsBetter;
  }
  return Direction::kUnknown;
}

}  // namespace metric_internal
}  // namespace kbisect
