// Copyright 2026 The kbisect Authors.

#include "common/git/submodules.h"

#include <git2.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <set>
#include <system_error>
#include <utility>

#include "absl/strings/cord.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "common/git/libgit2_util.h"
#include "common/git/mirror.h"
#include "common/git/worktree.h"
#include "common/status_macros.h"

namespace kbisect {
namespace {

namespace fs = std::filesystem;

using git_internal::ConfigPtr;
using git_internal::Git2Error;
using git_internal::ObjectPtr;
using git_internal::OpenExactly;
using git_internal::OwnedBuf;
using git_internal::RepositoryPtr;
using git_internal::TreePtr;

// The payload type that marks an error the commit causes (IsUnfetchableSubmodule).
constexpr char kUnfetchablePayload[] = "type.kbisect.dev/unfetchable-submodule";

// Deeper nesting than this is taken for a loop (a submodule that contains itself).
constexpr int kMaxDepth = 16;

using TreeEntryPtr =
    std::unique_ptr<git_tree_entry, git_internal::Git2Deleter<git_tree_entry, git_tree_entry_free>>;
using BlobPtr = std::unique_ptr<git_blob, git_internal::Git2Deleter<git_blob, git_blob_free>>;

// Marks `status` as caused by the commit.
absl::Status Unfetchable(absl::Status status) {
  status.SetPayload(kUnfetchablePayload, absl::Cord("1"));
  return status;
}

// A temporary file holding `contents`, deleted on destruction.
class TempFile {
 public:
  static absl::StatusOr<std::unique_ptr<TempFile>> Write(std::string_view contents) {
    const char* tmpdir = getenv("TMPDIR");
    std::string name =
        absl::StrCat(tmpdir != nullptr && *tmpdir != '\0' ? tmpdir : "/tmp", "/kbisect-XXXXXX");
    const int fd = mkstemp(name.data());
    if (fd < 0) return absl::InternalError(absl::StrCat("cannot create '", name, "'"));
    auto file = std::unique_ptr<TempFile>(new TempFile(name));
    size_t written = 0;
    while (written < contents.size()) {
      const ssize_t n = write(fd, contents.data() + written, contents.size() - written);
      if (n <= 0) {
        close(fd);
        return absl::InternalError(absl::StrCat("cannot write '", name, "'"));
      }
      written += static_cast<size_t>(n);
    }
    close(fd);
    return file;
  }
  ~TempFile() { unlink(path_.c_str()); }
  const std::string& path() const { return path_; }

