// Copyright 2026 The kbisect Authors.
#include "common/clock/age.h"

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace kbisect {

absl::StatusOr<absl::Duration> ParseAge(const std::string& text) {
  const auto invalid = [&text] {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot read the age '", text,
                     "': give a number of days and/or hours, minutes or seconds, such as 30d, "
                     "12h, 1d12h, 90m or 45s"));
  };
  absl::Duration age;
  const size_t d = text.find('d');
  if (d == std::string::npos) {
    if (!absl::ParseDuration(text, &age)) return invalid();
  } else {
    double days = 0;
    if (d == 0 || !absl::SimpleAtod(text.substr(0, d), &days) || !(days >= 0)) return invalid();
    absl::Duration rest;
    const std::string tail = text.substr(d + 1);
    if (!tail.empty() && (!absl::ParseDuration(tail, &rest) || rest < absl::ZeroDuration())) {
      return invalid();
    }
    age = days * absl::Hours(24) + rest;
  }
  if (age < absl::ZeroDuration() || age == absl::InfiniteDuration()) return invalid();
  return age;
}

}  // namespace kbisect
