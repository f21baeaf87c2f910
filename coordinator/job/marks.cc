// Copyright 2026 The kbisect Authors.
#include "coordinator/job/marks.h"

#include <algorithm>
#include <map>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/rpc/enum_label.h"
#include "coordinator/job/probe_book.h"

namespace kbisect {
namespace {

bool IsHex(const std::string& text) {
  return !text.empty() &&
         std::all_of(text.begin(), text.end(), [](char c) { return absl::ascii_isxdigit(c); });
}

std::string Short(const std::string& sha) { return sha.substr(0, 12); }

}  // namespace

absl::StatusOr<std::vector<v1::CommitMark>> ResolveMarks(
    const v1::JobSpec& spec, const std::vector<v1::CommitRef>& commits) {
  std::map<int, v1::CommitMark> by_index;
  const int n = static_cast<int>(commits.size()) - 1;
  for (const v1::CommitMark& mark : spec.marks()) {
    const std::string given = absl::AsciiStrToLower(mark.commit());
    if (mark.verdict() != v1::VERDICT_GOOD && mark.verdict() != v1::VERDICT_BAD &&
        mark.verdict() != v1::VERDICT_SKIP) {
      return absl::InvalidArgumentError(absl::StrCat(
          "mark '", mark.commit(), "': the verdict must be good, bad or skip (SHA=good)"));
    }
    if (!IsHex(given) || given.size() < kMinMarkPrefix) {
      return absl::InvalidArgumentError(absl::StrCat(
          "mark '", mark.commit(), "': name the commit by its sha or a prefix of at least ",
          kMinMarkPrefix, " hex digits (`git log --first-parent --format=%h GOOD..BAD`)"));
    }
    int found = -1;
    for (int i = 0; i <= n; ++i) {
      if (!absl::StartsWith(absl::AsciiStrToLower(commits[i].sha()), given)) continue;
      if (found >= 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            "mark '", mark.commit(), "' matches several commits of the range (",
            Short(commits[found].sha()), ", ", Short(commits[i].sha()), "): give more digits"));
      }
      found = i;
    }
    if (found < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("mark '", mark.commit(), "': no commit of the range ",
                       Short(commits.front().sha()), "..", Short(commits.back().sha()),
                       " starts with it (marks name commits of the bisected first-parent range)"));
    }
    if (found == 0 || found == n) {
      return absl::InvalidArgumentError(absl::StrCat(
          "mark '", mark.commit(), "' names ", found == 0 ? "GOOD" : "BAD",
          ", an end of the range, which is always measured: move GOOD or BAD instead"));
    }
    auto [it, inserted] = by_index.try_emplace(found, mark);
    if (!inserted && it->second.verdict() != mark.verdict()) {
      return absl::InvalidArgumentError(
          absl::StrCat("commit ", Short(commits[found].sha()), " is marked both ",
                       EnumLabel(it->second.verdict()), " and ", EnumLabel(mark.verdict())));
    }
    it->second.set_sha(commits[found].sha());
    it->second.set_index(found);
  }
  int last_good = -1;
  int first_bad = -1;
  for (const auto& [index, mark] : by_index) {
    if (mark.verdict() == v1::VERDICT_GOOD) last_good = index;
    if (mark.verdict() == v1::VERDICT_BAD && first_bad < 0) first_bad = index;
  }
  if (last_good >= 0 && first_bad >= 0 && last_good > first_bad) {
    return absl::InvalidArgumentError(
        absl::StrCat("the marks contradict each other: ", Short(commits[last_good].sha()),
                     " is marked good but comes after ", Short(commits[first_bad].sha()),
                     ", marked bad (one step is bisected: good commits come before bad ones)"));
  }
  std::vector<v1::CommitMark> out;
  for (auto& [index, mark] : by_index) out.push_back(std::move(mark));
  return out;
}

bool IsMarked(const google::protobuf::RepeatedPtrField<v1::CommitMark>& marks, int index) {
  return std::any_of(marks.begin(), marks.end(),
                     [&](const v1::CommitMark& mark) { return mark.index() == index; });
}

void RecordMarks(const google::protobuf::RepeatedPtrField<v1::CommitMark>& marks,
                 BisectSearch* search) {
  for (const v1::CommitMark& mark : marks) {
    (void)search->Record(mark.index(), mark.verdict());
  }
}

}  // namespace kbisect
