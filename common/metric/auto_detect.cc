// Copyright 2026 The kbisect Authors.
#include "common/metric/auto_detect.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "common/metric/extraction.h"
#include "common/metric/json_path.h"
#include "common/metric/names.h"
#include "common/metric/units.h"
#include "nlohmann/json.hpp"
#include "re2/re2.h"

namespace kbisect {
namespace metric_internal {
namespace {

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

}  // namespace

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

}  // namespace metric_internal
}  // namespace kbisect
