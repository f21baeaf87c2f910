// Copyright 2026 The kbisect Authors.
//
// checkout_bench: what a worker's checkout of one commit costs (issue 51's per-probe overhead),
// Worktree::Checkout against `git checkout` of the same commits from the same mirror, on the
// demo repository user_cases_bench uses (scripts/make-demo-repo.sh: N commits x F files).
//
//   build/bin/checkout_bench [--commits 200] [--files 2000] [--trials 5] [--parallel 7]
//
// Cold: a worktree's first checkout into an empty directory (every worker's first probe).
// Warm: a checkout that jumps between two commits far apart in a worktree that has one.
// Parallel: `--parallel` cold checkouts at once, one thread (kbisect) or process (git) each, as
// the workers of one host start a job. Prints the median and range of each in milliseconds.

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "common/git/mirror.h"
#include "common/git/worktree.h"

namespace kbisect {
namespace {

namespace fs = std::filesystem;

struct Settings {
  int commits = 200;
  int files = 2000;
  int trials = 5;
  int parallel = 7;
};

// Milliseconds since `start`.
double MsSince(absl::Time start) { return absl::ToDoubleMilliseconds(absl::Now() - start); }

// Runs `command` in a shell; exits the bench when it fails.
void MustRun(const std::string& command) {
  if (std::system(command.c_str()) != 0) {
    std::cerr << "checkout_bench: failed: " << command << "\n";
    std::exit(1);
  }
}

// The output of `command`, its trailing newline stripped.
std::string Output(const std::string& command) {
  std::string out;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return out;
  char buf[256];
  while (fgets(buf, sizeof buf, pipe) != nullptr) out += buf;
  pclose(pipe);
  return std::string(absl::StripTrailingAsciiWhitespace(out));
}

void Report(const std::string& what, std::vector<double> ms) {
  std::sort(ms.begin(), ms.end());
  std::cout << absl::StrFormat("| %-44s | %8.1f | %8.1f - %-8.1f |\n", what, ms[ms.size() / 2],
                               ms.front(), ms.back());
}

// One kbisect worktree's first checkout of `sha` into the empty `dir`.
double KbisectCold(const std::string& mirror, const std::string& dir, const std::string& sha) {
  const absl::Time start = absl::Now();
  absl::StatusOr<std::unique_ptr<Worktree>> tree = Worktree::OpenOrCreate(mirror, dir);
  if (!tree.ok() || !(*tree)->Checkout(sha).ok()) {
    std::cerr << "checkout_bench: kbisect checkout of " << sha << " in " << dir << " failed\n";
    std::exit(1);
  }
  return MsSince(start);
}

// git's first checkout of `sha` into `dir`: a worktree sharing the mirror's objects.
double GitCold(const std::string& mirror, const std::string& dir, const std::string& sha) {
  const absl::Time start = absl::Now();
  MustRun(absl::StrCat("git init -q ", dir, " && echo ", mirror, "/objects > ", dir,
                       "/.git/objects/info/alternates && git -C ", dir, " checkout -q ", sha));
  return MsSince(start);
}

int Main(int argc, char** argv) {
  Settings s;
  CLI::App app{"What a worker's checkout costs: kbisect's Worktree against git checkout"};
  app.add_option("--commits", s.commits, "Commits of the demo repository")->capture_default_str();
  app.add_option("--files", s.files, "Files of the demo repository")->capture_default_str();
  app.add_option("--trials", s.trials, "Measurements of each kind")->capture_default_str();
  app.add_option("--parallel", s.parallel, "Cold checkouts at once")->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  const std::string root = Output("mktemp -d /tmp/kbisect-checkout-bench-XXXXXX");
  const std::string repo = root + "/repo";
  const std::string mirror = root + "/mirror.git";
  MustRun(absl::StrCat(KBISECT_SOURCE_DIR, "/scripts/make-demo-repo.sh ", repo, " --commits ",
                       s.commits, " --files ", s.files, " > /dev/null"));
  if (!EnsureMirror(repo, mirror).ok()) {
    std::cerr << "checkout_bench: cannot mirror " << repo << "\n";
    return 1;
  }
  const std::string head = Output("git -C " + repo + " rev-parse HEAD");
  const std::string early =
      Output(absl::StrCat("git -C ", repo, " rev-parse HEAD~", s.commits / 2));
  std::cout << absl::StrFormat("%d commits x %d files, %d trials, %d at once\n\n", s.commits,
                               s.files, s.trials, s.parallel);
  std::cout << "| checkout | median ms | range ms |\n|---|---|---|\n";

  std::vector<double> kb_cold, git_cold, kb_warm, git_warm, kb_parallel, git_parallel;
  int next = 0;
  for (int t = 0; t < s.trials; ++t) {
    const std::string kb_dir = absl::StrCat(root, "/kb", next++);
    const std::string git_dir = absl::StrCat(root, "/git", next++);
    kb_cold.push_back(KbisectCold(mirror, kb_dir, head));
    git_cold.push_back(GitCold(mirror, git_dir, head));
    for (const std::string& sha : {early, head}) {
      absl::Time start = absl::Now();
      if (!Worktree::OpenOrCreate(mirror, kb_dir).value()->Checkout(sha).ok()) return 1;
      kb_warm.push_back(MsSince(start));
      start = absl::Now();
      MustRun(absl::StrCat("git -C ", git_dir, " checkout -q ", sha));
      git_warm.push_back(MsSince(start));
    }
    // `parallel` cold checkouts at once.
    absl::Time start = absl::Now();
    std::vector<std::thread> threads;
    for (int i = 0; i < s.parallel; ++i) {
      const std::string dir = absl::StrCat(root, "/kbp", next++);
      threads.emplace_back([&, dir] { KbisectCold(mirror, dir, head); });
    }
    for (std::thread& thread : threads) thread.join();
    kb_parallel.push_back(MsSince(start));
    start = absl::Now();
    std::string command;
    for (int i = 0; i < s.parallel; ++i) {
      const std::string dir = absl::StrCat(root, "/gitp", next++);
      absl::StrAppend(&command, "(git init -q ", dir, " && echo ", mirror, "/objects > ", dir,
                      "/.git/objects/info/alternates && git -C ", dir, " checkout -q ", head,
                      ") & ");
    }
    MustRun(command + "wait");
    git_parallel.push_back(MsSince(start));
  }
  Report("kbisect, cold (first checkout, empty dir)", kb_cold);
  Report("git, cold", git_cold);
  Report("kbisect, warm (a jump of half the history)", kb_warm);
  Report("git, warm", git_warm);
  Report(absl::StrCat("kbisect, ", s.parallel, " cold at once (all done)"), kb_parallel);
  Report(absl::StrCat("git, ", s.parallel, " cold at once (all done)"), git_parallel);
  std::error_code ignored;
  fs::remove_all(root, ignored);
  return 0;
}

}  // namespace
}  // namespace kbisect

int main(int argc, char** argv) { return kbisect::Main(argc, argv); }
