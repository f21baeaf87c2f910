// Copyright 2026 The kbisect Authors.
//
// The daemons' log: one line per event, for people (text) or for log pipelines (JSON lines).
//
//   Logger log("kbisect-coordinator", LogFormat::kJson, &std::cerr);
//   log.Info("job state", {{"job", id}, {"state", "bisecting"}});
//   // {"time":"2026-11-30T09:00:00.123Z","level":"info","component":"kbisect-coordinator",
//   //  "msg":"job state","job":"job-1","state":"bisecting"}
//
// Text lines read "2026-11-30T09:00:00Z kbisect-coordinator: job state job=job-1 state=bisecting".
// Callers must never pass secrets (tokens, keys) in messages or fields.
#ifndef KBISECT_COMMON_LOG_LOG_H_
#define KBISECT_COMMON_LOG_LOG_H_

#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "common/sync/mutex.h"

namespace kbisect {

enum class LogFormat { kText, kJson };

// Parses "text" or "json" (the --log-format flag). InvalidArgument naming the choices otherwise.
absl::StatusOr<LogFormat> ParseLogFormat(absl::string_view name);

// A key and its value, logged as a JSON string or as key=value (quoted when it has spaces).
using LogField = std::pair<std::string, std::string>;

// Writes whole lines to `out`, which must outlive the logger. Thread-safe: lines of concurrent
// calls never interleave.
class Logger {
 public:
  Logger(std::string component, LogFormat format, std::ostream* out)
      : component_(std::move(component)), format_(format), out_(out) {}

  void Info(absl::string_view message, const std::vector<LogField>& fields = {}) const {
    Write("info", message, fields, absl::Now());
  }
  void Warning(absl::string_view message, const std::vector<LogField>& fields = {}) const {
    Write("warning", message, fields, absl::Now());
  }
  void Error(absl::string_view message, const std::vector<LogField>& fields = {}) const {
    Write("error", message, fields, absl::Now());
  }

  // Formats one line at `time` (without writing it); the other methods use it.
  std::string Format(absl::string_view level, absl::string_view message,
                     const std::vector<LogField>& fields, absl::Time time) const;

 private:
  void Write(absl::string_view level, absl::string_view message,
             const std::vector<LogField>& fields, absl::Time time) const;

  const std::string component_;
  const LogFormat format_;
  mutable kbisect::Mutex mu_;
  std::ostream* const out_ ABSL_PT_GUARDED_BY(mu_);
};

}  // namespace kbisect

#endif  // KBISECT_COMMON_LOG_LOG_H_
