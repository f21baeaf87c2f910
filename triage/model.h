// Copyright 2026 The kbisect Authors.
//
// The data model of `kbisect triage`: nightly benchmark history as read from a dashboard file
// (Helion `dashboard-data.json`, `pretuned-dashboard-data.json`) or a generic CSV / JSON-lines
// file. Every input format is parsed into the same shape, so the analysis never sees a format.
//
//   Dataset
//     series[]     one per (kernel, platform)
//       nightlies[]  oldest first; each with numeric metrics and string attributes
//
// Metrics are the numbers of a nightly (helion_speedup_geomean, helion_latency_avg_ms, ...);
// attributes are everything else worth comparing across nightlies (runner identity, cudagraph,
// which compile-time aggregate the entry used, ...).
#ifndef KBISECT_TRIAGE_MODEL_H_
#define KBISECT_TRIAGE_MODEL_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kbisect {
namespace triage {

// The format a dataset was read from.
enum class InputFormat {
  kAuto,             // Only as a parser option: detect the format from the content.
  kHelionDashboard,  // Helion dashboard-data.json: summary[] with helion_/triton_/torch_compile_*.
  kHelionPretuned,   // Helion pretuned-dashboard-data.json: summary[] with geomean, baselines{}.
  kCsv,              // Generic CSV with a header row.
  kJsonLines,        // Generic JSON lines: one object per line.
};

// Returns "auto", "helion", "pretuned", "csv" or "jsonl".
const char* InputFormatName(InputFormat format);

// One benchmark run of one (kernel, platform) series, normally a nightly.
struct Nightly {
  // The run date as YYYY-MM-DD (a longer ISO timestamp in the input is cut to its date).
  std::string date;
  // The commit as the input spells it (Helion: the short sha). Never empty.
  std::string sha;
  // The full 40-hex-digit commit id when the input has one, else "".
  std::string full_sha;
  // The CI run id, or 0 when the input has none.
  int64_t run_id = 0;
  // The branch the run measured, or "" when unknown.
  std::string branch;
  // False for runs the input marks as not nightly (is_nightly: false); the analysis skips them by
  // default.
  bool is_nightly = true;
  // Numeric measurements by name. A metric that is null or absent in the input is not in the map.
  std::map<std::string, double> metrics;
  // Non-numeric values by name (strings, booleans as "true"/"false"), e.g. the runner identity.
  std::map<std::string, std::string> attributes;

  // Returns the metric `name`, or nullopt when this nightly does not have it.
  std::optional<double> Metric(std::string_view name) const;

  // Returns the attribute `name`, or nullopt when this nightly does not have it.
  std::optional<std::string> Attribute(std::string_view name) const;
};

// The history of one kernel on one platform.
struct Series {
  // The kernel name ("layer_norm"); "" when the input has no kernel column.
  std::string kernel;
  // The long platform name ("NVIDIA B200 (CuTe)"), or the short one when only that is known.
  std::string platform;
  // The short platform name used on the command line ("b200_cute"); "" when the input has none.
  std::string platform_short;
  // The runs, sorted by date (then run id, then input order), oldest first.
  std::vector<Nightly> nightlies;

  // Returns "kernel@platform_short" (or the parts that are known) for messages.
  std::string Label() const;
};

// Everything read from one input.
struct Dataset {
  // The format the input was parsed as.
  InputFormat format = InputFormat::kAuto;
  // Where the input came from (a path or a URL), for messages.
  std::string source;
  // The dashboard's generated_at timestamp, or "".
  std::string generated_at;
  // Every series, in input order.
  std::vector<Series> series;
  // Remarks about the input that a reader should know (schema drift that was tolerated, entries
  // that were skipped), one sentence each.
  std::vector<std::string> notes;
};

}  // namespace triage
}  // namespace kbisect

#endif  // KBISECT_TRIAGE_MODEL_H_
