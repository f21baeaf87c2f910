// Copyright 2026 The kbisect Authors.
#include "report/words.h"

#include <cmath>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/metric/percent.h"
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

std::string CulpritHeading(const v1::JobSpec& spec) {
  return spec.find_fix() ? "Fixed by" : "Regression introduced by";
}

std::string TryResultWords(const v1::JobStatus& job) {
  const v1::Confirmation& c = job.confirmation();
  if (c.ratio() == 0) return "not measured";
  const int pairs = c.fresh_pairs() + c.reused_pairs();
  const std::string interval = absl::StrFormat("95%% CI %.4g to %.4g, %s", c.ci_low(), c.ci_high(),
                                               Count(pairs, "pair"));
  if (!c.confirmed()) {
    return absl::StrFormat("no significant difference: x%.4g (%s)", c.ratio(), interval);
  }
  const double pct = 100 * (c.ratio() - 1);
  const bool better = job.direction() == v1::DIRECTION_HIGHER_IS_BETTER ? pct > 0 : pct < 0;
  const std::string metric = job.metric_name().empty() ? "the metric" : job.metric_name();
  return absl::StrFormat("%s %s %s with the change, %s (x%.4g, %s): significant", metric,
                         FormatPercent(std::fabs(pct)), pct < 0 ? "lower" : "higher",
                         better ? "better" : "worse", c.ratio(), interval);
}

}  // namespace kbisect
