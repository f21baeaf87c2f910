// Copyright 2026 The kbisect Authors.
//
// The `--json` form of a job's status (`kbisect run --json`, `kbisect status --json`).
//
// It is the proto3 JSON form of v1::JobStatus with proto field names preserved and every field
// present, adjusted for scripts:
//   * enum values are lower case without their type prefix: "OUTCOME_CULPRIT_FOUND" is written
//     "culprit_found", "VERDICT_GOOD" "good", "DIRECTION_LOWER_IS_BETTER" "lower_is_better";
//   * a message field that is not set (culprit, last_good, merged_culprit, confirmation, a
//     timestamp, ...) is written as null instead of being left out;
//   * 64-bit integers (revision, memory_total_mib) are JSON numbers, not strings.
// Timestamps and durations keep their proto3 JSON string forms ("2026-01-02T03:04:05Z", "1.5s").
//
//   {
//     "job_id": "j-1", "status": "culprit_found", "culprit": {"sha": "...", "subject": "..."},
//     "last_good": {"sha": "..."}, "candidates": [], "rounds": 3, "bench_runs": 17,
//     "probes": [{"sha": "...", "index": 4, "worker": "w1", "samples": [1.5], "verdict": "good",
//                 "round": 1, ...}],
//     "baseline": {"good": {"samples": [...], "median": 1.0}, "bad": {...}},
//     "wall_seconds": 42.5, "revision": 12, ...
//   }
#ifndef KBISECT_CLI_REPORT_STATUS_JSON_H_
#define KBISECT_CLI_REPORT_STATUS_JSON_H_

#include <string>
#include <string_view>

#include "common/rpc/enum_label.h"
#include "absl/status/statusor.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/message.h"
#include "kbisect/v1/kbisect.pb.h"

namespace kbisect {

// Enum values are named by EnumValueJsonName (common/rpc/enum_label.h).

// Returns the JSON form described above of any kbisect message, pretty-printed with a two-space
// indent and no trailing newline.
std::string MessageToJson(const google::protobuf::Message& message);

// Parses the JSON form of a message into `message` (cleared first). Enum values may be written
// in the JSON form ("good"), as their proto names ("VERDICT_GOOD") or as numbers; nulls and
// unknown fields are ignored. Returns InvalidArgument when the text is not JSON, an enum value
// is unknown, or a field has the wrong type.
absl::Status MessageFromJson(std::string_view json, google::protobuf::Message* message);

// The JSON form of `job`.
std::string StatusToJson(const v1::JobStatus& job);

// The inverse of StatusToJson: StatusFromJson(StatusToJson(job)) equals `job`.
absl::StatusOr<v1::JobStatus> StatusFromJson(std::string_view json);

}  // namespace kbisect

#endif  // KBISECT_CLI_REPORT_STATUS_JSON_H_
