// Copyright 2026 The kbisect Authors.
//
// The HTML job pages of real finished jobs, checked in a real headless browser (Debian's
// chromium, installed by scripts/install-deps.sh; these checks skip, saying so, without it):
// `kbisect run --html` over generated repositories (a plain step, noise, a slow GPU that is
// quarantined, untestable commits, a merged branch, two steps), `kbisect status JOB --html`
// and the live /jobs pages of a running coordinator, fetched over HTTP with and without the
// bearer token. The browser's DOM must hold one mark per sample and the culprit's column, its
// console no error, and a screenshot must not be blank. Also `--markdown` and a loopback webhook
// receiving exactly one POST per finished job from `--notify-url`. And `kbisect triage --html`
// over triage's fixtures: one point per nightly of every plotted series, the change point
// explained marked on every chart (or the spike ringed), no console error.
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <iterator>
#include <memory>
#include <mutex>
#include <regex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "cli/report/status_json.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "nlohmann/json.hpp"
#include "report/html/sample_plot.h"
#include "tests/testing/git_fixture.h"
#include "tests/testing/process.h"

namespace kbisect {
namespace {

using ::kbisect::testing::Bin;
using ::kbisect::testing::CommandResult;
using ::kbisect::testing::Process;
using ::kbisect::testing::ReadFile;
using ::kbisect::testing::RunShell;
using ::kbisect::testing::ShellQuote;
using ::kbisect::testing::Trim;
using ::kbisect::testing::WaitFor;
using ::testing::HasSubstr;
using ::testing::Not;

int Count(const std::string& text, const std::string& needle) {
  int n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

bool HaveChromium() { return RunShell("command -v chromium >/dev/null").exit_code == 0; }

// What the browser made of a page: the DOM after the scripts ran, and its log (console
// messages and uncaught exceptions go there with --enable-logging=stderr).
struct Rendered {
  std::string dom;
  std::string log;
};

std::string ChromiumFlags(const std::string& profile) {
  return absl::StrCat("chromium --headless=new --no-sandbox --disable-gpu --no-first-run ",
                      "--disable-extensions --disable-background-networking --hide-scrollbars ",
                      "--enable-logging=stderr --v=0 --user-data-dir=", ShellQuote(profile), " ");
}

class JobPagesTest : public ::kbisect::testing::ClusterFixture {
 protected:
  void SetUp() override {
    if (!HaveChromium()) {
      GTEST_SKIP() << "chromium is not installed (scripts/install-deps.sh installs it); the "
                      "browser checks of the HTML pages are skipped";
    }
  }

  Rendered Render(const std::string& file) {
    const std::string log = tmp_.Join("chromium.log");
    CommandResult run =
        RunShell(absl::StrCat("timeout 60 ", ChromiumFlags(tmp_.Join("profile")),
                              "--dump-dom file://", ShellQuote(file), " 2>", ShellQuote(log)));
    EXPECT_EQ(run.exit_code, 0) << ReadFile(log);
    return {run.out, ReadFile(log)};
  }

  // Takes a 1000x1400 screenshot of `url`; returns the PNG's size in bytes.
  int64_t Screenshot(const std::string& url, const std::string& png) {
    CommandResult run = RunShell(
        absl::StrCat("timeout 60 ", ChromiumFlags(tmp_.Join("profile")), "--window-size=1000,1400 ",
                     "--screenshot=", ShellQuote(png), " ", ShellQuote(url), " 2>/dev/null"));
    EXPECT_EQ(run.exit_code, 0);
    struct stat st {};
    return stat(png.c_str(), &st) == 0 ? st.st_size : 0;
  }

  // `kbisect run v1.0 HEAD --repo REPO --workers W FLAGS --json --html -- BENCH`; returns the
  // job's status (empty after a failure was recorded).
  v1::JobStatus RunJob(const std::string& repo, int workers, const std::string& flags,
                       const std::string& bench, const std::string& name) {
    const std::string json = tmp_.Join(name + ".json");
    const std::string html = tmp_.Join(name + ".html");
    CommandResult run = RunShell(absl::StrCat(
        "cd ", ShellQuote(tmp_.path()), " && KBISECT_DEMO_SLEEP=0.01 KBISECT_CACHE_DIR=",
        ShellQuote(tmp_.Join("cache-" + name)), " ", Bin("kbisect"), " run v1.0 HEAD --repo ", repo,
        " --workers ", workers, " ", flags, " --json ", json, " --html ", html, " -- ", bench));
    EXPECT_EQ(run.exit_code, 0) << run.out << run.err;
    absl::StatusOr<v1::JobStatus> job = StatusFromJson(ReadFile(json));
    EXPECT_TRUE(job.ok()) << job.status();
    return job.ok() ? *job : v1::JobStatus();
  }

  // The browser checks every page gets: one mark per sample (and the script ran to its end,
  // which sets data-samples), the culprit's column, no console error. Returns the DOM.
  std::string ExpectGoodPage(const v1::JobStatus& job, const std::string& file) {
    const Rendered page = Render(file);
    const int samples = html::SampleMarkCount(job);
    EXPECT_GT(samples, 0);
    EXPECT_EQ(Count(page.dom, "class=\"sample "), samples);
    EXPECT_THAT(page.dom, HasSubstr(absl::StrCat("data-samples=\"", samples, "\"")));
    if (job.has_culprit()) {
      EXPECT_EQ(Count(page.dom,
                      absl::StrCat("<g class=\"col culprit\" data-index=\"", job.culprit().index(),
                                   "\" data-sha=\"", job.culprit().sha(), "\">")),
                1);
    }
    EXPECT_THAT(page.log, Not(HasSubstr("Uncaught")));
    EXPECT_THAT(page.log, Not(HasSubstr(":CONSOLE")));
    EXPECT_EQ(Count(page.dom, "<tr data-probe="), job.probes_size());
    return page.dom;
  }
};

TEST_F(JobPagesTest, TheConsoleCheckSeesAnErrorThatIsThere) {
  // The negative control for the console checks below.
  const std::string file = tmp_.Join("broken.html");
  ::kbisect::testing::WriteFile(file,
                                "<!DOCTYPE html><html><body><script>console.error('planted');"
                                "null.x();</script></body></html>");
  const Rendered page = Render(file);
  EXPECT_THAT(page.log, HasSubstr("planted"));
  EXPECT_THAT(page.log, HasSubstr("Uncaught"));
}

// A loopback webhook receiver: counts POSTs and keeps their bodies and Authorization headers.
class Webhook {
 public:
  explicit Webhook(int failures_first = 0) : failures_left_(failures_first) {
    server_.Post("/hook", [this](const httplib::Request& request, httplib::Response& response) {
      std::lock_guard<std::mutex> lock(mu_);
      bodies_.push_back(request.body);
      authorization_ += request.get_header_value("Authorization");
      if (failures_left_ > 0) {
        --failures_left_;
        response.status = 503;
      }
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ~Webhook() {
    server_.stop();
    thread_.join();
  }
  std::string url() const { return absl::StrCat("http://127.0.0.1:", port_, "/hook"); }
  std::vector<std::string> bodies() {
    std::lock_guard<std::mutex> lock(mu_);
    return bodies_;
  }
  std::string authorization() {
    std::lock_guard<std::mutex> lock(mu_);
    return authorization_;
  }

 private:
  httplib::Server server_;
  std::thread thread_;
  int port_ = 0;
  std::mutex mu_;
  std::vector<std::string> bodies_;
  std::string authorization_;
  int failures_left_;
};

TEST_F(JobPagesTest, RunWritesAPageMarkdownAndOneNotificationPerJob) {
  const std::string repo = tmp_.Join("repo");
  const std::string culprit = MakeRepo(repo, "--commits 60 --culprit 41");
  Webhook hook(/*failures_first=*/1);  // The first POST is answered 503: kbisect retries.
  const v1::JobStatus job = RunJob(
      repo, 3, absl::StrCat("--markdown ", tmp_.Join("plain.md"), " --notify-url ", hook.url()),
      "./bench.sh", "plain");
  ASSERT_EQ(job.culprit().sha(), culprit);
  const std::string dom = ExpectGoodPage(job, tmp_.Join("plain.html"));
  EXPECT_THAT(dom, HasSubstr("class=\"threshold\""));
  EXPECT_THAT(dom, HasSubstr("class=\"col last-good\""));
  EXPECT_THAT(dom, HasSubstr("Retune attention tiles"));
  EXPECT_THAT(dom, HasSubstr("class=\"timeline\""));
  EXPECT_THAT(dom, HasSubstr(absl::StrCat("kbisect run ", job.good_sha(), " ", job.bad_sha())));
  // The webhook: one job, one delivered POST (after one retry), the JSON result, no token.
  const std::vector<std::string> bodies = hook.bodies();
  ASSERT_EQ(bodies.size(), 2u);
  EXPECT_EQ(bodies[0], bodies[1]);
  EXPECT_EQ(nlohmann::json::parse(bodies[1])["culprit"]["sha"], culprit);
  EXPECT_EQ(hook.authorization(), "");
  // The Markdown summary.
  const std::string md = ReadFile(tmp_.Join("plain.md"));
  EXPECT_THAT(md, HasSubstr(absl::StrCat("### kbisect: culprit `", culprit.substr(0, 7), "`")));
  EXPECT_THAT(md, HasSubstr("**Likely cause:** Changed tile sizes"));
  EXPECT_THAT(md, HasSubstr("| # | commit | worker | round | median | runs | verdict |"));
  // A screenshot is not blank: a page of marks compresses far worse than an empty page.
  const int64_t blank = Screenshot("about:blank", tmp_.Join("blank.png"));
  const int64_t shot = Screenshot("file://" + tmp_.Join("plain.html"), tmp_.Join("plain.png"));
  EXPECT_GT(blank, 0);
  EXPECT_GT(shot, 10 * blank) << "blank " << blank << " bytes, page " << shot << " bytes";
  if (const char* out = std::getenv("KBISECT_SCREENSHOT_OUT"); out != nullptr) {
    RunShell(absl::StrCat("cp ", tmp_.Join("plain.png"), " ", ShellQuote(out)));
  }
}

TEST_F(JobPagesTest, PagesOfNoisySlowGpuSkippedMergedAndTwoStepJobs) {
  {
    SCOPED_TRACE("noisy");
    const std::string repo = tmp_.Join("noisy");
    MakeRepo(repo, "--commits 40 --culprit 27 --slowdown 1.12 --noise 0.05");
    ExpectGoodPage(RunJob(repo, 2, "", "./bench.sh", "noisy"), tmp_.Join("noisy.html"));
  }
  {
    SCOPED_TRACE("slow GPU");
    const std::string repo = tmp_.Join("slow");
    MakeRepo(repo, "--commits 60 --culprit 41");
    const v1::JobStatus job =
        RunJob(repo, 3, "", "env KBISECT_DEMO_SLOW_SLOT=1 ./bench.sh", "slow");
    const std::string dom = ExpectGoodPage(job, tmp_.Join("slow.html"));
    int quarantined_samples = 0;
    for (const v1::Probe& p : job.probes()) {
      if (absl::StrContains(p.worker(), "slot1")) quarantined_samples += p.samples_size();
    }
    EXPECT_GT(quarantined_samples, 0);
    const std::regex mark("class=\"sample [^\"]*quarantined\"");
    EXPECT_EQ(
        std::distance(std::sregex_iterator(dom.begin(), dom.end(), mark), std::sregex_iterator()),
        quarantined_samples);
    EXPECT_THAT(dom, HasSubstr("<span class=\"badge bad\">quarantined</span>"));
  }
  {
    SCOPED_TRACE("untestable commits");
    const std::string repo = tmp_.Join("broken");
    MakeRepo(repo, "--commits 60 --culprit 41");
    const v1::JobStatus job = RunJob(
        repo, 3, "--build 'test $KBISECT_COMMIT_INDEX -lt 39 -o $KBISECT_COMMIT_INDEX -gt 42'",
        "./bench.sh", "broken");
    EXPECT_EQ(job.status(), v1::OUTCOME_CANDIDATES_FOUND);
    const std::string dom = ExpectGoodPage(job, tmp_.Join("broken.html"));
    EXPECT_THAT(dom, HasSubstr("<section id=\"candidates\">"));
    EXPECT_THAT(dom, HasSubstr(">skip<"));
  }
  {
    SCOPED_TRACE("merged branch");
    const std::string repo = tmp_.Join("merge");
    MakeRepo(repo, "--commits 80 --files 20 --merge-branch 50:12:5");
    const v1::JobStatus job = RunJob(repo, 3, "--descend-merges", "./bench.sh", "merge");
    ASSERT_TRUE(job.has_merged_culprit());
    const std::string dom = ExpectGoodPage(job, tmp_.Join("merge.html"));
    EXPECT_THAT(dom, HasSubstr("Inside the merged branch"));
    EXPECT_THAT(dom, HasSubstr(job.merged_culprit().sha()));
  }
  {
    SCOPED_TRACE("two steps");
    const std::string repo = tmp_.Join("steps");
    MakeRepo(repo, "--commits 120 --culprit 40 --second-step 85:1.2 --slowdown 1.3 --noise 0.002");
    const v1::JobStatus job = RunJob(repo, 3, "--all-culprits", "./bench.sh", "steps");
    const std::string dom = ExpectGoodPage(job, tmp_.Join("steps.html"));
    ASSERT_GE(job.culprits_size(), 2);
    EXPECT_THAT(dom, HasSubstr("Every step, largest first"));
    EXPECT_EQ(Count(dom, "<table class=\"steps\">"), 1);
  }
}

// The coordinator's live pages over HTTP (loopback, plain HTTP) and `kbisect status JOB --html`.
TEST_F(JobPagesTest, TheCoordinatorServesLivePagesAndStatusWritesOne) {
  const std::string repo = tmp_.Join("repo");
  const std::string culprit = MakeRepo(repo, "--commits 40 --culprit 23");
  std::unique_ptr<Process> coordinator = StartCoordinator("--metrics-listen 127.0.0.1:0");
  int port = 0;
  const std::string marker = "metrics on http://127.0.0.1:";
  ASSERT_TRUE(WaitFor(
      [&] {
        const std::string log = coordinator->log();
        const size_t at = log.find(marker);
        return at != std::string::npos &&
               absl::SimpleAtoi(log.substr(at + marker.size(),
                                           log.find('/', at + marker.size()) - at - marker.size()),
                                &port);
      },
      std::chrono::seconds(15)))
      << coordinator->log();
  std::unique_ptr<Process> w0 = StartWorker("w0", 0, "0.2");
  std::unique_ptr<Process> w1 = StartWorker("w1", 1, "0.2");
  CommandResult submitted =
      Kbisect(absl::StrCat("submit v1.0 HEAD --repo ", repo, " -- ./bench.sh"));
  ASSERT_EQ(submitted.exit_code, 0) << submitted.err;
  const std::string job_id = Trim(submitted.out);
  httplib::Client http("127.0.0.1", port);
  // While it runs: the page reloads itself and shows what is known so far.
  bool saw_running = false;
  ASSERT_TRUE(WaitFor(
      [&] {
        httplib::Result page = http.Get(absl::StrCat("/jobs/", job_id));
        if (!page || page->status != 200) return false;
        EXPECT_EQ(page->get_header_value("Content-Type"), "text/html; charset=utf-8");
        if (absl::StrContains(page->body, "http-equiv=\"refresh\"")) saw_running = true;
        return absl::StrContains(page->body, "class=\"headline outcome-culprit_found\"");
      },
      std::chrono::seconds(120)));
  EXPECT_TRUE(saw_running) << "the page was fetched while the job ran";
  httplib::Result list = http.Get("/jobs");
  ASSERT_TRUE(list);
  EXPECT_EQ(list->status, 200);
  EXPECT_THAT(list->body, HasSubstr(absl::StrCat("<a href=\"/jobs/", job_id, "\">")));
  httplib::Result missing = http.Get("/jobs/no-such-job");
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404);

  // The list: a finished job has no commits left ("-") and an age; --wide the time with a zone.
  CommandResult listed = Kbisect("status");
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  EXPECT_THAT(listed.out, ::testing::ContainsRegex(absl::StrCat(
                              job_id, " +done +culprit_found +- +[0-9a-f]{12} +[0-9]+s ago ")));
  EXPECT_THAT(Kbisect("status --wide").out,
              ::testing::ContainsRegex("20[0-9-]+T[0-9:]+[+-][0-9]{2}:[0-9]{2} "));

  // kbisect status JOB --html writes the same page of the finished job; a browser shows it.
  const std::string file = tmp_.Join("status.html");
  CommandResult status = Kbisect(absl::StrCat("status ", job_id, " --html ", file, " --json"));
  ASSERT_EQ(status.exit_code, 0) << status.err;
  absl::StatusOr<v1::JobStatus> job = StatusFromJson(status.out);
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(job->culprit().sha(), culprit);
  ExpectGoodPage(*job, file);
  // The live page in the browser, over HTTP.
  const std::string live = tmp_.Join("live.html");
  httplib::Result page = http.Get(absl::StrCat("/jobs/", job_id));
  ASSERT_TRUE(page);
  ::kbisect::testing::WriteFile(live, page->body);
  ExpectGoodPage(*job, live);

  // A second job of the same benchmark: its page has an ETA from the first job's spans before
  // its own first probe has finished; how far off it was is printed (docs/benchmarks.md, "ETA").
  // --no-cache: it measures every commit again rather than reusing the first job's samples.
  const auto submitted_at = std::chrono::steady_clock::now();
  submitted = Kbisect(absl::StrCat("submit v1.0 HEAD --repo ", repo, " --no-cache -- ./bench.sh"));
  ASSERT_EQ(submitted.exit_code, 0) << submitted.err;
  const std::string second = Trim(submitted.out);
  const std::regex eta(
      "<dd class=\"eta\">~([0-9]+)s <span class=\"muted eta-past\">\\(with 1 "
      "earlier job of this benchmark\\)</span>");
  std::vector<std::pair<double, int>> estimates;  // (seconds since submit, estimate in s)
  bool done = false;
  ASSERT_TRUE(WaitFor(
      [&] {
        httplib::Result p = http.Get(absl::StrCat("/jobs/", second));
        if (!p || p->status != 200) return false;
        std::smatch m;
        const std::string body = p->body;
        if (std::regex_search(body, m, eta)) {
          estimates.emplace_back(
              std::chrono::duration<double>(std::chrono::steady_clock::now() - submitted_at)
                  .count(),
              std::stoi(m[1].str()));
        }
        done = absl::StrContains(body, "class=\"headline outcome-culprit_found\"");
        return done;
      },
      std::chrono::seconds(120)));
  const double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - submitted_at).count();
  ASSERT_FALSE(estimates.empty()) << "no ETA from the earlier job was shown";
  double total_error = 0, worst = 0;
  for (const auto& [at, left] : estimates) {
    const double error = std::fabs(left - (took - at));
    total_error += error;
    worst = std::max(worst, error);
  }
  std::cout << "ETA with the prior of 1 earlier job: " << estimates.size() << " estimates over "
            << took << " s, first ~" << estimates.front().second << "s at "
            << estimates.front().first << " s, mean absolute error "
            << total_error / estimates.size() << " s, worst " << worst << " s\n";
  // The first estimate comes before the job's own spans could give one, and is the right size.
  EXPECT_LT(estimates.front().first, took / 2);
  EXPECT_LT(worst, std::max(5.0, took));
}

// `kbisect run --serve ADDR`: it prints the page's URL, and /jobs and the job's page answer over
// HTTP while the job runs (the page reloading itself) and once it is done. No browser needed.
class ServeTest : public ::kbisect::testing::ClusterFixture {};

TEST_F(ServeTest, RunServesTheLivePageWhileItRuns) {
  const std::string repo = tmp_.Join("repo");
  const std::string culprit = MakeRepo(repo, "--commits 40 --culprit 23");
  ::kbisect::testing::WriteFile(tmp_.Join("run.log"), "");  // Readable before the shell opens it.
  Process run(
      absl::StrCat("env KBISECT_DEMO_SLEEP=0.3 KBISECT_CACHE_DIR=", ShellQuote(tmp_.Join("cache")),
                   " ", Bin("kbisect"), " run v1.0 HEAD --repo ", repo,
                   " --workers 2 --serve 127.0.0.1:0 --json ", tmp_.Join("serve.json"),
                   " -- ./bench.sh"),
      tmp_.Join("run.log"));
  const std::regex printed("Job page: http://127\\.0\\.0\\.1:([0-9]+)(/jobs/([^\\s]+))\n");
  std::smatch url;
  std::string log;
  ASSERT_TRUE(WaitFor(
      [&] {
        log = run.log();
        return std::regex_search(log, url, printed);
      },
      std::chrono::seconds(60)))
      << log;
  int port = 0;
  ASSERT_TRUE(absl::SimpleAtoi(url[1].str(), &port));
  const std::string path = url[2].str();
  const std::string job_id = url[3].str();
  httplib::Client http("127.0.0.1", port);
  // While it runs: the list links the job and the page reloads itself.
  httplib::Result list = http.Get("/jobs");
  ASSERT_TRUE(list);
  EXPECT_EQ(list->status, 200);
  EXPECT_THAT(list->body, HasSubstr(absl::StrCat("<a href=\"/jobs/", job_id, "\">")));
  httplib::Result page = http.Get(path);
  ASSERT_TRUE(page);
  EXPECT_EQ(page->status, 200);
  EXPECT_EQ(page->get_header_value("Content-Type"), "text/html; charset=utf-8");
  EXPECT_THAT(page->body, HasSubstr(absl::StrCat("<h1>kbisect job ", job_id, "</h1>")));
  EXPECT_TRUE(run.running()) << "the job ended before its page was fetched: " << run.log();
  EXPECT_THAT(page->body, HasSubstr("http-equiv=\"refresh\""));
  EXPECT_EQ(http.Get("/jobs/no-such-job")->status, 404);
  // The run ends by itself with its culprit, and stops serving.
  EXPECT_EQ(run.Wait(std::chrono::seconds(240)), 0) << run.log();
  const nlohmann::json result = nlohmann::json::parse(ReadFile(tmp_.Join("serve.json")));
  EXPECT_EQ(result["culprit"]["sha"], culprit);
  EXPECT_FALSE(httplib::Client("127.0.0.1", port).Get("/jobs"));
}

// `kbisect triage --html` over triage's own fixtures, one of each cause and shape.
TEST_F(JobPagesTest, TriagePagesOfTheFixtures) {
  struct Case {
    std::string file, platform, kernel, date, cause;
  };
  const std::vector<Case> cases = {
      {"helion-dashboard-sample.json", "b200_cute", "layer_norm", "2026-09-22", "real_regression"},
      {"hardware_shared.json", "h100", "softmax", "", "hardware_issue"},
      {"method_change.json", "b200", "matmul", "", "benchmark_method_change"},
      {"noise_spike.json", "b200", "softmax", "", "noise"},
      {"pretuned.json", "b200", "all", "", "benchmark_method_change"},
      {"drift.json", "", "", "", ""},
      {"generic_runner.csv", "", "", "", ""},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.file);
    const std::string name = c.file.substr(0, c.file.find('.'));
    const std::string json = tmp_.Join(name + ".json");
    const std::string html = tmp_.Join(name + ".html");
    CommandResult run = RunShell(absl::StrCat(
        Bin("kbisect"), " triage --dashboard ",
        ShellQuote(absl::StrCat(KBISECT_TRIAGE_FIXTURES, "/", c.file)),
        c.platform.empty() ? "" : " --platform " + c.platform,
        c.kernel.empty() ? "" : " --kernel " + c.kernel, c.date.empty() ? "" : " --date " + c.date,
        " -q --json ", json, " --html ", html));
    ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
    const nlohmann::json j = nlohmann::json::parse(ReadFile(json));
    if (!c.cause.empty()) {
      EXPECT_EQ(j["cause"], c.cause);
    }
    const Rendered page = Render(html);
    EXPECT_THAT(page.log, Not(HasSubstr("Uncaught")));
    EXPECT_THAT(page.log, Not(HasSubstr(":CONSOLE")));
    // One point per analysed nightly in the primary chart; the script counted every point.
    const int nightlies = j["nightlies"]["count"].get<int>();
    EXPECT_GT(nightlies, 0);
    EXPECT_EQ(Count(page.dom, "class=\"point role-primary"), nightlies);
    EXPECT_THAT(page.dom, HasSubstr(absl::StrCat("data-points=\"",
                                                 Count(page.dom, "<circle class=\"point "), "\"")));
    const int charts = Count(page.dom, "<svg class=\"series-chart\"");
    EXPECT_GE(charts, 1);
    // Every chart has as many points as its metric has values: at most one per nightly.
    EXPECT_LE(Count(page.dom, "class=\"point role-"), charts * nightlies);
    EXPECT_EQ(Count(page.dom, "<tr data-nightly="), nightlies);
    EXPECT_THAT(page.dom, HasSubstr(absl::StrCat("class=\"headline outcome-",
                                                 j["cause"].get<std::string>(), "\"")));
    const std::string shape = j["shape"];
    if (shape == "step" || shape == "drift") {
      // The change point explained, on every chart, at the last-good / first-bad nightlies.
      EXPECT_EQ(Count(page.dom, absl::StrCat("<g class=\"change-point focus\" data-index=\"")),
                charts);
      EXPECT_EQ(Count(page.dom,
                      absl::StrCat("data-last-good=\"", j["last_good"]["date"].get<std::string>(),
                                   "\" data-first-bad=\"",
                                   j["first_bad"]["date"].get<std::string>(), "\"")),
                charts);
      EXPECT_EQ(Count(page.dom, "last-good\" cx="), 1);
      EXPECT_EQ(Count(page.dom, "first-bad\" cx="), 1);
    }
    if (shape == "spike") {
      EXPECT_GE(Count(page.dom, " spike\" cx="), 1);
    }
    // Every change point the detector found is drawn on the primary chart.
    EXPECT_GE(Count(page.dom, "<g class=\"change-point"),
              static_cast<int>(j["change_points"].size()));
  }
  // The Helion sample charts the speedups of Helion and both baselines and the latency.
  const std::string dom = Render(tmp_.Join("helion-dashboard-sample.html")).dom;
  for (const char* metric : {"helion_speedup_geomean", "triton_speedup_geomean",
                             "torch_compile_speedup_geomean", "helion_latency_avg_ms"}) {
    EXPECT_THAT(dom, HasSubstr(absl::StrCat("data-metric=\"", metric, "\"")));
  }
  const int64_t blank = Screenshot("about:blank", tmp_.Join("blank.png"));
  const int64_t shot =
      Screenshot("file://" + tmp_.Join("helion-dashboard-sample.html"), tmp_.Join("triage.png"));
  EXPECT_GT(shot, 10 * blank) << "blank " << blank << " bytes, page " << shot << " bytes";
  if (const char* out = std::getenv("KBISECT_TRIAGE_SCREENSHOT_OUT"); out != nullptr) {
    RunShell(absl::StrCat("cp ", tmp_.Join("triage.png"), " ", ShellQuote(out)));
  }
}

}  // namespace
}  // namespace kbisect
