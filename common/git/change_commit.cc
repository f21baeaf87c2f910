// Copyright 2026 The kbisect Authors.
#include "common/git/change_commit.h"

#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <system_error>
#include <fstream>
#include <iterator>
#include <map>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/time.h"
#include "common/status_macros.h"

namespace kbisect {
namespace {

constexpr int kMaxLaterCommits = 20;

// Runs git with `args` in `cwd` (never prompting, never signing); `env` adds variables.
absl::StatusOr<ExecResult> Git(CommandRunner& runner, const std::string& cwd,
                               std::vector<std::string> args,
                               std::map<std::string, std::string> env = {}) {
  ExecRequest request;
  request.argv = {"git", "-c", "commit.gpgsign=false", "-c", "core.hooksPath=/dev/null"};
  request.argv.insert(request.argv.end(), args.begin(), args.end());
  request.cwd = cwd;
  env["GIT_TERMINAL_PROMPT"] = "0";
  request.env = std::move(env);
  request.timeout = absl::Minutes(10);
  return runner.Run(request);
}

// git's output of a command that must succeed, trimmed; Internal with its tail otherwise.
absl::StatusOr<std::string> GitOutput(CommandRunner& runner, const std::string& cwd,
                                      std::vector<std::string> args,
                                      std::map<std::string, std::string> env = {}) {
  const std::string what = absl::StrJoin(args, " ");
  ASSIGN_OR_RETURN(ExecResult r, Git(runner, cwd, std::move(args), std::move(env)));
  if (!r.ok()) {
    return absl::InternalError(
        absl::StrCat("git ", what, " in ", cwd, " ", r.Describe(), ": ", r.Tail(5)));
  }
  return std::string(absl::StripAsciiWhitespace(r.output));
}

// The full sha of commit `rev` in `repo`; InvalidArgument naming `what` when there is none.
absl::StatusOr<std::string> ResolveCommit(CommandRunner& runner, const std::string& repo,
                                          const std::string& rev, const char* what) {
  ASSIGN_OR_RETURN(ExecResult r, Git(runner, repo, {"rev-parse", "--verify", "--quiet",
                                                    absl::StrCat(rev, "^{commit}")}));
  const std::string sha(absl::StripAsciiWhitespace(r.output));
  if (!r.ok() || sha.size() != 40) {
    return absl::InvalidArgumentError(absl::StrCat(
        "unknown ", what, " '", rev, "' in ", repo, ": check `git log` for the commit you mean"));
  }
  return sha;
}

// A scratch directory removed with everything in it when the object goes.
class ScratchDir {
 public:
  ScratchDir() {
    std::string templ =
        (std::filesystem::temp_directory_path() / "kbisect-change-XXXXXX").string();
    if (mkdtemp(templ.data()) != nullptr) path_ = templ;
  }
  ~ScratchDir() {
    std::error_code ignored;
    if (!path_.empty()) std::filesystem::remove_all(path_, ignored);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// True when `sha` has more than one parent (a revert or pick then follows its first parent).
absl::StatusOr<bool> IsMerge(CommandRunner& runner, const std::string& repo,
                             const std::string& sha) {
  ASSIGN_OR_RETURN(std::string parents,
                   GitOutput(runner, repo, {"rev-list", "--parents", "-n", "1", sha}));
  return std::count(parents.begin(), parents.end(), ' ') > 1;
}

// The conflicted files of the scratch clone and the commits after `target` up to `base` that
// touched them.
absl::StatusOr<ChangeConflict> DescribeConflict(CommandRunner& runner, const std::string& repo,
                                                const std::string& scratch,
                                                const std::string& target,
                                                const std::string& base) {
  ChangeConflict conflict;
  ASSIGN_OR_RETURN(std::string files,
                   GitOutput(runner, scratch, {"diff", "--name-only", "--diff-filter=U"}));
  conflict.files = absl::StrSplit(files, '\n', absl::SkipEmpty());
  std::sort(conflict.files.begin(), conflict.files.end());
  if (conflict.files.empty()) return conflict;
  std::vector<std::string> args = {"log", "--format=%H %s", "-n",
                                   absl::StrCat(kMaxLaterCommits), absl::StrCat(target, "..", base),
                                   "--"};
  args.insert(args.end(), conflict.files.begin(), conflict.files.end());
  ASSIGN_OR_RETURN(std::string later, GitOutput(runner, repo, std::move(args)));
  for (absl::string_view line : absl::StrSplit(later, '\n', absl::SkipEmpty())) {
    conflict.later_commits.push_back(
        absl::StrCat(line.substr(0, 12), line.size() > 40 ? line.substr(40) : ""));
  }
  return conflict;
}

// Applies the patch at `patch` to the scratch clone's tree and index; InvalidArgument naming the
// file and hunk when it does not apply.
absl::Status ApplyPatch(CommandRunner& runner, const std::string& scratch,
                        const std::string& patch) {
  std::error_code error;
  const std::string absolute = std::filesystem::absolute(patch, error).string();
  ASSIGN_OR_RETURN(ExecResult r, Git(runner, scratch, {"apply", "--index", absolute}));
  if (r.ok()) return absl::OkStatus();
  std::ifstream in(absolute, std::ios::binary);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const ApplyFailure failure = ParseApplyFailure(r.output, text);
  std::string where = failure.file.empty() ? patch : failure.file;
  if (!failure.hunk.empty()) absl::StrAppend(&where, ": hunk ", failure.hunk);
  return absl::InvalidArgumentError(absl::StrCat(
      "the patch ", patch, " does not apply: ", where, " ",
      failure.what.empty() ? std::string(absl::StripAsciiWhitespace(r.Tail(3))) : failure.what,
      failure.line > 0 ? absl::StrCat(" at line ", failure.line) : "",
      "; rebase it on the base commit"));
}

// Applies `change` (of `target`, resolved) in the scratch clone. Returns the conflict of a
// revert or pick that did not apply cleanly, or nullopt when it applied.
absl::StatusOr<std::optional<ChangeConflict>> ApplyChange(CommandRunner& runner,
                                                          const std::string& repo,
                                                          const std::string& scratch,
                                                          const ChangeSpec& change,
                                                          const std::string& target,
                                                          const std::string& base) {
  if (change.kind == ChangeSpec::Kind::kPatch) {
    RETURN_IF_ERROR(ApplyPatch(runner, scratch, change.target));
    return std::optional<ChangeConflict>();
  }
  std::vector<std::string> args = {change.kind == ChangeSpec::Kind::kRevert ? "revert"
                                                                            : "cherry-pick",
                                   "--no-commit"};
  ASSIGN_OR_RETURN(bool merge, IsMerge(runner, repo, target));
  if (merge) args.insert(args.end(), {"-m", "1"});
  args.push_back(target);
  ASSIGN_OR_RETURN(ExecResult r, Git(runner, scratch, std::move(args)));
  if (r.ok()) return std::optional<ChangeConflict>();
  ASSIGN_OR_RETURN(ChangeConflict conflict,
                   DescribeConflict(runner, repo, scratch, target, base));
  if (conflict.files.empty()) {
    return absl::InternalError(absl::StrCat("git ", ChangeSpec::KindName(change.kind), " of ",
                                            target, " on ", base, " ", r.Describe(), ": ",
                                            r.Tail(5)));
  }
  return std::optional<ChangeConflict>(std::move(conflict));
}

// A short digest naming the change in its ref: the target's sha, or the patch's blob id.
absl::StatusOr<std::string> ChangeDigest(CommandRunner& runner, const std::string& repo,
                                         const ChangeSpec& change, const std::string& target) {
  if (change.kind != ChangeSpec::Kind::kPatch) return target.substr(0, 12);
  std::error_code error;
  ASSIGN_OR_RETURN(std::string blob,
                   GitOutput(runner, repo,
                             {"hash-object", std::filesystem::absolute(change.target, error)}));
  return blob.substr(0, 12);
}

// Commits the scratch clone's index as kbisect, dated like `base`, and pushes it to `ref` of the
// repository. Returns the commit's sha.
absl::StatusOr<std::string> CommitAndPush(CommandRunner& runner, const std::string& scratch,
                                          const std::string& base, const std::string& subject,
                                          const std::string& ref) {
  ASSIGN_OR_RETURN(std::string date, GitOutput(runner, scratch, {"log", "-1", "--format=%cI", base}));
  const std::map<std::string, std::string> env = {
      {"GIT_AUTHOR_NAME", "kbisect"},       {"GIT_AUTHOR_EMAIL", "kbisect@localhost"},
      {"GIT_COMMITTER_NAME", "kbisect"},    {"GIT_COMMITTER_EMAIL", "kbisect@localhost"},
      {"GIT_AUTHOR_DATE", date},            {"GIT_COMMITTER_DATE", date}};
  RETURN_IF_ERROR(
      GitOutput(runner, scratch, {"commit", "-q", "--no-verify", "-m", subject}, env).status());
  ASSIGN_OR_RETURN(std::string sha, GitOutput(runner, scratch, {"rev-parse", "HEAD"}));
  RETURN_IF_ERROR(GitOutput(runner, scratch,
                            {"push", "-q", "--force", "origin", absl::StrCat("HEAD:", ref)})
                      .status());
  return sha;
}

}  // namespace

const char* ChangeSpec::KindName(Kind kind) {
  switch (kind) {
    case Kind::kRevert:
      return "revert";
    case Kind::kCommit:
      return "commit";
    case Kind::kPatch:
      return "patch";
  }
  return "change";
}

ApplyFailure ParseApplyFailure(absl::string_view apply_output, absl::string_view patch_text) {
  ApplyFailure failure;
  for (absl::string_view line : absl::StrSplit(apply_output, '\n', absl::SkipEmpty())) {
    if (!absl::ConsumePrefix(&line, "error: ")) continue;
    if (absl::ConsumePrefix(&line, "patch failed: ")) {
      const size_t colon = line.rfind(':');
      if (colon != absl::string_view::npos && absl::SimpleAtoi(line.substr(colon + 1), &failure.line)) {
        failure.file = std::string(line.substr(0, colon));
      }
      continue;
    }
    const size_t colon = line.find(": ");
    if (colon == absl::string_view::npos) continue;
    if (failure.file.empty()) failure.file = std::string(line.substr(0, colon));
    if (failure.what.empty() && line.substr(0, colon) == failure.file) {
      failure.what = std::string(line.substr(colon + 2));
    }
  }
  if (failure.file.empty() || failure.line <= 0) return failure;
  // The hunk of that file whose old range starts at that line.
  bool in_file = false;
  for (absl::string_view line : absl::StrSplit(patch_text, '\n')) {
    if (absl::StartsWith(line, "--- ") || absl::StartsWith(line, "+++ ")) {
      absl::string_view path = absl::StripAsciiWhitespace(line.substr(4));
      if (!absl::ConsumePrefix(&path, "a/")) absl::ConsumePrefix(&path, "b/");
      if (absl::StartsWith(line, "--- ")) in_file = path == failure.file;
      if (absl::StartsWith(line, "+++ ")) in_file = in_file || path == failure.file;
      continue;
    }
    if (!in_file || !absl::StartsWith(line, "@@ -")) continue;
    absl::string_view range = line.substr(4);
    int start = 0;
    if (!absl::SimpleAtoi(range.substr(0, range.find_first_of(", ")), &start)) continue;
    if (start == failure.line) {
      const size_t end = line.find(" @@");
      failure.hunk = std::string(end == absl::string_view::npos ? line : line.substr(0, end + 3));
      break;
    }
  }
  return failure;
}

absl::StatusOr<ChangeCommit> MakeChangeCommit(CommandRunner& runner, const std::string& repository,
                                              const std::string& base, const ChangeSpec& change) {
  // The scratch clone runs elsewhere: a relative path is made absolute first.
  std::error_code error;
  const std::string repo = std::filesystem::exists(repository, error)
                               ? std::filesystem::absolute(repository, error).string()
                               : repository;
  ChangeCommit made;
  ASSIGN_OR_RETURN(made.base, ResolveCommit(runner, repo, base, "base commit"));
  if (change.kind == ChangeSpec::Kind::kPatch) {
    if (!std::filesystem::is_regular_file(change.target)) {
      return absl::InvalidArgumentError(
          absl::StrCat("the patch ", change.target, " is not a readable file"));
    }
    made.target = change.target;
  } else {
    ASSIGN_OR_RETURN(made.target, ResolveCommit(runner, repo, change.target,
                                                change.kind == ChangeSpec::Kind::kRevert
                                                    ? "commit to revert"
                                                    : "commit to apply"));
  }
  made.description =
      absl::StrCat(ChangeSpec::KindName(change.kind), " of ",
                   change.kind == ChangeSpec::Kind::kPatch ? made.target : made.target.substr(0, 12),
                   " on ", made.base.substr(0, 12));
  ScratchDir scratch;
  if (scratch.path().empty()) return absl::InternalError("cannot create a scratch directory");
  const std::string clone = scratch.path() + "/clone";
  RETURN_IF_ERROR(
      GitOutput(runner, scratch.path(), {"clone", "-q", "--shared", "--no-checkout", repo, clone})
          .status());
  RETURN_IF_ERROR(GitOutput(runner, clone, {"checkout", "-q", "--detach", made.base}).status());
  ASSIGN_OR_RETURN(made.conflict,
                   ApplyChange(runner, repo, clone, change, made.target, made.base));
  if (made.conflict.has_value()) return made;
  ASSIGN_OR_RETURN(ExecResult unchanged, Git(runner, clone, {"diff", "--cached", "--quiet"}));
  if (unchanged.exit_code == 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("the ", made.description, " changes nothing: the base already has it"));
  }
  ASSIGN_OR_RETURN(std::string digest, ChangeDigest(runner, repo, change, made.target));
  made.ref = absl::StrCat("refs/kbisect/try/", made.base.substr(0, 12), "-",
                          ChangeSpec::KindName(change.kind), "-", digest);
  ASSIGN_OR_RETURN(made.sha,
                   CommitAndPush(runner, clone, made.base,
                                 absl::StrCat("kbisect try: ", made.description), made.ref));
  return made;
}

}  // namespace kbisect
