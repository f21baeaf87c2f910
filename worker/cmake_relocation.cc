// Copyright 2026 The kbisect Authors.
#include "worker/cmake_relocation.h"

#include <fstream>
#include <iterator>
#include <optional>
#include <sstream>
#include <system_error>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/string_view.h"

namespace kbisect {
namespace {

namespace fs = std::filesystem;

// The directory a CMake build tree was configured in (CMakeCache.txt's CMAKE_CACHEFILE_DIR).
std::string CMakeCacheDir(const fs::path& cache_file) {
  std::ifstream in(cache_file);
  std::string line;
  constexpr absl::string_view kKey = "CMAKE_CACHEFILE_DIR:INTERNAL=";
  while (std::getline(in, line)) {
    if (absl::StartsWith(line, kKey)) return line.substr(kKey.size());
  }
  return "";
}

// Whether `file` is one of the files through which CMake and the generators it drives name
// directories (never an object file or an archive, whose debug paths do not steer a build).
bool IsBuildSystemFile(const fs::path& file) {
  const std::string name = file.filename().string();
  if (name == "CMakeCache.txt" || name == "Makefile" || name == ".ninja_log" ||
      name == ".ninja_deps" || absl::StartsWith(name, "Makefile")) {
    return true;
  }
  for (absl::string_view suffix : {".cmake", ".make", ".d", ".ninja", ".txt", ".json", ".rsp",
                                   ".internal", ".includecache", ".ts"}) {
    if (absl::EndsWith(name, suffix)) return true;
  }
  return false;
}

std::optional<std::string> ReadAll(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

// Rewrites one tree; false when a build-system file could not be rewritten or still names
// `from` afterwards.
bool RelocateTree(const fs::path& tree, const std::string& from, const std::string& to) {
  std::error_code ec;
  std::vector<fs::path> files;
  for (fs::recursive_directory_iterator it(tree, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->is_regular_file(ec) && !it->is_symlink(ec) && IsBuildSystemFile(it->path())) {
      files.push_back(it->path());
    }
  }
  if (ec) return false;
  for (const fs::path& file : files) {
    std::optional<std::string> content = ReadAll(file);
    if (!content.has_value()) return false;
    if (content->find(from) == std::string::npos) continue;
    const bool binary = content->find('\0') != std::string::npos;
    if (binary && from.size() != to.size()) {
      // Ninja's deps log holds length-prefixed paths: without it ninja rebuilds what it covered.
      if (file.filename() == ".ninja_deps" && fs::remove(file, ec)) continue;
      return false;
    }
    const fs::file_time_type modified = fs::last_write_time(file, ec);
    if (ec) return false;
    const std::string rewritten = absl::StrReplaceAll(*content, {{from, to}});
    {
      std::ofstream out(file, std::ios::binary | std::ios::trunc);
      out << rewritten;
      if (!out) return false;
    }
    // Make and ninja compare times: a rewritten Makefile must not look newer than its outputs.
    fs::last_write_time(file, modified, ec);
    if (ec) return false;
  }
  return true;
}

}  // namespace

CMakeRelocation RelocateCMakeTrees(const fs::path& dir, const std::string& from_prefix,
                                   const std::string& to_prefix) {
  CMakeRelocation result;
  std::error_code ec;
  std::vector<fs::path> trees;
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->path().filename() == ".git" || it.depth() >= 3) {
      if (it->is_directory(ec)) it.disable_recursion_pending();
      continue;
    }
    if (it->path().filename() == "CMakeCache.txt") trees.push_back(it->path().parent_path());
  }
  for (const fs::path& tree : trees) {
    const std::string configured_in = CMakeCacheDir(tree / "CMakeCache.txt");
    if (fs::path(configured_in) == tree) continue;
    const bool relocatable = !from_prefix.empty() && absl::StartsWith(configured_in, from_prefix) &&
                             RelocateTree(tree, from_prefix, to_prefix) &&
                             fs::path(CMakeCacheDir(tree / "CMakeCache.txt")) == tree;
    if (relocatable) {
      ++result.relocated;
      continue;
    }
    ++result.removed;
    if (tree == dir) {
      fs::remove(tree / "CMakeCache.txt", ec);
      fs::remove_all(tree / "CMakeFiles", ec);
    } else {
      fs::remove_all(tree, ec);
    }
  }
  return result;
}

}  // namespace kbisect
