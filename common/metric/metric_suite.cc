// Copyright 2026 The kbisect Authors.
//
// Extraction of a suite of named metrics (metric_suite.h): the spec's text form and validation,
// the kRegex and kJsonPath modes, and the three forms kAuto recognises (Google Benchmark JSON,
// pytest-benchmark JSON, a plain table). Units, names, polarity and the errors' output tail are
// the single-metric code's (units.h, names.h, extraction.h, json_path.h).
#include "common/metric/metric_suite.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
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
#include "common/status_macros.h"
#include "nlohmann/json.hpp"
#include "re2/re2.h"

namespace kbisect {
// Named, so that a unity build of kbisect_metric does not mix these helpers with the other files'.
namespace metric_suite_internal {
namespace {

using metric_internal::AnalyzeName;
using metric_internal::FindLastJsonObject;
using metric_internal::JsonObject;
using metric_internal::JsonTypeName;
using metric_internal::LabelBefore;
using metric_internal::LineAt;
using metric_internal::LookupUnit;
using metric_internal::MakeMetric;
using metric_internal::NotFoundWithTail;
using metric_internal::Piece;
using metric_internal::ReadUnitAfter;
using metric_internal::SiblingUnit;
using metric_internal::SplitJsonPath;
using metric_internal::ToAbsl;
using metric_internal::UnitInfo;
using metric_internal::UnitKind;

// Keeps the order of an object's members as the output lists them.
using Json = nlohmann::ordered_json;

constexpr char kRegexPrefix[] = "regex:";
constexpr char kJsonPrefix[] = "json:";
constexpr char kWildcard[] = "*";
constexpr char kNameGroup[] = "name";

// Returns the value of `text` if it is a finite number (surrounding whitespace allowed).
std::optional<double> FiniteNumber(absl::string_view text) {
  double value = 0;
  if (!absl::SimpleAtod(absl::StripAsciiWhitespace(text), &value) || !std::isfinite(value)) {
    return std::nullopt;
  }
  return value;
}

// What a JSON value is as a metric's value.
enum class JsonValueKind {
  kNone,       // Not a number: null, a boolean, an object, an array or a string of words.
  kNonFinite,  // A number, or a string holding one, that is not finite ("NaN", "inf", 1e999).
  kFinite,     // A finite number or a string holding one.
};

// Classifies `j` as a metric's value and, if it is a finite number, sets `*value`.
JsonValueKind ReadJsonNumber(const Json& j, double* value) {
  if (j.is_number()) {
    *value = j.get<double>();
  } else if (!j.is_string() ||
             !absl::SimpleAtod(absl::StripAsciiWhitespace(j.get<std::string>()), value)) {
    return JsonValueKind::kNone;
  }
  return std::isfinite(*value) ? JsonValueKind::kFinite : JsonValueKind::kNonFinite;
}

// Returns the string member `key` of `object`, or "" if there is none.
std::string StringMember(const Json& object, const char* key) {
  if (!object.is_object()) return "";
  const auto it = object.find(key);
  if (it == object.end() || !it->is_string()) return "";
  return it->get<std::string>();
}

// Builds the metric `name` from a value and the label it was found with (see "Each value is
// described by its label" in metric_suite.h). `text_unit`, the unit written after the value,
// takes precedence over the label's; `fallback_unit` counts only when the label has no unit.
Metric Describe(absl::string_view name, absl::string_view label, double value,
                const std::optional<UnitInfo>& text_unit,
                const std::optional<UnitInfo>& fallback_unit, const std::string& matched_text) {
  auto describe_with = [&](absl::string_view l) {
    std::optional<UnitInfo> unit = text_unit;
    if (!unit.has_value() && !AnalyzeName(l).unit.has_value()) unit = fallback_unit;
    return MakeMetric(l, value, unit, name, matched_text);
  };
  Metric metric = describe_with(label);
  if (metric.unit.empty() && metric.direction == Direction::kUnknown && label != name) {
    Metric by_name = describe_with(name);
    if (!by_name.unit.empty() || by_name.direction != Direction::kUnknown) {
      metric = std::move(by_name);
    }
  }
  metric.name = std::string(name);
  return metric;
}

// The metrics of a suite as they are found: each name once, at its first place, with its last
// value.
class SuiteBuilder {
 public:
  // Records an occurrence of the metric `name` with a finite value (`metric`).
  void Add(absl::string_view name, Metric metric) { Record(name, std::move(metric)); }

