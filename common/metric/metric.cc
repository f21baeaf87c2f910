// Copyright 2026 The kbisect Authors.
//
// The public entry points of kbisect_metric (metric.h) and the kRegex extraction mode. The other
// pieces live in units.h, names.h (names and polarity), json_path.h, auto_detect.h and
// extraction.h (what the modes share).
#include "common/metric/metric.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "common/metric/auto_detect.h"
#include "common/metric/extraction.h"
#include "common/metric/json_path.h"
#include "common/metric/names.h"
#include "common/metric/units.h"
#include "common/status_macros.h"
#include "re2/re2.h"

namespace kbisect {
namespace {

using metric_internal::AnalyzeName;
using metric_internal::DirectionOfName;
using metric_internal::DirectionOfUnit;
using metric_internal::ExtractAuto;
using metric_internal::ExtractWithJsonPath;
using metric_internal::LabelBefore;
using metric_internal::LineAt;
using metric_internal::LookupUnit;
using metric_internal::MakeMetric;
using metric_internal::NotFoundWithTail;
using metric_internal::ParseFinite;
using metric_internal::Piece;
using metric_internal::ReadUnitAfter;
using metric_internal::SplitJsonPath;
using metric_internal::ToAbsl;
using metric_internal::UnitInfo;
using metric_internal::UnitKind;

constexpr char kRegexPrefix[] = "regex:";
constexpr char kJsonPrefix[] = "json:";

// ---------------------------------------------------------------------------------------------
// Regex mode.

absl::StatusOr<std::unique_ptr<RE2>> CompileMetricRegex(absl::string_view pattern) {
  RE2::Options options(RE2::Quiet);
  // (?m): ^ and $ match at line ends. It is ours, not the user's: an error is reported for the
  // pattern as given (RE2 quotes the pattern it compiled in some of its errors).
  auto re = std::make_unique<RE2>(Piece(absl::StrCat("(?m)", pattern)), options);
  if (!re->ok()) {
    const RE2 as_given(Piece(pattern), options);
    return absl::InvalidArgumentError(absl::StrCat(
        "invalid metric regex '", pattern, "': ", as_given.ok() ? re->error() : as_given.error()));
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
