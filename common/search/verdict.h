// Copyright 2026 The kbisect Authors.
//
// The outcome of probing one commit, shared by the searches over a first-parent path
// (BisectSearch) and over a commit graph (CommitGraphSearch).
#ifndef KBISECT_COMMON_SEARCH_VERDICT_H_
#define KBISECT_COMMON_SEARCH_VERDICT_H_

namespace kbisect {

// The outcome of probing one commit.
enum class Verdict {
  kGood,  // The commit behaves like GOOD.
  kBad,   // The commit behaves like BAD.
  kSkip,  // The commit could not be judged (build failure, crash, ambiguous result...).
};

// Returns "good", "bad" or "skip".
const char* VerdictName(Verdict verdict);

}  // namespace kbisect

#endif  // KBISECT_COMMON_SEARCH_VERDICT_H_
