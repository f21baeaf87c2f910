// Copyright 2026 The kbisect Authors.
//
// Marks: verdicts the user gives for commits of the range instead of measuring them (`--mark
// SHA=good|bad|skip`), for a commit they know is broken or a result they do not trust. Resolving
// them is pure: the spec's marks against the job's commit list, with an error that says what to
// change when a mark names no commit of the range, an endpoint, or contradicts another mark.
//
//   ASSIGN_OR_RETURN(std::vector<v1::CommitMark> marks, ResolveMarks(spec, commits));
#ifndef KBISECT_COORDINATOR_JOB_MARKS_H_
#define KBISECT_COORDINATOR_JOB_MARKS_H_

#include <vector>

#include "absl/status/statusor.h"
#include "common/search/bisect_search.h"
#include "kbisect/v1/kbisect.pb.h"

namespace kbisect {

// Abbreviated shas shorter than this are refused: they would match by accident.
inline constexpr int kMinMarkPrefix = 4;

// Resolves `spec.marks()` against `commits` (index 0 = GOOD, last = BAD): each mark's `commit`
// must be a sha, or a unique prefix of at least kMinMarkPrefix hex digits, of a commit strictly
// inside the range, with a GOOD, BAD or SKIP verdict. Returns the marks with `sha` and `index`
// filled, in range order (one per commit: a commit marked twice alike counts once). Returns
// InvalidArgument naming the mark when one names no commit of the range or several, an
// endpoint, another verdict, or when the marks contradict each other (a GOOD mark after a BAD
// one, or one commit marked two ways).
absl::StatusOr<std::vector<v1::CommitMark>> ResolveMarks(const v1::JobSpec& spec,
                                                         const std::vector<v1::CommitRef>& commits);

// True when the user marked commit `index` (it is never probed nor given a cached verdict).
bool IsMarked(const google::protobuf::RepeatedPtrField<v1::CommitMark>& marks, int index);

// Records the resolved `marks` in `search` as verdicts (a skip mark as a skip).
void RecordMarks(const google::protobuf::RepeatedPtrField<v1::CommitMark>& marks,
                 BisectSearch* search);

}  // namespace kbisect

#endif  // KBISECT_COORDINATOR_JOB_MARKS_H_
