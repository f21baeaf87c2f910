// Copyright 2026 The kbisect Authors.
#include "worker/build_store.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <sstream>
#include <system_error>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/git/file_lock.h"
#include "common/status_macros.h"
#include "nlohmann/json.hpp"
#include "worker/build_entry_layout.h"
#include "worker/build_key.h"

namespace kbisect {
namespace {

namespace fs = std::filesystem;

constexpr char kStoreArchive[] = "build.tar";
constexpr char kStoreManifest[] = "manifest.json";
constexpr char kStoreTmpPrefix[] = ".tmp-";
// The members of an entry that a store keeps.
constexpr const char* kStoredMembers[] = {kEntrySource, kEntryLayer};
// The bytes the throughput probe writes.
constexpr int64_t kStoreProbeBytes = 4 << 20;

// Appends `name`, then `value` preceded by its length, on a line of its own.
void AppendKeyField(std::string* text, const char* name, const std::string& value) {
  absl::StrAppend(text, name, " ", value.size(), ":", value, "\n");
}

std::string ReadStoreFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream contents;
  contents << in.rdbuf();
  return contents.str();
}

// Writes `contents` to `path` (no rename: the caller publishes the directory holding it).
absl::Status WriteStoreFile(const fs::path& path, const std::string& contents) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << contents;
  out.close();
  if (!out) return absl::InternalError(absl::StrCat("cannot write '", path.string(), "'"));
  return absl::OkStatus();
}

std::string StoreHostName() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0) return "";
  return name;
}

// A directory name under the store unique to this process and call.
std::string StoreTmpName(const std::string& what) {
  static std::atomic<uint64_t> counter{0};
  return absl::StrCat(kStoreTmpPrefix, what, "-", StoreHostName(), "-", getpid(), "-",
                      counter.fetch_add(1));
}

nlohmann::json ManifestJson(const StoredBuild& build) {
  nlohmann::json json;
  json["key"] = build.key_text;
  json["commit"] = build.commit;
  json["repository"] = build.repository;
  json["build_seconds"] = absl::ToDoubleSeconds(build.build_wall);
  json["cpu_seconds"] = absl::ToDoubleSeconds(build.build_cpu);
  json["archive_bytes"] = build.archive_bytes;
  json["entry_dir"] = build.entry_dir;
  json["host"] = build.host;
  if (build.inputs.known()) {
    json["inputs"]["read"] = build.inputs.read();
    json["inputs"]["unread"] = build.inputs.unread();
  }
  return json;
}

std::set<std::string> ManifestPaths(const nlohmann::json& list) {
  std::set<std::string> paths;
  if (!list.is_array()) return paths;
  for (const nlohmann::json& path : list) {
    if (path.is_string()) paths.insert(path.get<std::string>());
  }
  return paths;
}

// The manifest in `text`; nullopt when it is not one.
std::optional<StoredBuild> ParseManifest(const std::string& text) {
  const nlohmann::json json = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!json.is_object() || !json.value("key", nlohmann::json()).is_string() ||
      !json.value("entry_dir", nlohmann::json()).is_string() ||
      !json.value("archive_bytes", nlohmann::json()).is_number_integer()) {
    return std::nullopt;
  }
  StoredBuild build;
  build.key_text = json["key"].get<std::string>();
  build.commit = json.value("commit", "");
  build.repository = json.value("repository", "");
  build.build_wall = absl::Seconds(json.value("build_seconds", 0.0));
  build.build_cpu = absl::Seconds(json.value("cpu_seconds", 0.0));
  build.archive_bytes = json["archive_bytes"].get<int64_t>();
  build.entry_dir = json["entry_dir"].get<std::string>();
  build.host = json.value("host", "");
  if (json.contains("inputs") && json["inputs"].is_object()) {
    build.inputs =
        BuildInputs::Read(ManifestPaths(json["inputs"].value("read", nlohmann::json())),
                          ManifestPaths(json["inputs"].value("unread", nlohmann::json())));
  }
  return build;
}

