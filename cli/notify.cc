// Copyright 2026 The kbisect Authors.
#include "cli/notify.h"

#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "httplib.h"

namespace kbisect {

std::string RedactUrl(const std::string& url) {
  const size_t scheme_end = url.find("://");
  if (scheme_end == std::string::npos) return url;
  const size_t host_begin = scheme_end + 3;
  const size_t path_begin = url.find('/', host_begin);
  const size_t at = url.rfind('@', path_begin == std::string::npos ? url.size() : path_begin);
  if (at == std::string::npos || at < host_begin) return url;
  return absl::StrCat(url.substr(0, host_begin), url.substr(at + 1));
}

absl::Status PostJobResult(const std::string& url, const std::string& json,
                           const NotifyOptions& options) {
  if (!absl::StartsWithIgnoreCase(url, "http://") && !absl::StartsWithIgnoreCase(url, "https://")) {
    return absl::InvalidArgumentError(
        absl::StrCat("--notify-url ", RedactUrl(url), ": not an http:// or https:// URL"));
  }
  const size_t host_begin = url.find("://") + 3;
  const size_t path_begin = url.find('/', host_begin);
  const std::string origin = url.substr(0, path_begin);
  const std::string path = path_begin == std::string::npos ? "/" : url.substr(path_begin);
  httplib::Client client(origin);
  if (!client.is_valid()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--notify-url ", RedactUrl(url),
                     ": cannot make a client (https needs cpp-httplib built with OpenSSL)"));
  }
  const int64_t timeout_s = std::max<int64_t>(1, absl::ToInt64Seconds(options.timeout));
  client.set_connection_timeout(timeout_s, 0);
  client.set_read_timeout(timeout_s, 0);
  client.set_write_timeout(timeout_s, 0);
  std::string last_error;
  absl::Duration backoff = options.first_backoff;
  for (int attempt = 1; attempt <= std::max(1, options.attempts); ++attempt) {
    if (attempt > 1) {
      std::this_thread::sleep_for(absl::ToChronoMilliseconds(backoff));
      backoff *= 2;
    }
    httplib::Result result = client.Post(path, json, "application/json");
    if (!result) {
      last_error = httplib::to_string(result.error());
      continue;
    }
    if (result->status >= 200 && result->status < 300) return absl::OkStatus();
    last_error = absl::StrCat("HTTP ", result->status, " ", result->reason);
    if (result->status < 500 && result->status != 429) break;  // The receiver refused it.
  }
  return absl::UnavailableError(absl::StrCat("POST ", RedactUrl(url), " failed: ", last_error));
}

}  // namespace kbisect