  // Records an occurrence of the metric `name` whose value is not a finite number.
  void AddNonFinite(absl::string_view name) { Record(name, std::nullopt); }

  // The number of different names recorded.
  size_t size() const { return entries_.size(); }

  // Whether some name's last value is a finite number.
  bool HasMetric() const {
    return std::any_of(entries_.begin(), entries_.end(),
                       [](const Entry& e) { return e.metric.has_value(); });
  }

  // The names whose last value is not a finite number, in order.
  std::vector<std::string> NonFiniteNames() const {
    std::vector<std::string> names;
    for (const Entry& e : entries_) {
      if (!e.metric.has_value()) names.push_back(e.name);
    }
    return names;
  }

  // The metrics whose last value is a finite number, in order.
  std::vector<NamedMetric> Take() && {
    std::vector<NamedMetric> metrics;
    for (Entry& e : entries_) {
      if (e.metric.has_value()) metrics.push_back(NamedMetric{e.name, std::move(*e.metric)});
    }
    return metrics;
  }

 private:
  struct Entry {
    std::string name;
    std::optional<Metric> metric;  // nullopt: the last value is not a finite number.
  };

  void Record(absl::string_view raw_name, std::optional<Metric> metric) {
    const std::string name(absl::StripAsciiWhitespace(raw_name));
    if (name.empty()) return;
    if (metric.has_value()) metric->name = name;
    const auto [it, inserted] = index_.emplace(name, entries_.size());
    if (inserted) {
      entries_.push_back(Entry{name, std::move(metric)});
    } else {
      entries_[it->second].metric = std::move(metric);
    }
  }