// Removes the members of entry `entry_dir` a store keeps.
void RemoveStoredMembers(const fs::path& entry_dir) {
  std::error_code ec;
  for (const char* member : kStoredMembers) fs::remove_all(entry_dir / member, ec);
}

// Runs `argv` through `runner`; Internal with the command's tail when it fails.
absl::Status RunTar(CommandRunner* runner, std::vector<std::string> argv) {
  ExecRequest request;
  request.argv = std::move(argv);
  request.timeout = absl::Hours(1);
  absl::StatusOr<ExecResult> ran = runner->Run(request);
  if (!ran.ok()) return ran.status();
  if (!ran->ok()) {
    return absl::InternalError(absl::StrCat("tar ", ran->Describe(), ": ", ran->Tail(3)));
  }
  return absl::OkStatus();
}

// Writes `bytes` zero bytes to `path` and syncs them; false when it cannot.
bool WriteStoreProbe(const std::string& path, int64_t bytes) {
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  const std::string block(1 << 16, '\0');
  int64_t written = 0;
  while (written < bytes) {
    const ssize_t n = write(fd, block.data(), block.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    written += n;
  }
  const bool ok = written >= bytes && fsync(fd) == 0;
  close(fd);
  return ok;
}

}  // namespace

std::string BuildStoreKey::Text() const {
  std::string text = "kbisect-build-store-key 1\n";
  AppendKeyField(&text, "build-key", build_key);
  AppendKeyField(&text, "hardware-class", hardware_class);
  AppendKeyField(&text, "toolchain", toolchain);
  return text;
}

std::string BuildStoreKey::Digest() const { return KeyDigest(Text()); }

std::string ToolchainIdentity(const std::map<std::string, std::string>& env) {
  std::vector<std::string> dirs;
  if (const auto path = env.find("PATH"); path != env.end()) {
    dirs = absl::StrSplit(path->second, ':', absl::SkipEmpty());
  }
  std::string identity;
  for (const char* tool : {"cc", "c++", "gcc", "g++", "clang", "clang++", "nvcc", "python3"}) {
    std::string found = "-";
    for (const std::string& dir : dirs) {
      const std::string candidate = absl::StrCat(dir, "/", tool);
      if (access(candidate.c_str(), X_OK) != 0) continue;
      std::error_code ec;
      const fs::path real = fs::canonical(candidate, ec);
      struct stat st;
      if (ec || stat(real.c_str(), &st) != 0) continue;
      found = absl::StrCat(real.string(), " ", st.st_size, " ", st.st_mtim.tv_sec);
      break;
    }
    absl::StrAppend(&identity, tool, " ", found, "\n");
  }
  return identity;
}

bool BuildStoreTransferPays(absl::Duration build_wall, int64_t archive_bytes,
                            double bytes_per_second) {
  if (build_wall < kBuildStoreFloor || bytes_per_second <= 0 || archive_bytes < 0) return false;
  const absl::Duration transfer =
      absl::Seconds(static_cast<double>(archive_bytes) / bytes_per_second);
  return transfer * 2 <= build_wall;
}

int64_t ArchivedBytes(const std::string& entry_dir) {
  int64_t bytes = 0;
  std::error_code ec;
  for (const char* member : kStoredMembers) {
    const fs::path root = fs::path(entry_dir) / member;
    for (fs::recursive_directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) {
      std::error_code size_ec;
      if (it->is_regular_file(size_ec) && !it->is_symlink(size_ec)) {
        const uintmax_t size = it->file_size(size_ec);
        if (!size_ec) bytes += static_cast<int64_t>(size);
      }
    }
    ec.clear();
  }
  return bytes;
}

DirectoryBuildStore::DirectoryBuildStore(std::string dir, CommandRunner* runner)
    : dir_(std::move(dir)), runner_(runner) {}

