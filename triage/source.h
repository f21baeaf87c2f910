// Copyright 2026 The kbisect Authors.
//
// Reading a dashboard from a file or a URL: the only I/O of the triage library besides git.
// URLs are fetched with cpp-httplib (Debian's libcpp-httplib, built with OpenSSL, so https works
// when the system's CA certificates are installed); redirects are followed.
//
//   ASSIGN_OR_RETURN(std::string text,
//   ReadSource("https://helionlang.com/dashboard/dashboard-data.json"));
#ifndef KBISECT_TRIAGE_SOURCE_H_
#define KBISECT_TRIAGE_SOURCE_H_

#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace kbisect {
namespace triage {

// Options of ReadSource.
struct SourceOptions {
  // Connection and read timeouts of a URL fetch, in seconds.
  int timeout_seconds = 60;
  // The largest body accepted, in bytes (a dashboard is a few MiB).
  size_t max_bytes = size_t{512} << 20;
};

// Returns true if `location` starts with http:// or https://.
bool IsUrl(std::string_view location);

// Returns the contents of `location`: a URL (GET, following redirects; anything but HTTP 200 is
// an error naming the status) or a file path ("-" reads standard input). Errors: NotFound for a
// missing file, Unavailable for a connection failure or timeout, FailedPrecondition for an HTTP
// error status, InvalidArgument for a malformed URL; every message names the location.
absl::StatusOr<std::string> ReadSource(std::string_view location,
                                       const SourceOptions& options = SourceOptions());

}  // namespace triage
}  // namespace kbisect

#endif  // KBISECT_TRIAGE_SOURCE_H_