  std::vector<Entry> entries_;
  std::unordered_map<std::string, size_t> index_;
};

// Returns NotFound with `message`, a note on the metrics found without a finite value, and the
// tail of `output`.
absl::Status NothingFound(std::string message, const SuiteBuilder& builder,
                          absl::string_view output) {
  const std::vector<std::string> non_finite = builder.NonFiniteNames();
  if (!non_finite.empty()) {
    absl::StrAppend(&message,
                    non_finite.size() == 1 ? "; the last value of " : "; the last values of ",
                    absl::StrJoin(non_finite, ", "),
                    non_finite.size() == 1 ? " is not a finite number" : " are not finite numbers");
  }
  return metric_internal::NotFoundWithTail(message, output);
}

// Parses the last JSON object of `output` keeping the order of its members, or nullopt.
std::optional<Json> LastJsonObject(absl::string_view output) {
  const std::optional<JsonObject> found = FindLastJsonObject(output);
  if (!found.has_value()) return std::nullopt;
  const absl::string_view text = output.substr(found->begin, found->end - found->begin);
  Json parsed = Json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded() || !parsed.is_object()) return std::nullopt;
  return parsed;
}

// ---------------------------------------------------------------------------------------------
// Regex mode.

struct SuiteRegex {
  std::unique_ptr<RE2> re;
  int name_group = 0;
  int value_group = 0;
};

absl::StatusOr<SuiteRegex> CompileSuiteRegex(absl::string_view pattern) {
  RE2::Options options(RE2::Quiet);
  // (?m): ^ and $ match at line ends, as in ExtractMetric. It is ours, not the user's: an error
  // is reported for the pattern as given.
  auto re = std::make_unique<RE2>(Piece(absl::StrCat("(?m)", pattern)), options);
  if (!re->ok()) {
    const RE2 as_given(Piece(pattern), options);
    return absl::InvalidArgumentError(absl::StrCat("invalid metric suite regex '", pattern, "': ",
                                                   as_given.ok() ? re->error() : as_given.error()));
  }
  const auto named = re->NamedCapturingGroups().find(kNameGroup);
  if (named == re->NamedCapturingGroups().end()) {
    return absl::InvalidArgumentError(
        absl::StrCat("metric suite regex '", pattern,
                     "' must have a capturing group named 'name' around the metric's name, as in "
                     "'(?P<name>\\w+): ([0-9.]+) ms'"));
  }
  if (re->NumberOfCapturingGroups() != 2) {
    return absl::InvalidArgumentError(absl::StrCat(
        "metric suite regex '", pattern,
        "' must have exactly one capturing group besides (?P<name>...) (around the number), but "
        "it has ",
        re->NumberOfCapturingGroups() - 1));
  }
  SuiteRegex compiled;
  compiled.name_group = named->second;
  compiled.value_group = named->second == 1 ? 2 : 1;
  compiled.re = std::move(re);
  return compiled;
}

absl::StatusOr<std::vector<NamedMetric>> ExtractSuiteWithRegex(absl::string_view pattern,
                                                               absl::string_view output) {
  ASSIGN_OR_RETURN(const SuiteRegex compiled, CompileSuiteRegex(pattern));
  SuiteBuilder builder;
  const re2::StringPiece input = Piece(output);
  re2::StringPiece groups[3];
  size_t pos = 0;
  while (pos <= output.size() &&
         compiled.re->Match(input, pos, output.size(), RE2::UNANCHORED, groups, 3)) {
    const size_t begin = static_cast<size_t>(groups[0].data() - output.data());
    const size_t end = begin + groups[0].size();
    pos = end > pos ? end : pos + 1;
    const re2::StringPiece name = groups[compiled.name_group];
    const re2::StringPiece value = groups[compiled.value_group];
    if (name.data() == nullptr || value.data() == nullptr) continue;
    const absl::string_view name_text(name.data(), name.size());
    const absl::string_view value_text(value.data(), value.size());
    const std::optional<double> number = FiniteNumber(value_text);
    if (!number.has_value()) {
      builder.AddNonFinite(name_text);
      continue;
    }
    const size_t value_pos = static_cast<size_t>(value.data() - output.data());
    const absl::string_view line = LineAt(output, value_pos);
    const size_t in_line = value_pos - static_cast<size_t>(line.data() - output.data());
    builder.Add(name_text,
                Describe(absl::StripAsciiWhitespace(name_text), LabelBefore(line, in_line), *number,
                         ReadUnitAfter(line, in_line + value_text.size()), std::nullopt,
                         std::string(output.substr(begin, end - begin))));
  }
  if (!builder.HasMetric()) {
    return NothingFound(absl::StrCat("metric suite regex '", pattern,
                                     "' matched no named number in the benchmark output"),
                        builder, output);
  }
  return std::move(builder).Take();
}

// ---------------------------------------------------------------------------------------------
// JSON-path mode.

absl::Status ValidateSuiteJsonPath(absl::string_view path) {
  ASSIGN_OR_RETURN(const std::vector<std::string> parts, SplitJsonPath(path));
  size_t wildcards = 0;
  for (const std::string& part : parts) {
    if (part == kWildcard) {
      ++wildcards;
    } else if (absl::StrContains(part, kWildcard)) {
      return absl::InvalidArgumentError(
          absl::StrCat("metric suite JSON path '", path, "': the wildcard must be a whole ",
                       "component, as in 'results.*.latency_ms', not '", part, "'"));
    }
  }
  if (wildcards != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("metric suite JSON path '", path,
                     "' must have exactly one '*' component (running over the metrics), as in "
                     "'results.*.latency_ms', but it has ",
                     wildcards));
  }
  return absl::OkStatus();
}

// Returns whether `part` is an array index (digits only) and its value.
bool ArrayIndex(const std::string& part, size_t* index) {
  return !part.empty() && std::all_of(part.begin(), part.end(), [](char c) {
    return absl::ascii_isdigit(static_cast<unsigned char>(c));
  }) && absl::SimpleAtoi(part, index);
}

// Follows parts [begin, end) from `node`; returns the node reached, or nullptr if a key is
// missing, an index is not one or out of range, or a step leads into a non-container. `*parent`
// becomes the container of the node reached (unchanged if no step is taken).
const Json* Follow(const Json& node, const std::vector<std::string>& parts, size_t begin,
                   size_t end, const Json** parent) {
  const Json* at = &node;
  for (size_t i = begin; i < end; ++i) {
    const Json* next = nullptr;
    if (at->is_object()) {
      const auto it = at->find(parts[i]);
      if (it != at->end()) next = &*it;
    } else if (at->is_array()) {
      size_t index = 0;
      if (ArrayIndex(parts[i], &index) && index < at->size()) next = &(*at)[index];
    }
    if (next == nullptr) return nullptr;
    *parent = at;
    at = next;
  }
  return at;
}

// A suite's JSON path split at its wildcard.
struct WildcardPath {
  std::vector<std::string> parts;
  size_t star = 0;  // The wildcard's index in `parts`.
  // The key that describes the values: the last one after the wildcard ("results.*.latency_ms"),
  // else the one before it ("latency_ms.*"); an array index describes nothing. Empty: none.
  std::string key;
};

// Splits `path` at its wildcard. Errors: SplitJsonPath's.
absl::StatusOr<WildcardPath> SplitAtWildcard(absl::string_view path) {
  WildcardPath split;
  ASSIGN_OR_RETURN(split.parts, SplitJsonPath(path));
  const std::vector<std::string>& parts = split.parts;
  split.star =
      static_cast<size_t>(std::find(parts.begin(), parts.end(), kWildcard) - parts.begin());
  if (split.star + 1 < parts.size()) {
    split.key = parts.back();
  } else if (split.star > 0) {
    split.key = parts[split.star - 1];
  }
  return split;
}

// The container the wildcard runs over, and the path walked to it ("$.results").
struct WildcardNode {
  const Json* node = nullptr;
  std::string walked;
};

// Follows the components before the wildcard from `root`, with the errors of ExtractMetric's
// JSON path mode (NotFound for a missing key or index, InvalidArgument for a step into a value
// that is not a container, or when the node reached is none), each with `output`'s tail.
absl::StatusOr<WildcardNode> WalkToWildcard(absl::string_view path, const WildcardPath& split,
                                            const Json& root, absl::string_view output) {
  WildcardNode at{&root, "$"};
  for (size_t i = 0; i < split.star; ++i) {
    const std::string& part = split.parts[i];
    const Json* node = at.node;
    if (node->is_object()) {
      const auto it = node->find(part);
      if (it == node->end()) {
        std::vector<std::string> keys;
        for (auto k = node->begin(); k != node->end(); ++k) keys.push_back(k.key());
        return metric_internal::NotFoundWithTail(
            absl::StrCat("metric suite JSON path '", path, "': no key '", part,
                         "' in the object at '", at.walked, "' (keys: ", absl::StrJoin(keys, ", "),
                         ")"),
            output);
      }
      at.node = &*it;
    } else if (node->is_array()) {
      size_t index = 0;
      if (!ArrayIndex(part, &index)) {
        return metric_internal::InvalidWithTail(
            absl::StrCat("metric suite JSON path '", path, "': '", part,
                         "' is not an array index, but '", at.walked, "' is an array"),
            output);
      }
      if (index >= node->size()) {
        return metric_internal::NotFoundWithTail(
            absl::StrCat("metric suite JSON path '", path, "': index ", index,
                         " is out of range of the array at '", at.walked, "' (size ", node->size(),
                         ")"),
            output);
      }
      at.node = &(*node)[index];
    } else {
      return metric_internal::InvalidWithTail(
          absl::StrCat("metric suite JSON path '", path, "': '", at.walked, "' is a JSON ",
                       JsonTypeName(*node), ", which has no member '", part, "'"),
          output);
    }
    absl::StrAppend(&at.walked, ".", part);
  }
  if (!at.node->is_object() && !at.node->is_array()) {
    return metric_internal::InvalidWithTail(
        absl::StrCat("metric suite JSON path '", path, "': '", at.walked, "' is a JSON ",
                     JsonTypeName(*at.node), "; the wildcard runs over an object or an array"),
        output);
  }
  return at;
}

// Adds metric `name` of the wildcard's `member` (of container `node`, reached as `step`) to
// `builder`: the number the components after the wildcard lead to, with the unit of a sibling
// and the concrete path matched. A member without one adds nothing; a non-finite one is noted.
void AddWildcardMember(const WildcardPath& split, const Json& node, const Json& member,
                       const std::string& name, const std::string& step, SuiteBuilder& builder) {
  const Json* parent = &node;
  const Json* leaf = Follow(member, split.parts, split.star + 1, split.parts.size(), &parent);
  if (leaf == nullptr) return;
  double value = 0;
  switch (ReadJsonNumber(*leaf, &value)) {
    case JsonValueKind::kNone:
      return;
    case JsonValueKind::kNonFinite:
      builder.AddNonFinite(name);
      return;
    case JsonValueKind::kFinite:
      break;
  }
  std::vector<std::string> concrete = split.parts;
  concrete[split.star] = step;
  const std::string matched = absl::StrCat(absl::StrJoin(concrete, "."), " = ", leaf->dump());
  const absl::string_view label =
      split.key.empty() ? absl::string_view(name) : absl::string_view(split.key);
  builder.Add(name, Describe(absl::StripAsciiWhitespace(name), label, value, std::nullopt,
                             SiblingUnit(*parent), matched));
}

absl::StatusOr<std::vector<NamedMetric>> ExtractSuiteWithJsonPath(absl::string_view path,
                                                                  absl::string_view output) {
  ASSIGN_OR_RETURN(const WildcardPath split, SplitAtWildcard(path));
  const std::optional<Json> root = LastJsonObject(output);
  if (!root.has_value()) {
    return metric_internal::NotFoundWithTail(
        absl::StrCat("no JSON object in the benchmark output (looking for "
                     "metric suite JSON path '",
                     path, "')"),
        output);
  }
  ASSIGN_OR_RETURN(const WildcardNode at, WalkToWildcard(path, split, *root, output));
  const Json& node = *at.node;
  SuiteBuilder builder;
  if (node.is_object()) {
    for (auto it = node.begin(); it != node.end(); ++it) {
      AddWildcardMember(split, node, it.value(), it.key(), it.key(), builder);
    }
  } else {
    for (size_t i = 0; i < node.size(); ++i) {
      const Json& element = node[i];
      const std::string index = absl::StrCat(i);
      std::string name(absl::StripAsciiWhitespace(StringMember(element, "name")));
      AddWildcardMember(split, node, element, name.empty() ? index : name, index, builder);
    }
  }
  if (!builder.HasMetric()) {
    return NothingFound(
        absl::StrCat("metric suite JSON path '", path, "' found no number under '", at.walked,
                     "' (", node.size(), " member", node.size() == 1 ? "" : "s", ")"),
        builder, output);
  }
  return std::move(builder).Take();
}

// ---------------------------------------------------------------------------------------------
// Auto mode.

// Google Benchmark JSON: {"context": {...}, "benchmarks": [{"name", "run_name", "run_type",
// "aggregate_name", "real_time", "time_unit", "error_occurred", ...}]}.
void CollectGoogleBenchmark(const Json& root, SuiteBuilder& builder) {
  const auto benchmarks = root.find("benchmarks");
  if (benchmarks == root.end() || !benchmarks->is_array()) return;
  // The real_time of an entry that measured something, or nullptr.
  auto real_time = [](const Json& entry) -> const Json* {
    if (!entry.is_object()) return nullptr;
    const auto error = entry.find("error_occurred");
    if (error != entry.end() && error->is_boolean() && error->get<bool>()) return nullptr;
    const auto time = entry.find("real_time");
    if (time == entry.end() || !time->is_number()) return nullptr;
    return &*time;
  };
  auto is_aggregate = [](const Json& entry) {
    return StringMember(entry, "run_type") == "aggregate";
  };
  // A benchmark's name: its run_name (the same for its repetitions and their aggregates).
  auto run_name = [](const Json& entry) {
    std::string name = StringMember(entry, "run_name");
    if (!name.empty()) return name;
    name = StringMember(entry, "name");
    const std::string aggregate = StringMember(entry, "aggregate_name");
    if (StringMember(entry, "run_type") == "aggregate" && !aggregate.empty() &&
        absl::EndsWith(name, absl::StrCat("_", aggregate))) {
      name.resize(name.size() - aggregate.size() - 1);
    }
    return name;
  };
  std::set<std::string> with_median;
  for (const Json& entry : *benchmarks) {
    if (real_time(entry) != nullptr && is_aggregate(entry) &&
        StringMember(entry, "aggregate_name") == "median") {
      with_median.insert(run_name(entry));
    }
  }
  for (const Json& entry : *benchmarks) {
    const Json* time = real_time(entry);
    if (time == nullptr) continue;
    const std::string name = run_name(entry);
    if (is_aggregate(entry) ? StringMember(entry, "aggregate_name") != "median"
                            : with_median.count(name) > 0) {
      continue;
    }
    std::string time_unit = StringMember(entry, "time_unit");
    if (time_unit.empty()) time_unit = "ns";
    const std::optional<UnitInfo> unit = LookupUnit(time_unit);
    if (!unit.has_value() || unit->kind != UnitKind::kTime) continue;
    const double value = time->get<double>();
    if (!std::isfinite(value)) {
      builder.AddNonFinite(name);
      continue;
    }
    builder.Add(name, Describe(name, "real_time", value, unit, std::nullopt,
                               absl::StrCat(StringMember(entry, "name"),
                                            " real_time = ", time->dump(), " ", time_unit)));
  }
}

// pytest-benchmark JSON: {"machine_info": {...}, "benchmarks": [{"name", "fullname", "stats":
// {"min", "max", "mean", "median", ...}}]}, times in seconds.
void CollectPytestBenchmark(const Json& root, SuiteBuilder& builder) {
  const auto benchmarks = root.find("benchmarks");
  if (benchmarks == root.end() || !benchmarks->is_array()) return;
  auto median = [](const Json& entry) -> const Json* {
    if (!entry.is_object()) return nullptr;
    const auto stats = entry.find("stats");
    if (stats == entry.end() || !stats->is_object()) return nullptr;
    const auto it = stats->find("median");
    if (it == stats->end() || !it->is_number()) return nullptr;
    return &*it;
  };
  // Tests of different modules may share a name: those are named by their full node ids.
  std::unordered_map<std::string, std::set<std::string>> fullnames;
  for (const Json& entry : *benchmarks) {
    if (median(entry) != nullptr) {
      fullnames[StringMember(entry, "name")].insert(StringMember(entry, "fullname"));
    }
  }
  const std::optional<UnitInfo> seconds = LookupUnit("s");
  for (const Json& entry : *benchmarks) {
    const Json* value_json = median(entry);
    if (value_json == nullptr) continue;
    std::string name = StringMember(entry, "name");
    const std::string fullname = StringMember(entry, "fullname");
    if ((name.empty() || fullnames[name].size() > 1) && !fullname.empty()) name = fullname;
    const double value = value_json->get<double>();
    if (!std::isfinite(value)) {
      builder.AddNonFinite(name);
      continue;
    }
    builder.Add(name, Describe(name, "median", value, seconds, std::nullopt,
                               absl::StrCat(fullname.empty() ? name : fullname,
                                            " median = ", value_json->dump(), " s")));
  }
}

// A table row: NAME SEP NUMBER [UNIT], the whole line.
constexpr char kTableRowPattern[] =
    R"(^\s*([A-Za-z_][A-Za-z0-9_.\-/\[\]]*)(\s*[:=]\s*|\s+))"
    R"(((?i:[-+]?(?:\d{1,3}(?:,\d{3})+(?:\.\d*)?|\d+(?:\.\d*)?|\.\d+)(?:e[-+]?\d+)?|)"
    R"((?:nan|[-+]?inf(?:inity)?)\b)))"
    R"((?:[ \t]*[A-Za-z%/\x{B5}\x{3BC}\x{D7}]+)?\s*$)";

void CollectTable(absl::string_view output, SuiteBuilder& builder) {
  static const RE2* const kRow = new RE2(kTableRowPattern);
  SuiteBuilder rows;
  size_t line_pos = 0;
  while (line_pos <= output.size()) {
    size_t end = output.find_first_of("\r\n", line_pos);
    if (end == absl::string_view::npos) end = output.size();
    const absl::string_view line = output.substr(line_pos, end - line_pos);
    line_pos = end + 1;
    re2::StringPiece name;
    re2::StringPiece separator;
    re2::StringPiece number;
    if (line.empty() || !RE2::FullMatch(Piece(line), *kRow, &name, &separator, &number)) continue;
    const absl::string_view name_text(name.data(), name.size());
    const size_t number_end =
        static_cast<size_t>(number.data() - line.data()) + static_cast<size_t>(number.size());
    const bool has_unit_text = !absl::StripAsciiWhitespace(line.substr(number_end)).empty();
    const std::optional<UnitInfo> unit =
        has_unit_text ? ReadUnitAfter(line, number_end) : std::nullopt;
    if (has_unit_text && !unit.has_value()) continue;  // "epoch 3 of", "layers: 12 heads".
    const std::optional<double> value = FiniteNumber(
        absl::StrReplaceAll(absl::string_view(number.data(), number.size()), {{",", ""}}));
    const Metric metric = Describe(name_text, name_text, value.value_or(0), unit, std::nullopt,
                                   std::string(absl::StripAsciiWhitespace(line)));
    if (!unit.has_value()) {
      // No unit: only "name: value" or "name = value" whose name tells which way it improves.
      const bool spaces_only =
          absl::StripAsciiWhitespace(absl::string_view(separator.data(), separator.size())).empty();
      if (spaces_only || metric.direction == Direction::kUnknown) continue;
    }
    if (value.has_value()) {
      rows.Add(name_text, metric);
    } else {
      rows.AddNonFinite(name_text);
    }
  }
  if (rows.size() >= 2) builder = std::move(rows);
}

absl::StatusOr<std::vector<NamedMetric>> ExtractSuiteAuto(absl::string_view output) {
  SuiteBuilder first_found;  // The first form that named metrics, for the error.
  auto found = [&first_found](SuiteBuilder& builder) {
    if (builder.HasMetric()) return true;
    if (first_found.size() == 0) first_found = std::move(builder);
    return false;
  };
  if (const std::optional<Json> root = LastJsonObject(output); root.has_value()) {
    SuiteBuilder google;
    CollectGoogleBenchmark(*root, google);
    if (found(google)) return std::move(google).Take();
    SuiteBuilder pytest;
    CollectPytestBenchmark(*root, pytest);
    if (found(pytest)) return std::move(pytest).Take();
  }
  SuiteBuilder table;
  CollectTable(output, table);
  if (found(table)) return std::move(table).Take();
  return NothingFound(
      "found no metrics in the benchmark output (auto-detection knows Google Benchmark JSON, "
      "pytest-benchmark JSON and a table of two or more 'name: value unit' lines); pass "
      "regex:PATTERN with a (?P<name>...) group or json:PATH with a '*' component",
      first_found, output);
}

}  // namespace
}  // namespace metric_suite_internal

