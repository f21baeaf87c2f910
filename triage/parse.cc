// Copyright 2026 The kbisect Authors.
#include "triage/parse.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "common/status_macros.h"
#include "nlohmann/json.hpp"

namespace kbisect {
namespace triage {

using Json = nlohmann::json;

const char* InputFormatName(InputFormat format) {
  switch (format) {
    case InputFormat::kAuto:
      return "auto";
    case InputFormat::kHelionDashboard:
      return "helion";
    case InputFormat::kHelionPretuned:
      return "pretuned";
    case InputFormat::kCsv:
      return "csv";
    case InputFormat::kJsonLines:
      return "jsonl";
  }
  return "auto";
}

std::optional<double> Nightly::Metric(std::string_view name) const {
  auto it = metrics.find(std::string(name));
  if (it == metrics.end()) return std::nullopt;
  return it->second;
}

std::optional<std::string> Nightly::Attribute(std::string_view name) const {
  auto it = attributes.find(std::string(name));
  if (it == attributes.end()) return std::nullopt;
  return it->second;
}

std::string Series::Label() const {
  const std::string& p = platform_short.empty() ? platform : platform_short;
  if (kernel.empty()) return p.empty() ? "(series)" : p;
  if (p.empty()) return kernel;
  return absl::StrCat(kernel, "@", p);
}

namespace {

absl::string_view ToAbsl(std::string_view s) { return absl::string_view(s.data(), s.size()); }

std::string Lower(std::string_view s) { return absl::AsciiStrToLower(ToAbsl(s)); }

bool InSet(std::string_view name, std::initializer_list<const char*> names) {
  const std::string lower = Lower(name);
  for (const char* n : names) {
    if (lower == n) return true;
  }
  return false;
}

// Returns a short description of a JSON value's type for messages.
std::string Describe(const Json& value) {
  std::string dumped = value.dump();
  if (dumped.size() > 40) dumped = dumped.substr(0, 37) + "...";
  return absl::StrCat(value.type_name(), " ", dumped);
}

// Fields that must be numbers (or null) wherever they appear.
bool MustBeNumber(std::string_view name) {
  const absl::string_view n = ToAbsl(name);
  return absl::EndsWith(n, "_geomean") || absl::EndsWith(n, "_speedup") ||
         absl::EndsWith(n, "_ms") || absl::EndsWith(n, "_s") || absl::EndsWith(n, "_pct") ||
         InSet(name, {"geomean", "best_speedup", "helion_wins", "total", "wins"});
}

// Validates a date and returns it as YYYY-MM-DD.
absl::StatusOr<std::string> NormalizeDate(std::string_view field, std::string_view value) {
  const std::string v(value);
  auto bad = [&] {
    return absl::InvalidArgumentError(absl::StrCat(
        ToAbsl(field), ": expected a date like 2026-09-22 (YYYY-MM-DD), got \"", v, "\""));
  };
  if (v.size() < 10) return bad();
  for (int i = 0; i < 10; ++i) {
    const bool dash = (i == 4 || i == 7);
    if (dash ? v[i] != '-' : !std::isdigit(static_cast<unsigned char>(v[i]))) return bad();
  }
  if (v.size() > 10 && v[10] != 'T' && v[10] != ' ') return bad();
  const int month = std::atoi(v.substr(5, 2).c_str());
  const int day = std::atoi(v.substr(8, 2).c_str());
  if (month < 1 || month > 12 || day < 1 || day > 31) return bad();
  return v.substr(0, 10);
}

// Parses JSON text into `out`; the error says where and whether the text looks truncated.
absl::Status ParseJsonText(std::string_view text, std::string_view what, Json* out) {
  try {
    *out = Json::parse(text.begin(), text.end());
  } catch (const Json::parse_error& e) {
    const bool at_end = e.byte >= text.size();
    return absl::InvalidArgumentError(absl::StrCat(
        ToAbsl(what), ": not valid JSON at byte ", e.byte, " of ", text.size(),
        at_end ? " (the text ends before the JSON does: the file looks truncated; download it "
                 "again)"
               : "",
        ": ", e.what()));
  } catch (const Json::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(ToAbsl(what), ": not valid JSON: ", e.what()));
  }
  return absl::OkStatus();
}

// Adds one key/value of a run record (a history entry, a JSON line) to `nightly`.
absl::Status AddField(const std::string& path, const std::string& key, const Json& value,
                      Nightly* nightly) {
  const std::string field = path.empty() ? key : absl::StrCat(path, ".", key);
  if (value.is_null()) return absl::OkStatus();
  if (key == "date") {
    if (!value.is_string()) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ": expected a date string, got ", Describe(value)));
    }
    ASSIGN_OR_RETURN(nightly->date, NormalizeDate(field, value.get<std::string>()));
    return absl::OkStatus();
  }
  if (key == "sha" || key == "full_sha" || key == "branch") {
    if (!value.is_string()) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ": expected a string, got ", Describe(value)));
    }
    std::string s = value.get<std::string>();
    if (key == "sha") nightly->sha = s;
    if (key == "full_sha") nightly->full_sha = s;
    if (key == "branch") nightly->branch = s;
    return absl::OkStatus();
  }
  if (key == "run_id") {
    if (value.is_number_integer()) {
      nightly->run_id = value.get<int64_t>();
    } else if (value.is_string() && absl::SimpleAtoi(value.get<std::string>(), &nightly->run_id)) {
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ": expected an integer run id, got ", Describe(value)));
    }
    return absl::OkStatus();
  }
  if (key == "is_nightly") {
    if (!value.is_boolean()) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ": expected true or false, got ", Describe(value)));
    }
    nightly->is_nightly = value.get<bool>();
    return absl::OkStatus();
  }
  if (value.is_number()) {
    const double d = value.get<double>();
    if (!std::isfinite(d)) {
      return absl::InvalidArgumentError(absl::StrCat(field, ": not a finite number"));
    }
    nightly->metrics[key] = d;
    if (key == "compile_time_avg_s") nightly->attributes["compile_time_aggregate"] = "avg";
    if (key == "compile_time_geomean_s") nightly->attributes["compile_time_aggregate"] = "geomean";
    return absl::OkStatus();
  }
  if (MustBeNumber(key)) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": expected a number or null, got ", Describe(value)));
  }
  if (value.is_boolean()) {
    nightly->attributes[key] = value.get<bool>() ? "true" : "false";
    return absl::OkStatus();
  }
  if (value.is_string()) {
    nightly->attributes[key] = value.get<std::string>();
    return absl::OkStatus();
  }
  if (value.is_object()) {
    // Nested objects of numbers (pretuned baselines{name:{geomean,...}}) flatten to a.b.c.
    for (auto it = value.begin(); it != value.end(); ++it) {
      const Json& inner = it.value();
      if (inner.is_object()) {
        for (auto jt = inner.begin(); jt != inner.end(); ++jt) {
          const std::string name = absl::StrCat(key, ".", it.key(), ".", jt.key());
          if (jt.value().is_null()) continue;
          if (!jt.value().is_number()) {
            if (MustBeNumber(jt.key())) {
              return absl::InvalidArgumentError(absl::StrCat(field, ".", it.key(), ".", jt.key(),
                                                             ": expected a number or null, got ",
                                                             Describe(jt.value())));
            }
            continue;
          }
          nightly->metrics[name] = jt.value().get<double>();
        }
      } else if (inner.is_number()) {
        nightly->metrics[absl::StrCat(key, ".", it.key())] = inner.get<double>();
      }
    }
    return absl::OkStatus();
  }
  return absl::OkStatus();  // Arrays carry nothing the analysis compares.
}

