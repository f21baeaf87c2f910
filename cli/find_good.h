// Copyright 2026 The kbisect Authors.
//
// `--find-good`: finding GOOD when nobody knows it. The lookback (common/search/lookback.h) says
// which distances back from BAD to try; each try is an ordinary bisect job with GOOD = BAD~d,
// submitted to the coordinator, whose endpoint verdict (measured on one GPU, decision 27) says
// whether BAD~d is better than BAD by the min effect (or passes, with --exit-code). A few run at
// once, one per worker. A metric's step counts only once the job's confirmation held it in
// interleaved pairs: the baselines of BAD~d and BAD are measured at two moments, and a machine
// whose speed drifts between them fakes a step (issue 46, decision 193), so a metric's lookback
// job says "better" when it has bisected its bracket and confirmed the culprit. Once the nearest
// better distance is known, the other jobs are cancelled; that one's result is the bisect's.
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

// What a finished or running lookback job says about BAD~d (pure, for tests). A metric's job:
// better once it finished with an answer whose confirmation (interleaved pairs) held the step;
// not better when it found no step, the endpoints look swapped, or its confirmation refused the
// step (the endpoints' difference was the machine's drift); nullopt while it runs. A pass/fail
// job (--exit-code): better once its settled endpoint verdict has it bisecting; not better when
// the check fails at BAD~d. Untestable when BAD~d cannot be measured (its build or benchmark
// fails).
std::optional<Lookback::Outcome> LookbackOutcome(const v1::JobStatus& job);

// Runs the lookback for `spec` (whose `bad` is BAD; `good` is ignored) through `stub`, trying up
// to `per_round` distances at once, polling every `poll`. Progress lines go to `progress`
// (may be null). Errors of the coordinator other than an unknown revision (BAD~d beyond the
// history) are returned.
absl::StatusOr<FindGoodResult> FindGood(v1::CoordinatorService::StubInterface* stub,
                                        const v1::JobSpec& spec, int max_lookback, int per_round,
                                        std::ostream* progress,
                                        absl::Duration poll = absl::Milliseconds(200));

// `--since DATE`: a date ("2026-01-31", "2026-01-31 14:00[:05]", ISO 8601 with a T, each
// optionally with a zone: "Z", "+01:00", "+0100"; without one in `zone`), "@SECONDS" since the
// epoch, or an age back from `now` ("14d", "12h", "1d12h": the form of --cache-max-age).
// InvalidArgument saying what is accepted.
absl::StatusOr<absl::Time> ParseSince(const std::string& text, absl::Time now, absl::TimeZone zone);

// How far back from `bad` the lookback may go with --since in the repository at `repository` (a
// local path or a file:// URL): the first-parent chain is walked from BAD~1 while commits are
// at or after `since` (committer date, as `git log --first-parent --since`), at most
// `max_lookback` commits (LookbackReachSince). 0: not even BAD~1 is that recent.
// FailedPrecondition for a remote repository (its history is not here: use --max-lookback).
absl::StatusOr<int> SinceReach(const std::string& repository, const std::string& bad,
                               absl::Time since, int max_lookback);

// The farthest distance --find-good tries: `max_lookback`, or with `since` (the --since text, ""
// for none) the SinceReach of that date, never past max_lookback. Errors: ParseSince's
// (InvalidArgument, a usage error) and SinceReach's.
absl::StatusOr<int> LookbackReach(const std::string& since, int max_lookback,
                                  const std::string& repository, const std::string& bad);

// The error when not even BAD~1 is as recent as --since.
std::string NothingSinceText(const std::string& since, const std::string& bad);

// The line printed before the bisect's report: which GOOD was found, and how.
std::string FoundGoodText(const FindGoodResult& result, const std::string& bad);

// The error when nothing within the lookback is better than BAD (`since`: the --since given,
// "" for none).
std::string NothingBetterText(const FindGoodResult& result, const std::string& bad,
                              const std::string& since = "");

}  // namespace kbisect

#endif  // KBISECT_CLI_FIND_GOOD_H_
