// Copyright 2026 The kbisect Authors.
//
// `kbisect nightly` end to end: 14 simulated nights of a real git repository against the real
// `kbisect-coordinator` and two real `kbisect-worker`s on loopback. Night 4 changes only the
// benchmark harness (benchmarks/harness.cfg: the timer now includes launch overhead, +15%);
// night 9 makes the kernel 30% slower (src/kernel.cfg, the middle of its three commits). Exactly
// one bisect is submitted, for night 9's window, and finds that commit; night 4 is reported as a
// method change naming the harness file; reruns of a night submit nothing new.
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "nlohmann/json.hpp"
#include "tests/testing/git_fixture.h"
#include "tests/testing/process.h"

namespace kbisect {
namespace {

using ::kbisect::testing::CommandResult;
using ::kbisect::testing::Process;
using ::kbisect::testing::ReadFile;
using ::kbisect::testing::RunShell;
using ::kbisect::testing::Trim;
using ::kbisect::testing::WaitFor;
using ::testing::HasSubstr;

constexpr int kNights = 14;
constexpr int kHarnessNight = 4;
constexpr int kRegressionNight = 9;

class NightlyTest : public ::kbisect::testing::ClusterFixture {
 protected:
  // Makes the repository: three commits a night; returns each night's last commit (index 1..14)
  // and sets culprit_.
  std::vector<std::string> MakeNights(const std::string& repo) {
    RunShell(absl::StrCat("mkdir -p ", repo, "/src ", repo, "/benchmarks"));
    std::ofstream(repo + "/bench.sh")
        << "#!/bin/sh\n"
           "b=$(cat src/kernel.cfg); s=$(cat benchmarks/harness.cfg)\n"
           "awk -v b=\"$b\" -v s=\"$s\" -v n=\"${NIGHT_NOISE:-0}\" "
           "'BEGIN { printf \"Latency: %.4f ms\\n\", b * s * (1 + n) }'\n";
    std::string script = absl::StrCat(
        "set -e; cd ", repo,
        "; git init -q -b main; git config user.email n@example.com; git config user.name N; "
        "echo 10.0 > src/kernel.cfg; echo 1.00 > benchmarks/harness.cfg; "
        "echo 0 > src/other.c; echo harness > benchmarks/README; chmod +x bench.sh; "
        "git add -A; git commit -q -m initial; git tag night0\n");
    for (int night = 1; night <= kNights; ++night) {
      for (int c = 0; c < 3; ++c) {
        std::string change;
        if (night == kHarnessNight) {
          change = c == 1 ? "echo 1.15 > benchmarks/harness.cfg"
                          : absl::StrCat("echo note", c, " >> benchmarks/README");
        } else if (night == kRegressionNight && c == 1) {
          change = "echo 13.0 > src/kernel.cfg";
        } else {
          change = absl::StrCat("echo ", night * 10 + c, " > src/other.c");
        }
        absl::StrAppend(&script, change, "; git commit -q -am 'night ", night, " change ", c,
                        "'\n");
        if (night == kRegressionNight && c == 1) {
          absl::StrAppend(&script, "git rev-parse HEAD > ../culprit\n");
        }
      }
      absl::StrAppend(&script, "git tag night", night, "\n");
    }
    CommandResult made = RunShell(script);
    EXPECT_EQ(made.exit_code, 0) << made.err;
    culprit_ = Trim(ReadFile(tmp_.Join("culprit")));
    std::vector<std::string> shas(kNights + 1);
    for (int night = 0; night <= kNights; ++night) {
      shas[night] = Trim(RunShell(absl::StrCat("git -C ", repo, " rev-parse night", night)).out);
    }
    return shas;
  }

