// Copyright 2026 The kbisect Authors.
//
// Parsers from dashboard text to a triage::Dataset. Pure: they take the text, never a file.
//
// Every parser rejects malformed, truncated or schema-drifted input with InvalidArgument and a
// message that names the offending field by its path, e.g.
//   "summary[3].history[12].helion_speedup_geomean: expected a number or null, got string "1.2x""
//   "line 7: expected 6 fields as in the header, got 5"
// and never crashes or throws. Tolerated drift (unknown fields, compile_time_avg_s in older
// entries, null aggregates, missing optional fields) is accepted and recorded in Dataset::notes.
//
//   ASSIGN_OR_RETURN(Dataset data, ParseDataset(text, InputFormat::kAuto, "dash.json"));
#ifndef KBISECT_TRIAGE_PARSE_H_
#define KBISECT_TRIAGE_PARSE_H_

#include <string_view>

#include "absl/status/statusor.h"
#include "triage/model.h"

namespace kbisect {
namespace triage {

// Returns the format of `text`: kHelionDashboard or kHelionPretuned for a JSON object with a
// summary[] array (pretuned when its entries have "geomean" and no "helion_speedup_geomean", or
// when `source` contains "pretuned"), kJsonLines when the first non-blank line is a JSON object
// but the whole text is not one JSON document, kCsv otherwise.
InputFormat DetectFormat(std::string_view text, std::string_view source);

// Parses Helion's dashboard-data.json. Required: a top-level object with a summary[] array whose
// entries have "kernel" (string), "platform_short" or "platform" (string) and "history" (array);
// each history entry needs "date" (YYYY-MM-DD, a longer ISO timestamp is cut to its date) and
// "sha" or "full_sha" (strings). Every other number becomes a metric, every string or boolean an
// attribute, nested objects of numbers become "outer.inner" metrics, and null means "absent".
// Fields that must be numbers (names ending in _geomean, _speedup, _ms, _s, _pct and the pretuned
// aggregates geomean, best_speedup, helion_wins, total) are rejected when they hold anything else.
// An entry that says compile_time_avg_s (older files) or compile_time_geomean_s also gets the
// attribute "compile_time_aggregate" = "avg" / "geomean", so a switch between them is visible.
absl::StatusOr<Dataset> ParseHelionDashboard(std::string_view text, std::string_view source);

// Parses Helion's pretuned-dashboard-data.json: the same rules as ParseHelionDashboard (the
// summary[] / history[] shape is shared); baselines{name:{wins,total,geomean,best_speedup}}
// become metrics "baselines.NAME.geomean" etc. and "cudagraph" an attribute.
absl::StatusOr<Dataset> ParseHelionPretuned(std::string_view text, std::string_view source);

// Parses a generic CSV file with a header row. Columns: "date" (required), "sha" and/or
// "full_sha" (one required), optional "kernel", "platform" / "platform_short", "run_id",
// "branch", "is_nightly"; runner-identity columns (see IsIdentityAttribute) are attributes; every
// other column is a metric when its first non-empty value is a number (a later non-number in it
// is an error naming the line and column) and an attribute otherwise. Empty cells are absent
// values. Fields may be double-quoted with "" as an escaped quote; lines starting with '#' and
// blank lines are skipped.
absl::StatusOr<Dataset> ParseCsv(std::string_view text, std::string_view source);

// Parses generic JSON lines: one JSON object per line with the keys a CSV header would have
// (numbers are metrics, strings and booleans attributes, null absent). Blank lines are skipped.
absl::StatusOr<Dataset> ParseJsonLines(std::string_view text, std::string_view source);

// Parses `text` as `format`, detecting it first when `format` is kAuto. `source` (a path or URL)
// is only used in messages and for format detection.
absl::StatusOr<Dataset> ParseDataset(std::string_view text, InputFormat format,
                                     std::string_view source);

// Parses a format name as the --format flag spells it: auto, helion, pretuned, csv or jsonl.
// Returns InvalidArgument naming the accepted values otherwise.
absl::StatusOr<InputFormat> ParseInputFormat(std::string_view name);

// Returns true if an attribute named `name` describes the machine a run used: runner,
// runner_name, runner_id, runner_identity, hostname, host, machine, gpu, gpu_name, gpu_model,
// driver, driver_version, cuda_version, rocm_version, hardware_class (case-insensitive).
bool IsIdentityAttribute(std::string_view name);

// Returns true if an attribute named `name` describes how a run measured: cudagraph,
// latency_measure_mode, measure_mode, timer, harness, harness_version, bench_args,
// compile_time_aggregate (case-insensitive).
bool IsMethodAttribute(std::string_view name);

}  // namespace triage
}  // namespace kbisect

#endif  // KBISECT_TRIAGE_PARSE_H_