absl::Status CheckNightly(const std::string& path, Nightly* nightly) {
  if (nightly->date.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ".date: missing (every run needs its date, YYYY-MM-DD)"));
  }
  if (nightly->sha.empty() && nightly->full_sha.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": missing both \"sha\" and \"full_sha\" (every run needs its commit)"));
  }
  if (nightly->sha.empty()) nightly->sha = nightly->full_sha.substr(0, 8);
  if (nightly->full_sha.empty() && nightly->sha.size() == 40) nightly->full_sha = nightly->sha;
  return absl::OkStatus();
}

void SortNightlies(std::vector<Nightly>* nightlies) {
  std::stable_sort(nightlies->begin(), nightlies->end(), [](const Nightly& a, const Nightly& b) {
    if (a.date != b.date) return a.date < b.date;
    return a.run_id < b.run_id;
  });
}

// The "summary" array of a Helion dashboard file's top-level object `root`. InvalidArgument,
// naming `source` or the top-level keys found, when `root` is not an object or has no such array.
absl::StatusOr<const Json*> SummaryArrayOf(const Json& root, std::string_view source) {
  if (!root.is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(
        ToAbsl(source), ": expected a JSON object with a \"summary\" array at the top, got ",
        root.type_name()));
  }
  auto summary = root.find("summary");
  if (summary == root.end()) {
    std::vector<std::string> keys;
    for (auto it = root.begin(); it != root.end() && keys.size() < 12; ++it) {
      keys.push_back(it.key());
    }
    return absl::InvalidArgumentError(absl::StrCat(
        "summary: missing; a Helion dashboard file has a top-level \"summary\" array of "
        "per-kernel entries (top-level keys found: ",
        keys.empty() ? "none" : absl::StrJoin(keys, ", "),
        "). For CSV or JSON-lines input pass --format csv|jsonl."));
  }
  if (!summary->is_array()) {
    return absl::InvalidArgumentError(
        absl::StrCat("summary: expected an array, got ", Describe(*summary)));
  }
  return &*summary;
}

