// Copyright 2026 The kbisect Authors.

#include "common/metric/metric.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/status_macros.h"
#include "nlohmann/json.hpp"
#include "re2/re2.h"

namespace kbisect {
namespace {

using Json = nlohmann::json;

constexpr size_t kTailLines = 5;
constexpr size_t kTailLineWidth = 160;
// At most this many trailing words of a label make a metric name.
constexpr size_t kMaxNameTokens = 3;

constexpr char kRegexPrefix[] = "regex:";
constexpr char kJsonPrefix[] = "json:";

// Debian's abseil keeps its own absl::string_view; the public API uses std::string_view.
absl::string_view ToAbsl(std::string_view s) { return absl::string_view(s.data(), s.size()); }

re2::StringPiece Piece(absl::string_view s) { return re2::StringPiece(s.data(), s.size()); }

bool IsAsciiAlpha(char c) { return absl::ascii_isalpha(static_cast<unsigned char>(c)); }
bool IsAsciiAlnum(char c) { return absl::ascii_isalnum(static_cast<unsigned char>(c)); }

// ---------------------------------------------------------------------------------------------
// Error messages.

// Returns the last kTailLines non-blank lines of `output`, each indented and truncated.
std::string OutputTail(absl::string_view output) {
  std::vector<absl::string_view> lines;
  size_t end = output.size();
  while (lines.size() < kTailLines && end > 0) {
    const size_t newline = output.rfind('\n', end - 1);
    const size_t begin = newline == absl::string_view::npos ? 0 : newline + 1;
    absl::string_view line = output.substr(begin, end - begin);
    if (const size_t cr = line.rfind('\r'); cr != absl::string_view::npos) {
      // A progress display that rewrites the line: keep what is visible last.
      line = cr + 1 < line.size() ? line.substr(cr + 1) : line.substr(0, cr);
    }
    line = absl::StripAsciiWhitespace(line);
    if (!line.empty()) lines.push_back(line);
    end = newline == absl::string_view::npos ? 0 : newline;
  }
  if (lines.empty()) return "; the benchmark printed nothing";
  std::string tail = absl::StrCat("; the output ended with:");
  for (auto it = lines.rbegin(); it != lines.rend(); ++it) {
    if (it->size() > kTailLineWidth) {
      absl::StrAppend(&tail, "\n  | ", it->substr(0, kTailLineWidth - 3), "...");
    } else {
      absl::StrAppend(&tail, "\n  | ", *it);
    }
  }
  return tail;
}

absl::Status NotFoundWithTail(absl::string_view message, absl::string_view output) {
  return absl::NotFoundError(absl::StrCat(message, OutputTail(output)));
}

absl::Status InvalidWithTail(absl::string_view message, absl::string_view output) {
  return absl::InvalidArgumentError(absl::StrCat(message, OutputTail(output)));
}

// ---------------------------------------------------------------------------------------------
// Units.

enum class UnitKind { kTime, kBandwidth, kFlops, kRate, kRatio, kPercent };

struct UnitInfo {
  UnitKind kind;
  double factor;          // Multiplies a value in this unit into `canonical`.
  std::string canonical;  // The canonical unit of the kind ("ms", "GB/s", ...).
};

struct UnitEntry {
  const char* name;
  UnitKind kind;
  double factor;
};

constexpr double kKi = 1024.0;
constexpr UnitEntry kUnits[] = {
    {"ns", UnitKind::kTime, 1e-6},
    {"nsec", UnitKind::kTime, 1e-6},
    {"nanosecond", UnitKind::kTime, 1e-6},
    {"nanoseconds", UnitKind::kTime, 1e-6},
    {"us", UnitKind::kTime, 1e-3},
    {"usec", UnitKind::kTime, 1e-3},
    {"usecs", UnitKind::kTime, 1e-3},
    {"microsecond", UnitKind::kTime, 1e-3},
    {"microseconds", UnitKind::kTime, 1e-3},
    {"ms", UnitKind::kTime, 1.0},
    {"msec", UnitKind::kTime, 1.0},
    {"msecs", UnitKind::kTime, 1.0},
    {"millisecond", UnitKind::kTime, 1.0},
    {"milliseconds", UnitKind::kTime, 1.0},
    {"s", UnitKind::kTime, 1e3},
    {"sec", UnitKind::kTime, 1e3},
    {"secs", UnitKind::kTime, 1e3},
    {"second", UnitKind::kTime, 1e3},
    {"seconds", UnitKind::kTime, 1e3},
    {"min", UnitKind::kTime, 6e4},
    {"mins", UnitKind::kTime, 6e4},
    {"minute", UnitKind::kTime, 6e4},
    {"minutes", UnitKind::kTime, 6e4},
    {"b/s", UnitKind::kBandwidth, 1e-9},
    {"bytes/s", UnitKind::kBandwidth, 1e-9},
    {"kb/s", UnitKind::kBandwidth, 1e-6},
    {"mb/s", UnitKind::kBandwidth, 1e-3},
    {"gb/s", UnitKind::kBandwidth, 1.0},
    {"tb/s", UnitKind::kBandwidth, 1e3},
    {"kib/s", UnitKind::kBandwidth, kKi * 1e-9},
    {"mib/s", UnitKind::kBandwidth, kKi* kKi * 1e-9},
    {"gib/s", UnitKind::kBandwidth, kKi* kKi* kKi * 1e-9},
    {"tib/s", UnitKind::kBandwidth, kKi* kKi* kKi* kKi * 1e-9},
    {"flops", UnitKind::kFlops, 1e-12},
    {"kflops", UnitKind::kFlops, 1e-9},
    {"mflops", UnitKind::kFlops, 1e-6},
    {"gflops", UnitKind::kFlops, 1e-3},
    {"tflops", UnitKind::kFlops, 1.0},
    {"pflops", UnitKind::kFlops, 1e3},
};

// Rates without a conversion; kept under their own (lower-case) name.
constexpr const char* kRateUnits[] = {"qps", "fps", "rps", "tps", "iops"};

const char* CanonicalUnit(UnitKind kind) {
  switch (kind) {
    case UnitKind::kTime:
      return "ms";
    case UnitKind::kBandwidth:
      return "GB/s";
    case UnitKind::kFlops:
      return "TFLOPS";
    case UnitKind::kRatio:
      return "x";
    case UnitKind::kPercent:
      return "%";
    case UnitKind::kRate:
      break;
  }
  return "";
}

// Replaces the micro signs U+00B5 and U+03BC with 'u'.
std::string ReplaceMicro(absl::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (i + 1 < s.size() &&
        ((s[i] == '\xC2' && s[i + 1] == '\xB5') || (s[i] == '\xCE' && s[i + 1] == '\xBC'))) {
      out.push_back('u');
      ++i;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

// Looks up a unit as written in an output ("ms", "µs", "GB/s", "GiB/sec", "TFLOP/s", "tokens/s",
// "x", "%"). Returns nullopt for anything else.
std::optional<UnitInfo> LookupUnit(absl::string_view token) {
  std::string t = ReplaceMicro(absl::StripAsciiWhitespace(token));
  if (t.empty()) return std::nullopt;
  if (t == "x" || t == "X" || t == "\xC3\x97") return UnitInfo{UnitKind::kRatio, 1.0, "x"};
  if (t == "%") return UnitInfo{UnitKind::kPercent, 1.0, "%"};
  // Bit rates: an upper-case prefix then a lower-case 'b' ("Gb/s", "Mbps", "Kbit/s").
  if (t.size() >= 2 && absl::ascii_isupper(static_cast<unsigned char>(t[0])) && t[1] == 'b') {
    return std::nullopt;
  }
  std::string l = absl::AsciiStrToLower(t);
  for (const char* suffix : {"/seconds", "/second", "/secs", "/sec"}) {
    if (absl::EndsWith(l, suffix)) {
      l = absl::StrCat(l.substr(0, l.size() - absl::string_view(suffix).size()), "/s");
      break;
    }
  }
  for (const char* bps :
       {"bps", "kbps", "mbps", "gbps", "tbps", "kibps", "mibps", "gibps", "tibps"}) {
    if (l == bps) {
      l = absl::StrCat(l.substr(0, l.size() - 2), "/s");
      break;
    }
  }
  if (absl::EndsWith(l, "flop/s")) l = absl::StrCat(l.substr(0, l.size() - 2), "s");
  for (const UnitEntry& entry : kUnits) {
    if (l == entry.name) return UnitInfo{entry.kind, entry.factor, CanonicalUnit(entry.kind)};
  }
  for (const char* rate : kRateUnits) {
    if (l == rate) return UnitInfo{UnitKind::kRate, 1.0, l};
  }
  // Any "<letters>/s" is a rate: tokens/s, it/s, samples/s.
  if (l.size() > 2 && absl::EndsWith(l, "/s") &&
      std::all_of(l.begin(), l.end() - 2, [](char c) { return IsAsciiAlpha(c); })) {
    return UnitInfo{UnitKind::kRate, 1.0, l};
  }
  return std::nullopt;
}

// Reads a unit token right after a number: optional spaces, then letters, '/', '%' and non-ASCII
// bytes. Returns the recognised unit, if any. A bare "x" counts only when attached ("1.5x").
std::optional<UnitInfo> ReadUnitAfter(absl::string_view text, size_t pos) {
  size_t p = pos;
  while (p < text.size() && (text[p] == ' ' || text[p] == '\t')) ++p;
  const bool spaced = p > pos;
  const size_t start = p;
  while (p < text.size()) {
    const unsigned char c = static_cast<unsigned char>(text[p]);
    if (absl::ascii_isalpha(c) || c == '/' || c == '%' || c >= 0x80) {
      ++p;
    } else {
      break;
    }
  }
  absl::string_view token = text.substr(start, p - start);
  while (absl::EndsWith(token, "/")) token.remove_suffix(1);
  std::optional<UnitInfo> unit = LookupUnit(token);
  if (!unit.has_value()) {
    // "ms/iter", "us/call": a time per something is still that time.
    const size_t slash = token.find('/');
    if (slash != absl::string_view::npos) {
      unit = LookupUnit(token.substr(0, slash));
      if (unit.has_value() && unit->kind != UnitKind::kTime) unit.reset();
    }
  }
  if (unit.has_value() && unit->kind == UnitKind::kRatio && spaced) return std::nullopt;
  return unit;
}

// ---------------------------------------------------------------------------------------------
// Names.

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

// What a label or key says about a metric.
struct NameInfo {
  std::string name;              // lower_snake_case without a unit suffix; may be empty.
  std::optional<UnitInfo> unit;  // From a "(unit)" part or a unit suffix ("_us", "_gb_s").
  bool per_second = false;       // "tokens/s", "tokens_per_sec": a rate.
};

// Returns the words of `label` that name the metric: the text after the last ". " (a sentence
// end), and of its space-separated words the trailing ones without '.' or '/' (so a path or file
// name printed before the label is dropped), or else the last word. A trailing "(unit)" stays.
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

// ---------------------------------------------------------------------------------------------
// Building a metric.

// Parses `text` as a number; InvalidArgument (with `what` and the output tail) if it is not a
// finite number.
absl::StatusOr<double> ParseFinite(absl::string_view text, absl::string_view what,
                                   absl::string_view output) {
  double value = 0;
  const absl::string_view trimmed = absl::StripAsciiWhitespace(text);
  if (!absl::SimpleAtod(trimmed, &value)) {
    return InvalidWithTail(absl::StrCat(what, " captured '", trimmed, "', which is not a number"),
                           output);
  }
  if (!std::isfinite(value)) {
    return InvalidWithTail(
        absl::StrCat(what, " captured '", trimmed, "', which is not a finite number"), output);
  }
  return value;
}

// Builds a metric from a label (or key) and a value, with the unit found after the value (if
// any) taking precedence over a unit in the label.
Metric MakeMetric(absl::string_view label, double value, const std::optional<UnitInfo>& text_unit,
                  absl::string_view fallback_name, std::string matched_text) {
  NameInfo info = AnalyzeName(label);
  if (text_unit.has_value()) info.unit = text_unit;
  Metric metric;
  metric.name = info.name.empty() ? std::string(fallback_name) : info.name;
  metric.value = value;
  if (info.unit.has_value()) {
    metric.value = value * info.unit->factor;
    metric.unit = info.unit->canonical;
  }
  metric.direction = DirectionOfName(info);
  metric.matched_text = std::move(matched_text);
  return metric;
}

// Returns the label written just before position `pos` of `line`: the trailing run of word
// characters once separators (":", "=", spaces) are stripped, cleaned by CleanLabel.
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

// Returns the line of `text` that contains offset `pos`.
absl::string_view LineAt(absl::string_view text, size_t pos) {
  const size_t nl = pos == 0 ? absl::string_view::npos : text.rfind('\n', pos - 1);
  size_t begin = nl == absl::string_view::npos ? 0 : nl + 1;
  size_t end = text.find('\n', pos);
  if (end == absl::string_view::npos) end = text.size();
  absl::string_view line = text.substr(begin, end - begin);
  while (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  return line;
}

// ---------------------------------------------------------------------------------------------
// Regex mode.

absl::StatusOr<std::unique_ptr<RE2>> CompileMetricRegex(absl::string_view pattern) {
  RE2::Options options(RE2::Quiet);
  auto re = std::make_unique<RE2>(Piece(absl::StrCat("(?m)", pattern)), options);
  if (!re->ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid metric regex '", pattern, "': ", re->error()));
  }
  if (re->NumberOfCapturingGroups() != 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "metric regex '", pattern, "' must have exactly one capturing group (around the number), ",
        "but it has ", re->NumberOfCapturingGroups()));
  }
  return re;
}

absl::StatusOr<Metric> ExtractWithRegex(absl::string_view pattern, absl::string_view output) {
  ASSIGN_OR_RETURN(std::unique_ptr<RE2> re, CompileMetricRegex(pattern));
  const re2::StringPiece input = Piece(output);
  re2::StringPiece groups[2];
  std::optional<std::pair<absl::string_view, absl::string_view>> last;  // (match, capture)
  size_t pos = 0;
  while (pos <= output.size() && re->Match(input, pos, output.size(), RE2::UNANCHORED, groups, 2)) {
    const size_t begin = static_cast<size_t>(groups[0].data() - output.data());
    const size_t end = begin + groups[0].size();
    if (groups[1].data() != nullptr) {
      last.emplace(
          output.substr(begin, end - begin),
          output.substr(static_cast<size_t>(groups[1].data() - output.data()), groups[1].size()));
    }
    pos = end > pos ? end : pos + 1;
  }
  if (!last.has_value()) {
    return NotFoundWithTail(
        absl::StrCat("metric regex '", pattern, "' matched nothing in the benchmark output"),
        output);
  }
  const auto [match, capture] = *last;
  ASSIGN_OR_RETURN(const double value,
                   ParseFinite(capture, absl::StrCat("metric regex '", pattern, "'"), output));
  const size_t capture_pos = static_cast<size_t>(capture.data() - output.data());
  const absl::string_view line = LineAt(output, capture_pos);
  const size_t in_line = capture_pos - static_cast<size_t>(line.data() - output.data());
  const std::optional<UnitInfo> unit = ReadUnitAfter(line, in_line + capture.size());
  return MakeMetric(LabelBefore(line, in_line), value, unit, pattern, std::string(match));
}

// ---------------------------------------------------------------------------------------------
// JSON.

struct JsonObject {
  size_t begin = 0;
  size_t end = 0;
  Json value;
};

// Returns the last complete top-level JSON object of `output` (the one that ends last), or
// nullopt. One pass finds every brace-balanced "{...}" (respecting JSON strings; a raw newline in
// a string or a mismatched bracket abandons the open ones), then candidates are parsed from the
// last-ending one backwards; an enclosing object always ends after what it encloses.
std::optional<JsonObject> FindLastJsonObject(absl::string_view output) {
  std::vector<std::pair<size_t, size_t>> spans;  // [begin, end) of balanced objects, by end.
  std::vector<std::pair<char, size_t>> stack;
  bool in_string = false;
  bool escape = false;
  for (size_t i = 0; i < output.size(); ++i) {
    const char c = output[i];
    if (stack.empty()) {
      if (c == '{') stack.emplace_back(c, i);
      continue;
    }
    if (in_string) {
      if (escape) {
        escape = false;
      } else if (c == '\\') {
        escape = true;
      } else if (c == '"') {
        in_string = false;
      } else if (c == '\n') {
        stack.clear();
        in_string = false;
      }
      continue;
    }
    switch (c) {
      case '"':
        in_string = true;
        break;
      case '{':
      case '[':
        stack.emplace_back(c, i);
        break;
      case '}':
      case ']': {
        const char open = c == '}' ? '{' : '[';
        if (stack.back().first != open) {
          stack.clear();
          break;
        }
        const size_t begin = stack.back().second;
        stack.pop_back();
        if (open == '{') spans.emplace_back(begin, i + 1);
        break;
      }
      default:
        break;
    }
  }
  for (auto it = spans.rbegin(); it != spans.rend(); ++it) {
    const absl::string_view text = output.substr(it->first, it->second - it->first);
    Json parsed = Json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
    if (!parsed.is_discarded() && parsed.is_object()) {
      return JsonObject{it->first, it->second, std::move(parsed)};
    }
  }
  return std::nullopt;
}

const char* JsonTypeName(const Json& j) {
  if (j.is_null()) return "null";
  if (j.is_boolean()) return "boolean";
  if (j.is_string()) return "string";
  if (j.is_array()) return "array";
  if (j.is_object()) return "object";
  return "number";
}

// Returns the unit named by a "unit" member of `object`, if any.
std::optional<UnitInfo> SiblingUnit(const Json& object) {
  if (!object.is_object()) return std::nullopt;
  const auto it = object.find("unit");
  if (it == object.end() || !it->is_string()) return std::nullopt;
  return LookupUnit(it->get<std::string>());
}

absl::StatusOr<std::vector<std::string>> SplitJsonPath(absl::string_view path) {
  absl::string_view p = absl::StripAsciiWhitespace(path);
  if (!absl::ConsumePrefix(&p, "$.")) absl::ConsumePrefix(&p, "$");
  if (p.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("metric JSON path '", path,
                                                   "' is empty; write a dotted path like "
                                                   "'results.0.latency_ms'"));
  }
  std::vector<std::string> parts = absl::StrSplit(p, '.');
  for (const std::string& part : parts) {
    if (part.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("metric JSON path '", path,
                       "' has an empty component; write a dotted path like "
                       "'results.0.latency_ms'"));
    }
  }
  return parts;
}

absl::StatusOr<Metric> ExtractWithJsonPath(absl::string_view path, absl::string_view output) {
  ASSIGN_OR_RETURN(const std::vector<std::string> parts, SplitJsonPath(path));
  std::optional<JsonObject> object = FindLastJsonObject(output);
  if (!object.has_value()) {
    return NotFoundWithTail(absl::StrCat("no JSON object in the benchmark output (looking for "
                                         "metric JSON path '",
                                         path, "')"),
                            output);
  }
  const Json* node = &object->value;
  const Json* parent = nullptr;
  std::string name_part;
  std::string walked = "$";
  for (const std::string& part : parts) {
    if (node->is_object()) {
      const auto it = node->find(part);
      if (it == node->end()) {
        std::vector<std::string> keys;
        for (auto k = node->begin(); k != node->end(); ++k) keys.push_back(k.key());
        return NotFoundWithTail(
            absl::StrCat("metric JSON path '", path, "': no key '", part, "' in the object at '",
                         walked, "' (keys: ", absl::StrJoin(keys, ", "), ")"),
            output);
      }
      parent = node;
      node = &*it;
      name_part = part;
    } else if (node->is_array()) {
      size_t index = 0;
      if (!absl::SimpleAtoi(part, &index) || !std::all_of(part.begin(), part.end(), [](char c) {
            return absl::ascii_isdigit(static_cast<unsigned char>(c));
          })) {
        return InvalidWithTail(
            absl::StrCat("metric JSON path '", path, "': '", part, "' is not an array index, but '",
                         walked, "' is an array"),
            output);
      }
      if (index >= node->size()) {
        return NotFoundWithTail(absl::StrCat("metric JSON path '", path, "': index ", index,
                                             " is out of range of the array at '", walked,
                                             "' (size ", node->size(), ")"),
                                output);
      }
      parent = node;
      node = &(*node)[index];
    } else {
      return InvalidWithTail(
          absl::StrCat("metric JSON path '", path, "': '", walked, "' is a JSON ",
                       JsonTypeName(*node), ", which has no member '", part, "'"),
          output);
    }
    absl::StrAppend(&walked, ".", part);
  }
  const std::string what = absl::StrCat("metric JSON path '", path, "'");
  double value = 0;
  if (node->is_number()) {
    value = node->get<double>();
    if (!std::isfinite(value)) {
      return InvalidWithTail(absl::StrCat(what, " names ", node->dump(), ", not a finite number"),
                             output);
    }
  } else if (node->is_string()) {
    ASSIGN_OR_RETURN(value, ParseFinite(node->get<std::string>(), what, output));
  } else {
    return InvalidWithTail(
        absl::StrCat(what, " names a JSON ", JsonTypeName(*node), ", not a number"), output);
  }
  std::optional<UnitInfo> unit;
  if (!AnalyzeName(name_part).unit.has_value() && parent != nullptr) unit = SiblingUnit(*parent);
  return MakeMetric(name_part, value, unit, path,
                    absl::StrCat(absl::StripPrefix(path, "$."), " = ", node->dump()));
}

// ---------------------------------------------------------------------------------------------
// Auto mode.

struct Candidate {
  int tier = 0;       // Lower is preferred.
  size_t pos = 0;     // Offset in the output; later wins.
  std::string raw;    // The value as written ("1.23", "nan").
  double factor = 1;  // Converts the written value into metric.unit.
  Metric metric;      // Everything but the value, which is set once `raw` is known to be finite.
};

// Fills in the name, unit, direction and unit factor of a candidate read from `label`.
void Describe(absl::string_view label, const std::optional<UnitInfo>& unit,
              std::string matched_text, Candidate& c) {
  c.metric = MakeMetric(label, 1.0, unit, "", std::move(matched_text));
  c.factor = c.metric.value;
}

// "label: number" / "label=number" (the unit is read after the match).
constexpr char kKeyValuePattern[] =
    R"(([A-Za-z][A-Za-z0-9_ ./\-]*?(?:\s*[(\[][^()\[\]]{1,16}[)\]])?)\s*[:=]\s*)"
    R"(((?i:[-+]?(?:\d{1,3}(?:,\d{3})+(?:\.\d*)?|\d+(?:\.\d*)?|\.\d+)(?:e[-+]?\d+)?|)"
    R"((?:nan|[-+]?inf(?:inity)?)\b)))";
// pytest --durations: "1.23s call     tests/test_perf.py::test_decode".
constexpr char kPytestCallPattern[] = R"(^\s*(\d+(?:\.\d+)?)s\s+call\s+(\S+)\s*$)";
// pytest summary: "==== 1 passed, 2 warnings in 1.23s ====" (also without the '=' in -q mode).
constexpr char kPytestSummaryPattern[] =
    R"(^=*\s*\d+ (?:passed|failed|errors?|skipped|xfailed|xpassed|deselected|warnings?|rerun))"
    R"(\b[^=\n]* in (\d+(?:\.\d+)?)s\b)";

void ScanKeyValues(absl::string_view line, size_t line_pos, std::vector<Candidate>& out) {
  static const RE2* const kKeyValue = new RE2(kKeyValuePattern);
  const re2::StringPiece input = Piece(line);
  re2::StringPiece groups[3];
  size_t pos = 0;
  while (pos < line.size() &&
         kKeyValue->Match(input, pos, line.size(), RE2::UNANCHORED, groups, 3)) {
    const size_t begin = static_cast<size_t>(groups[0].data() - line.data());
    const size_t end = begin + groups[0].size();
    pos = end > pos ? end : pos + 1;
    // "12:00:05" is a clock, "1.2.3" a version and "1,2" a list, not measurements.
    if (end < line.size()) {
      const char next = line[end];
      const bool digit_follows =
          end + 1 < line.size() && absl::ascii_isdigit(static_cast<unsigned char>(line[end + 1]));
      if (next == ':' || ((next == '.' || next == ',') && digit_follows)) continue;
    }
    const absl::string_view label =
        CleanLabel(absl::string_view(groups[1].data(), groups[1].size()));
    const absl::string_view number(groups[2].data(), groups[2].size());
    Candidate c;
    Describe(label, ReadUnitAfter(line, end), std::string(absl::StripAsciiWhitespace(line)), c);
    if (c.metric.direction == Direction::kUnknown || c.metric.name.empty()) continue;
    c.tier = 0;
    c.pos = line_pos + begin;
    c.raw = absl::StrReplaceAll(number, {{",", ""}});  // "1,234.5" -> "1234.5"
    out.push_back(std::move(c));
  }
}

void ScanJson(absl::string_view output, std::vector<Candidate>& out) {
  std::optional<JsonObject> object = FindLastJsonObject(output);
  if (!object.has_value()) return;
  const std::optional<UnitInfo> sibling_unit = SiblingUnit(object->value);
  for (auto it = object->value.begin(); it != object->value.end(); ++it) {
    if (!it->is_number()) continue;
    std::optional<UnitInfo> unit;
    if (!AnalyzeName(it.key()).unit.has_value()) unit = sibling_unit;
    Candidate c;
    Describe(it.key(), unit, absl::StrCat("\"", it.key(), "\": ", it->dump()), c);
    if (c.metric.direction == Direction::kUnknown || c.metric.name.empty()) continue;
    c.tier = 0;
    c.pos = object->begin;
    c.raw = it->dump();
    out.push_back(std::move(c));
  }
}

void ScanPytest(absl::string_view line, size_t line_pos, std::vector<Candidate>& out) {
  static const RE2* const kCall = new RE2(kPytestCallPattern);
  static const RE2* const kSummary = new RE2(kPytestSummaryPattern);
  re2::StringPiece seconds;
  re2::StringPiece node_id;
  const std::string matched(absl::StripAsciiWhitespace(line));
  if (RE2::PartialMatch(Piece(line), *kCall, &seconds, &node_id)) {
    Candidate c;
    c.tier = 1;
    c.pos = line_pos;
    c.raw = std::string(seconds.data(), seconds.size());
    c.factor = 1e3;  // pytest prints seconds.
    c.metric.name = std::string(node_id.data(), node_id.size());
    c.metric.unit = "ms";
    c.metric.direction = Direction::kLowerIsBetter;
    c.metric.matched_text = matched;
    out.push_back(std::move(c));
  } else if (RE2::PartialMatch(Piece(line), *kSummary, &seconds)) {
    Candidate c;
    c.tier = 2;
    c.pos = line_pos;
    c.raw = std::string(seconds.data(), seconds.size());
    c.factor = 1e3;
    c.metric.name = "pytest_session";
    c.metric.unit = "ms";
    c.metric.direction = Direction::kLowerIsBetter;
    c.metric.matched_text = matched;
    out.push_back(std::move(c));
  }
}

absl::StatusOr<Metric> ExtractAuto(absl::string_view output) {
  std::vector<Candidate> candidates;
  size_t line_pos = 0;
  while (line_pos <= output.size()) {
    size_t end = output.find_first_of("\r\n", line_pos);
    if (end == absl::string_view::npos) end = output.size();
    const absl::string_view line = output.substr(line_pos, end - line_pos);
    if (!line.empty()) {
      ScanKeyValues(line, line_pos, candidates);
      ScanPytest(line, line_pos, candidates);
    }
    line_pos = end + 1;
  }
  ScanJson(output, candidates);
  if (candidates.empty()) {
    return NotFoundWithTail(
        "found no metric in the benchmark output (auto-detection knows 'Latency: 1.23 ms', "
        "'Throughput: 456 GB/s', 'kernel_time_us: 789', a JSON object like {\"time\": 1.23} and "
        "pytest durations); pass --metric REGEX or --metric-json PATH",
        output);
  }
  int best_tier = candidates.front().tier;
  for (const Candidate& c : candidates) best_tier = std::min(best_tier, c.tier);
  std::vector<std::string> names;  // In order of first appearance.
  std::vector<const Candidate*> tier;
  for (const Candidate& c : candidates) {
    if (c.tier == best_tier) tier.push_back(&c);
  }
  std::stable_sort(tier.begin(), tier.end(),
                   [](const Candidate* l, const Candidate* r) { return l->pos < r->pos; });
  for (const Candidate* c : tier) {
    if (std::find(names.begin(), names.end(), c->metric.name) == names.end()) {
      names.push_back(c->metric.name);
    }
  }
  if (names.size() > 1) {
    std::string found = absl::StrJoin(names.begin(), names.end() - 1, ", ");
    absl::StrAppend(&found, " and ", names.back());
    return InvalidWithTail(absl::StrCat("ambiguous metric: found ", found,
                                        "; pass --metric REGEX or --metric-json PATH"),
                           output);
  }
  const Candidate& chosen = *tier.back();
  double value = 0;
  const absl::string_view raw = chosen.raw;
  if (!absl::SimpleAtod(raw, &value) || !std::isfinite(value)) {
    return InvalidWithTail(
        absl::StrCat("auto-detected metric '", chosen.metric.name, "' has the value '", raw,
                     "', which is not a finite number"),
        output);
  }
  Metric metric = chosen.metric;
  metric.value = value * chosen.factor;
  return metric;
}

}  // namespace

