// Copyright 2026 The kbisect Authors.
//
// The HTML job page, its template helper, the Markdown summary, the reproduce command and the
// ETA, over a synthetic finished job (the browser checks over real jobs are in
// tests/integration/job_pages_browser_test.cc).
#include <string>

#include "absl/strings/match.h"
#include "absl/time/time.h"
#include "common/rpc/proto_time.h"
#include "common/spec/job_spec.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "report/eta.h"
#include "report/gpu_during_job.h"
#include "report/html/job_list_page.h"
#include "report/html/job_page.h"
#include "report/html/page_format.h"
#include "report/html/sample_plot.h"
#include "report/html/template.h"
#include "report/markdown_summary.h"
#include "report/reproduce.h"

namespace kbisect {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

int Count(const std::string& text, const std::string& needle) {
  int n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

const absl::Time kT0 = absl::FromUnixSeconds(1800000000);

v1::Probe* Add(v1::JobStatus* job, v1::ProbeKind kind, int index, const std::string& worker,
               v1::Verdict verdict, std::vector<double> samples, double start, double end) {
  v1::Probe* p = job->add_probes();
  p->set_probe_id(absl::StrCat("p", job->probes_size()));
  p->set_kind(kind);
  p->set_index(index);
  p->set_sha(absl::StrCat(std::string(39, 'a' + index % 6), index % 10));
  p->set_worker(worker);
  p->set_verdict(verdict);
  p->set_round(kind == v1::PROBE_KIND_BISECT ? 1 : 0);
  p->set_state(v1::PROBE_STATE_FINISHED);
  double median = 0;
  for (double s : samples) {
    p->add_samples(s);
    median = s;
  }
  p->set_median(median);
  *p->mutable_start_time() = ToProto(kT0 + absl::Seconds(start));
  *p->mutable_end_time() = ToProto(kT0 + absl::Seconds(end));
  p->mutable_timings()->mutable_bench()->set_seconds(static_cast<int64_t>(end - start) / 2);
  return p;
}

v1::JobStatus FinishedJob() {
  v1::JobStatus job;
  job.set_job_id("job-1");
  job.set_state(v1::JOB_STATE_DONE);
  job.set_status(v1::OUTCOME_CULPRIT_FOUND);
  job.set_good_sha(std::string(40, '1'));
  job.set_bad_sha(std::string(40, '2'));
  job.set_commit_count(20);
  job.set_metric_name("latency");
  job.set_metric_unit("ms");
  job.mutable_spec()->set_repository("/src/my repo");
  job.mutable_spec()->set_threshold_fraction(0.3);
  job.mutable_spec()->set_confirm(true);
  job.mutable_spec()->add_bench_command("./bench.sh");
  job.mutable_spec()->add_bench_command("--size=it's");
  auto* good = job.mutable_baseline()->mutable_good();
  for (double s : {0.99, 1.0, 1.01}) good->add_samples(s);
  good->set_median(1.0);
  auto* bad = job.mutable_baseline()->mutable_bad();
  for (double s : {1.49, 1.5, 1.51}) bad->add_samples(s);
  bad->set_median(1.5);
  Add(&job, v1::PROBE_KIND_BASELINE_BAD, 20, "w0", v1::VERDICT_UNSPECIFIED, {1.49, 1.5, 1.51}, 0,
      2);
  Add(&job, v1::PROBE_KIND_BASELINE_GOOD, 0, "w0", v1::VERDICT_UNSPECIFIED, {0.99, 1.0, 1.01}, 2,
      4);
  Add(&job, v1::PROBE_KIND_BISECT, 10, "w1", v1::VERDICT_GOOD, {1.0, 1.01, 0.99}, 0, 4)
      ->set_provisional(true);
  Add(&job, v1::PROBE_KIND_BISECT, 14, "w2", v1::VERDICT_BAD, {1.5, 1.52}, 0, 4)->set_cached(true);
  Add(&job, v1::PROBE_KIND_BISECT, 12, "w3", v1::VERDICT_GOOD, {2.5}, 4, 8);  // Quarantined.
  Add(&job, v1::PROBE_KIND_BISECT, 13, "w1", v1::VERDICT_BAD, {1.5, 1.49, 1.51}, 4, 8);
  Add(&job, v1::PROBE_KIND_BISECT, 11, "w2", v1::VERDICT_UNSPECIFIED, {}, 4, 6)
      ->set_state(v1::PROBE_STATE_CANCELLED);
  Add(&job, v1::PROBE_KIND_CONFIRM, 13, "w1", v1::VERDICT_UNSPECIFIED, {1.5, 1.5}, 8, 10);
  for (const char* w : {"w0", "w1", "w2", "w3"}) {
    v1::JobWorker* worker = job.add_workers();
    worker->set_worker(w);
    worker->mutable_identity()->set_hardware_class_label("NVIDIA B200 x1");
    if (std::string(w) == "w3") {
      worker->set_quarantined(true);
      worker->set_reason("GOOD 2.5x the pool's median");
    }
  }
  v1::CommitRef* culprit = job.mutable_culprit();
  culprit->set_sha(job.probes(5).sha());
  culprit->set_short_sha(culprit->sha().substr(0, 7));
  culprit->set_index(13);
  culprit->set_subject("Retune <tiles> & \"blocks\"");
  culprit->set_author("Ada <ada@example.com>");
  v1::CommitRef* last_good = job.mutable_last_good();
  last_good->set_sha(job.probes(4).sha());
  last_good->set_index(12);
  job.set_before(1.0);
  job.set_after(1.5);
  job.set_culprit_regression_pct(50);
  v1::Confirmation* confirmation = job.mutable_confirmation();
  confirmation->set_confirmed(true);
  confirmation->set_ratio(1.5);
  confirmation->set_ci_low(1.45);
  confirmation->set_ci_high(1.55);
  v1::ConfirmationPairs* set = confirmation->add_sets();
  set->set_worker("w1");
  set->set_interleaved(true);
  set->add_last_good_samples(1.0);
  set->add_last_good_samples(1.01);
  v1::RootCauseHint* hint = job.add_root_cause_hints();
  hint->set_pattern("Changed tile sizes");
  hint->set_file("kernels/attention.py");
  hint->set_likely_cause("Worse occupancy");
  hint->set_hunk_header("@@ -4,7 +4,7 @@");
  hint->set_line("+BLOCK_SIZE=32");
  job.set_rounds(2);
  return job;
}

html::PageOptions Options(absl::Time now, int refresh_seconds = 0, std::string jobs_link = "") {
  html::PageOptions options;
  options.now = now;
  options.refresh_seconds = refresh_seconds;
  options.jobs_link = std::move(jobs_link);
  return options;
}

TEST(TemplateTest, EscapesValuesKeepsRawMarkupAndRefusesUnknownOrUnusedNames) {
  absl::StatusOr<std::string> out =
      html::Fill("<p title=\"{{t}}\">{{{raw}}}</p>", {{"t", "a\"<&'"}, {"raw", "<b>x</b>"}});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(*out, "<p title=\"a&quot;&lt;&amp;&#39;\"><b>x</b></p>");
  EXPECT_FALSE(html::Fill("{{missing}}", {}).ok());
  EXPECT_FALSE(html::Fill("plain", {{"unused", "x"}}).ok());
  EXPECT_FALSE(html::Fill("{{open", {{"open", "x"}}).ok());
}

// Issue 49: a sample whose run the GPU skewed carries its mark and says why; a run rerun for a
// hardware slowdown has no sample, so the marks follow the runs that produced one.
TEST(JobPageTest, SamplesTheGpuSkewedAreMarkedWithTheirReason) {
  v1::JobStatus job = FinishedJob();
  v1::Probe* probe = job.mutable_probes(5);  // w1 at 13: samples 1.5, 1.49, 1.51.
  auto add_run = [&](bool has_value) {
    v1::RunRecord* run = probe->add_runs();
    run->set_has_value(has_value);
    return run->mutable_gpu_state();
  };
  v1::GpuState* rerun = add_run(false);  // Throttled, rerun: no sample.
  rerun->set_throttled(true);
  rerun->add_throttle_reasons("hw_slowdown");
  v1::GpuState* capped = add_run(true);  // Sample 0.
  capped->add_throttle_reasons("sw_power_cap");
  v1::ReasonShare* share = capped->add_reason_shares();
  share->set_reason("sw_power_cap");
  share->set_share(0.4);
  add_run(true)->add_throttle_reasons("gpu_idle");                       // Sample 1: benign, clean.
  add_run(true)->add_foreign_processes("pid 4242 python3 (12034 MiB)");  // Sample 2.

  absl::StatusOr<std::string> page = html::RenderJobPage(job, Options(kT0 + absl::Seconds(10)));
  ASSERT_TRUE(page.ok()) << page.status();
  EXPECT_EQ(Count(*page, "<circle class=\"sample v-bad kind-bisect gpu-capped\""), 1);
  EXPECT_THAT(*page, HasSubstr("<title>GPU capped: sw_power_cap 40% of the run</title>"));
  EXPECT_EQ(Count(*page, "<circle class=\"sample v-bad kind-bisect gpu-shared\""), 1);
  EXPECT_THAT(*page, HasSubstr("<title>GPU shared with pid 4242 python3 (12034 MiB)</title>"));
  EXPECT_EQ(Count(*page, "<circle class=\"sample v-bad kind-bisect\""), 1);
  EXPECT_EQ(Count(*page, "class=\"sample v-bad kind-bisect gpu-throttled"), 0);
  EXPECT_EQ(Count(*page, "class=\"sample "), 19);  // Still one mark per sample.
  EXPECT_THAT(*page, HasSubstr("1 run rerun on a throttled GPU, 1 run on a capped GPU, 1 run on a "
                               "shared GPU"));
  EXPECT_THAT(*page, HasSubstr("GPU capped during the run"));  // The legend.
  // The workers table says what w1's GPU did during the job.
  EXPECT_THAT(*page,
              HasSubstr("<td class=\"gpu-skewed\">4 runs read after each run; 1 run rerun on "
                        "a throttled GPU, 1 run on a capped GPU (hw_slowdown, "
                        "sw_power_cap); 1 run shared the GPU with pid 4242 python3 (12034 "
                        "MiB)</td>"));
}

TEST(GpuDuringJobTest, WatchedRunsTheirClocksAndNothingSkewed) {
  v1::JobStatus job;
  v1::Probe* probe = job.add_probes();
  probe->set_worker("w0");
  for (int clock : {1980, 1410, 1965}) {
    v1::GpuState* gpu = probe->add_runs()->mutable_gpu_state();
    gpu->set_watch_source("nvml");
    gpu->set_sm_clock_mhz(clock);
    gpu->set_median_sm_clock_mhz(clock + 10);
  }
  const std::map<std::string, WorkerGpuDuringJob> gpus = GpuDuringJob(job);
  ASSERT_EQ(gpus.count("w0"), 1u);
  EXPECT_FALSE(gpus.at("w0").Skewed());
  EXPECT_EQ(gpus.at("w0").Words(), "3 runs watched (nvml), SM clock min 1410 MHz, median 1975 MHz");
}

TEST(JobPageTest, DrawsOneMarkPerSampleAndMarksTheCulpritAndEachKindOfSample) {
  const v1::JobStatus job = FinishedJob();
  absl::StatusOr<std::string> page = html::RenderJobPage(job, Options(kT0 + absl::Seconds(10)));
  ASSERT_TRUE(page.ok()) << page.status();
  // 3+3+3+2+1+3+2 probe samples and 2 interleaved last-good samples.
  EXPECT_EQ(html::SampleMarkCount(job), 19);
  EXPECT_EQ(Count(*page, "class=\"sample "), 19);
  EXPECT_EQ(Count(*page, "<circle class=\"sample v-good kind-bisect provisional\""), 3);
  EXPECT_EQ(Count(*page, "<rect class=\"sample v-bad kind-bisect cached\""), 2);
  EXPECT_EQ(Count(*page, "<circle class=\"sample v-good kind-bisect quarantined\""), 1);
  EXPECT_EQ(Count(*page, "class=\"sample paired"), 2);
  EXPECT_THAT(*page, HasSubstr("<g class=\"col culprit\" data-index=\"13\""));
  EXPECT_THAT(*page, HasSubstr("<g class=\"col last-good\" data-index=\"12\""));
  EXPECT_THAT(*page, HasSubstr("class=\"threshold\""));
  EXPECT_EQ(Count(*page, "<line class=\"band-good-median\""), 1);
  EXPECT_THAT(*page, HasSubstr("ratio 1.5 (95% CI 1.45 to 1.55)"));
  // The timeline: one bar per task, the cancelled one hatched.
  EXPECT_EQ(Count(*page, "<g class=\"task "), job.probes_size());
  EXPECT_EQ(Count(*page, " cancelled\" data-probe="), 1);
  // Text from the job is escaped; no network fetch; the page is one document.
  EXPECT_THAT(*page, HasSubstr("Retune &lt;tiles&gt; &amp; &quot;blocks&quot;"));
  EXPECT_THAT(*page, Not(HasSubstr("<tiles>")));
  EXPECT_THAT(*page, Not(HasSubstr("src=")));
  EXPECT_THAT(*page, Not(HasSubstr("href=\"http")));
  EXPECT_THAT(*page, Not(HasSubstr("http-equiv=\"refresh\"")));  // Finished: no reload.
  EXPECT_EQ(Count(*page, "</html>"), 1);
  EXPECT_THAT(*page, HasSubstr("GOOD 2.5x the pool&#39;s median"));
  EXPECT_THAT(*page, HasSubstr("prefers-color-scheme:dark"));
  EXPECT_THAT(*page, HasSubstr("@media print"));
}

TEST(JobPageTest, ARunningLivePageReloadsAndShowsTheTimeLeft) {
  v1::JobStatus job = FinishedJob();
  job.set_state(v1::JOB_STATE_BISECTING);
  job.set_status(v1::OUTCOME_RUNNING);
  job.mutable_progress()->set_estimated_rounds(2);
  job.mutable_progress()->set_remaining_commits(1);
  job.mutable_progress()->set_probes_in_flight(0);
  job.mutable_confirmation()->Clear();
  job.clear_confirmation();
  job.mutable_probes()->RemoveLast();  // No confirmation task yet.
  absl::StatusOr<std::string> page =
      html::RenderJobPage(job, Options(kT0 + absl::Seconds(10), /*refresh_seconds=*/2, "/jobs"));
  ASSERT_TRUE(page.ok()) << page.status();
  EXPECT_THAT(*page, HasSubstr("<meta http-equiv=\"refresh\" content=\"2\">"));
  EXPECT_THAT(*page, HasSubstr("1 commit left, 0 probes in flight"));
  // Bisect spans 4, 4, 4, 4 s (the cached one does not count): (2 rounds + confirmation) x 4s.
  EXPECT_THAT(*page, HasSubstr("<dd class=\"eta\">~12s</dd>"));
  EXPECT_THAT(*page, HasSubstr("<a href=\"/jobs\">all jobs</a>"));
}

TEST(EtaTest, CountsRoundsLeftAndTheConfirmationAndSubtractsTheRunningProbesTime) {
  EtaEstimator eta(/*confirm=*/true);
  v1::Progress progress;
  progress.set_estimated_rounds(3);
  EXPECT_FALSE(eta.Left(progress, kT0).has_value());
  v1::JobStatus job;
  Add(&job, v1::PROBE_KIND_BISECT, 5, "w", v1::VERDICT_GOOD, {1}, 0, 10);
  Add(&job, v1::PROBE_KIND_BISECT, 6, "w", v1::VERDICT_GOOD, {1}, 10, 30);
  eta.Observe(job.probes(0));
  eta.Observe(job.probes(0));  // Counted once.
  eta.Observe(job.probes(1));
  EXPECT_EQ(eta.spans(), 2);
  EXPECT_EQ(*eta.Left(progress, kT0), absl::Seconds(60));  // (3 + 1) x 15 s.
  v1::Probe running = job.probes(1);
  running.set_probe_id("r");
  running.set_state(v1::PROBE_STATE_RUNNING);
  *running.mutable_start_time() = ToProto(kT0 + absl::Seconds(30));
  eta.Observe(running);
  progress.set_probes_in_flight(1);
  EXPECT_EQ(*eta.Left(progress, kT0 + absl::Seconds(35)), absl::Seconds(55));
  v1::Probe confirm = job.probes(1);
  confirm.set_kind(v1::PROBE_KIND_CONFIRM);
  eta.Observe(confirm);
  progress.set_estimated_rounds(0);
  progress.set_probes_in_flight(0);
  EXPECT_EQ(*eta.Left(progress, kT0 + absl::Seconds(35)), absl::ZeroDuration());
  EXPECT_EQ(FormatEta(absl::Seconds(125)), "~2m05s");
  EXPECT_EQ(FormatEta(absl::Seconds(7)), "~7s");
}

TEST(EtaTest, ThePriorOfEarlierJobsOfTheSameBenchmarkWeighsAsOneSpan) {
  // Two done jobs of the same benchmark (spans 10 s and 20 s, 30 s), one of another benchmark,
  // and one still running: the prior is the mean span of the first two, 20 s.
  v1::JobStatus same_a;
  same_a.set_job_id("a");
  same_a.set_state(v1::JOB_STATE_DONE);
  same_a.mutable_spec()->set_repository("/src/k");
  same_a.mutable_spec()->add_bench_command("./bench.sh");
  Add(&same_a, v1::PROBE_KIND_BISECT, 3, "w", v1::VERDICT_GOOD, {1}, 0, 10);
  Add(&same_a, v1::PROBE_KIND_BASELINE_GOOD, 0, "w", v1::VERDICT_UNSPECIFIED, {1}, 0, 99);
  v1::JobStatus same_b = same_a;
  same_b.set_job_id("b");
  same_b.mutable_probes()->Clear();
  Add(&same_b, v1::PROBE_KIND_BISECT, 3, "w", v1::VERDICT_GOOD, {1}, 0, 20);
  Add(&same_b, v1::PROBE_KIND_BISECT, 4, "w", v1::VERDICT_BAD, {1}, 20, 50);
  Add(&same_b, v1::PROBE_KIND_BISECT, 5, "w", v1::VERDICT_BAD, {1}, 50, 51)->set_cached(true);
  v1::JobStatus other = same_a;
  other.set_job_id("c");
  other.mutable_spec()->set_build_command("make");
  v1::JobStatus running = same_a;
  running.set_job_id("d");
  running.set_state(v1::JOB_STATE_BISECTING);
  running.mutable_probes()->Clear();
  EXPECT_TRUE(SameBenchmark(same_a.spec(), running.spec()));
  EXPECT_FALSE(SameBenchmark(other.spec(), running.spec()));
  std::optional<PastSpan> past = PastSpanOf(running, {same_a, same_b, other, running});
  ASSERT_TRUE(past.has_value());
  EXPECT_EQ(past->jobs, 2);
  EXPECT_EQ(past->spans, 3);
  EXPECT_EQ(past->mean, absl::Seconds(20));
  EXPECT_EQ(PastSpanOf(running, {same_a, same_b}, /*max_jobs=*/1)->jobs, 1);
  EXPECT_FALSE(PastSpanOf(running, {other}).has_value());
  // Before its first probe the job's estimate is rounds x the prior; its own spans then count.
  running.mutable_progress()->set_estimated_rounds(3);
  EXPECT_FALSE(EstimateTimeLeft(running, kT0).has_value());
  EXPECT_EQ(*EstimateTimeLeft(running, kT0, past->mean), absl::Seconds(60));
  Add(&running, v1::PROBE_KIND_BISECT, 7, "w", v1::VERDICT_GOOD, {1}, 0, 4);
  EXPECT_EQ(*EstimateTimeLeft(running, kT0, past->mean), absl::Seconds(36));  // 3 x (20+4)/2.
  // The live page says where its estimate came from.
  running.mutable_probes()->Clear();
  html::PageOptions options = Options(kT0, /*refresh_seconds=*/2);
  options.past = past;
  absl::StatusOr<std::string> page = html::RenderJobPage(running, options);
  ASSERT_TRUE(page.ok()) << page.status();
  EXPECT_THAT(*page, HasSubstr("<dd class=\"eta\">~1m00s <span class=\"muted eta-past\">(with 2 "
                               "earlier jobs of this benchmark)</span></dd>"));
}

TEST(MarkdownSummaryTest, NamesTheCulpritChangeCauseAndTabulatesTheProbes) {
  const std::string md = MarkdownSummary(FinishedJob());
  EXPECT_THAT(md, HasSubstr("### kbisect: culprit `"));
  EXPECT_THAT(md, HasSubstr("**Author:** Ada <ada@example.com>"));
  EXPECT_THAT(md, HasSubstr("latency 1ms → 1.5ms (50.0% worse), confirmed: ratio 1.5 (95% CI "
                            "1.45 to 1.55)"));
  EXPECT_THAT(md, HasSubstr("**Likely cause:** Changed tile sizes in `kernels/attention.py`"));
  // Four finished bisect probes, one row each.
  EXPECT_EQ(Count(md, "\n| 1"), 4);
  EXPECT_THAT(md, HasSubstr("| good (provisional) |"));
  EXPECT_THAT(md, HasSubstr("| bad (cached) |"));
}

TEST(MarkdownSummaryTest, AFixATryAndARevertCheckAreSaidAsSuch) {
  v1::JobStatus fix = FinishedJob();
  fix.mutable_spec()->set_find_fix(true);
  fix.set_culprit_regression_pct(-40);
  EXPECT_THAT(MarkdownSummary(fix), HasSubstr("### kbisect: fixed by `"));
  EXPECT_THAT(MarkdownSummary(fix), HasSubstr("(40.0% better)"));
  EXPECT_THAT(html::Headline(fix), ::testing::StartsWith("Fixed by: "));

  v1::JobStatus checked = FinishedJob();
  v1::RevertCheck& check = *checked.mutable_revert_check();
  check.set_state(v1::RevertCheck::STATE_DONE);
  check.set_culprit_sha("1234567abc");
  check.set_base_sha("89abcdef01");
  check.set_recovered_share(0.97);
  check.set_share_low(0.91);
  check.set_share_high(1.03);
  check.set_regression_pct(44);
  check.set_significant(true);
  EXPECT_THAT(MarkdownSummary(checked),
              HasSubstr("**Revert check:** Reverting 1234567 at BAD (89abcde) recovers 97.0% "
                        "(91.0%-103.0%) of the 44.0% regression"));

  v1::JobStatus tried = FinishedJob();
  tried.mutable_spec()->mutable_try_change()->set_description("revert of 1234567abc on 89abcdef01");
  tried.mutable_confirmation()->set_confirmed(false);
  tried.mutable_confirmation()->set_ratio(1.002);
  tried.set_status(v1::OUTCOME_NO_REGRESSION);
  const std::string md = MarkdownSummary(tried);
  EXPECT_THAT(md, HasSubstr("### kbisect: Try revert of 1234567abc on 89abcdef01: no significant "
                            "difference: x1.002"));
  EXPECT_THAT(md, ::testing::Not(HasSubstr("culprit `")));
}

TEST(ReproduceTest, QuotesWordsForTheShellAndNamesNonDefaultOptions) {
  v1::JobStatus job = FinishedJob();
  job.mutable_spec()->set_runs_per_commit(5);
  job.mutable_spec()->set_build_command("make -j8");
  (*job.mutable_spec()->mutable_env())["B"] = "2";
  (*job.mutable_spec()->mutable_env())["A"] = "1 2";
  EXPECT_EQ(ReproduceCommand(job),
            absl::StrCat("kbisect run ", std::string(40, '1'), " ", std::string(40, '2'),
                         " --repo '/src/my repo' --build 'make -j8' --runs 5 --env 'A=1 2' "
                         "--env B=2 -- ./bench.sh '--size=it'\\''s'"));
  // A given --runs 3 is kept: left out, the rerun could take one run a probe (decision 229).
  // The default's count, filled in by NormalizeSpec, is not printed.
  v1::JobStatus given = FinishedJob();
  given.mutable_spec()->set_runs_per_commit(3);
  EXPECT_THAT(ReproduceCommand(given), HasSubstr(" --runs 3 "));
  v1::JobStatus defaulted = FinishedJob();
  NormalizeSpec(defaulted.mutable_spec());
  EXPECT_TRUE(defaulted.spec().runs_defaulted());
  EXPECT_THAT(ReproduceCommand(defaulted), ::testing::Not(HasSubstr("--runs")));
  job.mutable_spec()->set_descend_submodules(true);
  v1::DependencyPin* pin = job.mutable_spec()->add_descend_pins();
  pin->set_file("cmake/llvm-hash.txt");
  pin->set_repository("https://github.com/llvm/llvm-project");
  EXPECT_THAT(ReproduceCommand(job),
              HasSubstr(" --descend-submodules --descend-pin "
                        "cmake/llvm-hash.txt=https://github.com/llvm/llvm-project "));
  // A dependency follow-up is reproduced by its superproject's step and the descent.
  v1::JobStatus dependency = FinishedJob();
  dependency.mutable_spec()->set_repository("https://github.com/llvm/llvm-project");
  v1::DependencyDescent* descent = dependency.mutable_spec()->mutable_dependency();
  descent->set_kind(v1::DEPENDENCY_KIND_PIN_FILE);
  descent->set_superproject("/src/triton");
  descent->set_superproject_sha(std::string(40, '7'));
  descent->set_path("cmake/llvm-hash.txt");
  EXPECT_THAT(ReproduceCommand(dependency),
              ::testing::StartsWith(
                  absl::StrCat("kbisect run '", std::string(40, '7'), "^' ", std::string(40, '7'),
                               " --repo /src/triton --descend-pin "
                               "cmake/llvm-hash.txt=https://github.com/llvm/llvm-project ")));
  descent->set_kind(v1::DEPENDENCY_KIND_SUBMODULE);
  EXPECT_THAT(ReproduceCommand(dependency), HasSubstr(" --repo /src/triton --descend-submodules "));
}

TEST(JobPageTest, TheDependencysCulpritHasASectionAndALine) {
  v1::JobStatus job = FinishedJob();
  v1::DependencyCulprit* found = job.add_dependency_culprits();
  found->set_kind(v1::DEPENDENCY_KIND_PIN_FILE);
  found->set_path("cmake/llvm-hash.txt");
  found->set_repository("https://github.com/llvm/llvm-project");
  found->set_old_sha("1111111111111111111111111111111111111111");
  found->set_new_sha("2222222222222222222222222222222222222222");
  found->set_job_id("job-7");
  found->mutable_commit()->set_sha("abcdef0123456789abcdef0123456789abcdef01");
  found->mutable_commit()->set_short_sha("abcdef0");
  found->mutable_commit()->set_subject("[NVPTX] Lower <2 x half> loads differently");
  absl::StatusOr<std::string> page = html::RenderJobPage(job, Options(kT0 + absl::Seconds(10)));
  ASSERT_TRUE(page.ok()) << page.status();
  EXPECT_THAT(*page, HasSubstr("Inside the dependency <span class=\"mono\">cmake/llvm-hash.txt"));
  EXPECT_THAT(*page, HasSubstr("1111111..2222222"));
  EXPECT_THAT(*page, HasSubstr("(job job-7)"));
  EXPECT_THAT(*page, HasSubstr("abcdef0123456789abcdef0123456789abcdef01"));
  EXPECT_THAT(*page, HasSubstr("[NVPTX] Lower &lt;2 x half&gt; loads differently"));
  EXPECT_THAT(*page, Not(HasSubstr("Dependency of")));
  const std::string md = MarkdownSummary(job);
  EXPECT_THAT(md, HasSubstr("**Inside the dependency `cmake/llvm-hash.txt`:** `abcdef0`"));
  // The follow-up's own page says where its commits were checked out.
  v1::JobStatus follow_up = FinishedJob();
  v1::DependencyDescent* descent = follow_up.mutable_spec()->mutable_dependency();
  descent->set_kind(v1::DEPENDENCY_KIND_SUBMODULE);
  descent->set_superproject("/src/triton");
  descent->set_superproject_sha(std::string(40, '7'));
  descent->set_path("third_party/cutlass");
  page = html::RenderJobPage(follow_up, Options(kT0 + absl::Seconds(10)));
  ASSERT_TRUE(page.ok()) << page.status();
  EXPECT_THAT(*page, HasSubstr("<dt>Dependency of</dt><dd>/src/triton at 7777777"));
  EXPECT_THAT(*page, HasSubstr(", submodule third_party/cutlass</dd>"));
  EXPECT_THAT(md, HasSubstr("`1111111`..`2222222`"));
}

TEST(ReproduceTest, RepeatsTheStopRuleOnlyWhereItIsNotTheDefault) {
  v1::JobStatus job = FinishedJob();
  // As the job ran it: its spec normalized (the confidence stop on, --max-runs' default 60).
  NormalizeSpec(job.mutable_spec());
  EXPECT_THAT(ReproduceCommand(job), Not(HasSubstr("--confidence")));
  EXPECT_THAT(ReproduceCommand(job), Not(HasSubstr("--max-runs")));

  v1::JobStatus off = FinishedJob();
  off.mutable_spec()->set_confidence_off(true);
  NormalizeSpec(off.mutable_spec());
  EXPECT_THAT(ReproduceCommand(off), HasSubstr(" --confidence off "));
  EXPECT_THAT(ReproduceCommand(off), Not(HasSubstr("--max-runs")));

  v1::JobStatus flaky = FinishedJob();
  flaky.mutable_spec()->mutable_metric()->set_kind(v1::METRIC_KIND_EXIT_CODE);
  flaky.mutable_spec()->set_flaky(true);
  flaky.mutable_spec()->set_confidence(0.9);
  NormalizeSpec(flaky.mutable_spec());
  EXPECT_THAT(ReproduceCommand(flaky), HasSubstr(" --exit-code --flaky --confidence 0.9 -- "));
}

TEST(JobListPageTest, LinksEveryJob) {
  v1::ListJobsResponse jobs;
  for (const char* id : {"job-a", "job-b"}) {
    v1::JobSummary* j = jobs.add_jobs();
    j->set_job_id(id);
    *j->mutable_create_time() = ToProto(kT0);
  }
  absl::StatusOr<std::string> page = html::RenderJobListPage(jobs, kT0 + absl::Minutes(5), 5);
  ASSERT_TRUE(page.ok()) << page.status();
  EXPECT_THAT(*page, HasSubstr("<a href=\"/jobs/job-a\">"));
  EXPECT_THAT(*page, HasSubstr("<a href=\"/jobs/job-b\">"));
  EXPECT_THAT(*page, HasSubstr("5m00s ago"));
}

}  // namespace
}  // namespace kbisect
