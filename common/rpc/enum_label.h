// Copyright 2026 The kbisect Authors.
//
// One way to name an enum value to people and scripts: lower case without the type's prefix
// ("culprit_found" for OUTCOME_CULPRIT_FOUND), the form of the JSON result (decision 3), the
// Prometheus labels and the report. Every layer uses these instead of its own helper.
#ifndef KBISECT_COMMON_RPC_ENUM_LABEL_H_
#define KBISECT_COMMON_RPC_ENUM_LABEL_H_

#include <string>

#include "absl/strings/str_cat.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/generated_enum_reflection.h"

namespace kbisect {

// The prefix of an enum type's values: its name in UPPER_SNAKE_CASE followed by "_"
// ("JobEventKind" -> "JOB_EVENT_KIND_", "GPUVendor" -> "GPU_VENDOR_").
std::string EnumPrefix(const google::protobuf::EnumDescriptor& type);

// Returns `value`'s name in the JSON form: lower case, without the enum type's prefix (the type
// name in UPPER_SNAKE_CASE followed by "_"), e.g. "culprit_found" for OUTCOME_CULPRIT_FOUND.
std::string EnumValueJsonName(const google::protobuf::EnumValueDescriptor& value);

// The same for a generated enum's value; a number the type does not know prints as the number.
template <typename Enum>
std::string EnumLabel(Enum value) {
  const google::protobuf::EnumValueDescriptor* descriptor =
      google::protobuf::GetEnumDescriptor<Enum>()->FindValueByNumber(static_cast<int>(value));
  return descriptor == nullptr ? absl::StrCat(static_cast<int>(value))
                               : EnumValueJsonName(*descriptor);
}

}  // namespace kbisect

#endif  // KBISECT_COMMON_RPC_ENUM_LABEL_H_
