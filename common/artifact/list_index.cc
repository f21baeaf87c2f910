// Copyright 2026 The kbisect Authors.
//
// ListIndex: a PEP 503 index's project page over file:// or http:// (cpp-httplib).
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "common/artifact/index_internal.h"
#include "common/artifact/package_index.h"
#include "common/status_macros.h"
#include "httplib.h"

namespace kbisect {
namespace {

constexpr int kIndexTimeoutSeconds = 30;
constexpr size_t kMaxPageBytes = size_t{512} << 20;  // Torch's nightly page is a few MiB.

// What one GET of a page answered.
struct PageAnswer {
  int status = 0;
  std::string location;  // The Location header of a redirect.
  std::string body;      // The body of a 200.
};

absl::Status IndexHasNoProject(const std::string& index_url, const std::string& project,
                               absl::string_view detail) {
  return absl::NotFoundError(
      absl::StrCat("the index ", index_url, " has no project ", project, " (", detail, ")"));
}

absl::StatusOr<std::string> ReadWholeFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  if (!in) return absl::InternalError(absl::StrCat("cannot read ", path.string()));
  return text.str();
}

// The project's page of a file:// index: its index.html, or else its files.
absl::StatusOr<std::vector<ArtifactVersion>> ListFileIndex(const std::string& index_url,
                                                           const std::string& page_url,
                                                           const std::string& project) {
  std::string path = artifact_internal::PercentDecode(index_url.substr(7));
  if (absl::StartsWithIgnoreCase(path, "localhost/")) path = path.substr(9);
  if (!absl::StartsWith(path, "/")) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", index_url, "': a file:// index URL needs an absolute path"));
  }
  std::error_code error;
  const std::filesystem::path root(path);
  if (!std::filesystem::is_directory(root, error)) {
    return absl::NotFoundError(
        absl::StrCat("the index directory ", path, " (from ", index_url, ") does not exist"));
  }
  const std::filesystem::path project_dir = root / NormalizeProjectName(project);
  if (std::filesystem::is_regular_file(project_dir / "index.html", error)) {
    ASSIGN_OR_RETURN(const std::string html, ReadWholeFile(project_dir / "index.html"));
    return ParseSimpleIndexPage(html, page_url, project);
  }
  if (std::filesystem::is_directory(project_dir, error)) {
    return ListFindLinks(project_dir.string(), project);
  }
  return IndexHasNoProject(index_url, project, absl::StrCat("no directory ", project_dir.string()));
}

// The origin ("http://host:port") and the path of an http:// URL.
absl::StatusOr<std::pair<std::string, std::string>> SplitHttpUrl(const std::string& url) {
  const size_t path_at = url.find('/', 7);
  const std::string origin = url.substr(0, path_at);
  if (origin.size() <= 7) {
    return absl::InvalidArgumentError(absl::StrCat("'", url, "': a URL needs a host"));
  }
  return std::make_pair(origin, path_at == std::string::npos ? "/" : url.substr(path_at));
}

absl::StatusOr<PageAnswer> GetPage(const std::string& url) {
  ASSIGN_OR_RETURN(auto origin_path, SplitHttpUrl(url));
  httplib::Client client(origin_path.first);
  if (!client.is_valid()) {
    return absl::InvalidArgumentError(absl::StrCat("'", url, "': cannot make an HTTP client"));
  }
  client.set_connection_timeout(kIndexTimeoutSeconds, 0);
  client.set_read_timeout(kIndexTimeoutSeconds, 0);
  client.set_write_timeout(kIndexTimeoutSeconds, 0);
  PageAnswer answer;
  bool too_big = false;
  httplib::Result result = client.Get(
      origin_path.second, httplib::Headers{{"Accept", "text/html"}},
      [&](const httplib::Response& response) {
        answer.status = response.status;
        answer.location = response.get_header_value("Location");
        return true;
      },
      [&](const char* data, size_t length) {
        if (answer.status != 200) return true;  // Keep only the body of a success.
        too_big = answer.body.size() + length > kMaxPageBytes;
        if (!too_big) answer.body.append(data, length);
        return !too_big;
      });
  if (too_big) {
    return absl::ResourceExhaustedError(
        absl::StrCat("GET ", url, ": the page is larger than ", kMaxPageBytes, " bytes"));
  }
  if (!result) {
    return absl::UnavailableError(absl::StrCat("the index could not be reached: GET ", url, ": ",
                                               httplib::to_string(result.error())));
  }
  return answer;
}

bool IsRedirect(int status) {
  return status == 301 || status == 302 || status == 303 || status == 307 || status == 308;
}

absl::Status HttpError(const PageAnswer& answer, const std::string& url,
                       const std::string& index_url, const std::string& project) {
  const std::string detail = absl::StrCat("GET ", url, ": HTTP ", answer.status);
  if (answer.status == 404) return IndexHasNoProject(index_url, project, detail);
  if (answer.status >= 500) {
    return absl::UnavailableError(absl::StrCat("the index is not answering: ", detail));
  }
  if (answer.status == 401 || answer.status == 403) {
    return absl::PermissionDeniedError(absl::StrCat("the index refused access: ", detail));
  }
  return absl::FailedPreconditionError(absl::StrCat("the index answered ", detail));
}

absl::Status CheckHttpScheme(const std::string& url) {
  if (absl::StartsWithIgnoreCase(url, "http://")) return absl::OkStatus();
  if (absl::StartsWithIgnoreCase(url, "https://")) {
    return absl::UnimplementedError(absl::StrCat(
        "'", url, "': https:// indexes are not supported yet (use an http:// or file:// mirror)"));
  }
  return absl::InvalidArgumentError(
      absl::StrCat("'", url, "': an index URL must be file:// or http://"));
}

// The project's page of an http:// index, following one redirect.
absl::StatusOr<std::vector<ArtifactVersion>> ListHttpIndex(const std::string& index_url,
                                                           std::string page_url,
                                                           const std::string& project) {
  ASSIGN_OR_RETURN(PageAnswer answer, GetPage(page_url));
  if (IsRedirect(answer.status) && !answer.location.empty()) {
    std::optional<std::string> target = artifact_internal::ResolveUrl(page_url, answer.location);
    if (!target) return HttpError(answer, page_url, index_url, project);
    page_url = *target;
    RETURN_IF_ERROR(CheckHttpScheme(page_url));
    ASSIGN_OR_RETURN(answer, GetPage(page_url));
  }
  if (answer.status != 200) return HttpError(answer, page_url, index_url, project);
  return ParseSimpleIndexPage(answer.body, page_url, project);
}

}  // namespace

absl::StatusOr<std::vector<ArtifactVersion>> ListIndex(const std::string& index_url,
                                                       const std::string& project) {
  std::string base = index_url;
  while (absl::EndsWith(base, "/")) base.pop_back();
  const std::string page_url = absl::StrCat(base, "/", NormalizeProjectName(project), "/");
  if (absl::StartsWithIgnoreCase(base, "file://")) {
    return ListFileIndex(base, page_url, project);
  }
  RETURN_IF_ERROR(CheckHttpScheme(base));
  return ListHttpIndex(index_url, page_url, project);
}

}  // namespace kbisect
