// Copyright 2026 The kbisect Authors.
#include "common/metric/extraction.h"

#include <cmath>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "common/metric/names.h"

namespace kbisect {
namespace metric_internal {
namespace {

constexpr size_t kTailLines = 5;
constexpr size_t kTailLineWidth = 160;

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

}  // namespace

absl::string_view LineAt(absl::string_view text, size_t pos) {
  const size_t nl = pos == 0 ? absl::string_view::npos : text.rfind('\n', pos - 1);
  const size_t begin = nl == absl::string_view::npos ? 0 : nl + 1;
  size_t end = text.find('\n', pos);
  if (end == absl::string_view::npos) end = text.size();
  absl::string_view line = text.substr(begin, end - begin);
  while (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  return line;
}

absl::Status NotFoundWithTail(absl::string_view message, absl::string_view output) {
  return absl::NotFoundError(absl::StrCat(message, OutputTail(output)));
}

absl::Status InvalidWithTail(absl::string_view message, absl::string_view output) {
  return absl::InvalidArgumentError(absl::StrCat(message, OutputTail(output)));
}

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

}  // namespace metric_internal
}  // namespace kbisect