const char* DirectionName(Direction direction) {
  switch (direction) {
    case Direction::kLowerIsBetter:
      return "lower_is_better";
    case Direction::kHigherIsBetter:
      return "higher_is_better";
    case Direction::kUnknown:
      break;
  }
  return "unknown";
}

absl::StatusOr<MetricSpec> ParseMetricSpec(std::string_view text_in) {
  const absl::string_view text = ToAbsl(text_in);
  MetricSpec spec;
  const absl::string_view trimmed = absl::StripAsciiWhitespace(text);
  if (trimmed.empty() || trimmed == "auto") {
    spec.kind = MetricSpec::Kind::kAuto;
  } else if (absl::StartsWith(trimmed, kRegexPrefix)) {
    spec.kind = MetricSpec::Kind::kRegex;
    spec.pattern = std::string(trimmed.substr(sizeof(kRegexPrefix) - 1));
  } else if (absl::StartsWith(trimmed, kJsonPrefix)) {
    spec.kind = MetricSpec::Kind::kJsonPath;
    spec.pattern = std::string(trimmed.substr(sizeof(kJsonPrefix) - 1));
  } else {
    return absl::InvalidArgumentError(absl::StrCat(
        "unknown metric spec '", text, "'; use 'auto', 'regex:PATTERN' or 'json:PATH'"));
  }
  RETURN_IF_ERROR(ValidateMetricSpec(spec));
  return spec;
}

