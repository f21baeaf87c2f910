// Copyright 2026 The kbisect Authors.

#include "common/git/mirror.h"

#include <errno.h>
#include <fcntl.h>
#include <git2.h>
#include <sys/file.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <system_error>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "common/git/file_lock.h"
#include "common/git/libgit2_util.h"
#include "common/status_macros.h"
#include "common/text/fnv.h"

namespace kbisect {
namespace {

namespace fs = std::filesystem;

using git_internal::ConfigPtr;
using git_internal::Git2Error;
using git_internal::OpenExactly;
using git_internal::OwnedBuf;
using git_internal::ReferencePtr;
using git_internal::RemotePtr;
using git_internal::RepositoryPtr;

constexpr char kRemoteName[] = "origin";
constexpr char kMirrorRefspec[] = "+refs/*:refs/*";

// Where a source lives: a URL handed to libgit2 as is, or a local repository path (absolute).
struct Source {
  std::string url;
  bool local = false;
};

// Classifies `source` and makes local paths absolute and canonical.
absl::StatusOr<Source> NormalizeSource(const std::string& source) {
  if (source.empty()) return absl::InvalidArgumentError("empty repository source");
  if (absl::StrContains(source, "://")) {
    if (absl::StartsWith(source, "file://")) {
      return NormalizeSource(std::string(absl::StripPrefix(source, "file://")));
    }
    return Source{source, false};
  }
  std::error_code ec;
  fs::path canonical = fs::canonical(source, ec);
  if (!ec) return Source{canonical.string(), true};
  // scp-like syntax: [user@]host:path, with the ':' before any '/'.
  const size_t colon = source.find(':');
  if (colon != std::string::npos && colon > 0 && source.find('/') > colon) {
    return Source{source, false};
  }
  return absl::NotFoundError(absl::StrCat("source repository '", source,
                                          "' does not exist; pass a local repository path or a "
                                          "URL"));
}

// Supplies credentials for SSH sources from the ssh agent, a bounded number of times.
int AcquireCredentials(git_credential** out, const char* /*url*/, const char* username_from_url,
                       unsigned int allowed_types, void* payload) {
  int* attempts = static_cast<int*>(payload);
  if (++*attempts > 3) return GIT_PASSTHROUGH;
  const char* user = username_from_url != nullptr ? username_from_url : "git";
  if ((allowed_types & GIT_CREDENTIAL_USERNAME) != 0) return git_credential_username_new(out, user);
  if ((allowed_types & GIT_CREDENTIAL_SSH_KEY) != 0) {
    return git_credential_ssh_key_from_agent(out, user);
  }
  return GIT_PASSTHROUGH;
}

// Hard-links (or, across file systems, copies) every object file of `src` into `dst`, like
// `git clone --local`. Relative entries of objects/info/alternates are made absolute.
absl::Status CopyObjects(const fs::path& src, const fs::path& dst) {
  std::error_code ec;
  bool try_link = true;
  fs::recursive_directory_iterator it(src, fs::directory_options::skip_permission_denied, ec);
  if (ec) {
    return absl::InternalError(
        absl::StrCat("cannot read objects of '", src.string(), "': ", ec.message()));
  }
  for (const fs::directory_entry& entry : it) {
    const fs::path rel = entry.path().lexically_relative(src);
    const std::string name = entry.path().filename().string();
    if (entry.is_directory(ec)) {
      fs::create_directories(dst / rel, ec);
      if (ec)
        return absl::InternalError(absl::StrCat("cannot create '", (dst / rel).string(), "'"));
      continue;
    }
    if (!entry.is_regular_file(ec)) continue;
    if (absl::StartsWith(name, "tmp_") || absl::EndsWith(name, ".lock")) continue;
    if (rel == fs::path("info") / "alternates") {
      std::ifstream in(entry.path());
      std::ofstream out(dst / rel);
      std::string line;
      while (std::getline(in, line)) {
        if (!line.empty() && line[0] != '#' && line[0] != '/') line = (src / line).string();
        out << line << "\n";
      }
      continue;
    }
    if (try_link) {
      fs::create_hard_link(entry.path(), dst / rel, ec);
      if (!ec) continue;
      if (ec == std::errc::file_exists) continue;
      try_link = false;  // Another file system, or links not allowed: copy from now on.
    }
    fs::copy_file(entry.path(), dst / rel, fs::copy_options::overwrite_existing, ec);
    if (ec) {
      return absl::InternalError(absl::StrCat("cannot copy '", entry.path().string(), "' to '",
                                              (dst / rel).string(), "': ", ec.message()));
    }
  }
  return absl::OkStatus();
}

// The mirror's remote is kept as plain config (remote.origin.url and .fetch, as `git clone
// --mirror` writes them) and fetched through an anonymous remote. libgit2 1.5's
// git_remote_lookup and git_remote_create_with_fetchspec run its url.*.insteadOf glob over the
// config, and its PCRE2 matcher leaks about 20 KiB on every entry that does not match (fixed in
// libgit2 1.6): hundreds of KiB a fetch for the life of a worker or coordinator. The rewrite
// is applied here instead, without a regex (docs/decisions.md 80).

// Records `url` as the mirror's origin in `repo`'s config unless it is already.
absl::Status RecordOrigin(git_repository* repo, const std::string& url) {
  git_config* raw_config = nullptr;
  int rc = git_repository_config(&raw_config, repo);
  if (rc != 0) return Git2Error(rc, "cannot open the mirror's config");
  ConfigPtr config(raw_config);
  OwnedBuf current;
  const std::string url_key = absl::StrCat("remote.", kRemoteName, ".url");
  if (git_config_get_string_buf(current.get(), config.get(), url_key.c_str()) == 0 &&
      url == current.get()->ptr) {
    return absl::OkStatus();
  }
  if ((rc = git_config_set_string(config.get(), url_key.c_str(), url.c_str())) != 0 ||
      (rc = git_config_set_string(
           config.get(), absl::StrCat("remote.", kRemoteName, ".fetch").c_str(), kMirrorRefspec)) !=
          0) {
    return Git2Error(rc, "cannot record the mirror's remote");
  }
  return absl::OkStatus();
}

// Rewrites `url` by the longest matching url.<base>.insteadOf of `repo`'s config (repository,
// global and system), as git and git_remote_lookup do.
std::string ApplyInsteadOf(git_repository* repo, const std::string& url) {
  git_config* raw_config = nullptr;
  if (git_repository_config_snapshot(&raw_config, repo) != 0) return url;
  ConfigPtr config(raw_config);
  git_config_iterator* raw_it = nullptr;
  if (git_config_iterator_new(&raw_it, config.get()) != 0) return url;
  std::unique_ptr<git_config_iterator, void (*)(git_config_iterator*)> it(raw_it,
                                                                          git_config_iterator_free);
  std::string best_base;
  size_t best_length = 0;
  git_config_entry* entry = nullptr;
  while (git_config_next(&entry, it.get()) == 0) {
    // Names come normalised: section and key in lower case, the subsection (base) as written.
    const absl::string_view name(entry->name);
    if (!absl::StartsWith(name, "url.") || !absl::EndsWith(name, ".insteadof")) continue;
    const absl::string_view prefix(entry->value == nullptr ? "" : entry->value);
    if (prefix.size() <= best_length || !absl::StartsWith(url, prefix)) continue;
    best_base = std::string(name.substr(4, name.size() - 4 - std::strlen(".insteadof")));
    best_length = prefix.size();
  }
  return best_length == 0 ? url : absl::StrCat(best_base, url.substr(best_length));
}

// Fetches all refs of `source` into the mirror with pruning, recording it as the mirror's origin.
absl::Status FetchLocked(git_repository* repo, const Source& source) {
  RETURN_IF_ERROR(RecordOrigin(repo, source.url));
  git_remote_create_options create = GIT_REMOTE_CREATE_OPTIONS_INIT;
  create.repository = repo;
  create.flags = GIT_REMOTE_CREATE_SKIP_INSTEADOF | GIT_REMOTE_CREATE_SKIP_DEFAULT_FETCHSPEC;
  git_remote* raw_remote = nullptr;
  const std::string url = ApplyInsteadOf(repo, source.url);
  int rc = git_remote_create_with_opts(&raw_remote, url.c_str(), &create);
  if (rc != 0) return Git2Error(rc, "cannot set up the mirror's remote");
  RemotePtr remote(raw_remote);
  git_fetch_options options = GIT_FETCH_OPTIONS_INIT;
  int attempts = 0;
  options.callbacks.credentials = AcquireCredentials;
  options.callbacks.payload = &attempts;
  options.prune = GIT_FETCH_PRUNE;
  options.download_tags = GIT_REMOTE_DOWNLOAD_TAGS_ALL;
  const char* refspec = kMirrorRefspec;
  git_strarray refspecs = {const_cast<char**>(&refspec), 1};
  rc = git_remote_fetch(remote.get(), &refspecs, &options, "kbisect: mirror fetch");
  if (rc != 0) return Git2Error(rc, absl::StrCat("cannot fetch from '", source.url, "'"));
  return absl::OkStatus();
}

// Points the mirror's HEAD where the source's HEAD points, best effort.
void CopyHeadFromLocalSource(git_repository* mirror, const Source& source) {
  RepositoryPtr src = OpenExactly(source.url);
  if (src == nullptr) return;
  git_reference* raw = nullptr;
  if (git_reference_lookup(&raw, src.get(), "HEAD") != 0) return;
  ReferencePtr head(raw);
  if (git_reference_type(head.get()) == GIT_REFERENCE_SYMBOLIC) {
    git_repository_set_head(mirror, git_reference_symbolic_target(head.get()));
  }
}

// Builds a mirror of `source` in the empty-or-absent directory `partial`.
absl::Status BuildMirror(const Source& source, const std::string& partial) {
  git_repository* raw = nullptr;
  int rc = git_repository_init(&raw, partial.c_str(), /*is_bare=*/1);
  if (rc != 0) return Git2Error(rc, absl::StrCat("cannot create a repository at '", partial, "'"));
  RepositoryPtr repo(raw);

  git_config* raw_config = nullptr;
  rc = git_repository_config(&raw_config, repo.get());
  if (rc != 0) return Git2Error(rc, "cannot open the mirror's config");
  ConfigPtr config(raw_config);
  if ((rc = git_config_set_int32(config.get(), "gc.auto", 0)) != 0 ||
      (rc = git_config_set_bool(config.get(), "remote.origin.mirror", 1)) != 0) {
    return Git2Error(rc, "cannot write the mirror's config");
  }
  RETURN_IF_ERROR(RecordOrigin(repo.get(), source.url));

  if (source.local) {
    RepositoryPtr src = OpenExactly(source.url);
    if (src == nullptr) {
      return absl::FailedPreconditionError(absl::StrCat(
          "'", source.url, "' is not a git repository: ", git_internal::LastErrorMessage(),
          "; pass the top of a checkout or a .git / bare repository directory"));
    }
    OwnedBuf src_objects;
    OwnedBuf dst_objects;
    if ((rc = git_repository_item_path(src_objects.get(), src.get(),
                                       GIT_REPOSITORY_ITEM_OBJECTS)) != 0 ||
        (rc = git_repository_item_path(dst_objects.get(), repo.get(),
                                       GIT_REPOSITORY_ITEM_OBJECTS)) != 0) {
      return Git2Error(rc, "cannot locate object directories");
    }
    RETURN_IF_ERROR(CopyObjects(src_objects.str(), dst_objects.str()));
    // The copied objects are new to libgit2's object database cache.
    git_odb* raw_odb = nullptr;
    if (git_repository_odb(&raw_odb, repo.get()) == 0) {
      git_internal::OdbPtr odb(raw_odb);
      git_odb_refresh(odb.get());
    }
  }
  RETURN_IF_ERROR(FetchLocked(repo.get(), source));
  if (source.local) CopyHeadFromLocalSource(repo.get(), source);
  return absl::OkStatus();
}

// Builds a new mirror of `source` at `mirror_dir`. The caller holds the mirror's lock.
absl::Status CreateMirrorLocked(const Source& source, const std::string& mirror_dir) {
  const std::string partial = mirror_dir + ".partial";
  std::error_code ec;
  fs::remove_all(partial, ec);  // Left over from a crashed clone; we hold the lock.
  absl::Status built = BuildMirror(source, partial);
  if (!built.ok()) {
    fs::remove_all(partial, ec);
    return built;
  }
  fs::rename(partial, mirror_dir, ec);
  if (ec) {
    return absl::InternalError(absl::StrCat("cannot move the new mirror '", partial, "' to '",
                                            mirror_dir, "': ", ec.message()));
  }
  return absl::OkStatus();
}

// Returns the absolute, slash-free form of a mirror directory.
std::string MirrorPath(const std::string& mirror_dir) {
  return git_internal::StripTrailingSlash(fs::absolute(mirror_dir).lexically_normal().string());
}

// Returns OK if `dir` holds a bare repository, NotFound if `dir` does not exist, and
// FailedPrecondition if it exists but is not a bare repository.
absl::Status CheckMirror(const std::string& dir) {
  std::error_code ec;
  if (!fs::exists(dir, ec)) return absl::NotFoundError(absl::StrCat("no mirror at '", dir, "'"));
  RepositoryPtr repo = OpenExactly(dir);
  if (repo == nullptr || !git_repository_is_bare(repo.get())) {
    return absl::FailedPreconditionError(
        absl::StrCat("mirror directory '", dir,
                     "' exists but is not a bare git repository; remove it and retry"));
  }
  return absl::OkStatus();
}

// Implements EnsureMirror; sets *created when this call built the mirror.
absl::StatusOr<std::string> EnsureMirrorImpl(const Source& source, const std::string& mirror_dir,
                                             bool* created) {
  git_internal::EnsureLibgit2Initialized();
  *created = false;
  const std::string dir = MirrorPath(mirror_dir);
  absl::Status check = CheckMirror(dir);
  if (check.ok()) return dir;
  if (!absl::IsNotFound(check)) return check;

  std::error_code ec;
  fs::create_directories(fs::path(dir).parent_path(), ec);
  if (ec) {
    return absl::InternalError(
        absl::StrCat("cannot create the parent directory of '", dir, "': ", ec.message()));
  }
  ASSIGN_OR_RETURN(std::unique_ptr<FileLock> lock, FileLock::Acquire(dir + ".lock"));
  check = CheckMirror(dir);  // Another thread or process may have built it meanwhile.
  if (check.ok()) return dir;
  if (!absl::IsNotFound(check)) return check;
  RETURN_IF_ERROR(CreateMirrorLocked(source, dir));
  *created = true;
  return dir;
}

// Returns true if `repo` has commit `sha` (a full id).
bool RepoHasCommit(git_repository* repo, std::string_view sha) {
  absl::StatusOr<git_oid> oid = git_internal::ParseFullOid(sha);
  if (!oid.ok()) return false;
  git_odb* raw = nullptr;
  if (git_repository_odb(&raw, repo) != 0) return false;
  git_internal::OdbPtr odb(raw);
  size_t size = 0;
  git_object_t type = GIT_OBJECT_INVALID;
  if (git_odb_read_header(&size, &type, odb.get(), &*oid) != 0) return false;
  return type == GIT_OBJECT_COMMIT;
}

// Fetches into the mirror unless `wanted_sha` is non-empty and already present once the lock is
// held (someone else fetched it meanwhile).
absl::Status FetchImpl(const std::string& source_str, const std::string& mirror_dir,
                       std::string_view wanted_sha) {
  ASSIGN_OR_RETURN(Source source, NormalizeSource(source_str));
  bool created = false;
  ASSIGN_OR_RETURN(std::string dir, EnsureMirrorImpl(source, mirror_dir, &created));
  if (created) return absl::OkStatus();
  ASSIGN_OR_RETURN(std::unique_ptr<FileLock> lock, FileLock::Acquire(dir + ".lock"));
  // Every fetch holds the lock: ref lock files a killed fetch left behind would fail this one.
  RemoveStaleGitLocks(dir);
  RepositoryPtr repo = OpenExactly(dir);
  if (repo == nullptr) return Git2Error(-1, absl::StrCat("cannot open mirror '", dir, "'"));
  if (!wanted_sha.empty() && RepoHasCommit(repo.get(), wanted_sha)) return absl::OkStatus();
  return FetchLocked(repo.get(), source);
}

}  // namespace

absl::StatusOr<std::string> EnsureMirror(const std::string& source, const std::string& mirror_dir) {
  ASSIGN_OR_RETURN(Source normalized, NormalizeSource(source));
  bool created = false;
  return EnsureMirrorImpl(normalized, mirror_dir, &created);
}

absl::Status FetchIntoMirror(const std::string& source, const std::string& mirror_dir) {
  return FetchImpl(source, mirror_dir, "");
}

bool HasCommit(const std::string& mirror_dir, std::string_view sha) {
  git_internal::EnsureLibgit2Initialized();
  RepositoryPtr repo = OpenExactly(mirror_dir);
  return repo != nullptr && RepoHasCommit(repo.get(), sha);
}

absl::Status EnsureCommitInMirror(const std::string& source, const std::string& mirror_dir,
                                  std::string_view sha) {
  RETURN_IF_ERROR(git_internal::ParseFullOid(sha).status());
  ASSIGN_OR_RETURN(std::string dir, EnsureMirror(source, mirror_dir));
  if (HasCommit(dir, sha)) return absl::OkStatus();
  RETURN_IF_ERROR(FetchImpl(source, dir, sha));
  if (HasCommit(dir, sha)) return absl::OkStatus();
  return absl::NotFoundError(absl::StrCat("commit ", git_internal::ToAbsl(sha), " is not in '",
                                          source,
                                          "' even after a fetch; check that it was pushed and "
                                          "that the sha is right"));
}

std::string MirrorKey(const std::string& repository) {
  const uint64_t hash = Fnv1a64(repository);
  std::string base = repository;
  while (!base.empty() && (base.back() == '/' || base.back() == '\\')) base.pop_back();
  if (auto slash = base.find_last_of("/:"); slash != std::string::npos) {
    base = base.substr(slash + 1);
  }
  if (base.size() > 4 && base.substr(base.size() - 4) == ".git") base.resize(base.size() - 4);
  for (char& c : base) {
    const bool safe = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == '-' || c == '_' || c == '.';
    if (!safe) c = '_';
  }
  if (base.empty() || base[0] == '.') base = "repo" + base;
  return absl::StrFormat("%s-%016x", base.substr(0, 40), hash);
}

}  // namespace kbisect