// What reading a summary counted for its notes: the history entries with each compile-time
// aggregate, and the entries skipped for having no history.
struct SummaryTally {
  int avg_entries = 0;
  int geomean_entries = 0;
  int skipped_without_history = 0;
};

// The series that summary entry `entry` (at `path`, "summary[3]") names, without its nightlies:
// its kernel and platform (each of platform and platform_short standing in for the other).
// InvalidArgument when a name is not a string or the kernel or both platforms are missing.
absl::StatusOr<Series> SeriesOfEntry(const Json& entry, const std::string& path) {
  Series series;
  auto get_string = [&](const char* key, std::string* out) -> absl::Status {
    auto it = entry.find(key);
    if (it == entry.end() || it->is_null()) return absl::OkStatus();
    if (!it->is_string()) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ".", key, ": expected a string, got ", Describe(*it)));
    }
    *out = it->get<std::string>();
    return absl::OkStatus();
  };
  RETURN_IF_ERROR(get_string("kernel", &series.kernel));
  RETURN_IF_ERROR(get_string("platform", &series.platform));
  RETURN_IF_ERROR(get_string("platform_short", &series.platform_short));
  if (series.kernel.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ".kernel: missing"));
  }
  if (series.platform_short.empty() && series.platform.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ".platform_short: missing (and no \"platform\" either)"));
  }
  if (series.platform_short.empty()) series.platform_short = series.platform;
  if (series.platform.empty()) series.platform = series.platform_short;
  return series;
}

// Reads the nightlies of `history` (the array at `path`.history) into `series`, sorted by date
// and run, counting their compile-time aggregates in `tally`. Errors name the run's path.
absl::Status ReadHistory(const Json& history, const std::string& path, Series* series,
                         SummaryTally* tally) {
  for (size_t j = 0; j < history.size(); ++j) {
    const Json& run = history[j];
    const std::string run_path = absl::StrCat(path, ".history[", j, "]");
    if (!run.is_object()) {
      return absl::InvalidArgumentError(
          absl::StrCat(run_path, ": expected an object, got ", Describe(run)));
    }
    Nightly nightly;
    for (auto it = run.begin(); it != run.end(); ++it) {
      RETURN_IF_ERROR(AddField(run_path, it.key(), it.value(), &nightly));
    }
    RETURN_IF_ERROR(CheckNightly(run_path, &nightly));
    if (nightly.metrics.count("compile_time_avg_s")) ++tally->avg_entries;
    if (nightly.metrics.count("compile_time_geomean_s")) ++tally->geomean_entries;
    series->nightlies.push_back(std::move(nightly));
  }
  SortNightlies(&series->nightlies);
  return absl::OkStatus();
}

