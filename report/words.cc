// Copyright 2026 The kbisect Authors.
#include "report/words.h"

#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/rpc/enum_label.h"
#include "common/text/count.h"

namespace kbisect {

std::string ShortSha(absl::string_view sha) { return std::string(sha.substr(0, 7)); }

std::string VerdictWord(v1::Verdict verdict, WordCase word_case) {
  const std::string word = verdict == v1::VERDICT_UNSPECIFIED ? "pending" : EnumLabel(verdict);
  return word_case == WordCase::kUpper ? absl::AsciiStrToUpper(word) : word;
}

std::string ProbeVerdictWord(const v1::Probe& probe) {
  if (probe.state() != v1::PROBE_STATE_FINISHED) return EnumLabel(probe.state());
  if (probe.kind() != v1::PROBE_KIND_BISECT) return "measured";
  if (probe.verdict() == v1::VERDICT_UNSPECIFIED) return "not needed";
  return VerdictWord(probe.verdict());
}

std::string MarksText(const google::protobuf::RepeatedPtrField<v1::CommitMark>& marks,
                      int commits_left) {
  std::vector<std::string> parts;
  for (const v1::CommitMark& mark : marks) {
    parts.push_back(absl::StrCat(ShortSha(mark.sha()), " ", VerdictWord(mark.verdict())));
  }
  return absl::StrCat("Marked by you (not measured): ", absl::StrJoin(parts, ", "), "; ",
                      Count(commits_left, "commit"), " left to search");
}

}  // namespace kbisect
