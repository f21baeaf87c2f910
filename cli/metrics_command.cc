// Copyright 2026 The kbisect Authors.
#include "cli/metrics_command.h"

#include <algorithm>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cli/run_command.h"
#include "common/flags/flag_checks.h"
#include "common/metric/metric.h"
#include "common/metric/metric_suite.h"
#include "nlohmann/json.hpp"

namespace kbisect {
namespace {

constexpr char kFooter[] = R"(
Reads a benchmark's output (FILE, or standard input without it or with "-") and prints what
kbisect reads from it: by default every metric of a suite's output, each on a line with its value
in the canonical unit (ms, GB/s, TFLOPS, ...), the unit and which way it improves.

Suite forms (--suite):
  auto              Google Benchmark JSON (--benchmark_format=json): each benchmark's real time,
                    or its median aggregate with repetitions; pytest-benchmark JSON: each test's
                    median; a table of whole lines "name: value unit", "name = value", "name
                    value unit" (two names or more)
  regex:PATTERN     every match of an RE2 pattern with a group named "name" and one value group,
                    e.g. 'regex:(?P<name>\w+) took ([0-9.]+) ms'
  json:PATH         a dotted path with one '*' into the output's last JSON object, e.g.
                    'json:results.*.latency_ms'

With --metric REGEX, --metric-json PATH or --single it prints the one metric that `kbisect run`
with the same option reads (none of them: the default detection).

Exit codes: 0 found, 1 none found (or FILE unreadable), 2 usage error or invalid pattern.
)";

std::string DirectionWords(Direction direction) {
  switch (direction) {
    case Direction::kLowerIsBetter:
      return "lower is better";
    case Direction::kHigherIsBetter:
      return "higher is better";
    case Direction::kUnknown:
      break;
  }
  return "direction unknown";
}

absl::StatusOr<std::string> ReadInput(const std::string& file) {
  if (file.empty() || file == "-") {
    return std::string(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
  }
  std::ifstream in(file, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", file));
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

void Print(const std::vector<NamedMetric>& metrics, bool json) {
  if (json) {
    nlohmann::ordered_json out = nlohmann::ordered_json::array();
    for (const NamedMetric& m : metrics) {
      out.push_back({{"name", m.name},
                     {"value", m.metric.value},
                     {"unit", m.metric.unit},
                     {"direction", DirectionName(m.metric.direction)}});
    }
    std::cout << out.dump(2) << "\n";
    return;
  }
  size_t width = 0;
  for (const NamedMetric& m : metrics) width = std::max(width, m.name.size());
  for (const NamedMetric& m : metrics) {
    std::cout << absl::StrFormat("%-*s  %12s  %s\n", static_cast<int>(width), m.name,
                                 FormatValue(m.metric.value, m.metric.unit),
                                 DirectionWords(m.metric.direction));
  }
  std::cout << metrics.size() << (metrics.size() == 1 ? " metric" : " metrics") << "\n";
}

}  // namespace

int MetricsCommand(int argc, char** argv) {
  CLI::App app{"Show the metrics kbisect reads from a benchmark's output.", "kbisect metrics"};
  app.footer(kFooter);
  std::string file;
  std::string suite = "auto";
  std::string metric_regex;
  std::string metric_json;
  bool single = false;
  bool json = false;
  app.add_option("file", file, "The benchmark's output (default: standard input)");
  CLI::Option* suite_option =
      app.add_option("--suite", suite, "How to find a suite's metrics: auto, regex:..., json:...");
  CLI::Option* regex_option =
      app.add_option("--metric", metric_regex, "The one metric `kbisect run --metric` reads");
  CLI::Option* json_option = app.add_option("--metric-json", metric_json,
                                            "The one metric `kbisect run --metric-json` reads");
  CLI::Option* single_option =
      app.add_flag("--single", single, "The one metric `kbisect run` reads by default");
  app.add_flag("--json", json, "Print the metrics as a JSON array");
  suite_option->excludes(regex_option)->excludes(json_option)->excludes(single_option);
  regex_option->excludes(json_option)->excludes(single_option);
  json_option->excludes(single_option);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return ReportParseError(app, e);
  }
  absl::StatusOr<std::string> output = ReadInput(file);
  if (!output.ok()) {
    std::cerr << "kbisect: " << output.status().message() << "\n";
    return kExitError;
  }
  const bool one = single || !metric_regex.empty() || !metric_json.empty();
  if (one) {
    MetricSpec spec;
    if (!metric_regex.empty()) {
      spec.kind = MetricSpec::Kind::kRegex;
      spec.pattern = metric_regex;
    } else if (!metric_json.empty()) {
      spec.kind = MetricSpec::Kind::kJsonPath;
      spec.pattern = metric_json;
    }
    if (absl::Status valid = ValidateMetricSpec(spec); !valid.ok()) {
      std::cerr << "kbisect: " << valid.message() << "\n";
      return kExitUsage;
    }
    absl::StatusOr<Metric> metric = ExtractMetric(spec, *output);
    if (!metric.ok()) {
      std::cerr << "kbisect: " << metric.status().message() << "\n";
      return kExitError;
    }
    Print({NamedMetric{metric->name, *metric}}, json);
    return 0;
  }
  absl::StatusOr<MetricSuiteSpec> spec = ParseMetricSuiteSpec(suite);
  if (!spec.ok()) {
    std::cerr << "kbisect: --suite: " << spec.status().message() << "\n";
    return kExitUsage;
  }
  absl::StatusOr<std::vector<NamedMetric>> metrics = ExtractMetricSuite(*spec, *output);
  if (!metrics.ok()) {
    std::cerr << "kbisect: " << metrics.status().message() << "\n";
    return kExitError;
  }
  Print(*metrics, json);
  return 0;
}

}  // namespace kbisect