// Adds the series of summary entry `entry` (at `path`) with its nightlies to `data`; an entry
// without a history is counted in `tally` and skipped. Errors name the path of what is wrong.
absl::Status AddSummaryEntry(const Json& entry, const std::string& path, SummaryTally* tally,
                             Dataset* data) {
  if (!entry.is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": expected an object, got ", Describe(entry)));
  }
  ASSIGN_OR_RETURN(Series series, SeriesOfEntry(entry, path));
  auto history = entry.find("history");
  if (history == entry.end() || history->is_null()) {
    ++tally->skipped_without_history;
    return absl::OkStatus();
  }
  if (!history->is_array()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ".history: expected an array, got ", Describe(*history)));
  }
  RETURN_IF_ERROR(ReadHistory(*history, path, &series, tally));
  data->series.push_back(std::move(series));
  return absl::OkStatus();
}

// Adds the notes `tally` calls for to `data`: the older compile-time aggregate in use, and the
// entries skipped.
void AddSummaryNotes(const SummaryTally& tally, Dataset* data) {
  if (tally.avg_entries > 0) {
    data->notes.push_back(absl::StrCat(
        tally.avg_entries, " history entries use the older compile_time_avg_s (",
        tally.geomean_entries,
        " use compile_time_geomean_s); the two are different aggregates and are kept apart, with "
        "the attribute compile_time_aggregate marking which one a run reported."));
  }
  if (tally.skipped_without_history > 0) {
    data->notes.push_back(absl::StrCat(tally.skipped_without_history,
                                       " summary entries have no history and were skipped."));
  }
}

absl::StatusOr<Dataset> ParseSummaryFile(std::string_view text, std::string_view source,
                                         InputFormat format) {
  Json root;
  RETURN_IF_ERROR(ParseJsonText(text, source, &root));
  ASSIGN_OR_RETURN(const Json* summary, SummaryArrayOf(root, source));
  Dataset data;
  data.format = format;
  data.source = std::string(source);
  if (auto it = root.find("generated_at"); it != root.end() && it->is_string()) {
    data.generated_at = it->get<std::string>();
  }
  SummaryTally tally;
  for (size_t i = 0; i < summary->size(); ++i) {
    RETURN_IF_ERROR(
        AddSummaryEntry((*summary)[i], absl::StrCat("summary[", i, "]"), &tally, &data));
  }
  AddSummaryNotes(tally, &data);
  if (data.series.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("summary: no entry has a history[] of nightlies in ", ToAbsl(source)));
  }
  return data;
}

// Splits one CSV record starting at `*pos`; handles quotes (with embedded newlines) and "".
absl::StatusOr<std::vector<std::string>> NextCsvRecord(std::string_view text, size_t* pos,
                                                       int* line) {
  std::vector<std::string> fields;
  std::string field;
  bool quoted = false;
  const int start_line = *line;
  size_t i = *pos;
  for (; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c == '"') {
        if (i + 1 < text.size() && text[i + 1] == '"') {
          field.push_back('"');
          ++i;
        } else {
          quoted = false;
        }
      } else {
        if (c == '\n') ++*line;
        field.push_back(c);
      }
      continue;
    }
    if (c == '"' && field.empty()) {
      quoted = true;
    } else if (c == ',') {
      fields.push_back(std::move(field));
      field.clear();
    } else if (c == '\n') {
      ++*line;
      ++i;
      break;
    } else if (c != '\r') {
      field.push_back(c);
    }
  }
  if (quoted) {
    return absl::InvalidArgumentError(absl::StrCat(
        "line ", start_line, ": a quoted field is not closed (the file looks truncated)"));
  }
  fields.push_back(std::move(field));
  *pos = i;
  return fields;
}