  // Runs night `night` as a CI job would: check the night's commit out, run `kbisect nightly`.
  CommandResult Night(int night, const std::string& sha, const std::string& history) {
    // A little deterministic scatter, as real nightlies have (+-0.4%).
    const double noise = ((night * 7919) % 9 - 4) * 0.001;
    RunShell(absl::StrCat("git -C ", tmp_.Join("ci"), " checkout -q ", sha));
    return RunShell(absl::StrFormat(
        "cd %s && NIGHT_NOISE=%.3f KBISECT_COORDINATOR=%s %s nightly --history %s --benchmark "
        "attention --hardware-class ci-gpu --sha %s --repo %s --repo-url %s --date 2026-11-%02d "
        "--run-id %d --runs 1 --pin-harness --json %s --notify-url %s -- ./bench.sh",
        tmp_.path(), noise, address_, ::kbisect::testing::Bin("kbisect"), history, sha,
        tmp_.Join("ci"), tmp_.Join("repo"), night, 1000 + night,
        tmp_.Join(absl::StrCat("night-", night, ".json")), hook_));
  }

  std::string culprit_;
  std::string hook_ = "http://127.0.0.1:9/unused";
};

TEST_F(NightlyTest, FourteenNightsOneBisectAndAMethodChangeNamedByTheManifest) {
  const std::vector<std::string> shas = MakeNights(tmp_.Join("repo"));
  ASSERT_EQ(culprit_.size(), 40u);
  ASSERT_EQ(
      RunShell(absl::StrCat("git clone -q ", tmp_.Join("repo"), " ", tmp_.Join("ci"))).exit_code,
      0);
  std::unique_ptr<Process> coordinator = StartCoordinator();
  std::unique_ptr<Process> w0 = StartWorker("gpu0", 0);
  std::unique_ptr<Process> w1 = StartWorker("gpu1", 1);
  ASSERT_TRUE(WaitFor([&] { return LiveWorkers() == 2; }, std::chrono::seconds(15)))
      << w0->log() << w1->log();

  // A webhook on loopback: the bisect's end is posted there with the triage evidence.
  httplib::Server hook;
  std::mutex posted_mu;
  std::vector<std::string> posted;
  hook.Post("/hook", [&](const httplib::Request& request, httplib::Response& response) {
    std::lock_guard<std::mutex> lock(posted_mu);
    posted.push_back(request.body);
    response.status = 204;
  });
  const int port = hook.bind_to_any_port("127.0.0.1");
  ASSERT_GT(port, 0);
  std::thread hook_thread([&] { hook.listen_after_bind(); });
  hook_ = absl::StrCat("http://127.0.0.1:", port, "/hook");

  const std::string history = tmp_.Join("nightly.jsonl");
  std::map<int, CommandResult> nights;
  int submitted = 0;
  std::string job_id;
  for (int night = 1; night <= kNights; ++night) {
    nights[night] = Night(night, shas[night], history);
    const CommandResult& r = nights[night];
    SCOPED_TRACE(
        absl::StrCat("night ", night, ":\n", r.out, r.err, "\nhistory:\n", ReadFile(history)));
    // Nothing, a method change or a real regression: no night is noise or an error.
    ASSERT_THAT(r.exit_code, ::testing::AnyOf(0, 3, 4)) << coordinator->log();
    if (absl::StrContains(r.out, "Submitted: job ")) {
      ++submitted;
      job_id = Trim(r.out.substr(r.out.find("Submitted: job ") + 15, 36));
      job_id = job_id.substr(0, job_id.find(' '));
      // The window is night 8's commit .. night 9's.
      EXPECT_THAT(r.out,
                  HasSubstr(absl::StrCat("Window: ", shas[kRegressionNight - 1].substr(0, 12))));
      EXPECT_THAT(r.out, HasSubstr(shas[kRegressionNight].substr(0, 12)));
      EXPECT_EQ(r.exit_code, 3);
    }
    if (night < kRegressionNight) {
      EXPECT_NE(r.exit_code, 3);
    }
  }
  EXPECT_EQ(submitted, 1);
  ASSERT_FALSE(job_id.empty());

  // Night 4 was reported as a method change naming the harness file, on the nights that saw it
  // as the latest move; no night blamed it on the code.
  int method_nights = 0;
  for (int night = kHarnessNight; night < kRegressionNight + 2; ++night) {
    const CommandResult& r = nights[night];
    if (r.exit_code != 4) continue;
    ++method_nights;
    EXPECT_THAT(r.out, HasSubstr("benchmark_method_change")) << r.out;
    EXPECT_THAT(r.out, HasSubstr("benchmarks/harness.cfg changed")) << r.out;
    EXPECT_THAT(r.out, HasSubstr("2026-11-03")) << r.out;  // last good: night 3.
    // Under one harness the kernel did not move: the step is the method's.
    EXPECT_THAT(r.out, HasSubstr("the kernel changed by +0.0%")) << r.out;
    nlohmann::json decision =
        nlohmann::json::parse(ReadFile(tmp_.Join(absl::StrCat("night-", night, ".json"))));
    EXPECT_EQ(decision["action"], "method_change");
    EXPECT_EQ(decision["exit_code"], 4);
    EXPECT_EQ(decision["first_bad"]["full_sha"], shas[kHarnessNight]);
    bool named = false;
    for (const auto& c : decision["manifest_changes"]) {
      named |= c["name"] == "benchmarks/harness.cfg" && c["kind"] == "harness_file";
    }
    EXPECT_TRUE(named) << decision.dump(2);
    EXPECT_NEAR(decision["pinned_harness"]["relative_change"].get<double>(), 0, 1e-9);
  }
  EXPECT_GE(method_nights, 3);  // Nights 6..11: reported from the third night after it on.
  // Every night after the submission knows the step is being bisected.
  for (int night = kRegressionNight; night <= kNights; ++night) {
    if (nights[night].exit_code == 3 && !absl::StrContains(nights[night].out, "Submitted: job ")) {
      EXPECT_THAT(nights[night].out, HasSubstr(absl::StrCat("already bisected: job ", job_id)));
    }
  }

  // A rerun of the last night: replaces its result, submits nothing.
  CommandResult rerun = Night(kNights, shas[kNights], history);
  EXPECT_EQ(rerun.exit_code, 3) << rerun.out << rerun.err;
  EXPECT_THAT(rerun.out, HasSubstr("a rerun"));
  EXPECT_THAT(rerun.out, HasSubstr("already bisected"));
  int lines = 0;
  for (absl::string_view line : absl::StrSplit(ReadFile(history), '\n')) {
    lines += absl::StrContains(line, "\"kind\":\"nightly\"") ? 1 : 0;
  }
  EXPECT_EQ(lines, kNights);
  // Even with the history's bisect record lost, the request id dedups at the coordinator.
  RunShell(absl::StrCat("grep -v '\"kind\":\"bisect\"' ", history, " > ", history, ".lost && mv ",
                        history, ".lost ", history));
  CommandResult lost = Night(kNights, shas[kNights], history);
  EXPECT_EQ(lost.exit_code, 3) << lost.out << lost.err;
  EXPECT_THAT(lost.out, HasSubstr(absl::StrCat("Already submitted: job ", job_id)));
  // One bisect, and its revert check (nightly submissions --verify-revert): a follow-up job.
  nlohmann::json jobs = Json("status --json");
  ASSERT_EQ(jobs["jobs"].size(), 2u) << jobs.dump(2);
  const nlohmann::json& other =
      jobs["jobs"][0]["job_id"] == job_id ? jobs["jobs"][1] : jobs["jobs"][0];

  // The submitting night followed the bisect to its end and posted it once, with the evidence.
  hook.stop();
  hook_thread.join();
  ASSERT_EQ(posted.size(), 1u);
  nlohmann::json notified = nlohmann::json::parse(posted[0]);
  EXPECT_EQ(notified["culprit"]["sha"], culprit_);
  EXPECT_THAT(notified["spec"]["origin"]["trigger"].get<std::string>(),
              HasSubstr("real_regression"));
  EXPECT_THAT(notified["spec"]["origin"]["trigger"].get<std::string>(),
              HasSubstr("between the nightlies of 2026-11-08 and 2026-11-09"));

  // The bisect finds night 9's middle commit.
  CommandResult watched = Kbisect(absl::StrCat("watch ", job_id, " -q"));
  EXPECT_EQ(watched.exit_code, 0) << watched.out << watched.err << coordinator->log();
  nlohmann::json job = Json(absl::StrCat("status ", job_id, " --json"));
  EXPECT_EQ(job["status"], "culprit_found") << job.dump(2);
  EXPECT_EQ(job["culprit"]["sha"], culprit_);
  EXPECT_EQ(job["spec"]["origin"]["kind"], "nightly");
  EXPECT_EQ(job["good_sha"], shas[kRegressionNight - 1]);
  EXPECT_EQ(job["bad_sha"], shas[kRegressionNight]);
  // The culprit reverted at BAD brings the speed back: the other job measured it.
  EXPECT_EQ(job["revert_check"]["state"], "done") << job["revert_check"].dump(2);
  EXPECT_EQ(job["revert_check"]["job_id"], other["job_id"]);
  EXPECT_EQ(other["good"], shas[kRegressionNight]);
  EXPECT_GT(job["revert_check"]["recovered_share"].get<double>(), 0.7);
}

// A suite's nightly (--suite): 16 nights of scripts/make-suite-repo.sh's 20 kernels, four commits
// a night (kernel 9's step is 30% here). Each kernel is its own series; each step is submitted
// once, as one suite job for the kernels that moved at it, and each job names their culprit.
TEST_F(NightlyTest, ASuitesKernelsAreTriagedOneByOneAndEachStepBisectedOnce) {
  const std::string repo = tmp_.Join("repo");
  CommandResult made = RunShell(absl::StrCat(
      ::kbisect::testing::Env("KBISECT_SOURCE_DIR"), "/scripts/make-suite-repo.sh ", repo,
      // The script's steps, each large against the 0.1% noise. A fourth job here was a wrong
      // answer, not chance: a step two nights old was placed a night early (the 3-nightly
      // minimum segment pushed the split onto the last old-level point), submitted, and
      // submitted again the next night (8 of 41 noise seeds; ChangePointTest's
      // AStepWithTwoPointsOnOneSideIsNotPlacedANightEarly). The noise is drawn from a fixed seed
      // and each night's commit (KBISECT_SUITE_NOISE_SEED).
      " --commits 60 --noise 0.001", " --steps 18:0-6:1.25,33:7-8:1.4,48:9-9:1.3,24:10-10:0.8"));
  ASSERT_EQ(made.exit_code, 0) << made.err;
  std::map<std::string, std::string> expected;
  for (absl::string_view line : absl::StrSplit(made.out, '\n', absl::SkipEmpty())) {
    std::vector<std::string> parts = absl::StrSplit(line, '=');
    expected[parts[0]] = parts[1];
  }
  const std::vector<std::string> commits = absl::StrSplit(
      Trim(RunShell(absl::StrCat("git -C ", repo, " rev-list --first-parent --reverse HEAD")).out),
      '\n');
  ASSERT_EQ(commits.size(), 61u);
  ASSERT_EQ(RunShell(absl::StrCat("git clone -q ", repo, " ", tmp_.Join("ci"))).exit_code, 0);
  std::unique_ptr<Process> coordinator = StartCoordinator();
  std::unique_ptr<Process> w0 = StartWorker("gpu0", 0);
  std::unique_ptr<Process> w1 = StartWorker("gpu1", 1);
  ASSERT_TRUE(WaitFor([&] { return LiveWorkers() == 2; }, std::chrono::seconds(15)))
      << w0->log() << w1->log();

  const std::string history = tmp_.Join("suite.jsonl");
  std::vector<std::string> jobs;
  for (int night = 0; night <= 15; ++night) {
    const std::string& sha = commits[4 * night];
    RunShell(absl::StrCat("git -C ", tmp_.Join("ci"), " checkout -q ", sha));
    CommandResult r = RunShell(absl::StrFormat(
        "cd %s && KBISECT_SUITE_NOISE_SEED=7 KBISECT_COORDINATOR=%s %s nightly --history %s "
        "--benchmark kernels "
        "--hardware-class ci-gpu --sha %s --repo %s --repo-url %s --date 2026-11-%02d --suite auto "
        "--json %s -- ./bench.sh",
        tmp_.path(), address_, ::kbisect::testing::Bin("kbisect"), history, sha, tmp_.Join("ci"),
        repo, night + 1, tmp_.Join(absl::StrCat("suite-night-", night, ".json"))));
    SCOPED_TRACE(absl::StrCat("night ", night, ":\n", r.out, r.err));
    ASSERT_THAT(r.exit_code, ::testing::AnyOf(0, 3, 6)) << coordinator->log();
    EXPECT_THAT(r.out, HasSubstr("20 metrics of the suite"));
    if (absl::StrContains(r.out, "Submitted: job ")) {
      std::string id = r.out.substr(r.out.find("Submitted: job ") + 15);
      jobs.push_back(id.substr(0, id.find(' ')));
      nlohmann::json decision =
          nlohmann::json::parse(ReadFile(tmp_.Join(absl::StrCat("suite-night-", night, ".json"))));
      EXPECT_EQ(decision["exit_code"], 3);
      EXPECT_EQ(decision["metrics"].size(), 20u);
      EXPECT_FALSE(decision["lead"].get<std::string>().empty());
    }
  }
  // One job per step: kernels 0-6, 7-8 and 9 moved at three commits on three nights.
  ASSERT_EQ(jobs.size(), 3u) << ReadFile(history);
  std::map<std::string, std::string> found;
  for (const std::string& job_id : jobs) {
    CommandResult watched = Kbisect(absl::StrCat("watch ", job_id, " -q"));
    EXPECT_EQ(watched.exit_code, 0) << watched.out << watched.err << coordinator->log();
    nlohmann::json job = Json(absl::StrCat("status ", job_id, " --json"));
    EXPECT_EQ(job["spec"]["origin"]["kind"], "nightly");
    EXPECT_EQ(job["suite"].size(), 20u) << job.dump(1);
    for (const auto& row : job["suite"]) {
      if (row["state"] == "culprit") found[row["name"]] = row["culprit"]["sha"];
    }
  }
  for (const auto& [kernel, want] : expected) {
    if (want == "unchanged" || want == "improved") {
      EXPECT_EQ(found.count(kernel), 0u) << kernel;
    } else {
      EXPECT_EQ(found[kernel], want) << kernel;
    }
  }
}

// Issue 47: the project's code and a tracked package (kdep, on PYTHONPATH as an installed
// nightly would be) both move on night 9. The project's last good commit is measured with
// tonight's kdep, which says whose step it is: kdep 2.0 is 30% slower ("package": a dependency
// change, nothing bisected) or kdep 2.0 changes nothing and the kernel's commit of night 9 is
// 30% slower ("project": bisected as the project's).
TEST_F(NightlyTest, WhenBothMovedTheLastGoodCommitWithTonightsPackagesSaysWhoseStep) {
  for (const std::string mode : {"package", "project"}) {
    SCOPED_TRACE(mode);
    const std::string root = tmp_.Join(mode);
    const std::string repo = root + "/repo";
    RunShell(absl::StrCat("mkdir -p ", repo, "/src"));
    std::ofstream(repo + "/bench.sh") << R"sh(#!/bin/sh
exec python3 -c "
import kdep, os
b = float(open('src/kernel.cfg').read())
print('Latency: %.4f ms' % (b * kdep.FACTOR * (1 + float(os.environ.get('NIGHT_NOISE', '0')))))"
)sh";
    std::string script = absl::StrCat(
        "set -e; cd ", repo,
        "; git init -q -b main; git config user.email n@example.com; git config user.name N; "
        "chmod +x bench.sh; echo 10.0 > src/kernel.cfg; echo 0 > src/other.c; "
        "git add -A; git commit -q -m initial\n");
    for (int night = 1; night <= 12; ++night) {
      absl::StrAppend(&script, "echo ", night, " > src/other.c; git commit -q -am 'night ", night,
                      "'\n");
      if (night == 9 && mode == "project") {
        absl::StrAppend(&script, "echo 13.0 > src/kernel.cfg; git commit -q -am 'slower kernel'\n");
      }
      absl::StrAppend(&script, "git tag night", night, "\n");
    }
    // kdep 1.0, and 2.0 (30% slower only in "package").
    for (const auto& [version, factor] : std::vector<std::pair<std::string, std::string>>{
             {"1.0", "1.0"}, {"2.0", mode == "package" ? "1.3" : "1.0"}}) {
      const std::string dir = absl::StrCat(root, "/deps-", version);
      absl::StrAppend(&script, "mkdir -p ", dir, "/kdep ", dir, "/kdep-", version,
                      ".dist-info; echo 'FACTOR = ", factor, "' > ", dir,
                      "/kdep/__init__.py; printf 'Metadata-Version: 2.1\\nName: kdep\\nVersion: ",
                      version, "\\n' > ", dir, "/kdep-", version, ".dist-info/METADATA\n");
    }
    const CommandResult made = RunShell(script);
    ASSERT_EQ(made.exit_code, 0) << made.err;
    const std::string history = root + "/nightly.jsonl";
    std::map<int, int> codes;
    nlohmann::json decided;
    for (int night = 1; night <= 12; ++night) {
      const double noise = ((night * 7919) % 9 - 4) * 0.001;
      const std::string json = absl::StrCat(root, "/night-", night, ".json");
      const CommandResult r = RunShell(absl::StrFormat(
          "cd %s && git checkout -q night%d && NIGHT_NOISE=%.3f PYTHONPATH=%s/deps-%s %s nightly "
          "--history %s --benchmark attention --hardware-class ci-gpu --sha HEAD --repo %s "
          "--date 2026-11-%02d --track-package kdep --no-submit --json %s -- ./bench.sh",
          repo, night, noise, root, night >= 9 ? "2.0" : "1.0", ::kbisect::testing::Bin("kbisect"),
          history, repo, night, json));
      SCOPED_TRACE(absl::StrCat("night ", night, ":\n", r.out, r.err));
      ASSERT_THAT(r.exit_code, ::testing::AnyOf(0, 3, 8));
      codes[night] = r.exit_code;
      if (r.exit_code != 0 && decided.is_null()) {
        decided = nlohmann::json::parse(ReadFile(json));
        EXPECT_THAT(r.out, HasSubstr("The packages moved too: the last good commit"));
        EXPECT_THAT(r.out, HasSubstr("[package]  kdep: 1.0 -> 2.0"));
      }
    }
    ASSERT_FALSE(decided.is_null()) << "no night saw the step";
    EXPECT_EQ(decided["first_bad"]["date"], "2026-11-09") << decided.dump(2);
    if (mode == "package") {
      EXPECT_EQ(decided["action"], "dependency_change") << decided.dump(2);
      EXPECT_EQ(decided["package_check"]["owner"], "packages");
      EXPECT_THAT(decided["summary"].get<std::string>(), HasSubstr("the step came with kdep"));
      for (const auto& [night, code] : codes) EXPECT_NE(code, 3) << night;
    } else {
      EXPECT_EQ(decided["action"], "submit_bisect") << decided.dump(2);
      EXPECT_EQ(decided["package_check"]["owner"], "project");
      EXPECT_THAT(decided["summary"].get<std::string>(), HasSubstr("the step is the project's"));
      for (const auto& [night, code] : codes) EXPECT_NE(code, 8) << night;
    }
    EXPECT_NEAR(decided["package_check"]["share"].get<double>(), mode == "package" ? 1 : 0, 0.1);
  }
}

TEST_F(NightlyTest, UsageAndErrorsHaveTheirExitCodes) {
  EXPECT_EQ(Kbisect("nightly --history h --benchmark b --sha HEAD --repo .").exit_code, 2);
  CommandResult not_repo =
      Kbisect("nightly --history h --benchmark b --sha HEAD --repo /nonexistent -- ./bench.sh");
  EXPECT_EQ(not_repo.exit_code, 1);
  EXPECT_THAT(not_repo.err, HasSubstr("/nonexistent"));
  const std::vector<std::string> shas = MakeNights(tmp_.Join("repo"));
  RunShell(absl::StrCat("printf 'not json\\n' > ", tmp_.Join("bad.jsonl")));
  CommandResult bad = Kbisect(absl::StrCat("nightly --history ", tmp_.Join("bad.jsonl"),
                                           " --benchmark b --sha HEAD --value 1 --repo ",
                                           tmp_.Join("repo"), " -- ./bench.sh"));
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_THAT(bad.err, HasSubstr("line 1"));
  CommandResult first =
      Kbisect(absl::StrCat("nightly --history ", tmp_.Join("h.jsonl"),
                           " --benchmark b --sha HEAD --value 1.5 --unit ms --repo ",
                           tmp_.Join("repo"), " -- ./bench.sh"));
  EXPECT_EQ(first.exit_code, 0) << first.err;
  EXPECT_THAT(first.out, HasSubstr("Nothing to do"));
}

}  // namespace
}  // namespace kbisect
