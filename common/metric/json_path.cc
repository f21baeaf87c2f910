// Copyright 2026 The kbisect Authors.
#include "common/metric/json_path.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "common/metric/extraction.h"
#include "common/metric/names.h"
#include "common/status_macros.h"

namespace kbisect {
namespace metric_internal {
namespace {

using Json = nlohmann::json;

}  // namespace

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

}  // namespace metric_internal
}  // namespace kbisect