std::string MetricSpecToString(const MetricSpec& spec) {
  switch (spec.kind) {
    case MetricSpec::Kind::kRegex:
      return absl::StrCat(kRegexPrefix, spec.pattern);
    case MetricSpec::Kind::kJsonPath:
      return absl::StrCat(kJsonPrefix, spec.pattern);
    case MetricSpec::Kind::kAuto:
      break;
  }
  return "auto";
}

absl::Status ValidateMetricSpec(const MetricSpec& spec) {
  switch (spec.kind) {
    case MetricSpec::Kind::kRegex:
      return CompileMetricRegex(spec.pattern).status();
    case MetricSpec::Kind::kJsonPath:
      return SplitJsonPath(spec.pattern).status();
    case MetricSpec::Kind::kAuto:
      break;
  }
  return absl::OkStatus();
}

absl::StatusOr<Metric> ExtractMetric(const MetricSpec& spec, std::string_view output_in) {
  const absl::string_view output = ToAbsl(output_in);
  switch (spec.kind) {
    case MetricSpec::Kind::kRegex:
      return ExtractWithRegex(spec.pattern, output);
    case MetricSpec::Kind::kJsonPath:
      return ExtractWithJsonPath(spec.pattern, output);
    case MetricSpec::Kind::kAuto:
      break;
  }
  return ExtractAuto(output);
}

