// Copyright 2026 The kbisect Authors.
//
// `--find-good`: finding GOOD when nobody knows it. The lookback (common/search/lookback.h) says
// which distances back from BAD to try; each try is an ordinary bisect job with GOOD = BAD~d,
// submitted to the coordinator, whose endpoint verdict (measured on one GPU, decision 27) says
// whether BAD~d is better than BAD by the min effect (or passes, with --exit-code). A few run at
// once, one per worker. Once the nearest better distance is known, the other jobs are cancelled
// and that one, which has already measured its baselines, bisects the bracket on its own.
//
//   ASSIGN_OR_RETURN(FindGoodResult found,
//                    FindGood(stub, spec, kDefaultMaxLookback, workers, &std::cout));
//   if (found.job_id.empty()) return kExitNoRegression;  // nothing better within the lookback
//   Follow(found.job_id);
#ifndef KBISECT_CLI_FIND_GOOD_H_
#define KBISECT_CLI_FIND_GOOD_H_

#include <ostream>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/search/lookback.h"
#include "kbisect/v1/kbisect.grpc.pb.h"

namespace kbisect {

struct FindGoodResult {
  // The job bisecting from the GOOD found (GOOD = BAD~found), still running; empty when no
  // distance within the lookback is better.
  std::string job_id;
  int found = 0;               // The distance of that GOOD.
  int largest_not_better = 0;  // The nearest distance known not better (0: BAD itself).
  int reach = 0;               // The farthest distance the lookback could try.
  int jobs = 0;                // Lookback jobs submitted (the one kept included).
  int rounds = 0;              // Rounds of lookback jobs.
};

// What a finished or running lookback job says about BAD~d (pure, for tests): better once its
// endpoint verdict found a regression (it bisects, or has finished with an answer); not better
// when it found none, the endpoints look swapped, or the check fails at BAD~d; untestable when
// BAD~d cannot be measured (its build or benchmark fails); nullopt while its baselines run.
std::optional<Lookback::Outcome> LookbackOutcome(const v1::JobStatus& job);

// Runs the lookback for `spec` (whose `bad` is BAD; `good` is ignored) through `stub`, trying up
// to `per_round` distances at once, polling every `poll`. Progress lines go to `progress`
// (may be null). Errors of the coordinator other than an unknown revision (BAD~d beyond the
// history) are returned.
absl::StatusOr<FindGoodResult> FindGood(v1::CoordinatorService::StubInterface* stub,
                                        const v1::JobSpec& spec, int max_lookback, int per_round,
                                        std::ostream* progress,
                                        absl::Duration poll = absl::Milliseconds(200));

// The line printed before the bisect's report: which GOOD was found, and how.
std::string FoundGoodText(const FindGoodResult& result, const std::string& bad);

// The error when nothing within the lookback is better than BAD.
std::string NothingBetterText(const FindGoodResult& result, const std::string& bad);

}  // namespace kbisect

#endif  // KBISECT_CLI_FIND_GOOD_H_
