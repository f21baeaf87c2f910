// Copyright 2026 The kbisect Authors.
#include "cli/report/report.h"

#include <string>

#include "coordinator/root_cause/root_cause.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "report/words.h"

namespace kbisect {
namespace {

using ::testing::EndsWith;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

constexpr char kGood[] = "1a2b3c4d5e6f708192a3b4c5d6e7f80912345678";
constexpr char kBad[] = "ffeeddccbbaa99887766554433221100ffeeddcc";
constexpr char kCulprit[] = "9f8e7d6c5b4a39281706f5e4d3c2b1a098765432";
constexpr char kLastGood[] = "3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e";
constexpr char kMid[] = "5c6d7e8f9011a2b3c4d5e6f708192a3b4c5d6e7f";
constexpr char kSkipped[] = "77aa88bb99cc00dd11ee22ff33aa44bb55cc66dd";

v1::Probe* AddProbe(v1::JobStatus* job, v1::ProbeKind kind, const std::string& sha, int index,
                    const std::string& worker, int round, v1::Verdict verdict,
                    std::vector<double> samples, double median, int64_t end_seconds) {
  v1::Probe* probe = job->add_probes();
  probe->set_kind(kind);
  probe->set_sha(sha);
  probe->set_index(index);
  probe->set_worker(worker);
  probe->set_round(round);
  probe->set_verdict(verdict);
  for (double sample : samples) probe->add_samples(sample);
  probe->set_median(median);
  probe->set_state(v1::PROBE_STATE_FINISHED);
  probe->set_outcome(v1::TASK_OUTCOME_SUCCEEDED);
  probe->mutable_end_time()->set_seconds(end_seconds);
  return probe;
}

void SetBaselines(v1::JobStatus* job) {
  v1::Baseline* good = job->mutable_baseline()->mutable_good();
  good->set_sha(kGood);
  good->add_samples(0.99);
  good->add_samples(1.0);
  good->add_samples(1.01);
  good->set_median(1.0);
  good->set_worker("w1");
  v1::Baseline* bad = job->mutable_baseline()->mutable_bad();
  bad->set_sha(kBad);
  bad->add_samples(1.52);
  bad->add_samples(1.53);
  bad->add_samples(1.51);
  bad->set_median(1.52);
  bad->set_worker("w2");
  job->set_regression_pct(52.0);
}

v1::JobStatus BaseJob(v1::Outcome outcome) {
  v1::JobStatus job;
  job.set_job_id("j-42");
  job.set_state(v1::JOB_STATE_DONE);
  job.set_status(outcome);
  job.set_good_sha(kGood);
  job.set_bad_sha(kBad);
  job.set_commit_count(16);
  job.set_metric_name("latency");
  job.set_metric_unit("ms");
  job.set_direction(v1::DIRECTION_LOWER_IS_BETTER);
  SetBaselines(&job);
  job.set_rounds(3);
  job.set_bench_runs(21);
  job.set_wall_seconds(84.2);
  return job;
}

v1::JobStatus CulpritJob() {
  v1::JobStatus job = BaseJob(v1::OUTCOME_CULPRIT_FOUND);
  AddProbe(&job, v1::PROBE_KIND_BASELINE_GOOD, kGood, 0, "w1", 0, v1::VERDICT_GOOD,
           {0.99, 1.0, 1.01}, 1.0, 100);
  AddProbe(&job, v1::PROBE_KIND_BASELINE_BAD, kBad, 16, "w2", 0, v1::VERDICT_BAD,
           {1.52, 1.53, 1.51}, 1.52, 101);
  // Listed out of finish order: the report orders by end time.
  AddProbe(&job, v1::PROBE_KIND_BISECT, kLastGood, 9, "w2", 2, v1::VERDICT_GOOD, {1.0, 1.01, 1.02},
           1.01, 300);
  AddProbe(&job, v1::PROBE_KIND_BISECT, kMid, 12, "w1", 1, v1::VERDICT_BAD, {1.5, 1.52, 1.53}, 1.52,
           200);
  v1::Probe* skipped =
      AddProbe(&job, v1::PROBE_KIND_BISECT, kSkipped, 6, "w2", 1, v1::VERDICT_SKIP, {}, 0, 210);
  skipped->set_outcome(v1::TASK_OUTCOME_BUILD_FAILED);
  skipped->set_message("build command exited 2\nmore detail");
  v1::Probe* cancelled =
      AddProbe(&job, v1::PROBE_KIND_BISECT, kBad, 14, "w3", 1, v1::VERDICT_UNSPECIFIED, {}, 0, 0);
  cancelled->set_state(v1::PROBE_STATE_CANCELLED);
  cancelled->clear_end_time();

  v1::CommitRef* culprit = job.mutable_culprit();
  culprit->set_sha(kCulprit);
  culprit->set_short_sha("9f8e7d6");
  culprit->set_index(10);
  culprit->set_subject("Halve BLOCK_SIZE in the decode kernel");
  culprit->set_author("Ada Lovelace <ada@example.com>");
  culprit->set_date("2026-01-02 15:04:05 +0100");
  culprit->set_body("Smaller tiles fit more programs per SM.\n");
  job.mutable_last_good()->set_sha(kLastGood);
  job.mutable_last_good()->set_short_sha("3b4c5d6");
  job.set_before(1.01);
  job.set_after(1.52);
  job.set_culprit_regression_pct(50.495);

  v1::FileChange* file = job.add_files_changed();
  file->set_path("kernels/decode.py");
  file->set_status("M");
  file->set_additions(3);
  file->set_deletions(1);
  file = job.add_files_changed();
  file->set_path("kernels/new_util.py");
  file->set_status("A");
  file->set_additions(20);

  v1::RootCauseHint* hint = job.add_root_cause_hints();
  hint->set_pattern(kPatternTileSizes);
  hint->set_likely_cause("Worse occupancy or more iterations (BLOCK_SIZE: 64 -> 32)");
  hint->set_file("kernels/decode.py");
  hint->set_hunk_header("@@ -10,7 +10,7 @@ def decode_kernel(q_ptr, k_ptr):");
  hint->set_line("+BLOCK_SIZE = 32");

  job.add_warnings("worker w3 drifted by 4% and was quarantined");
  job.mutable_progress()->set_probes_cancelled(1);
  return job;
}

size_t Position(const std::string& text, const std::string& needle) {
  const size_t pos = text.find(needle);
  EXPECT_NE(pos, std::string::npos) << "missing: " << needle << "\nin:\n" << text;
  return pos;
}

TEST(ReportTest, CulpritReportFollowsTheSeedLayout) {
  const std::string report = FormatReport(CulpritJob());
  const std::string banner = "============================================================\n";
  EXPECT_THAT(report, StartsWith(banner + "PERFORMANCE REGRESSION BISECT RESULT\n" + banner));
  EXPECT_THAT(report, EndsWith(banner));
  const size_t introduced = Position(report, "\nRegression introduced by:\n");
  const size_t commit = Position(report, "\n  Commit:  " + std::string(kCulprit) + "\n");
  const size_t author = Position(report, "\n  Author:  Ada Lovelace <ada@example.com>\n");
  const size_t date = Position(report, "\n  Date:    2026-01-02 15:04:05 +0100\n");
  const size_t message = Position(report, "\n  Message: Halve BLOCK_SIZE in the decode kernel\n");
  Position(report, "           Smaller tiles fit more programs per SM.\n");
  const size_t impact = Position(report, "\nPerformance impact:\n");
  const size_t before = Position(report, "\n  Before (3b4c5d6): latency = 1.01ms\n");
  const size_t after = Position(report, "\n  After (9f8e7d6): latency = 1.52ms\n");
  const size_t regression = Position(report, "\n  Regression: 50.5% slower\n");
  const size_t files = Position(report, "\nFiles changed:\n");
  const size_t file1 = Position(report, "\n  kernels/decode.py  +3 -1\n");
  const size_t file2 = Position(report, "\n  kernels/new_util.py  +20 -0 (new)\n");
  Position(report, "\n  2 files changed, +23 -1\n");
  const size_t log = Position(report, "\nBisect log:\n");
  const size_t hints = Position(report, "\nRoot-cause hints:\n");
  EXPECT_LT(introduced, commit);
  EXPECT_LT(commit, author);
  EXPECT_LT(author, date);
  EXPECT_LT(date, message);
  EXPECT_LT(message, impact);
  EXPECT_LT(impact, before);
  EXPECT_LT(before, after);
  EXPECT_LT(after, regression);
  EXPECT_LT(regression, files);
  EXPECT_LT(files, file1);
  EXPECT_LT(file1, file2);
  EXPECT_LT(file2, log);
  EXPECT_LT(log, hints);
}

TEST(ReportTest, TheCulpritSaysHowSureItIs) {
  v1::JobStatus job = CulpritJob();
  EXPECT_THAT(FormatReport(job), Not(HasSubstr("Confidence:")));  // Not computed: not printed.
  job.set_culprit_probability(0.962);
  v1::PositionProbability* first = job.add_culprit_posterior();
  first->set_sha(kCulprit);
  first->set_index(10);
  first->set_probability(0.962);
  v1::PositionProbability* second = job.add_culprit_posterior();
  second->set_sha("1234567890123456789012345678901234567890");
  second->set_index(11);
  second->set_probability(0.031);
  const std::string report = FormatReport(job);
  const size_t message = Position(report, "\n  Message: Halve BLOCK_SIZE in the decode kernel\n");
  const size_t confidence = Position(
      report, "\n  Confidence: 96.2% that this is the first bad commit (else 1234567 3.1%)\n");
  EXPECT_LT(message, confidence);
  job.set_culprit_probability(0.99996);
  job.clear_culprit_posterior();
  EXPECT_THAT(FormatReport(job),
              HasSubstr("\n  Confidence: > 99.9% that this is the first bad commit\n"));
}

// Issue 49: a worker whose GPU skewed runs gets a line saying what its GPU did.
TEST(ReportTest, AWorkerWhoseGpuWasCappedIsNamedWithWhatItsGpuDid) {
  v1::JobStatus job = CulpritJob();
  EXPECT_THAT(FormatReport(job), Not(HasSubstr("; GPU: ")));
  v1::Probe* probe = job.mutable_probes(job.probes_size() - 1);
  job.add_workers()->set_worker(probe->worker());
  v1::RunRecord* run = probe->add_runs();
  run->set_has_value(true);
  v1::GpuState* gpu = run->mutable_gpu_state();
  gpu->set_watch_source("nvidia-smi");
  gpu->set_sm_clock_mhz(1605);
  gpu->add_throttle_reasons("sw_power_cap");
  EXPECT_THAT(FormatReport(job),
              HasSubstr("; GPU: 1 run watched (nvidia-smi), SM clock min 1605 MHz, median 1605 "
                        "MHz; 1 run on a capped GPU (sw_power_cap)"));
}

TEST(ReportTest, BisectLogListsFinishedProbesInFinishOrder) {
  const std::string report = FormatReport(CulpritJob());
  const size_t step1 =
      Position(report, "\n  Step 1: 5c6d7e8 = 1.52ms -> BAD [worker w1, round 1]\n");
  const size_t step2 = Position(
      report,
      "\n  Step 2: 77aa88b = n/a -> SKIP [worker w2, round 1]: build_failed: build command "
      "exited 2\n");
  const size_t step3 =
      Position(report, "\n  Step 3: 3b4c5d6 = 1.01ms -> GOOD [worker w2, round 2]\n");
  EXPECT_LT(step1, step2);
  EXPECT_LT(step2, step3);
  // Baselines and cancelled probes are not steps.
  EXPECT_THAT(report, Not(HasSubstr("Step 4:")));
}

TEST(ReportTest, TheBisectLogSaysWhichVerdictsCameFromTheCache) {
  v1::JobStatus job = CulpritJob();
  for (v1::Probe& probe : *job.mutable_probes()) {
    if (probe.verdict() == v1::VERDICT_GOOD && probe.kind() == v1::PROBE_KIND_BISECT) {
      probe.set_cached(true);
      probe.set_cached_job_id("job-1");
    }
  }
  EXPECT_THAT(FormatReport(job), HasSubstr("-> GOOD [worker w2, round 2, cached from job-1]"));
}

TEST(ReportTest, RootCauseHintsAndHypothesis) {
  const std::string report = FormatReport(CulpritJob());
  EXPECT_THAT(report, HasSubstr("  1. Changed tile sizes in kernels/decode.py\n"
                                "     @@ -10,7 +10,7 @@ def decode_kernel(q_ptr, k_ptr):\n"
                                "     +BLOCK_SIZE = 32\n"
                                "     Likely cause: Worse occupancy or more iterations "
                                "(BLOCK_SIZE: 64 -> 32)\n"));
  EXPECT_THAT(report, HasSubstr("  Hypothesis: Likely cause: worse occupancy or more iterations "
                                "(BLOCK_SIZE: 64 -> 32), from changed\n"
                                "              tile sizes in kernels/decode.py.\n"));

  v1::JobStatus job = CulpritJob();
  job.clear_root_cause_hints();
  const std::string without = FormatReport(job);
  EXPECT_THAT(without, HasSubstr("Root-cause hints:\n  no known pattern matched"));
  EXPECT_THAT(without, HasSubstr("git diff 3b4c5d6 9f8e7d6"));
}

TEST(ReportTest, BaselinesWarningsAndCounters) {
  const std::string report = FormatReport(CulpritJob());
  EXPECT_THAT(report, HasSubstr("\nBaselines:\n  GOOD (1a2b3c4): latency = 1ms (median of 3 "
                                "samples: 0.99ms, 1ms, 1.01ms) [worker w1]\n"
                                "  BAD (ffeeddc): latency = 1.52ms (median of 3 samples: "
                                "1.52ms, 1.53ms, 1.51ms) [worker w2]\n"
                                "  GOOD -> BAD: 52.0% slower\n"));
  EXPECT_THAT(report, HasSubstr("\nWarnings:\n  - worker w3 drifted by 4% and was quarantined\n"));
  EXPECT_THAT(report, HasSubstr("\nSummary: 3 rounds, 21 bench runs, 1m24s wall time, 1 probe "
                                "cancelled, 1 skipped\n"));
  EXPECT_THAT(report, HasSubstr("\nJob j-42: 1a2b3c4..ffeeddc (16 commits)\n"));
}

TEST(ReportTest, HigherIsBetterAndNonTimeUnits) {
  v1::JobStatus job = CulpritJob();
  job.set_metric_name("bandwidth");
  job.set_metric_unit("GB/s");
  job.set_direction(v1::DIRECTION_HIGHER_IS_BETTER);
  job.set_before(812.25);
  job.set_after(700);
  job.set_culprit_regression_pct(13.82);
  const std::string report = FormatReport(job);
  EXPECT_THAT(report, HasSubstr("  Before (3b4c5d6): bandwidth = 812.2GB/s\n"));
  EXPECT_THAT(report, HasSubstr("  After (9f8e7d6): bandwidth = 700GB/s\n"));
  EXPECT_THAT(report, HasSubstr("  Regression: 13.8% lower (higher is better)\n"));
}

TEST(ReportTest, MergeConfirmationAndSteps) {
  v1::JobStatus job = CulpritJob();
  job.mutable_culprit()->set_is_merge(true);
  job.mutable_merged_culprit()->set_sha("abcdef0123456789abcdef0123456789abcdef01");
  job.mutable_merged_culprit()->set_subject("Use fp32 accumulators");
  v1::Confirmation* confirmation = job.mutable_confirmation();
  confirmation->set_confirmed(true);
  confirmation->set_ratio(1.5);
  confirmation->set_ci_low(1.45);
  confirmation->set_ci_high(1.55);
  confirmation->set_worker("w1");
  job.set_multiple_steps(true);
  v1::Culprit* step = job.add_culprits();
  *step->mutable_commit() = job.culprit();
  step->set_before(1.01);
  step->set_after(1.4);
  step->set_regression_pct(38.6);
  step->set_share_of_total(0.75);
  step = job.add_culprits();
  step->mutable_commit()->set_sha(kMid);
  step->mutable_commit()->set_subject("Add a barrier");
  step->set_before(1.4);
  step->set_after(1.52);
  step->set_regression_pct(8.6);
  step->set_share_of_total(0.25);
  const std::string report = FormatReport(job);
  EXPECT_THAT(report, HasSubstr("  Commit:  " + std::string(kCulprit) + " (merge)\n"));
  EXPECT_THAT(report, HasSubstr("Inside the merged branch:\n  Commit:  abcdef0123456789"));
  EXPECT_THAT(report, HasSubstr("Confirmation: confirmed, culprit/last-good ratio 1.5 (95% CI "
                                "1.45 to 1.55) on worker w1\n"));
  EXPECT_THAT(report, HasSubstr("Regression steps (largest first):\n  1. 9f8e7d6 Halve BLOCK_SIZE "
                                "in the decode kernel: 1.01ms -> 1.4ms (38.6% slower, 75% of the "
                                "total)\n  2. 5c6d7e8 Add a barrier"));
}

TEST(ReportTest, AConfirmationFromTwoWorkersAlikeNamesBoth) {
  // Decision 232: last good measured on w2, the culprit on w5, both measuring GOOD exactly alike.
  v1::JobStatus job = CulpritJob();
  v1::Confirmation* confirmation = job.mutable_confirmation();
  confirmation->set_confirmed(true);
  confirmation->set_ratio(1.45);
  confirmation->set_ci_low(1.45);
  confirmation->set_ci_high(1.45);
  confirmation->set_worker("w2");
  confirmation->set_reused_pairs(1);
  v1::ConfirmationPairs* set = confirmation->add_sets();
  set->set_worker("w2");
  set->set_culprit_worker("w5");
  set->add_last_good_samples(100);
  set->add_culprit_samples(145);
  EXPECT_THAT(FormatReport(job),
              HasSubstr("Confirmation: confirmed, culprit/last-good ratio 1.45 (95% CI 1.45 to "
                        "1.45) on workers w2 (last good) and w5 (culprit), which measure GOOD "
                        "exactly alike\n"));
}

TEST(ReportTest, TheDependencysCulpritFollowsTheCulprit) {
  v1::JobStatus job = CulpritJob();
  v1::DependencyCulprit* found = job.add_dependency_culprits();
  found->set_kind(v1::DEPENDENCY_KIND_SUBMODULE);
  found->set_path("third_party/cutlass");
  found->set_repository("https://github.com/NVIDIA/cutlass.git");
  found->set_old_sha("1111111111111111111111111111111111111111");
  found->set_new_sha("2222222222222222222222222222222222222222");
  found->mutable_commit()->set_sha("abcdef0123456789abcdef0123456789abcdef01");
  found->mutable_commit()->set_subject("Retune the sm90 GEMM tiles");
  const std::string report = FormatReport(job);
  EXPECT_THAT(report, HasSubstr("Inside the dependency third_party/cutlass "
                                "(https://github.com/NVIDIA/cutlass.git, 1111111..2222222):\n"
                                "  Commit:  abcdef0123456789abcdef0123456789abcdef01\n"));
  EXPECT_THAT(report, HasSubstr("Retune the sm90 GEMM tiles"));
}

TEST(ReportTest, CandidatesFound) {
  v1::JobStatus job = BaseJob(v1::OUTCOME_CANDIDATES_FOUND);
  job.add_candidates(kSkipped);
  job.add_candidates(kCulprit);
  job.mutable_last_good()->set_sha(kLastGood);
  job.mutable_last_good()->set_subject("Refactor launch grid");
  v1::Probe* skipped =
      AddProbe(&job, v1::PROBE_KIND_BISECT, kSkipped, 6, "w2", 1, v1::VERDICT_SKIP, {}, 0, 210);
  skipped->set_outcome(v1::TASK_OUTCOME_BUILD_FAILED);
  skipped->set_message("build command exited 2");
  const std::string report = FormatReport(job);
  EXPECT_THAT(report, HasSubstr("Regression introduced by one of 2 candidate commits"));
  EXPECT_THAT(report,
              HasSubstr("\n  " + std::string(kSkipped) + "  (skipped: build command exited 2)\n"));
  EXPECT_THAT(report, HasSubstr("\n  " + std::string(kCulprit) + "\n"));
  EXPECT_THAT(report,
              HasSubstr("  Last good: " + std::string(kLastGood) + " (Refactor launch grid)\n"));
  EXPECT_THAT(report, HasSubstr("  Step 1: 77aa88b = n/a -> SKIP [worker w2, round 1]"));
  EXPECT_EQ(ExitCodeFor(job.status()), 0);
}

TEST(ReportTest, NoRegression) {
  v1::JobStatus job = BaseJob(v1::OUTCOME_NO_REGRESSION);
  job.mutable_baseline()->mutable_bad()->set_median(1.01);
  job.set_regression_pct(1.0);
  job.set_error("BAD is 1.0% slower than GOOD, below the 5% noise floor (p = 0.41)");
  const std::string report = FormatReport(job);
  EXPECT_THAT(report, HasSubstr("No regression: GOOD and BAD do not differ.\n"
                                "  Reason: BAD is 1.0% slower than GOOD, below the 5% noise floor "
                                "(p = 0.41)\n"
                                "  Nothing blamed.\n"));
  EXPECT_THAT(report, HasSubstr("\nBaselines:\n  GOOD (1a2b3c4): latency = 1ms (median of 3 "
                                "samples: 0.99ms, 1ms, 1.01ms) [worker w1]\n  BAD (ffeeddc): "
                                "latency = 1.01ms (median of 3 samples: 1.52ms, 1.53ms, 1.51ms) "
                                "[worker w2]\n  GOOD -> BAD: 1.0% slower\n"));
  EXPECT_THAT(report, Not(HasSubstr("Regression introduced by")));
  EXPECT_EQ(ExitCodeFor(job.status()), 3);

  job.clear_baseline();
  EXPECT_THAT(
      FormatReport(job),
      HasSubstr("  GOOD (1a2b3c4) and BAD (ffeeddc): no baseline samples were recorded.\n"));
}

TEST(ReportTest, InconclusiveShowsFailingProbesAndLogTails) {
  v1::JobStatus job = BaseJob(v1::OUTCOME_INCONCLUSIVE);
  job.set_error("every commit between 3b4c5d6 and 9f8e7d6 failed to build");
  v1::Probe* probe =
      AddProbe(&job, v1::PROBE_KIND_BISECT, kSkipped, 6, "w2", 1, v1::VERDICT_SKIP, {}, 0, 210);
  probe->set_outcome(v1::TASK_OUTCOME_BUILD_FAILED);
  probe->set_message("build command `make -j` exited 2");
  std::string tail;
  for (int i = 1; i <= 12; ++i) tail += "log line " + std::to_string(i) + "\n";
  probe->set_log_tail(tail);
  v1::Probe* ambiguous = AddProbe(&job, v1::PROBE_KIND_BISECT, kMid, 12, "w1", 1,
                                  v1::VERDICT_AMBIGUOUS, {1.2, 1.3, 1.25}, 1.25, 220);
  ambiguous->set_message("between the baselines after 30 runs");
  const std::string report = FormatReport(job);
  EXPECT_THAT(report, HasSubstr("Bisect inconclusive: every commit between 3b4c5d6 and 9f8e7d6 "
                                "failed to build\n"));
  EXPECT_THAT(report, HasSubstr("Failing probes:\n  77aa88b (probe) [worker w2, round 1]: SKIP, "
                                "build_failed\n    build command `make -j` exited 2\n"
                                "    | log line 3\n"));
  EXPECT_THAT(report, HasSubstr("    | log line 12\n"));
  EXPECT_THAT(report, Not(HasSubstr("| log line 2\n")));
  EXPECT_THAT(report, HasSubstr("  5c6d7e8 (probe) [worker w1, round 1]: AMBIGUOUS, succeeded, "
                                "1.25ms\n    between the baselines after 30 runs\n"));
  EXPECT_EQ(ExitCodeFor(job.status()), 4);
}

TEST(ReportTest, ErrorAndCancelled) {
  v1::JobStatus job;
  job.set_status(v1::OUTCOME_ERROR);
  job.set_state(v1::JOB_STATE_FAILED);
  job.set_error("GOOD revision `v9.9` is unknown to the repository; check the tag name");
  v1::Probe* probe = job.add_probes();
  probe->set_kind(v1::PROBE_KIND_BASELINE_GOOD);
  probe->set_sha(kGood);
  probe->set_outcome(v1::TASK_OUTCOME_CHECKOUT_FAILED);
  probe->set_message("checkout failed");
  std::string report = FormatReport(job);
  EXPECT_THAT(report, HasSubstr("Bisect failed: GOOD revision `v9.9` is unknown to the "
                                "repository; check the tag name\n"));
  EXPECT_THAT(report, HasSubstr("  1a2b3c4 (GOOD baseline) [round 0]: PENDING, checkout_failed\n"
                                "    checkout failed\n"));
  EXPECT_THAT(report, HasSubstr("Summary: 0 rounds, 0 bench runs, 0.0s wall time, 0 probes "
                                "cancelled\n"));
  EXPECT_EQ(ExitCodeFor(job.status()), 1);

  job = BaseJob(v1::OUTCOME_CANCELLED);
  job.clear_error();
  report = FormatReport(job);
  EXPECT_THAT(report, HasSubstr("Bisect cancelled: cancelled by request\n"));
  EXPECT_EQ(ExitCodeFor(job.status()), 1);
}

TEST(ReportTest, RunningJob) {
  v1::JobStatus job = BaseJob(v1::OUTCOME_RUNNING);
  job.set_state(v1::JOB_STATE_BISECTING);
  job.mutable_progress()->set_probes_finished(4);
  job.mutable_progress()->set_probes_in_flight(2);
  job.mutable_progress()->set_remaining_commits(5);
  job.mutable_progress()->set_estimated_rounds(1);
  AddProbe(&job, v1::PROBE_KIND_BISECT, kMid, 12, "w1", 1, v1::VERDICT_BAD, {1.5}, 1.5, 200);
  const std::string report = FormatReport(job);
  EXPECT_THAT(report, HasSubstr("Bisect in progress (bisecting).\n  4 probes finished, 2 in "
                                "flight; the culprit is one of 5 commits (about 1 more round).\n"));
  EXPECT_THAT(report, HasSubstr("  Step 1: 5c6d7e8 = 1.5ms -> BAD [worker w1, round 1]\n"));
  EXPECT_EQ(ExitCodeFor(job.status()), 1);
}

TEST(ReportTest, Helpers) {
  EXPECT_EQ(FormatMetricValue(1.52, "ms"), "1.52ms");
  EXPECT_EQ(FormatMetricValue(1.523456, "ms"), "1.523ms");
  EXPECT_EQ(FormatMetricValue(123456, ""), "1.235e+05");
  EXPECT_EQ(OutcomeName(v1::OUTCOME_CULPRIT_FOUND), "culprit_found");
  EXPECT_EQ(OutcomeName(v1::OUTCOME_NO_REGRESSION), "no_regression");
  EXPECT_EQ(OutcomeName(static_cast<v1::Outcome>(99)), "99");
  EXPECT_EQ(VerdictWord(v1::VERDICT_GOOD), "good");
  EXPECT_EQ(VerdictWord(v1::VERDICT_UNSPECIFIED, WordCase::kUpper), "PENDING");
  EXPECT_EQ(JobStateName(v1::JOB_STATE_BISECTING), "bisecting");
  EXPECT_EQ(TaskOutcomeName(v1::TASK_OUTCOME_METRIC_MISSING), "metric_missing");
  EXPECT_EQ(ExitCodeFor(v1::OUTCOME_CULPRIT_FOUND), 0);
  EXPECT_EQ(ExitCodeFor(v1::OUTCOME_CANDIDATES_FOUND), 0);
  EXPECT_EQ(ExitCodeFor(v1::OUTCOME_NO_REGRESSION), 3);
  EXPECT_EQ(ExitCodeFor(v1::OUTCOME_INCONCLUSIVE), 4);
  EXPECT_EQ(ExitCodeFor(v1::OUTCOME_ERROR), 1);
  EXPECT_EQ(ExitCodeFor(v1::OUTCOME_CANCELLED), 1);
  EXPECT_EQ(ExitCodeFor(v1::OUTCOME_UNSPECIFIED), 1);
}

TEST(ReportTest, ReportOfHintsFoundInARealDiff) {
  v1::JobStatus job = CulpritJob();
  job.clear_root_cause_hints();
  const std::string patch =
      "diff --git a/kernels/decode.py b/kernels/decode.py\n"
      "--- a/kernels/decode.py\n"
      "+++ b/kernels/decode.py\n"
      "@@ -20,3 +20,4 @@ def decode_kernel(q_ptr, k_ptr):\n"
      "     for start in range(0, N, BLOCK):\n"
      "         k = tl.load(k_ptr + start)\n"
      "+        tl.debug_barrier()\n"
      "         acc += k\n";
  for (v1::RootCauseHint& hint : FindRootCauseHints(patch)) {
    *job.add_root_cause_hints() = std::move(hint);
  }
  const std::string report = FormatReport(job);
  EXPECT_THAT(report, HasSubstr("  1. Added synchronization in kernels/decode.py\n"
                                "     @@ -20,3 +20,4 @@ def decode_kernel(q_ptr, k_ptr):\n"
                                "     +tl.debug_barrier()\n"
                                "     Likely cause: Extra sync stalls (new tl.debug_barrier)\n"));
}

}  // namespace
}  // namespace kbisect
