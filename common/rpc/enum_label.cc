// Copyright 2026 The kbisect Authors.
#include "common/rpc/enum_label.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"

namespace kbisect {

// "JobEventKind" -> "JOB_EVENT_KIND_", "GPUVendor" -> "GPU_VENDOR_".
std::string EnumPrefix(const google::protobuf::EnumDescriptor& type) {
  const std::string& name = type.name();
  std::string out;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    if (i > 0 && absl::ascii_isupper(static_cast<unsigned char>(c))) {
      const char prev = name[i - 1];
      const bool prev_lower_or_digit = absl::ascii_islower(static_cast<unsigned char>(prev)) ||
                                       absl::ascii_isdigit(static_cast<unsigned char>(prev));
      const bool next_lower =
          i + 1 < name.size() && absl::ascii_islower(static_cast<unsigned char>(name[i + 1]));
      if (prev_lower_or_digit ||
          (absl::ascii_isupper(static_cast<unsigned char>(prev)) && next_lower)) {
        out.push_back('_');
      }
    }
    out.push_back(absl::ascii_toupper(static_cast<unsigned char>(c)));
  }
  out.push_back('_');
  return out;
}

std::string EnumValueJsonName(const google::protobuf::EnumValueDescriptor& value) {
  const std::string prefix = EnumPrefix(*value.type());
  std::string name = value.name();
  if (absl::StartsWith(name, prefix) && name.size() > prefix.size()) {
    name = name.substr(prefix.size());
  }
  return absl::AsciiStrToLower(name);
}

}  // namespace kbisect
