// Copyright 2026 The kbisect Authors.
//
// The keys under which measurements are interchangeable across jobs. One benchmark run of a
// commit measures the same thing in two jobs when the commit's tree, the spec's build, benchmark
// and metric (SpecDigest) and the hardware class are the same; the action digest names that
// triple, and the result cache (coordinator/result_cache.h) stores samples under it.
//
//   const std::string spec_digest = SpecDigest(job.spec());
//   const std::string action = ActionDigest(commit.tree_sha(), spec_digest, worker_class);
//
// Both digests are git blob ids (40 lower-case hex digits, common/git/object_hash.h) of a
// canonical encoding in which every field is a netstring, "<decimal length>:<bytes>,", so that no
// two different inputs encode the same (("a", "bc") and ("ab", "c") differ). The encodings carry
// a version label: changing what is hashed must change the label, so that old cache entries stop
// matching instead of matching the wrong thing.
//
// SpecDigest hashes, in this order:
//   "kbisect.spec_digest.v1",
//   "build_command", the build command,
//   "bench_command", the number of arguments, each argument in order,
//   "env", the number of variables, then key and value of each, sorted by key,
//   "metric_kind", the MetricKind's number (METRIC_KIND_UNSPECIFIED counts as METRIC_KIND_AUTO),
//   "metric_pattern", the metric's regex or JSON path,
//   "discard_throttled", "1" or "0" (throttled runs re-run change which samples a task returns),
//   "build_isolation" and its number, only when chosen,
//   "dependency", its kind's number, the superproject, its commit and the path, only on a
//   dependency follow-up, then the same for each outer descent of a nested one (the tree hashed
//   is then the dependency's: the superproject's commit decides what it is built into).
// Not hashed, because they do not change what one run measures: the repository and the range,
// runs per commit and max runs, the thresholds and min effect, the direction (it changes how
// samples are judged, not their values), build and bench timeouts, the hardware class (a
// separate part of the action), max workers, confirm and the other job options, and the
// description and origin.
//
// ActionDigest hashes "kbisect.action_digest.v1", the tree id, the spec digest and the hardware
// class.
#ifndef KBISECT_COMMON_SPEC_ACTION_DIGEST_H_
#define KBISECT_COMMON_SPEC_ACTION_DIGEST_H_

#include <string>

#include "kbisect/v1/kbisect.pb.h"

namespace kbisect {

// Returns the digest of everything in `spec` that changes what one benchmark run measures (see
// above): 40 lower-case hex digits. Equal for specs that differ only in fields it leaves out.
std::string SpecDigest(const v1::JobSpec& spec);

// Returns the digest of one measurement action: a commit tree (`tree_sha`, CommitRef.tree_sha),
// the spec's SpecDigest and the hardware-class fingerprint of the worker (RunnerIdentity.
// hardware_class). 40 lower-case hex digits.
std::string ActionDigest(const std::string& tree_sha, const std::string& spec_digest,
                         const std::string& hardware_class);

}  // namespace kbisect

#endif  // KBISECT_COMMON_SPEC_ACTION_DIGEST_H_