 private:
  explicit TempFile(std::string path) : path_(std::move(path)) {}
  const std::string path_;
};

// The (name, path, url) entries of a .gitmodules file's contents. libgit2 1.5 parses config
// files only from disk, so the blob goes through a temporary file.
struct ModuleEntry {
  std::string name;
  std::string path;
  std::string url;
};
absl::StatusOr<std::vector<ModuleEntry>> ParseGitmodules(std::string_view contents,
                                                         const std::string& where) {
  ASSIGN_OR_RETURN(std::unique_ptr<TempFile> file, TempFile::Write(contents));
  git_config* raw = nullptr;
  int rc = git_config_open_ondisk(&raw, file->path().c_str());
  if (rc != 0) {
    return absl::InvalidArgumentError(absl::StrCat("cannot parse the .gitmodules of ", where, ": ",
                                                   git_internal::LastErrorMessage()));
  }
  ConfigPtr config(raw);
  std::vector<std::pair<std::string, std::string>> names_and_paths;
  // Every entry, filtered here: libgit2's regex matching (git_config_foreach_match, through
  // PCRE2) leaks its match data on Debian's libgit2 1.5, which LeakSanitizer reports.
  rc = git_config_foreach(
      config.get(),
      [](const git_config_entry* entry, void* payload) {
        std::string_view key = entry->name;
        constexpr std::string_view kPrefix = "submodule.";
        constexpr std::string_view kSuffix = ".path";
        if (key.size() <= kPrefix.size() + kSuffix.size() ||
            key.substr(0, kPrefix.size()) != kPrefix ||
            key.substr(key.size() - kSuffix.size()) != kSuffix) {
          return 0;
        }
        key.remove_prefix(kPrefix.size());
        key.remove_suffix(kSuffix.size());
        static_cast<std::vector<std::pair<std::string, std::string>>*>(payload)->emplace_back(
            std::string(key), entry->value != nullptr ? entry->value : "");
        return 0;
      },
      &names_and_paths);
  if (rc != 0) return Git2Error(rc, absl::StrCat("cannot read the .gitmodules of ", where));
  std::vector<ModuleEntry> entries;
  for (auto& [name, path] : names_and_paths) {
    ModuleEntry entry{name, git_internal::StripTrailingSlash(path), ""};
    while (absl::StartsWith(entry.path, "./")) entry.path.erase(0, 2);
    OwnedBuf url;
    if (git_config_get_string_buf(url.get(), config.get(),
                                  absl::StrCat("submodule.", name, ".url").c_str()) == 0) {
      entry.url = url.str();
    }
    entries.push_back(std::move(entry));
  }
  return entries;
}

// What ListSubmodules reads from `repo`.
absl::StatusOr<std::vector<SubmoduleRef>> ListIn(git_repository* repo, std::string_view sha,
                                                 const std::string& where) {
  const std::string rev(sha);
  git_object* raw = nullptr;
  int rc = git_revparse_single(&raw, repo, (rev + "^{commit}").c_str());
  ObjectPtr commit(raw);
  if (rc != 0) {
    return absl::NotFoundError(absl::StrCat("commit ", rev, " is not in ", where));
  }
  git_tree* raw_tree = nullptr;
  rc = git_commit_tree(&raw_tree, reinterpret_cast<git_commit*>(commit.get()));
  if (rc != 0) return Git2Error(rc, absl::StrCat("cannot read the tree of ", rev));
  TreePtr tree(raw_tree);
  const git_tree_entry* modules_entry = git_tree_entry_byname(tree.get(), ".gitmodules");
  if (modules_entry == nullptr || git_tree_entry_type(modules_entry) != GIT_OBJECT_BLOB) {
    return std::vector<SubmoduleRef>();
  }
  git_blob* raw_blob = nullptr;
  rc = git_blob_lookup(&raw_blob, repo, git_tree_entry_id(modules_entry));
  if (rc != 0) return Git2Error(rc, absl::StrCat("cannot read the .gitmodules of ", rev));
  BlobPtr blob(raw_blob);
  const std::string_view contents(static_cast<const char*>(git_blob_rawcontent(blob.get())),
                                  static_cast<size_t>(git_blob_rawsize(blob.get())));
  ASSIGN_OR_RETURN(std::vector<ModuleEntry> entries,
                   ParseGitmodules(contents, absl::StrCat("commit ", rev)));
  std::vector<SubmoduleRef> refs;
  for (ModuleEntry& entry : entries) {
    if (entry.path.empty()) continue;
    git_tree_entry* raw_entry = nullptr;
    if (git_tree_entry_bypath(&raw_entry, tree.get(), entry.path.c_str()) != 0) continue;
    TreeEntryPtr gitlink(raw_entry);
    if (git_tree_entry_filemode(gitlink.get()) != GIT_FILEMODE_COMMIT) continue;
    refs.push_back(SubmoduleRef{std::move(entry.name), std::move(entry.path), std::move(entry.url),
                                git_internal::OidToString(*git_tree_entry_id(gitlink.get()))});
  }
  std::sort(refs.begin(), refs.end(),
            [](const SubmoduleRef& a, const SubmoduleRef& b) { return a.path < b.path; });
  return refs;
}

bool IsUrl(const std::string& location) { return absl::StrContains(location, "://"); }

}  // namespace

absl::StatusOr<std::vector<SubmoduleRef>> ListSubmodules(const std::string& repository_dir,
                                                         std::string_view sha) {
  git_internal::EnsureLibgit2Initialized();
  RepositoryPtr repo = OpenExactly(repository_dir);
  if (repo == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat("'", repository_dir, "' is not a git repository"));
  }
  return ListIn(repo.get(), sha, absl::StrCat("'", repository_dir, "'"));
}