absl::StatusOr<MetricSuiteSpec> ParseMetricSuiteSpec(std::string_view text_in) {
  const absl::string_view text = metric_internal::ToAbsl(text_in);
  const absl::string_view form = absl::StripLeadingAsciiWhitespace(text);
  MetricSuiteSpec spec;
  if (absl::StripTrailingAsciiWhitespace(form).empty() ||
      absl::StripTrailingAsciiWhitespace(form) == "auto") {
    spec.kind = MetricSuiteSpec::Kind::kAuto;
  } else if (absl::StartsWith(form, metric_suite_internal::kRegexPrefix)) {
    spec.kind = MetricSuiteSpec::Kind::kRegex;
    spec.pattern = std::string(form.substr(sizeof(metric_suite_internal::kRegexPrefix) - 1));
  } else if (absl::StartsWith(form, metric_suite_internal::kJsonPrefix)) {
    spec.kind = MetricSuiteSpec::Kind::kJsonPath;
    spec.pattern = std::string(form.substr(sizeof(metric_suite_internal::kJsonPrefix) - 1));
  } else {
    return absl::InvalidArgumentError(absl::StrCat(
        "unknown metric suite spec '", text, "'; use 'auto', 'regex:PATTERN' or 'json:PATH'"));
  }
  RETURN_IF_ERROR(ValidateMetricSuiteSpec(spec));
  return spec;
}