// Builds the series of a generic input from flat records (key -> JSON value).
class FlatBuilder {
 public:
  explicit FlatBuilder(std::string_view source) { data_.source = std::string(source); }

  absl::Status Add(const std::string& where, const std::map<std::string, Json>& record) {
    Nightly nightly;
    std::string kernel;
    std::string platform;
    std::string platform_short;
    for (const auto& [raw_key, value] : record) {
      const std::string key = Lower(raw_key);
      if (key == "kernel" || key == "platform" || key == "platform_short") {
        if (value.is_null()) continue;
        if (!value.is_string()) {
          return absl::InvalidArgumentError(
              absl::StrCat(where, ", ", raw_key, ": expected a string, got ", Describe(value)));
        }
        (key == "kernel"     ? kernel
         : key == "platform" ? platform
                             : platform_short) = value.get<std::string>();
        continue;
      }
      if (IsIdentityAttribute(key) && !value.is_null()) {
        nightly.attributes[key] = value.is_string() ? value.get<std::string>() : value.dump();
        continue;
      }
      absl::Status added = AddField("", raw_key, value, &nightly);
      if (!added.ok())
        return absl::InvalidArgumentError(absl::StrCat(where, ", ", added.message()));
    }
    RETURN_IF_ERROR(CheckNightly(where, &nightly));
    if (platform_short.empty()) platform_short = platform;
    if (platform.empty()) platform = platform_short;
    const auto key = std::make_pair(kernel, platform_short);
    auto it = index_.find(key);
    if (it == index_.end()) {
      Series series;
      series.kernel = kernel;
      series.platform = platform;
      series.platform_short = platform_short;
      data_.series.push_back(std::move(series));
      it = index_.emplace(key, data_.series.size() - 1).first;
    }
    data_.series[it->second].nightlies.push_back(std::move(nightly));
    return absl::OkStatus();
  }

  absl::StatusOr<Dataset> Finish(InputFormat format) {
    if (data_.series.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(data_.source, ": no data rows"));
    }
    for (Series& s : data_.series) SortNightlies(&s.nightlies);
    data_.format = format;
    return std::move(data_);
  }

 private:
  Dataset data_;
  std::map<std::pair<std::string, std::string>, size_t> index_;
};

}  // namespace

bool IsIdentityAttribute(std::string_view name) {
  return InSet(name, {"runner", "runner_name", "runner_id", "runner_identity", "hostname", "host",
                      "machine", "gpu", "gpu_name", "gpu_model", "driver", "driver_version",
                      "cuda_version", "rocm_version", "hardware_class"});
}

bool IsMethodAttribute(std::string_view name) {
  return InSet(name, {"cudagraph", "latency_measure_mode", "measure_mode", "timer", "harness",
                      "harness_version", "bench_args", "compile_time_aggregate"});
}

InputFormat DetectFormat(std::string_view text, std::string_view source) {
  size_t i = 0;
  while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
  if (i >= text.size() || text[i] != '{') return InputFormat::kCsv;
  const bool pretuned_name = absl::StrContains(ToAbsl(source), "pretuned");
  Json root = Json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded()) {
    // Not one document: JSON lines if the first line is an object on its own, else a (broken)
    // dashboard file, whose parser reports where it breaks.
    const size_t eol = text.find('\n', i);
    const std::string_view first =
        text.substr(i, eol == std::string_view::npos ? text.npos : eol - i);
    Json line = Json::parse(first.begin(), first.end(), nullptr, false);
    if (!line.is_discarded() && line.is_object() && eol != std::string_view::npos) {
      return InputFormat::kJsonLines;
    }
    return pretuned_name ? InputFormat::kHelionPretuned : InputFormat::kHelionDashboard;
  }
  if (root.is_object() && !root.contains("summary") && root.contains("date")) {
    return InputFormat::kJsonLines;  // A single JSON line.
  }
  if (pretuned_name) return InputFormat::kHelionPretuned;
  if (root.is_object()) {
    auto summary = root.find("summary");
    if (summary != root.end() && summary->is_array() && !summary->empty() &&
        (*summary)[0].is_object() && (*summary)[0].contains("geomean") &&
        !(*summary)[0].contains("helion_speedup_geomean")) {
      return InputFormat::kHelionPretuned;
    }
  }
  return InputFormat::kHelionDashboard;
}

