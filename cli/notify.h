// Copyright 2026 The kbisect Authors.
//
// `--notify-url URL`: when a job ends, POST its JSON result (the `--json` schema, which holds
// no credential) to URL with Content-Type application/json. Retried with backoff (0.5 s, 1 s,
// 2 s, ...) on connection errors and 5xx/429 answers, `attempts` times in all; no
// Authorization header is ever sent, whatever token the CLI was given, and the URL's user
// information (user:password@) is left out of every message.
#ifndef KBISECT_CLI_NOTIFY_H_
#define KBISECT_CLI_NOTIFY_H_

#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"

namespace kbisect {

struct NotifyOptions {
  int attempts = 4;
  absl::Duration first_backoff = absl::Milliseconds(500);
  absl::Duration timeout = absl::Seconds(10);  // Per attempt.
};

// Posts `json` to `url` (http://HOST[:PORT][/PATH]). OK on a 2xx answer; InvalidArgument for a
// URL that is not http(s); Unavailable after the last failed attempt, with the last error.
absl::Status PostJobResult(const std::string& url, const std::string& json,
                           const NotifyOptions& options = {});

// `url` without user information, for messages.
std::string RedactUrl(const std::string& url);

}  // namespace kbisect

#endif  // KBISECT_CLI_NOTIFY_H_