std::string MetricSuiteSpecToString(const MetricSuiteSpec& spec) {
  switch (spec.kind) {
    case MetricSuiteSpec::Kind::kRegex:
      return absl::StrCat(metric_suite_internal::kRegexPrefix, spec.pattern);
    case MetricSuiteSpec::Kind::kJsonPath:
      return absl::StrCat(metric_suite_internal::kJsonPrefix, spec.pattern);
    case MetricSuiteSpec::Kind::kAuto:
      break;
  }
  return "auto";
}

absl::Status ValidateMetricSuiteSpec(const MetricSuiteSpec& spec) {
  switch (spec.kind) {
    case MetricSuiteSpec::Kind::kRegex:
      return metric_suite_internal::CompileSuiteRegex(spec.pattern).status();
    case MetricSuiteSpec::Kind::kJsonPath:
      return metric_suite_internal::ValidateSuiteJsonPath(spec.pattern);
    case MetricSuiteSpec::Kind::kAuto:
      break;
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<NamedMetric>> ExtractMetricSuite(const MetricSuiteSpec& spec,
                                                            std::string_view output_in) {
  const absl::string_view output = metric_suite_internal::ToAbsl(output_in);
  switch (spec.kind) {
    case MetricSuiteSpec::Kind::kRegex:
      // Compiling the pattern validates it.
      return metric_suite_internal::ExtractSuiteWithRegex(spec.pattern, output);
    case MetricSuiteSpec::Kind::kJsonPath:
      RETURN_IF_ERROR(metric_suite_internal::ValidateSuiteJsonPath(spec.pattern));
      return metric_suite_internal::ExtractSuiteWithJsonPath(spec.pattern, output);
    case MetricSuiteSpec::Kind::kAuto:
      break;
  }
  return metric_suite_internal::ExtractSuiteAuto(output);
}

absl::StatusOr<SuiteReading> ReadSuite(const MetricSuiteSpec& spec, std::string_view output,
                                       std::string_view lead,
                                       const std::vector<std::string>& members) {
  ASSIGN_OR_RETURN(std::vector<NamedMetric> all, ExtractMetricSuite(spec, output));
  const absl::flat_hash_set<std::string> wanted(members.begin(), members.end());
  std::vector<std::string> found;
  SuiteReading reading;
  for (NamedMetric& metric : all) {
    if (found.size() < 10) found.push_back(metric.name);
    if (!wanted.empty() && !wanted.contains(metric.name)) continue;
    reading.metrics.push_back(std::move(metric));
  }
  const std::string printed =
      absl::StrCat(absl::StrJoin(found, ", "), all.size() > found.size() ? ", ..." : "");
  const absl::string_view text = metric_internal::ToAbsl(output);
  if (reading.metrics.empty()) {
    return metric_internal::NotFoundWithTail(
        absl::StrCat("the suite's output has none of its metrics (", absl::StrJoin(members, ", "),
                     "); it printed ", printed),
        text);
  }
  if (lead.empty()) return reading;
  for (size_t i = 0; i < reading.metrics.size(); ++i) {
    if (std::string_view(reading.metrics[i].name) == lead) {
      reading.lead = i;
      return reading;
    }
  }
  return metric_internal::NotFoundWithTail(
      absl::StrCat("the suite's output has no metric '", metric_internal::ToAbsl(lead),
                   "' (the lead); it printed ", printed),
      text);
}

}  // namespace kbisect