absl::Status DirectoryBuildStore::Check() const {
  std::error_code ec;
  if (!fs::is_directory(dir_, ec)) {
    return absl::UnavailableError(absl::StrCat("the build store ", dir_, " does not exist"));
  }
  if (access(dir_.c_str(), W_OK | X_OK) != 0) {
    return absl::UnavailableError(
        absl::StrCat("the build store ", dir_, " cannot be written: ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

std::string DirectoryBuildStore::KeyDir(const BuildStoreKey& key) const {
  const std::string digest = key.Digest();
  return absl::StrCat(dir_, "/", digest.substr(0, 2), "/", digest);
}

absl::StatusOr<StoredBuild> DirectoryBuildStore::Look(const BuildStoreKey& key) const {
  const fs::path dir = KeyDir(key);
  std::error_code ec;
  if (!fs::exists(dir / kStoreManifest, ec)) {
    return absl::NotFoundError(absl::StrCat("no build in the store for ", key.Digest()));
  }
  std::optional<StoredBuild> build = ParseManifest(ReadStoreFile(dir / kStoreManifest));
  if (!build.has_value() || build->key_text != key.Text()) {
    return absl::NotFoundError(
        absl::StrCat("the store's manifest ", (dir / kStoreManifest).string(),
                     build.has_value() ? " is another key's" : " cannot be read"));
  }
  return *build;
}

absl::StatusOr<StoredBuild> DirectoryBuildStore::Fetch(const BuildStoreKey& key,
                                                       const std::string& entry_dir) {
  absl::StatusOr<StoredBuild> build = Look(key);
  if (!build.ok()) return build.status();
  const fs::path archive = fs::path(KeyDir(key)) / kStoreArchive;
  std::error_code ec;
  const uintmax_t size = fs::file_size(archive, ec);
  if (ec || static_cast<int64_t>(size) != build->archive_bytes) {
    return absl::DataLossError(absl::StrCat("the store's archive ", archive.string(), " holds ",
                                            ec ? 0 : size, " bytes, its manifest says ",
                                            build->archive_bytes));
  }
  RemoveStoredMembers(entry_dir);
  fs::create_directories(entry_dir, ec);
  const absl::Time start = absl::Now();
  // tar keeps the files' modification times by default: make and ninja see outputs newer than
  // their sources, as they were in the publisher's entry.
  absl::Status unpacked = RunTar(runner_, {"tar", "--extract", "--preserve-permissions", "--file",
                                           archive.string(), "--directory", entry_dir});
  if (unpacked.ok() && !fs::exists(fs::path(entry_dir) / "src" / ".git", ec)) {
    unpacked = absl::InternalError("it holds no checkout");
  }
  if (!unpacked.ok()) {
    RemoveStoredMembers(entry_dir);
    return absl::DataLossError(
        absl::StrCat("the store's archive ", archive.string(), ": ", unpacked.message()));
  }
  Measured(build->archive_bytes, absl::Now() - start);
  return build;
}

absl::Status DirectoryBuildStore::Publish(const BuildStoreKey& key, const std::string& entry_dir,
                                          StoredBuild build) {
  RETURN_IF_ERROR(Check());
  const fs::path final_dir = KeyDir(key);
  std::error_code ec;
  if (fs::exists(final_dir, ec)) return absl::AlreadyExistsError("published already");
  const fs::path tmp = fs::path(dir_) / StoreTmpName("publish");
  fs::create_directories(tmp, ec);
  if (ec) return absl::InternalError(absl::StrCat("cannot create '", tmp.string(), "'"));
  auto give_up = [&](absl::Status status) {
    fs::remove_all(tmp, ec);
    return status;
  };
  // POSIX (pax) archives keep file times to the nanosecond (GNU's default format, to the second).
  std::vector<std::string> argv = {
      "tar",         "--create", "--format=posix", "--file", (tmp / kStoreArchive).string(),
      "--directory", entry_dir};
  for (const char* member : kStoredMembers) {
    if (fs::exists(fs::path(entry_dir) / member, ec)) argv.push_back(member);
  }
  const absl::Time start = absl::Now();
  if (absl::Status packed = RunTar(runner_, argv); !packed.ok()) return give_up(packed);
  const uintmax_t size = fs::file_size(tmp / kStoreArchive, ec);
  if (ec) return give_up(absl::InternalError("the archive was not written"));
  Measured(static_cast<int64_t>(size), absl::Now() - start);
  build.key_text = key.Text();
  build.archive_bytes = static_cast<int64_t>(size);
  if (build.host.empty()) build.host = StoreHostName();
  if (absl::Status written =
          WriteStoreFile(tmp / kStoreManifest, ManifestJson(build).dump(2) + "\n");
      !written.ok()) {
    return give_up(written);
  }
  fs::create_directories(final_dir.parent_path(), ec);
  // Renaming a directory onto a non-empty one fails: of two publishers, the second loses.
  fs::rename(tmp, final_dir, ec);
  if (ec) {
    return give_up(fs::exists(final_dir / kStoreManifest, ec)
                       ? absl::AlreadyExistsError("published meanwhile by another host")
                       : absl::InternalError(absl::StrCat("cannot publish '", final_dir.string(),
                                                          "': ", ec.message())));
  }
  return absl::OkStatus();
}

void DirectoryBuildStore::Measured(int64_t bytes, absl::Duration took) {
  // Transfers too small to time say little: they only raise the estimate.
  const double seconds = std::max(absl::ToDoubleSeconds(took), 0.001);
  kbisect::MutexLock lock(&mu_);
  bytes_per_second_ = static_cast<double>(bytes) / seconds;
}

double DirectoryBuildStore::Throughput() {
  {
    kbisect::MutexLock lock(&mu_);
    if (bytes_per_second_ > 0) return bytes_per_second_;
  }
  if (!Check().ok()) return 0;
  const std::string probe = absl::StrCat(dir_, "/", StoreTmpName("probe"));
  const absl::Time start = absl::Now();
  const bool written = WriteStoreProbe(probe, kStoreProbeBytes);
  const absl::Duration took = absl::Now() - start;
  std::error_code ec;
  fs::remove(probe, ec);
  if (!written) return 0;
  Measured(kStoreProbeBytes, took);
  kbisect::MutexLock lock(&mu_);
  return bytes_per_second_;
}

std::optional<std::string> BuildStoreWarning(const std::string& dir) {
  if (dir.empty()) return std::nullopt;
  const absl::Status usable = DirectoryBuildStore(dir, nullptr).Check();
  if (usable.ok()) return std::nullopt;
  return absl::StrCat(usable.message(), ": builds go on without it (each host builds its own)");
}

BuildStoreCounters BuildStoreCounters::Read(const std::string& cache_dir) {
  BuildStoreCounters counters;
  const nlohmann::json json =
      nlohmann::json::parse(ReadStoreFile(fs::path(cache_dir) / "build-store" / "counters.json"),
                            nullptr, /*allow_exceptions=*/false);
  if (!json.is_object()) return counters;
  counters.fetches = json.value("fetches", int64_t{0});
  counters.publishes = json.value("publishes", int64_t{0});
  counters.fetched_bytes = json.value("fetched_bytes", int64_t{0});
  counters.published_bytes = json.value("published_bytes", int64_t{0});
  return counters;
}

void BuildStoreCounters::Add(const std::string& cache_dir, const BuildStoreCounters& delta) {
  const fs::path dir = fs::path(cache_dir) / "build-store";
  std::error_code ec;
  fs::create_directories(dir, ec);
  absl::StatusOr<std::unique_ptr<FileLock>> lock = FileLock::Acquire((dir / "lock").string());
  if (!lock.ok()) return;
  BuildStoreCounters sum = Read(cache_dir);
  sum.fetches += delta.fetches;
  sum.publishes += delta.publishes;
  sum.fetched_bytes += delta.fetched_bytes;
  sum.published_bytes += delta.published_bytes;
  nlohmann::json json;
  json["fetches"] = sum.fetches;
  json["publishes"] = sum.publishes;
  json["fetched_bytes"] = sum.fetched_bytes;
  json["published_bytes"] = sum.published_bytes;
  const fs::path tmp = dir / "counters.json.tmp";
  if (WriteStoreFile(tmp, json.dump(2) + "\n").ok()) fs::rename(tmp, dir / "counters.json", ec);
}

}  // namespace kbisect
