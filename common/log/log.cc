// Copyright 2026 The kbisect Authors.
#include "common/log/log.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

namespace kbisect {

absl::StatusOr<LogFormat> ParseLogFormat(absl::string_view name) {
  const std::string lower = absl::AsciiStrToLower(name);
  if (lower == "text") return LogFormat::kText;
  if (lower == "json") return LogFormat::kJson;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown log format '", name, "': use text or json"));
}

std::string Logger::Format(absl::string_view level, absl::string_view message,
                           const std::vector<LogField>& fields, absl::Time time) const {
  if (format_ == LogFormat::kJson) {
    nlohmann::ordered_json line;
    line["time"] = absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", time, absl::UTCTimeZone());
    line["level"] = std::string(level);
    line["component"] = component_;
    line["msg"] = std::string(message);
    for (const auto& [key, value] : fields) line[key] = value;
    // Invalid UTF-8 (e.g. from a benchmark's output) is replaced rather than thrown on.
    return line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  }
  std::string line = absl::StrCat(absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", time, absl::UTCTimeZone()),
                                  " ", component_, ": ");
  if (level != "info") absl::StrAppend(&line, level, ": ");
  absl::StrAppend(&line, message);
  for (const auto& [key, value] : fields) {
    const bool quote = value.empty() || absl::StrContains(value, ' ') ||
                       absl::StrContains(value, '"') || absl::StrContains(value, '=');
    absl::StrAppend(&line, " ", key, "=", quote ? nlohmann::json(value).dump() : value);
  }
  return line;
}

void Logger::Write(absl::string_view level, absl::string_view message,
                   const std::vector<LogField>& fields, absl::Time time) const {
  const std::string line = Format(level, message, fields, time);
  kbisect::MutexLock lock(&mu_);
  *out_ << line << "\n" << std::flush;
}

}  // namespace kbisect
