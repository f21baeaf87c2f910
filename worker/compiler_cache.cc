// Copyright 2026 The kbisect Authors.
#include "worker/compiler_cache.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <system_error>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"

namespace kbisect {
namespace {

namespace fs = std::filesystem;

// The compilers a build may call by name; each one found on PATH gets a symlink to ccache.
constexpr const char* kCompilers[] = {"cc", "gcc", "c++", "g++", "clang", "clang++", "nvcc"};
// ccache's bound on the store unless the operator configured another.
constexpr char kDefaultMaxSize[] = "5G";

std::string PathOf(const std::map<std::string, std::string>& env) {
  auto it = env.find("PATH");
  if (it != env.end()) return it->second;
  const char* inherited = std::getenv("PATH");
  return inherited != nullptr ? inherited : "/usr/bin:/bin";
}

// The first executable `name` in the directories of `path`, skipping `skip_dir`; "" if none.
std::string FindOnPath(const std::string& name, const std::string& path,
                       const std::string& skip_dir = "") {
  for (absl::string_view dir : absl::StrSplit(path, ':', absl::SkipEmpty())) {
    if (!skip_dir.empty() && dir == skip_dir) continue;
    const std::string candidate = absl::StrCat(dir, "/", name);
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

std::string StoreOf(const std::string& cache_dir) { return cache_dir + "/compiler-cache/store"; }

}  // namespace

double CompilerCacheStats::HitRate() const {
  const int64_t compiles = hits + misses;
  return compiles == 0 ? 0.0 : static_cast<double>(hits) / static_cast<double>(compiles);
}

std::optional<CompilerCache> CompilerCache::Find(const std::string& cache_dir,
                                                 const std::map<std::string, std::string>& env) {
  const std::string path = PathOf(env);
  const std::string bin = cache_dir + "/compiler-cache/bin";
  const std::string ccache = FindOnPath("ccache", path, bin);
  if (ccache.empty()) return std::nullopt;
  const std::string store = StoreOf(cache_dir);
  std::error_code ec;
  fs::create_directories(bin, ec);
  if (ec) return std::nullopt;
  fs::create_directories(store, ec);
  if (ec) return std::nullopt;
  const fs::path config = fs::path(store) / "ccache.conf";
  if (!fs::exists(config, ec)) {
    // Written once; an operator's own settings there are kept.
    const std::string tmp = config.string() + absl::StrCat(".tmp", getpid());
    std::ofstream(tmp) << "max_size = " << kDefaultMaxSize << "\n";
    fs::rename(tmp, config, ec);
  }
  for (const char* compiler : kCompilers) {
    const fs::path link = fs::path(bin) / compiler;
    const bool wanted = !FindOnPath(compiler, path, bin).empty();
    std::error_code link_ec;
    const bool present = fs::is_symlink(fs::symlink_status(link, link_ec));
    if (wanted && present && fs::read_symlink(link, link_ec) == fs::path(ccache)) continue;
    if (present || fs::exists(link, link_ec)) fs::remove(link, link_ec);
    if (!wanted) continue;
    // Another slot may make the same link at the same moment: make it under a private name.
    const fs::path tmp = fs::path(bin) / absl::StrCat(".", compiler, ".", getpid());
    fs::remove(tmp, link_ec);
    fs::create_symlink(ccache, tmp, link_ec);
    if (!link_ec) fs::rename(tmp, link, link_ec);
    if (link_ec) return std::nullopt;
  }
  return CompilerCache(ccache, bin, store);
}

std::map<std::string, std::string> CompilerCache::Variables(
    const std::string& checkout_dir, const std::map<std::string, std::string>& build_env) const {
  std::map<std::string, std::string> vars;
  vars["PATH"] = absl::StrCat(bin_, ":", PathOf(build_env));
  if (build_env.count("CCACHE_DIR") == 0) vars["CCACHE_DIR"] = store_;
  vars["CCACHE_BASEDIR"] = checkout_dir;
  vars["CCACHE_NOHASHDIR"] = "1";
  // A checkout writes the headers a moment before they are compiled; their contents are
  // hashed either way.
  vars["CCACHE_SLOPPINESS"] = "include_file_mtime,include_file_ctime";
  // Depend mode (decision 179): a compile that writes its own dependency file (-MD, as CMake's
  // and most makefiles' do) is looked up by its sources and headers alone, and on a miss the
  // compiler is run once, not the preprocessor first. A compile without -MD is cached as
  // before (ccache turns the mode off for it).
  vars["CCACHE_DEPEND"] = "1";
  return vars;
}

CompilerCacheStats ParseCompilerCacheStats(const std::string& print_stats) {
  CompilerCacheStats stats;
  for (absl::string_view line : absl::StrSplit(print_stats, '\n', absl::SkipEmpty())) {
    std::vector<absl::string_view> fields = absl::StrSplit(line, '\t');
    if (fields.size() != 2) continue;
    int64_t value = 0;
    if (!absl::SimpleAtoi(fields[1], &value)) continue;
    if (fields[0] == "direct_cache_hit" || fields[0] == "preprocessed_cache_hit") {
      stats.hits += value;
    } else if (fields[0] == "cache_miss") {
      stats.misses += value;
    } else if (fields[0] == "cache_size_kibibyte") {
      stats.size_bytes = value * 1024;
    } else if (fields[0] == "files_in_cache") {
      stats.files = value;
    }
  }
  return stats;
}

absl::StatusOr<CompilerCacheStats> CompilerCache::Stats(const std::string& cache_dir,
                                                        CommandRunner* runner) {
  const std::string store = StoreOf(cache_dir);
  std::error_code ec;
  if (!fs::is_directory(store, ec)) {
    return absl::NotFoundError(absl::StrCat("no compiler cache in ", cache_dir));
  }
  ExecRequest request;
  request.argv = {"ccache", "--print-stats"};
  request.env["CCACHE_DIR"] = store;
  request.timeout = absl::Seconds(30);
  absl::StatusOr<ExecResult> printed = runner->Run(request);
  if (!printed.ok()) return printed.status();
  if (!printed->ok()) {
    return absl::InternalError(
        absl::StrCat("ccache --print-stats ", printed->Describe(), ": ", printed->Tail(3)));
  }
  return ParseCompilerCacheStats(printed->output);
}

}  // namespace kbisect