absl::StatusOr<Dataset> ParseHelionDashboard(std::string_view text, std::string_view source) {
  return ParseSummaryFile(text, source, InputFormat::kHelionDashboard);
}

absl::StatusOr<Dataset> ParseHelionPretuned(std::string_view text, std::string_view source) {
  return ParseSummaryFile(text, source, InputFormat::kHelionPretuned);
}

absl::StatusOr<Dataset> ParseCsv(std::string_view text, std::string_view source) {
  size_t pos = 0;
  int line = 1;
  std::vector<std::string> header;
  int header_line = 0;
  while (pos < text.size()) {
    header_line = line;
    ASSIGN_OR_RETURN(header, NextCsvRecord(text, &pos, &line));
    const std::string first = std::string(absl::StripAsciiWhitespace(header[0]));
    if (header.size() == 1 && first.empty()) continue;
    if (!first.empty() && first[0] == '#') continue;
    break;
  }
  if (header.empty())
    return absl::InvalidArgumentError(absl::StrCat(ToAbsl(source), ": empty file"));
  std::set<std::string> names;
  for (std::string& h : header) {
    h = std::string(absl::StripAsciiWhitespace(h));
    if (h.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("line ", header_line, ": the header has an empty column name"));
    }
    if (!names.insert(Lower(h)).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("line ", header_line, ": column '", h, "' appears twice in the header"));
    }
  }
  if (!names.count("date")) {
    return absl::InvalidArgumentError(
        absl::StrCat("CSV header (line ", header_line,
                     "): missing column 'date' (columns: ", absl::StrJoin(header, ", "), ")"));
  }
  if (!names.count("sha") && !names.count("full_sha")) {
    return absl::InvalidArgumentError(absl::StrCat(
        "CSV header (line ", header_line,
        "): missing column 'sha' (or 'full_sha') (columns: ", absl::StrJoin(header, ", "), ")"));
  }
  // A column is numeric when its first non-empty value is a number.
  std::vector<int> numeric(header.size(), -1);  // -1 unknown, 0 text, 1 number
  FlatBuilder builder(source);
  while (pos < text.size()) {
    const int record_line = line;
    ASSIGN_OR_RETURN(std::vector<std::string> fields, NextCsvRecord(text, &pos, &line));
    if (fields.size() == 1 && absl::StripAsciiWhitespace(fields[0]).empty()) continue;
    if (!fields[0].empty() && fields[0][0] == '#') continue;
    if (fields.size() != header.size()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "line ", record_line, ": expected ", header.size(), " fields as in the header, got ",
          fields.size(), pos >= text.size() ? " (the file looks truncated)" : ""));
    }
    std::map<std::string, Json> record;
    for (size_t c = 0; c < header.size(); ++c) {
      const std::string value(absl::StripAsciiWhitespace(fields[c]));
      const std::string key = Lower(header[c]);
      if (value.empty()) continue;
      const bool structural = key == "date" || key == "sha" || key == "full_sha" ||
                              key == "kernel" || key == "platform" || key == "platform_short" ||
                              key == "branch" || IsIdentityAttribute(key);
      if (structural) {
        record[header[c]] = value;
        continue;
      }
      if (key == "is_nightly") {
        const std::string l = Lower(value);
        if (l != "true" && l != "false" && l != "1" && l != "0") {
          return absl::InvalidArgumentError(
              absl::StrCat("line ", record_line,
                           ", column 'is_nightly': expected true or false, got '", value, "'"));
        }
        record[header[c]] = (l == "true" || l == "1");
        continue;
      }
      double d = 0;
      const bool is_number = absl::SimpleAtod(value, &d) && std::isfinite(d);
      if (key == "run_id") {
        record[header[c]] = value;
        continue;
      }
      if (numeric[c] == -1) numeric[c] = is_number ? 1 : 0;
      if (numeric[c] == 1) {
        if (!is_number) {
          return absl::InvalidArgumentError(absl::StrCat(
              "line ", record_line, ", column '", header[c],
              "': expected a number (earlier rows have numbers here), got '", value, "'"));
        }
        record[header[c]] = d;
      } else {
        record[header[c]] = value;
      }
    }
    RETURN_IF_ERROR(builder.Add(absl::StrCat("line ", record_line), record));
  }
  return builder.Finish(InputFormat::kCsv);
}

