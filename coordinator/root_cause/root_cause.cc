// Copyright 2026 The kbisect Authors.
//
// The fold: runs every detector of the pattern table on every hunk of the analysed patch, folds
// each hunk's findings into at most one hint per pattern, and ranks the hints into a hypothesis.
#include "coordinator/root_cause/root_cause.h"

#include <algorithm>
#include <set>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "absl/types/span.h"
#include "coordinator/root_cause/code_hunks.h"
#include "coordinator/root_cause/pattern_table.h"

namespace kbisect {
namespace {

using root_cause_internal::File;
using root_cause_internal::Finding;
using root_cause_internal::Hunk;
using root_cause_internal::Line;
using root_cause_internal::PatternRow;
using root_cause_internal::PatternTable;

// A finding with the row of the pattern table that made it.
struct Match {
  int pattern = 0;
  Finding finding;
};

// Runs every row's detector on `hunk`, in table order.
std::vector<Match> FindHunkMatches(const std::vector<File>& files, const File& file,
                                   const Hunk& hunk) {
  std::vector<Match> matches;
  const absl::Span<const PatternRow> table = PatternTable();
  for (int pattern = 0; pattern < static_cast<int>(table.size()); ++pattern) {
    for (Finding& finding : table[pattern].detect(files, file, hunk)) {
      matches.push_back({pattern, std::move(finding)});
    }
  }
  return matches;
}

// Folds the matches of one hunk into at most one hint per pattern, in line order.
std::vector<v1::RootCauseHint> HintsForHunk(const File& file, const Hunk& hunk,
                                            std::vector<Match> matches) {
  struct Group {
    int pattern;
    const Match* best = nullptr;
    std::vector<std::string> details;
  };
  std::vector<Group> groups;
  std::stable_sort(matches.begin(), matches.end(),
                   [](const Match& a, const Match& b) { return a.finding.line < b.finding.line; });
  for (const Match& match : matches) {
    auto it = std::find_if(groups.begin(), groups.end(),
                           [&](const Group& g) { return g.pattern == match.pattern; });
    if (it == groups.end()) {
      groups.push_back({match.pattern, &match, {}});
      it = groups.end() - 1;
    } else if (match.finding.strength > it->best->finding.strength) {
      it->best = &match;
    }
    const std::string& detail = match.finding.detail;
    if (!detail.empty() &&
        std::find(it->details.begin(), it->details.end(), detail) == it->details.end()) {
      it->details.push_back(detail);
    }
  }
  std::stable_sort(groups.begin(), groups.end(), [](const Group& a, const Group& b) {
    if (a.best->finding.line != b.best->finding.line) {
      return a.best->finding.line < b.best->finding.line;
    }
    return a.pattern < b.pattern;
  });
  std::vector<v1::RootCauseHint> hints;
  for (Group& group : groups) {
    const Finding& best = group.best->finding;
    const PatternRow& row = PatternTable()[group.pattern];
    const Line& line = hunk.lines[best.line];
    // The strongest match's detail leads.
    auto lead = std::find(group.details.begin(), group.details.end(), best.detail);
    if (lead != group.details.end()) std::rotate(group.details.begin(), lead, lead + 1);
    constexpr size_t kMaxDetails = 3;
    std::string details;
    if (group.details.size() > kMaxDetails) {
      details = absl::StrCat(
          absl::StrJoin(group.details.begin(), group.details.begin() + kMaxDetails, ", "), ", and ",
          group.details.size() - kMaxDetails, " more");
    } else {
      details = absl::StrJoin(group.details, ", ");
    }
    v1::RootCauseHint hint;
    hint.set_pattern(row.name);
    const std::string cause = best.cause.empty() ? row.cause : best.cause;
    hint.set_likely_cause(details.empty() ? cause : absl::StrCat(cause, " (", details, ")"));
    hint.set_file(file.path);
    hint.set_hunk_header(hunk.header);
    hint.set_line(absl::StrCat(std::string(1, line.kind), absl::StripAsciiWhitespace(line.raw)));
    hints.push_back(std::move(hint));
  }
  return hints;
}

// Rank of a hint for the hypothesis: lower is a more specific, more likely explanation.
int Rank(const v1::RootCauseHint& hint) {
  static const char* const kOrder[] = {
      kPatternLoopBounds, kPatternTileSizes,  kPatternDtype,    kPatternNumStages,
      kPatternNumWarps,   kPatternWavesPerEu, kPatternPrefetch, kPatternSynchronization,
      kPatternMemoryOps,  kPatternLayout,     kPatternMasking,
  };
  constexpr int kCount = sizeof(kOrder) / sizeof(kOrder[0]);
  for (int i = 0; i < kCount; ++i) {
    if (hint.pattern() != kOrder[i]) continue;
    if (hint.pattern() == kPatternMemoryOps && absl::StartsWith(hint.likely_cause(), "Possibly")) {
      return kCount;  // A load outside any visible loop ranks last.
    }
    return i;
  }
  return kCount + 1;
}

std::string LowerFirst(std::string s) {
  if (!s.empty()) s[0] = absl::ascii_tolower(static_cast<unsigned char>(s[0]));
  return s;
}

}  // namespace

std::vector<v1::RootCauseHint> FindRootCauseHints(std::string_view unified_patch,
                                                  size_t max_hints) {
  std::vector<v1::RootCauseHint> hints;
  if (max_hints == 0) return hints;
  const std::vector<File> files = root_cause_internal::AnalysePatch(unified_patch);
  for (const File& file : files) {
    for (const Hunk& hunk : file.hunks) {
      for (v1::RootCauseHint& hint : HintsForHunk(file, hunk, FindHunkMatches(files, file, hunk))) {
        hints.push_back(std::move(hint));
        if (hints.size() >= max_hints) return hints;
      }
    }
  }
  return hints;
}

std::string SummarizeHypothesis(const std::vector<v1::RootCauseHint>& hints) {
  if (hints.empty()) return "No known pattern matched; read the culprit's diff.";
  size_t best = 0;
  for (size_t i = 1; i < hints.size(); ++i) {
    if (Rank(hints[i]) < Rank(hints[best])) best = i;
  }
  const v1::RootCauseHint& lead = hints[best];
  std::string out = absl::StrCat("Likely cause: ", LowerFirst(lead.likely_cause()), ", from ",
                                 LowerFirst(lead.pattern()), " in ", lead.file(), ".");
  std::vector<std::string> others;
  std::set<std::string> seen = {lead.pattern() + "\n" + lead.file()};
  for (const v1::RootCauseHint& hint : hints) {
    if (!seen.insert(hint.pattern() + "\n" + hint.file()).second) continue;
    others.push_back(absl::StrCat(LowerFirst(hint.pattern()), " in ", hint.file()));
  }
  constexpr size_t kMaxOthers = 3;
  if (!others.empty()) {
    const size_t shown = std::min(others.size(), kMaxOthers);
    absl::StrAppend(
        &out, " Other suspects: ", absl::StrJoin(others.begin(), others.begin() + shown, ", "));
    if (others.size() > shown) absl::StrAppend(&out, ", and ", others.size() - shown, " more");
    absl::StrAppend(&out, ".");
  }
  return out;
}

}  // namespace kbisect
