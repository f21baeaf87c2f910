// Copyright 2026 The kbisect Authors.
#include "worker/build_inputs.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <iterator>
#include <system_error>
#include <utility>

#include "absl/strings/match.h"

namespace kbisect {
namespace {

namespace fs = std::filesystem;

long long Nanoseconds(const timespec& t) {
  return static_cast<long long>(t.tv_sec) * 1000000000LL + t.tv_nsec;
}

// The directory of `path` ("" for a path at the top).
std::string_view DirOf(std::string_view path) {
  const size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? std::string_view() : path.substr(0, slash);
}

// Calls `visit(path, stat)` for every regular file under `top`, none under a `.git`.
template <typename Visit>
void ForEachFile(const fs::path& top, const Visit& visit) {
  std::error_code ec;
  fs::recursive_directory_iterator it(top, fs::directory_options::skip_permission_denied, ec);
  for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    const fs::path& path = it->path();
    if (path.filename() == ".git") {
      if (it->is_directory(ec)) it.disable_recursion_pending();
      continue;
    }
    struct stat st;
    if (lstat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode)) visit(path, st);
  }
}

}  // namespace

BuildInputs BuildInputs::Read(const std::set<std::string>& read,
                              const std::set<std::string>& unread) {
  BuildInputs inputs;
  inputs.known_ = true;
  for (const std::string& path : read) {
    inputs.read_.insert(path);
    inputs.read_dirs_.emplace(DirOf(path));
  }
  for (const std::string& path : unread) {
    if (inputs.read_.count(path) == 0 && inputs.read_dirs_.count(std::string(DirOf(path))) > 0) {
      inputs.unread_.insert(path);
    }
  }
  return inputs;
}

bool BuildInputs::IsInput(std::string_view path) const {
  if (!known_) return true;
  const std::string file(path);
  if (read_.count(file) > 0) return true;
  // A directory above a file read: the first file read at or after "path/" in order.
  const std::string below = file + "/";
  auto it = read_.lower_bound(below);
  if (it != read_.end() && absl::StartsWith(*it, below)) return true;
  return read_dirs_.count(std::string(DirOf(path))) > 0 && unread_.count(file) == 0;
}

int BuildInputs::CountInputs(const std::vector<std::string>& paths) const {
  int count = 0;
  for (const std::string& path : paths) count += IsInput(path) ? 1 : 0;
  return count;
}

void BuildInputs::Merge(const BuildInputs& other) {
  if (!other.known_) return;
  known_ = true;
  read_.insert(other.read_.begin(), other.read_.end());
  read_dirs_.insert(other.read_dirs_.begin(), other.read_dirs_.end());
  for (const std::string& path : other.unread_) unread_.insert(path);
  for (auto it = unread_.begin(); it != unread_.end();) {
    it = read_.count(*it) > 0 ? unread_.erase(it) : std::next(it);
  }
}

ReadWatch ReadWatch::Start(const std::string& checkout, const std::string& stamp) {
  ReadWatch watch;
  watch.checkout_ = checkout;
  // The stamp's access time is set a second before its modification and the stamp read: the file
  // system records reads when its access time moved past its modification time, and then it
  // holds the file system's clock now. Its clock is coarse (a tick of 1-10 ms): a file the
  // checkout wrote in this tick and the build read in it would look unread, so the watch starts
  // once the clock has moved on. From then on a file read has an access time after the start,
  // one the checkout wrote a modification time at or before it, and one the build wrote after.
  const int fd = open(stamp.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return watch;
  struct stat st;
  auto now = [&]() -> long long {
    timespec times[2];
    times[0] = st.st_mtim;
    times[0].tv_sec -= 1;
    times[1].tv_sec = 0;
    times[1].tv_nsec = UTIME_OMIT;
    char byte;
    if (futimens(fd, times) != 0 || pread(fd, &byte, 1, 0) != 1 || fstat(fd, &st) != 0) return -1;
    return Nanoseconds(st.st_atim) > Nanoseconds(st.st_mtim) ? Nanoseconds(st.st_atim) : -1;
  };
  long long start = write(fd, "x", 1) == 1 && fstat(fd, &st) == 0 ? now() : -1;
  for (int i = 0; start >= 0 && i < 100; ++i) {
    usleep(1000);
    const long long later = now();
    if (later < 0) start = -1;
    if (later > start) break;
  }
  close(fd);
  if (start < 0) return watch;
  // A file read since it was written (the checkout's own status reads the files it just wrote)
  // records no further read until written again: its access time goes back to its modification
  // time. Its change time moves, which make, ninja and the compiler cache (its sloppiness,
  // compiler_cache.h) do not look at.
  ForEachFile(checkout, [](const fs::path& path, const struct stat& st) {
    if (Nanoseconds(st.st_atim) <= Nanoseconds(st.st_mtim)) return;
    timespec times[2];
    times[0] = st.st_mtim;
    times[1].tv_sec = 0;
    times[1].tv_nsec = UTIME_OMIT;
    (void)utimensat(AT_FDCWD, path.c_str(), times, AT_SYMLINK_NOFOLLOW);
  });
  watch.on_ = true;
  watch.since_ns_ = start;
  return watch;
}

std::optional<BuildInputs> ReadWatch::Reads(
    const std::function<bool(const std::string&)>& tracked) const {
  if (!on_) return std::nullopt;
  std::set<std::string> read;
  std::set<std::string> unread;
  const fs::path top(checkout_);
  ForEachFile(top, [&](const fs::path& path, const struct stat& st) {
    if (Nanoseconds(st.st_mtim) > since_ns_) return;  // Written by the build: its own output.
    std::string relative = path.lexically_relative(top).generic_string();
    if (tracked != nullptr && !tracked(relative)) return;
    if (Nanoseconds(st.st_atim) > since_ns_) {
      read.insert(std::move(relative));
    } else {
      unread.insert(std::move(relative));
    }
  });
  return BuildInputs::Read(read, unread);
}

}  // namespace kbisect
