// Copyright 2026 The kbisect Authors.
#include "cli/cache_command.h"

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "cli/run_command.h"
#include "common/clock/age.h"
#include "common/flags/flag_checks.h"
#include "common/text/count.h"
#include "coordinator/result_cache.h"
#include "worker/build_cache.h"
#include "worker/build_store.h"
#include "worker/compiler_cache.h"
#include "worker/worker_slot.h"

namespace kbisect {
namespace {

constexpr char kFooter[] = R"(
Commands:
  stats                       what the result cache holds: results, specs, workers, trees,
                              the oldest and newest measurement, its size on disk; the builds
                              kept and the compiler cache's hits, misses and size
  prune --older-than AGE      remove results measured more than AGE ago (30d, 12h, 1d12h, 90m)

The result cache keeps every commit's measured samples under (build + benchmark + metric spec,
commit tree, hardware class, worker) in <cache-dir>/results.sqlite, so that a later job with the
same spec can reuse them. Deleting the file is always safe: kbisect measures again.

Exit codes: 0 done, 1 the cache cannot be opened or read, 2 usage error.
)";

std::string FormatTime(absl::Time t, absl::Time now) {
  const int64_t seconds = std::max<int64_t>(0, absl::ToInt64Seconds(now - t));
  std::string age;
  if (seconds < 120) {
    age = absl::StrCat(seconds, "s ago");
  } else if (seconds < 7200) {
    age = absl::StrCat(seconds / 60, "m ago");
  } else if (seconds < 172800) {
    age = absl::StrCat(seconds / 3600, "h ago");
  } else {
    age = absl::StrCat(seconds / 86400, "d ago");
  }
  return absl::StrCat(absl::FormatTime("%Y-%m-%d %H:%M:%S UTC", t, absl::UTCTimeZone()), " (", age,
                      ")");
}