absl::StatusOr<std::string> ResolveSubmoduleUrl(std::string_view base_view,
                                                std::string_view url_view) {
  const absl::string_view base = git_internal::ToAbsl(base_view);
  const absl::string_view url = git_internal::ToAbsl(url_view);
  if (!absl::StartsWith(url, "./") && !absl::StartsWith(url, "../")) return std::string(url);
  absl::string_view rest = url;
  absl::string_view stem = base;
  while (stem.size() > 1 && stem.back() == '/') stem.remove_suffix(1);
  // Where the scheme's "//" ends ("https://host" keeps "https://"), so a ".." never eats into it.
  const size_t scheme = stem.find("://");
  const size_t floor = scheme == absl::string_view::npos ? 0 : scheme + 3;
  // An scp-like "host:path" (no scheme, a ':' before any '/') joins its first component with ':'.
  const size_t colon = stem.find(':');
  const bool scp = scheme == absl::string_view::npos && colon != absl::string_view::npos &&
                   stem.find('/') > colon;
  char separator = '/';
  while (true) {
    if (absl::StartsWith(rest, "./")) {
      rest.remove_prefix(2);
    } else if (absl::StartsWith(rest, "../")) {
      rest.remove_prefix(3);
      const size_t slash = stem.rfind('/');
      if (slash != absl::string_view::npos && slash >= floor && slash > (scp ? colon : 0)) {
        stem = stem.substr(0, slash);
      } else if (slash == 0 && floor == 0 && !scp && stem.size() > 1) {
        stem = "";  // "/super" + "../dep" = "/dep".
      } else if (scp && colon < stem.size() - 1) {
        stem = stem.substr(0, colon);
        separator = ':';
      } else {
        return absl::InvalidArgumentError(
            absl::StrCat("the submodule URL '", url, "' climbs above the root of '", base, "'"));
      }
    } else {
      break;
    }
  }
  return absl::StrCat(stem, std::string(1, separator), rest);
}

std::string SubmoduleBaseUrl(const std::string& repository) {
  if (IsUrl(repository)) return repository;
  git_internal::EnsureLibgit2Initialized();
  RepositoryPtr repo = OpenExactly(repository);
  if (repo == nullptr) return repository;
  git_config* raw = nullptr;
  if (git_repository_config_snapshot(&raw, repo.get()) != 0) return repository;
  ConfigPtr config(raw);
  const char* url = nullptr;
  if (git_config_get_string(&url, config.get(), "remote.origin.url") != 0 || url == nullptr ||
      *url == '\0') {
    return repository;
  }
  return url;
}

bool IsUnfetchableSubmodule(const absl::Status& status) {
  return !status.ok() && status.GetPayload(kUnfetchablePayload).has_value();
}

SubmoduleCheckout::SubmoduleCheckout(std::string mirrors_dir)
    : mirrors_dir_(std::move(mirrors_dir)) {}

absl::Status SubmoduleCheckout::CheckOut(Worktree& tree, const std::string& repository,
                                         std::string_view sha) const {
  return CheckOutAt(tree, repository, "", sha, "", "", 0, nullptr);
}

absl::Status SubmoduleCheckout::CheckOut(Worktree& tree, const std::string& repository,
                                         std::string_view sha, const Overrides& overrides) const {
  return CheckOutAt(tree, repository, "", sha, "", "", 0, &overrides);
}