Direction InferDirection(std::string_view name, std::string_view unit) {
  if (const std::optional<UnitInfo> info = LookupUnit(ToAbsl(unit)); info.has_value()) {
    const Direction d = DirectionOfUnit(*info);
    if (d != Direction::kUnknown) return d;
  }
  return DirectionOfName(AnalyzeName(ToAbsl(name)));
}

NormalizedValue NormalizeUnit(double value, std::string_view unit) {
  const std::optional<UnitInfo> info = LookupUnit(ToAbsl(unit));
  if (!info.has_value()) return NormalizedValue{value, std::string(unit)};
  return NormalizedValue{value * info->factor, info->canonical};
}

std::string FormatValue(double value, std::string_view unit) {
  std::string number;
  const double magnitude = std::fabs(value);
  char buffer[64];
  if (value == 0) {
    number = "0";
  } else if (!std::isfinite(value) || magnitude < 1e-4 || magnitude >= 1e15) {
    std::snprintf(buffer, sizeof(buffer), "%.3g", value);
    number = buffer;
  } else {
    const int decimals = std::max(0, 2 - static_cast<int>(std::floor(std::log10(magnitude))));
    std::snprintf(buffer, sizeof(buffer), "%.*f", decimals, value);
    number = buffer;
    if (number.find('.') != std::string::npos) {
      while (number.back() == '0') number.pop_back();
      if (number.back() == '.') number.pop_back();
    }
  }
  if (unit.empty()) return number;
  const std::optional<UnitInfo> info = LookupUnit(ToAbsl(unit));
  const bool attached =
      info.has_value() && (info->kind == UnitKind::kTime || info->kind == UnitKind::kRatio ||
                           info->kind == UnitKind::kPercent);
  return absl::StrCat(number, attached ? "" : " ", ToAbsl(unit));
}

std::string FormatMetric(const Metric& metric) {
  return absl::StrCat(metric.name, " = ", FormatValue(metric.value, metric.unit));
}

}  // namespace kbisect
