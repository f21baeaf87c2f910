// Copyright 2026 The kbisect Authors.
#include "common/metric/units.h"

#include <algorithm>
#include <optional>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"

namespace kbisect {
namespace metric_internal {
namespace {

bool IsAsciiAlpha(char c) { return absl::ascii_isalpha(static_cast<unsigned char>(c)); }

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

}  // namespace

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
  // A regex capture may run past the end of its line (a class such as [\d\s]+ takes the
  // newline): nothing follows it on that line.
  if (pos > text.size()) return std::nullopt;
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

}  // namespace metric_internal
}  // namespace kbisect
