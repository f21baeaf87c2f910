// Copyright 2026 The kbisect Authors.
#include "worker/compiler_cache.h"

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
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

// Where a remote storage URL points: scheme, host and port (the scheme's default when none is
// given), and the path.
struct RemoteAddress {
  std::string scheme;
  std::string host;
  std::string port;
  std::string path;
};

RemoteAddress ParseRemote(absl::string_view url) {
  RemoteAddress address;
  const size_t colon = url.find("://");
  if (colon == absl::string_view::npos) return address;
  address.scheme = std::string(url.substr(0, colon));
  absl::string_view rest = url.substr(colon + 3);
  const size_t slash = rest.find('/');
  absl::string_view authority = rest.substr(0, slash);
  address.path = slash == absl::string_view::npos ? "" : std::string(rest.substr(slash));
  if (const size_t at = authority.rfind('@'); at != absl::string_view::npos) {
    authority = authority.substr(at + 1);  // user:password@ is ccache's business.
  }
  const size_t port = authority.rfind(':');
  address.host = std::string(authority.substr(0, port));
  address.port = port == absl::string_view::npos ? (address.scheme == "redis" ? "6379" : "80")
                                                  : std::string(authority.substr(port + 1));
  return address;
}

// Connects to `host`:`port` over TCP within `timeout`, then closes the connection.
absl::Status ConnectWithin(const std::string& host, const std::string& port,
                           absl::Duration timeout) {
  const std::string where = absl::StrCat(host, ":", port);
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (const int error = getaddrinfo(host.c_str(), port.c_str(), &hints, &found); error != 0) {
    return absl::UnavailableError(absl::StrCat(where, ": ", gai_strerror(error)));
  }
  std::string failure = "no address";
  for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
    const int fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) continue;
    int result = connect(fd, a->ai_addr, a->ai_addrlen);
    if (result != 0 && errno == EINPROGRESS) {
      pollfd waiting{fd, POLLOUT, 0};
      result = poll(&waiting, 1, static_cast<int>(absl::ToInt64Milliseconds(timeout)));
      if (result == 1) {
        int error = 0;
        socklen_t length = sizeof(error);
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length);
        result = error == 0 ? 0 : -1;
        errno = error;
      } else {
        if (result == 0) errno = ETIMEDOUT;
        result = -1;
      }
    }
    if (result == 0) {
      close(fd);
      freeaddrinfo(found);
      return absl::OkStatus();
    }
    failure = std::strerror(errno);
    close(fd);
  }
  freeaddrinfo(found);
  return absl::UnavailableError(absl::StrCat(where, ": ", failure));
}

}  // namespace

std::string CompilerCacheRemote::StorageValue() const {
  if (url.empty()) return "";
  // ccache waits 100 ms for a connection by default; a remote across a cluster's network may
  // take longer to accept, and a miss costs a compile.
  return absl::StrCat(url, "|connect-timeout=500", read_only ? "|read-only=true" : "");
}

absl::Status CheckCompilerCacheRemoteUrl(const std::string& url) {
  const RemoteAddress address = ParseRemote(url);
  if (address.scheme == "file" && !address.path.empty()) return absl::OkStatus();
  if ((address.scheme == "redis" || address.scheme == "http") && !address.host.empty()) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "--compiler-cache-remote takes redis://HOST[:PORT], http://HOST[:PORT]/PATH or "
      "file:///DIR (ccache's remote storage), not '",
      url, "'"));
}

absl::Status ReachCompilerCacheRemote(const CompilerCacheRemote& remote, absl::Duration timeout) {
  const RemoteAddress address = ParseRemote(remote.url);
  if (address.scheme == "file") {
    std::error_code ec;
    if (fs::is_directory(address.path, ec)) return absl::OkStatus();
    return absl::UnavailableError(absl::StrCat(address.path, " is not a directory"));
  }
  return ConnectWithin(address.host, address.port, timeout);
}

std::optional<std::string> CompilerCacheRemoteWarning(const CompilerCacheRemote& remote) {
  if (!remote.enabled()) return std::nullopt;
  const absl::Status reached = ReachCompilerCacheRemote(remote, absl::Seconds(1));
  if (reached.ok()) return std::nullopt;
  return absl::StrCat("the compiler cache's remote storage ", remote.url,
                      " cannot be reached (", reached.message(),
                      "): builds compile with the local store only until it answers (ccache "
                      "counts each failed remote read as a remote error; `kbisect cache stats`)");
}

double CompilerCacheStats::HitRate() const {
  const int64_t compiles = hits + misses;
  return compiles == 0 ? 0.0 : static_cast<double>(hits) / static_cast<double>(compiles);
}

std::optional<CompilerCache> CompilerCache::Find(const std::string& cache_dir,
                                                 const std::map<std::string, std::string>& env,
                                                 CompilerCacheRemote remote) {
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
  return CompilerCache(ccache, bin, store, std::move(remote));
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
  if (remote_.enabled() && build_env.count("CCACHE_REMOTE_STORAGE") == 0) {
    vars["CCACHE_REMOTE_STORAGE"] = remote_.StorageValue();
  }
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
    } else if (fields[0] == "local_storage_hit") {
      stats.local_hits = value;
    } else if (fields[0] == "remote_storage_hit") {
      stats.remote_hits = value;
    } else if (fields[0] == "remote_storage_error" || fields[0] == "remote_storage_timeout") {
      stats.remote_errors += value;
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
