// Copyright 2026 The kbisect Authors.
#include "common/build/build_cost.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"

namespace kbisect {
namespace {

// Builds shorter than this say nothing reliable about the cores they use.
constexpr absl::Duration kShortestMeasuredBuild = absl::Milliseconds(50);
// The least share of a core a build is counted as.
constexpr double kLightestBuild = 1.0 / kMostBuildsPerCore;

// make's single-letter flags that take no argument, which may precede `j` in one word (`-sj4`).
constexpr absl::string_view kMakeFlagLetters = "BbeiknqRrSstw";

// The job count a flag's value gives: its number, or every core for one that is not a number
// (`$(nproc)`, `` `nproc` ``) or absent.
int JobsOf(absl::string_view value) {
  int jobs = 0;
  if (absl::SimpleAtoi(value, &jobs) && jobs > 0) return std::min(jobs, kAllCoresJobs);
  return kAllCoresJobs;
}

// The words of a shell command: split at blanks and at the shell's separators.
std::vector<absl::string_view> Words(absl::string_view command) {
  return absl::StrSplit(command, absl::ByAnyChar(" \t\n;&|()"), absl::SkipEmpty());
}

// The jobs asked by the words of one command line or MAKEFLAGS value.
int JobsInWords(const std::vector<absl::string_view>& words) {
  int jobs = 0;
  for (size_t i = 0; i < words.size(); ++i) {
    absl::string_view word = words[i];
    const bool has_next = i + 1 < words.size();
    const absl::string_view next = has_next ? words[i + 1] : absl::string_view();
    const bool next_is_number =
        has_next && !next.empty() && std::all_of(next.begin(), next.end(), [](char c) {
          return absl::ascii_isdigit(static_cast<unsigned char>(c));
        });
    if (absl::ConsumePrefix(&word, "MAKEFLAGS=")) {
      jobs = std::max(jobs, JobsInWords(Words(word)));
    } else if (absl::ConsumePrefix(&word, "CMAKE_BUILD_PARALLEL_LEVEL=")) {
      jobs = std::max(jobs, JobsOf(word));
    } else if (word == "--jobs" || word == "--parallel") {
      jobs = std::max(jobs, next_is_number ? JobsOf(next) : kAllCoresJobs);
    } else if (absl::ConsumePrefix(&word, "--jobs=") || absl::ConsumePrefix(&word, "--parallel=")) {
      jobs = std::max(jobs, JobsOf(word));
    } else if (word.size() >= 2 && word[0] == '-' && word[1] != '-') {
      const size_t j = word.find('j');
      if (j == absl::string_view::npos) continue;
      const absl::string_view letters = word.substr(1, j - 1);
      if (!std::all_of(letters.begin(), letters.end(), [](char c) {
            return kMakeFlagLetters.find(c) != absl::string_view::npos;
          })) {
        continue;
      }
      const absl::string_view value = word.substr(j + 1);
      if (!value.empty()) {
        jobs = std::max(jobs, JobsOf(value));
      } else {
        jobs = std::max(jobs, next_is_number ? JobsOf(next) : kAllCoresJobs);
      }
    }
  }
  return jobs;
}

}  // namespace

int RequestedBuildJobs(absl::string_view command, const std::map<std::string, std::string>& env) {
  int jobs = JobsInWords(Words(command));
  if (auto it = env.find("MAKEFLAGS"); it != env.end()) {
    // MAKEFLAGS may leave out the dash of single-letter flags ("sj4").
    std::vector<absl::string_view> words = Words(it->second);
    std::vector<std::string> dashed(words.begin(), words.end());
    for (std::string& word : dashed) {
      if (!word.empty() && word[0] != '-' && word.find('=') == std::string::npos) word = "-" + word;
    }
    jobs =
        std::max(jobs, JobsInWords(std::vector<absl::string_view>(dashed.begin(), dashed.end())));
  }
  if (auto it = env.find("CMAKE_BUILD_PARALLEL_LEVEL"); it != env.end()) {
    jobs = std::max(jobs, JobsOf(it->second));
  }
  return jobs;
}

std::optional<double> CoresPerBuild(const std::vector<BuildCost>& recent) {
  std::optional<double> heaviest;
  for (const BuildCost& cost : recent) {
    if (cost.wall < kShortestMeasuredBuild) continue;
    const double used = absl::FDivDuration(cost.cpu, cost.wall);
    double alone = used * (1 + std::max(0, cost.overlapping));
    if (cost.runnable > 0) alone = std::max(used, std::min(alone, cost.runnable));
    const double cores = std::max(alone, static_cast<double>(std::max(0, cost.requested_jobs)));
    if (!heaviest.has_value() || cores > *heaviest) heaviest = cores;
  }
  return heaviest;
}

std::optional<double> CoresPerBuildWhileRunning(const std::vector<BuildCost>& running) {
  if (running.empty()) return std::nullopt;
  double heaviest = 0;
  for (const BuildCost& cost : running) {
    if (cost.wall < kRunningSampleAfter || cost.requested_jobs > 0) return std::nullopt;
    const double cores = absl::FDivDuration(cost.cpu, cost.wall);
    if (cores <= kLightRunningBuild) {
      heaviest = std::max(heaviest, cores);
    } else if (cost.runnable == 1 && cores <= kOneProcessRunningBuild) {
      heaviest = std::max(heaviest, 1.0);
    } else {
      return std::nullopt;
    }
  }
  return heaviest;
}

int ConcurrentBuildLimit(int cores, std::optional<double> cores_per_build) {
  if (!cores_per_build.has_value()) return 1;
  // A build that keeps 1.9 of 2 cores busy is a 2-core build (the 0.1 rounds it up); one that
  // waits on something else (the network, a remote compiler) counts as kLightestBuild of a
  // core, so that the slots stay bounded.
  const double per_build = std::max(kLightestBuild, *cores_per_build);
  return std::max(1, static_cast<int>(std::floor(std::max(1, cores) / per_build + 0.1)));
}

}  // namespace kbisect