std::string FormatBytes(int64_t bytes) {
  if (bytes < 1024) return Count(bytes, "byte");
  const char* units[] = {"KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes) / 1024;
  int unit = 0;
  while (value >= 1024 && unit < 3) {
    value /= 1024;
    ++unit;
  }
  return absl::StrFormat("%.1f %s (%d bytes)", value, units[unit], bytes);
}

bool Exists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

// Opens the cache at `path`, or prints why it cannot be opened and returns null.
std::unique_ptr<ResultCache> Open(const std::string& path) {
  absl::StatusOr<std::unique_ptr<ResultCache>> cache = OpenSqliteResultCache(path);
  if (!cache.ok()) {
    std::cerr << "kbisect: " << cache.status().message() << "\n";
    return nullptr;
  }
  return *std::move(cache);
}

// The builds, the build store's counters and the compiler cache under `cache_dir`
// (worker/build_cache.h, worker/build_store.h, worker/compiler_cache.h).
void PrintBuildCaches(const std::string& cache_dir) {
  const std::string builds = cache_dir + "/builds";
  int kept = 0;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(builds, ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    if (it->path().filename().string()[0] != '.' && it->is_directory(ec)) ++kept;
  }
  std::cout << "Builds:   " << Count(kept, "build") << " kept in " << builds << "\n";
  // What each build command reads (learned from access times): where its files are.
  for (const auto& [command, inputs] : BuildCache::InputsByCommand(cache_dir)) {
    std::map<std::string, int> by_dir;
    for (const std::string& file : inputs.read()) {
      const size_t slash = file.rfind('/');
      ++by_dir[slash == std::string::npos ? "the top" : file.substr(0, slash) + "/"];
    }
    // The directories with the most files read first (a CMake build also reads its own tree).
    std::vector<std::pair<int, std::string>> most(by_dir.size());
    std::transform(by_dir.begin(), by_dir.end(), most.begin(),
                   [](const auto& dir) { return std::make_pair(-dir.second, dir.first); });
    std::sort(most.begin(), most.end());
    constexpr size_t kShown = 4;
    std::vector<std::string> where;
    for (size_t i = 0; i < most.size() && i < kShown; ++i) {
      where.push_back(absl::StrCat(most[i].second, " ", -most[i].first));
    }
    if (most.size() > kShown) {
      where.push_back(absl::StrCat("and ", Count(static_cast<int>(most.size() - kShown),
                                                 "more directory", "more directories")));
    }
    std::cout << "Reads:    " << Count(static_cast<int>(inputs.read().size()), "file") << " ("
              << absl::StrJoin(where, ", ") << ") for `" << command << "`\n";
  }
  // What this host fetched from and published to a --build-store (worker/build_store.h).
  if (const BuildStoreCounters store = BuildStoreCounters::Read(cache_dir);
      store.fetches > 0 || store.publishes > 0) {
    std::cout << "Build store: " << Count(store.fetches, "build") << " fetched ("
              << FormatBytes(store.fetched_bytes) << "), " << Count(store.publishes, "build")
              << " published (" << FormatBytes(store.published_bytes) << ")\n";
  }
  std::unique_ptr<CommandRunner> runner = NewSubprocessRunner();
  absl::StatusOr<CompilerCacheStats> compiled = CompilerCache::Stats(cache_dir, runner.get());
  if (!compiled.ok()) {
    std::cout << "Compiler cache: none (" << compiled.status().message() << ")\n";
  } else {
    std::cout << "Compiler cache: " << Count(compiled->hits, "hit") << ", "
              << Count(compiled->misses, "miss", "misses") << " ("
              << absl::StrFormat("%.0f%%", 100 * compiled->HitRate()) << " hit rate), "
              << FormatBytes(compiled->size_bytes) << " in " << Count(compiled->files, "file")
              << "\n";
    if (compiled->remote_hits > 0 || compiled->remote_errors > 0) {
      // Only builds with --compiler-cache-remote read a remote storage.
      std::cout << "          " << compiled->local_hits << " served locally, "
                << compiled->remote_hits << " from the remote storage, "
                << Count(compiled->remote_errors, "remote error") << "\n";
    }
  }
  std::cout << std::flush;
}

int Stats(const std::string& path, const std::string& cache_dir) {
  if (!Exists(path)) {
    std::cout << "No result cache at " << path << " yet (kbisect creates it when it measures).\n";
    PrintBuildCaches(cache_dir);
    return 0;
  }
  std::unique_ptr<ResultCache> cache = Open(path);
  if (cache == nullptr) return kExitError;
  absl::StatusOr<ResultCache::Stats> stats = cache->GetStats();
  if (!stats.ok()) {
    std::cerr << "kbisect: " << stats.status().message() << "\n";
    return kExitError;
  }
  const absl::Time now = absl::Now();
  const bool empty = stats->results == 0;
  std::cout << "Result cache " << path << "\n"
            << "Results:  " << stats->results << "\n"
            << "Specs:    " << stats->specs << "\n"
            << "Workers:  " << stats->workers << "\n"
            << "Trees:    " << stats->trees << "\n"
            << "Oldest:   " << (empty ? "-" : FormatTime(stats->oldest, now)) << "\n"
            << "Newest:   " << (empty ? "-" : FormatTime(stats->newest, now)) << "\n"
            << "Size:     " << FormatBytes(stats->bytes) << "\n";
  PrintBuildCaches(cache_dir);
  return 0;
}

int Prune(const std::string& path, absl::Duration age, const std::string& age_text) {
  const absl::Time cutoff = absl::Now() - age;
  if (!Exists(path)) {
    std::cout << "No result cache at " << path << ": nothing to remove.\n";
    return 0;
  }
  std::unique_ptr<ResultCache> cache = Open(path);
  if (cache == nullptr) return kExitError;
  absl::StatusOr<int64_t> removed = cache->Prune(cutoff);
  absl::StatusOr<ResultCache::Stats> stats =
      removed.ok() ? cache->GetStats() : absl::StatusOr<ResultCache::Stats>(removed.status());
  if (!stats.ok()) {
    std::cerr << "kbisect: " << stats.status().message() << "\n";
    return kExitError;
  }
  std::cout << "Removed " << Count(*removed, "result") << " measured before "
            << absl::FormatTime("%Y-%m-%d %H:%M:%S UTC", cutoff, absl::UTCTimeZone())
            << " (older than " << age_text << ") from " << path << "; " << stats->results
            << " left, " << FormatBytes(stats->bytes) << ".\n"
            << std::flush;
  return 0;
}

}  // namespace

int CacheCommand(int argc, char** argv) {
  CLI::App app{"Inspect and prune the result cache of measured samples.", "kbisect cache"};
  app.footer(kFooter);
  app.require_subcommand(1);
  std::string cache_dir = DefaultCacheDir();
  CLI::App* stats = app.add_subcommand("stats", "Show what the result cache holds");
  stats->add_option("--cache-dir", cache_dir, "The cache directory of kbisect run")
      ->capture_default_str();
  CLI::App* prune = app.add_subcommand("prune", "Remove results measured long ago");
  prune->add_option("--cache-dir", cache_dir, "The cache directory of kbisect run")
      ->capture_default_str();
  std::string older_than;
  prune->add_option("--older-than", older_than, "Age, e.g. 30d, 12h, 1d12h, 90m")->required();
  std::vector<std::string> args(argv + 1, argv + argc);
  std::reverse(args.begin(), args.end());
  try {
    app.parse(args);
  } catch (const CLI::ParseError& e) {
    return ReportParseError(app, e);
  }
  const std::string path = DefaultResultCachePath(cache_dir);
  if (stats->parsed()) return Stats(path, cache_dir);
  absl::StatusOr<absl::Duration> age = ParseAge(older_than);
  if (!age.ok()) {
    std::cerr << "kbisect: --older-than: " << age.status().message() << "\n"
              << "Run `kbisect cache --help` for usage.\n";
    return kExitUsage;
  }
  return Prune(path, *age, older_than);
}

}  // namespace kbisect
