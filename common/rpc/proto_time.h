// Copyright 2026 The kbisect Authors.
//
// Conversions between absl time types (used inside kbisect) and the protobuf well-known types
// google.protobuf.Timestamp / Duration (on the wire and in job state). Exact to the nanosecond.
#ifndef KBISECT_COMMON_RPC_PROTO_TIME_H_
#define KBISECT_COMMON_RPC_PROTO_TIME_H_

#include "absl/time/time.h"
#include "google/protobuf/duration.pb.h"
#include "google/protobuf/timestamp.pb.h"
#include "google/protobuf/util/time_util.h"

namespace kbisect {

inline google::protobuf::Timestamp ToProto(absl::Time t) {
  return google::protobuf::util::TimeUtil::NanosecondsToTimestamp(absl::ToUnixNanos(t));
}

inline google::protobuf::Duration ToProto(absl::Duration d) {
  return google::protobuf::util::TimeUtil::NanosecondsToDuration(absl::ToInt64Nanoseconds(d));
}

inline absl::Time FromProto(const google::protobuf::Timestamp& t) {
  return absl::FromUnixNanos(google::protobuf::util::TimeUtil::TimestampToNanoseconds(t));
}

inline absl::Duration FromProto(const google::protobuf::Duration& d) {
  return absl::Nanoseconds(google::protobuf::util::TimeUtil::DurationToNanoseconds(d));
}

}  // namespace kbisect

#endif  // KBISECT_COMMON_RPC_PROTO_TIME_H_