absl::StatusOr<Dataset> ParseJsonLines(std::string_view text, std::string_view source) {
  FlatBuilder builder(source);
  size_t pos = 0;
  int line = 0;
  while (pos < text.size()) {
    ++line;
    size_t eol = text.find('\n', pos);
    if (eol == std::string_view::npos) eol = text.size();
    std::string_view row = text.substr(pos, eol - pos);
    pos = eol + 1;
    if (absl::StripAsciiWhitespace(ToAbsl(row)).empty()) continue;
    Json object;
    RETURN_IF_ERROR(ParseJsonText(row, absl::StrCat("line ", line), &object));
    if (!object.is_object()) {
      return absl::InvalidArgumentError(
          absl::StrCat("line ", line, ": expected a JSON object, got ", Describe(object)));
    }
    std::map<std::string, Json> record;
    for (auto it = object.begin(); it != object.end(); ++it) record[it.key()] = it.value();
    RETURN_IF_ERROR(builder.Add(absl::StrCat("line ", line), record));
  }
  return builder.Finish(InputFormat::kJsonLines);
}

namespace {

absl::StatusOr<Dataset> ParseDatasetOrThrow(std::string_view text, InputFormat format,
                                            std::string_view source) {
  if (format == InputFormat::kAuto) format = DetectFormat(text, source);
  switch (format) {
    case InputFormat::kHelionDashboard:
      return ParseHelionDashboard(text, source);
    case InputFormat::kHelionPretuned:
      return ParseHelionPretuned(text, source);
    case InputFormat::kCsv:
      return ParseCsv(text, source);
    case InputFormat::kJsonLines:
      return ParseJsonLines(text, source);
    case InputFormat::kAuto:
      break;
  }
  return absl::InternalError("unreachable input format");
}

}  // namespace

absl::StatusOr<Dataset> ParseDataset(std::string_view text, InputFormat format,
                                     std::string_view source) {
  try {
    return ParseDatasetOrThrow(text, format, source);
  } catch (const std::exception& e) {
    // The parsers check types before every access; this is a safety net, never a crash.
    return absl::InvalidArgumentError(
        absl::StrCat(ToAbsl(source), ": cannot be parsed: ", e.what()));
  }
}

absl::StatusOr<InputFormat> ParseInputFormat(std::string_view name) {
  const std::string n = Lower(name);
  if (n == "auto") return InputFormat::kAuto;
  if (n == "helion") return InputFormat::kHelionDashboard;
  if (n == "pretuned") return InputFormat::kHelionPretuned;
  if (n == "csv") return InputFormat::kCsv;
  if (n == "jsonl" || n == "json-lines" || n == "ndjson") return InputFormat::kJsonLines;
  return absl::InvalidArgumentError(absl::StrCat("unknown --format '", ToAbsl(name),
                                                 "'; use auto, helion, pretuned, csv or jsonl"));
}

}  // namespace triage
}  // namespace kbisect