absl::Status SubmoduleCheckout::CheckOutAt(Worktree& tree, const std::string& repository,
                                           std::string base, std::string_view sha,
                                           const std::string& prefix, const std::string& located,
                                           int depth, const Overrides* overrides) const {
  // The errors of a submodule's own checkout name it; the superproject's are Worktree's.
  auto own = [&](const absl::Status& status) {
    if (located.empty() || status.ok()) return status;
    return absl::Status(status.code(),
                        absl::StrCat("cannot check out ", located, ": ", status.message()));
  };
  const std::string root = tree.path();
  // Directories of the submodules the commit checked out now does not have at the same path go
  // first: otherwise files the new commit has there would land in a nested repository.
  const std::string old_head = tree.head();
  std::vector<SubmoduleRef> old_refs;
  if (!old_head.empty() && old_head != sha) {
    absl::StatusOr<std::vector<SubmoduleRef>> listed = ListSubmodules(root, old_head);
    if (listed.ok()) old_refs = *std::move(listed);  // An unreadable old state is overwritten.
  }
  absl::StatusOr<std::vector<SubmoduleRef>> refs;
  if (!old_refs.empty()) {
    refs = ListSubmodules(root, sha);
    if (!refs.ok()) return own(refs.status());
    std::set<std::string> kept;
    for (const SubmoduleRef& ref : *refs) kept.insert(ref.path);
    for (const SubmoduleRef& old : old_refs) {
      if (kept.count(old.path) > 0) continue;
      std::error_code ec;
      fs::remove_all(fs::path(root) / old.path, ec);
      if (ec) {
        return absl::InternalError(absl::StrCat("cannot remove the old submodule '", prefix,
                                                old.path, "': ", ec.message()));
      }
    }
  }
  RETURN_IF_ERROR(own(tree.Checkout(sha)));
  if (old_refs.empty()) refs = ListSubmodules(root, sha);
  if (!refs.ok()) return own(refs.status());
  if (refs->empty()) return absl::OkStatus();
  if (depth >= kMaxDepth) {
    return Unfetchable(absl::InvalidArgumentError(
        absl::StrCat("submodules nest more than ", kMaxDepth, " levels deep under '", prefix,
                     "': is a submodule its own submodule?")));
  }
  if (base.empty()) base = SubmoduleBaseUrl(repository);
  const std::string parent =
      prefix.empty() ? std::string("the superproject")
                     : absl::StrCat("submodule '", prefix.substr(0, prefix.size() - 1), "'");
  for (const SubmoduleRef& ref : *refs) {
    const std::string path = absl::StrCat(prefix, ref.path);
    // A dependency follow-up's probe checks this one out at another commit (Overrides).
    const Override* forced = nullptr;
    if (overrides != nullptr) {
      auto it = overrides->find(path);
      if (it != overrides->end()) forced = &it->second;
    }
    if (ref.url.empty() && forced == nullptr) continue;  // Nowhere to fetch it from, like git.
    const std::string& sub_sha = forced != nullptr ? forced->sha : ref.sha;
    const std::string short_sha = sub_sha.substr(0, 12);
    absl::StatusOr<std::string> url =
        forced != nullptr ? forced->repository : ResolveSubmoduleUrl(base, ref.url);
    if (!url.ok()) {
      return Unfetchable(absl::InvalidArgumentError(
          absl::StrCat("submodule '", path, "' (URL '", ref.url, "' in the .gitmodules of ", parent,
                       ") at commit ", short_sha, " cannot be fetched: ", url.status().message())));
    }
    const std::string sub_located =
        absl::StrCat("submodule '", path, "' at commit ", short_sha, " from '", *url, "'");
    auto failed = [&](const absl::Status& status) {
      const std::string message =
          absl::StrCat(sub_located, " cannot be fetched: ", status.message());
      if (absl::IsNotFound(status) || absl::IsInvalidArgument(status)) {
        return Unfetchable(absl::Status(status.code(), message));
      }
      return absl::Status(status.code(), message);
    };
    const std::string mirror_dir = absl::StrCat(mirrors_dir_, "/", MirrorKey(*url), ".git");
    absl::StatusOr<std::string> mirror = EnsureMirror(*url, mirror_dir);
    if (!mirror.ok()) return failed(mirror.status());
    absl::Status fetched = EnsureCommitInMirror(*url, *mirror, sub_sha);
    if (!fetched.ok()) return failed(fetched);
    absl::StatusOr<std::unique_ptr<Worktree>> sub =
        Worktree::OpenOrCreate(*mirror, (fs::path(root) / ref.path).string());
    if (!sub.ok()) {
      return absl::Status(sub.status().code(), absl::StrCat("cannot check out ", sub_located, ": ",
                                                            sub.status().message()));
    }
    RETURN_IF_ERROR(
        CheckOutAt(**sub, *url, *url, sub_sha, path + "/", sub_located, depth + 1, overrides));
  }
  return absl::OkStatus();
}

}  // namespace kbisect
