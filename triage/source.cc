// Copyright 2026 The kbisect Authors.
#include "triage/source.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "httplib.h"

namespace kbisect {
namespace triage {

bool IsUrl(std::string_view location) {
  const absl::string_view l(location.data(), location.size());
  return absl::StartsWithIgnoreCase(l, "http://") || absl::StartsWithIgnoreCase(l, "https://");
}

namespace {

absl::StatusOr<std::string> Fetch(const std::string& url, const SourceOptions& options) {
  const size_t scheme_end = url.find("://") + 3;
  size_t path_begin = url.find('/', scheme_end);
  const std::string origin = url.substr(0, path_begin);
  const std::string path = path_begin == std::string::npos ? "/" : url.substr(path_begin);
  if (origin.size() <= scheme_end) {
    return absl::InvalidArgumentError(absl::StrCat("'", url, "': a URL needs a host"));
  }
  httplib::Client client(origin);
  if (!client.is_valid()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "'", url, "': cannot make a client for ", origin,
        " (https needs cpp-httplib built with OpenSSL; download the file and pass its path)"));
  }
  client.set_follow_location(true);
  client.set_connection_timeout(options.timeout_seconds, 0);
  client.set_read_timeout(options.timeout_seconds, 0);
  std::string body;
  bool too_big = false;
  int status = 0;
  httplib::Result result = client.Get(
      path,
      [&](const httplib::Response& response) {
        status = response.status;
        return true;
      },
      [&](const char* data, size_t length) {
        if (status != 200) return true;  // Keep only the body of a success.
        if (body.size() + length > options.max_bytes) {
          too_big = true;
          return false;
        }
        body.append(data, length);
        return true;
      });
  if (too_big) {
    return absl::FailedPreconditionError(
        absl::StrCat("GET ", url, ": the body is larger than ", options.max_bytes, " bytes"));
  }
  if (!result) {
    return absl::UnavailableError(absl::StrCat("GET ", url, ": ",
                                               httplib::to_string(result.error()),
                                               " (check the URL and the network, or pass a "
                                               "downloaded file instead)"));
  }
  if (result->status != 200) {
    return absl::FailedPreconditionError(
        absl::StrCat("GET ", url, ": HTTP ", result->status, " ", result->reason));
  }
  return body;
}

}  // namespace

absl::StatusOr<std::string> ReadSource(std::string_view location, const SourceOptions& options) {
  const std::string where(location);
  if (IsUrl(location)) return Fetch(where, options);
  if (where == "-") {
    std::ostringstream out;
    out << std::cin.rdbuf();
    return out.str();
  }
  std::error_code error;
  if (std::filesystem::is_directory(where, error)) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot read '", where, "': it is a directory; give a file"));
  }
  std::ifstream in(where, std::ios::binary);
  if (!in) {
    const int err = errno;
    if (err == ENOENT) {
      return absl::NotFoundError(absl::StrCat("cannot read '", where, "': no such file"));
    }
    return absl::PermissionDeniedError(
        absl::StrCat("cannot read '", where, "': ", std::strerror(err)));
  }
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) {
    return absl::DataLossError(absl::StrCat("error while reading '", where, "'"));
  }
  return text;
}

}  // namespace triage
}  // namespace kbisect
