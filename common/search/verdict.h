// Copyright 2026 The kbisect Authors.
//
// How the searches over a first-parent path (BisectSearch) and over a commit graph
// (CommitGraphSearch) read a probe's verdict. A verdict has one type everywhere, v1::Verdict (the
// job's probes, the wire, the journal, the searches): GOOD and BAD narrow the search, and every
// other value (SKIP, AMBIGUOUS, UNSPECIFIED) counts as a skip there.
#ifndef KBISECT_COMMON_SEARCH_VERDICT_H_
#define KBISECT_COMMON_SEARCH_VERDICT_H_

#include "kbisect/v1/kbisect.pb.h"

namespace kbisect {

// `verdict` when it is GOOD or BAD, else SKIP.
inline v1::Verdict SkipUnlessGoodOrBad(v1::Verdict verdict) {
  return verdict == v1::VERDICT_GOOD || verdict == v1::VERDICT_BAD ? verdict : v1::VERDICT_SKIP;
}

}  // namespace kbisect

#endif  // KBISECT_COMMON_SEARCH_VERDICT_H_
