// Copyright 2026 The kbisect Authors.
#include "report/submodule_bump.h"

#include "absl/strings/str_cat.h"
#include "common/text/count.h"

namespace kbisect {
namespace {

std::string BumpSha(const std::string& sha) { return sha.substr(0, 7); }

}  // namespace

std::string DescribeSubmoduleBump(const v1::SubmoduleBump& bump) {
  std::string out;
  if (bump.old_sha().empty()) {
    out = absl::StrCat(bump.path(), " added at ", BumpSha(bump.new_sha()));
  } else if (bump.new_sha().empty()) {
    out = absl::StrCat(bump.path(), " removed (was ", BumpSha(bump.old_sha()), ")");
  } else {
    out = absl::StrCat(bump.path(), bump.backwards() ? " moved back " : " bumped ",
                       BumpSha(bump.old_sha()), " -> ", BumpSha(bump.new_sha()));
    if (bump.error().empty()) {
      absl::StrAppend(&out, " (", Count(bump.commit_count(), "commit"),
                      bump.backwards() ? " undone)" : ")");
    }
  }
  if (!bump.url().empty()) absl::StrAppend(&out, ", from ", bump.url());
  if (!bump.error().empty()) absl::StrAppend(&out, "; its commits are unknown: ", bump.error());
  return out;
}

std::vector<std::string> SubmoduleBumpCommitLines(const v1::SubmoduleBump& bump) {
  std::vector<std::string> lines;
  const int listed = bump.commits_size();
  const int left_out = bump.commit_count() - listed;
  for (int i = 0; i < listed; ++i) {
    if (left_out > 0 && i == listed / 2) {
      lines.push_back(absl::StrCat("... ", Count(left_out, "more commit"), " ..."));
    }
    const v1::CommitRef& commit = bump.commits(i);
    lines.push_back(absl::StrCat(BumpSha(commit.sha()), " ", commit.subject()));
  }
  return lines;
}

}  // namespace kbisect
