// Copyright 2026 The kbisect Authors.
//
// The Prometheus text rendering of the coordinator's metrics: exact output, label escaping.
#include "coordinator/metrics.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kbisect {
namespace {

using ::testing::HasSubstr;

TEST(EscapeLabelValueTest, EscapesBackslashQuoteAndNewline) {
  EXPECT_EQ(EscapeLabelValue("plain value-1.2"), "plain value-1.2");
  EXPECT_EQ(EscapeLabelValue("a\\b\"c\nd"), "a\\\\b\\\"c\\nd");
  EXPECT_EQ(EscapeLabelValue(""), "");
}

TEST(RenderPrometheusTextTest, ExactExposition) {
  MetricsSnapshot snapshot;
  snapshot.jobs_by_state = {{"bisecting", 1}, {"done", 2}, {"queued", 0}};
  snapshot.probes_by_verdict = {{"bad", 3}, {"good", 4}, {"skip", 0}};
  snapshot.bench_runs = 57;
  snapshot.workers = {{{"0a1b2c", "busy"}, 2}, {{"0a1b2c", "idle"}, 1}, {{"", "lost"}, 1}};
  snapshot.drift_events = 2;
  snapshot.quarantines = 1;
  snapshot.lease_expiries = 3;
  snapshot.version = "0.1.0";
  snapshot.grpc_version = "1.51.1";
  for (double seconds : {0.4, 1.0, 7.5, 4000.0}) snapshot.probe_seconds["bisect"].Observe(seconds);
  snapshot.probe_seconds["confirm"].Observe(61);
  EXPECT_EQ(RenderPrometheusText(snapshot),
            "# HELP kbisect_jobs Jobs known to the coordinator, by state.\n"
            "# TYPE kbisect_jobs gauge\n"
            "kbisect_jobs{state=\"bisecting\"} 1\n"
            "kbisect_jobs{state=\"done\"} 2\n"
            "kbisect_jobs{state=\"queued\"} 0\n"
            "# HELP kbisect_probes_total Classified probes of all jobs, by verdict.\n"
            "# TYPE kbisect_probes_total counter\n"
            "kbisect_probes_total{verdict=\"bad\"} 3\n"
            "kbisect_probes_total{verdict=\"good\"} 4\n"
            "kbisect_probes_total{verdict=\"skip\"} 0\n"
            "# HELP kbisect_bench_runs_total Benchmark executions of all jobs, baselines "
            "included.\n"
            "# TYPE kbisect_bench_runs_total counter\n"
            "kbisect_bench_runs_total 57\n"
            "# HELP kbisect_workers Workers by hardware class and state.\n"
            "# TYPE kbisect_workers gauge\n"
            "kbisect_workers{hardware_class=\"\",state=\"lost\"} 1\n"
            "kbisect_workers{hardware_class=\"0a1b2c\",state=\"busy\"} 2\n"
            "kbisect_workers{hardware_class=\"0a1b2c\",state=\"idle\"} 1\n"
            "# HELP kbisect_drift_events_total Drift events of all jobs (quarantines, "
            "calibrations lost to a hardware change).\n"
            "# TYPE kbisect_drift_events_total counter\n"
            "kbisect_drift_events_total 2\n"
            "# HELP kbisect_quarantines_total Workers quarantined for a job.\n"
            "# TYPE kbisect_quarantines_total counter\n"
            "kbisect_quarantines_total 1\n"
            "# HELP kbisect_lease_expiries_total Leases that expired without a heartbeat since "
            "the coordinator started.\n"
            "# TYPE kbisect_lease_expiries_total counter\n"
            "kbisect_lease_expiries_total 3\n"
            "# HELP kbisect_state_writable 1 while the coordinator can write its state "
            "directory; 0: it serves reads only.\n"
            "# TYPE kbisect_state_writable gauge\n"
            "kbisect_state_writable 1\n"
            "# HELP kbisect_build_info Always 1; the labels say what is running.\n"
            "# TYPE kbisect_build_info gauge\n"
            "kbisect_build_info{version=\"0.1.0\",grpc_version=\"1.51.1\"} 1\n"
            "# HELP kbisect_probe_duration_seconds Wall time of measured probes (checkout, build "
            "and runs), by kind.\n"
            "# TYPE kbisect_probe_duration_seconds histogram\n"
            "kbisect_probe_duration_seconds_bucket{kind=\"bisect\",le=\"1\"} 2\n"
            "kbisect_probe_duration_seconds_bucket{kind=\"bisect\",le=\"5\"} 2\n"
            "kbisect_probe_duration_seconds_bucket{kind=\"bisect\",le=\"15\"} 3\n"
            "kbisect_probe_duration_seconds_bucket{kind=\"bisect\",le=\"30\"} 3\n"
            "kbisect_probe_duration_seconds_bucket{kind=\"bisect\",le=\"60\"} 3\n"
            "kbisect_probe_duration_seconds_bucket{kind=\"bisect\",le=\"120\"} 3\n"
            "kbisect_probe_duration_seconds_bucket{kind=\"bisect\",le=\"300\"} 3\n"
            "kbisect_probe_duration_seconds_bucket{kind=\"bisect\",le=\"600\"} 3\n"
            "kbisect_probe_duration_seconds_bucket{kind=\"bisect\",le=\"1800\"} 3\n"
            "kbisect_probe_duration_seconds_bucket{kind=\"bisect\",le=\"3600\"} 3\n"
            "kbisect_probe_duration_seconds_bucket{kind=\"bisect\",le=\"+Inf\"} 4\n"
            "kbisect_probe_duration_seconds_sum{kind=\"bisect\"} 4008.9\n"
            "kbisect_probe_duration_seconds_count{kind=\"bisect\"} 4\n"
            "kbisect_probe_duration_seconds_bucket{kind=\"confirm\",le=\"1\"} 0\n"
            "kbisect_probe_duration_seconds_bucket{kind=\"confirm\",le=\"5\"} 0\n"
            "kbisect_probe_duration_seconds_bucket{kind=\"confirm\",le=\"15\"} 0\n"
            "kbisect_probe_duration_seconds_bucket{kind=\"confirm\",le=\"30\"} 0\n"
            "kbisect_probe_duration_seconds_bucket{kind=\"confirm\",le=\"60\"} 0\n"
            "kbisect_probe_duration_seconds_bucket{kind=\"confirm\",le=\"120\"} 1\n"
            "kbisect_probe_duration_seconds_bucket{kind=\"confirm\",le=\"300\"} 1\n"
            "kbisect_probe_duration_seconds_bucket{kind=\"confirm\",le=\"600\"} 1\n"
            "kbisect_probe_duration_seconds_bucket{kind=\"confirm\",le=\"1800\"} 1\n"
            "kbisect_probe_duration_seconds_bucket{kind=\"confirm\",le=\"3600\"} 1\n"
            "kbisect_probe_duration_seconds_bucket{kind=\"confirm\",le=\"+Inf\"} 1\n"
            "kbisect_probe_duration_seconds_sum{kind=\"confirm\"} 61\n"
            "kbisect_probe_duration_seconds_count{kind=\"confirm\"} 1\n");
}

// Prometheus's own linter (promtool, Debian's prometheus package, which scripts/install-deps.sh
// installs) accepts the exposition, label values that need escaping and histograms included.
TEST(RenderPrometheusTextTest, PromtoolFindsNoProblem) {
  if (std::system("command -v promtool >/dev/null 2>&1") != 0) {
    GTEST_SKIP() << "promtool is not installed (scripts/install-deps.sh installs prometheus)";
  }
  MetricsSnapshot snapshot;
  snapshot.jobs_by_state = {{"bisecting", 1}, {"done", 2}};
  snapshot.probes_by_verdict = {{"bad", 3}, {"good", 4}};
  snapshot.workers = {{{"class \"x\"\\y\nz", "idle"}, 1}};
  snapshot.version = "0.1.0";
  snapshot.grpc_version = "1.51.1";
  for (double seconds : {0.4, 7.5, 4000.0}) snapshot.probe_seconds["bisect"].Observe(seconds);
  snapshot.probe_seconds["baseline_good"].Observe(12);
  const std::string path = ::testing::TempDir() + "/kbisect-metrics.txt";
  {
    std::ofstream file(path);
    file << RenderPrometheusText(snapshot);
  }
  const std::string command = "promtool check metrics < " + path + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string output;
  char buffer[512];
  while (fgets(buffer, sizeof(buffer), pipe) != nullptr) output += buffer;
  const int status = pclose(pipe);
  EXPECT_EQ(status, 0) << output;
  EXPECT_EQ(output, "") << "promtool's lint problems";
}

TEST(RenderPrometheusTextTest, EscapesLabelValuesAndKeepsEmptyMetricsDeclared) {
  MetricsSnapshot snapshot;
  snapshot.workers = {{{"class \"x\"\\y\nz", "idle"}, 1}};
  const std::string text = RenderPrometheusText(snapshot);
  EXPECT_THAT(
      text,
      HasSubstr("kbisect_workers{hardware_class=\"class \\\"x\\\"\\\\y\\nz\",state=\"idle\"} 1\n"));
  // No jobs: the metric is still declared, with no samples.
  EXPECT_THAT(text, HasSubstr("# TYPE kbisect_jobs gauge\n# HELP kbisect_probes_total"));
  EXPECT_THAT(text, HasSubstr("kbisect_bench_runs_total 0\n"));
  EXPECT_EQ(text.back(), '\n');
}

}  // namespace
}  // namespace kbisect
