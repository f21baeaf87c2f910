// Copyright 2026 The kbisect Authors.
//
// ListFindLinks: the distributions of a project in one directory, hashed from their bytes.
#include <openssl/evp.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <system_error>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/artifact/index_internal.h"
#include "common/artifact/package_index.h"
#include "common/status_macros.h"

namespace kbisect {
namespace {

struct DigestContextDeleter {
  void operator()(EVP_MD_CTX* context) const { EVP_MD_CTX_free(context); }
};

std::string LowerHex(const unsigned char* bytes, unsigned int size) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string hex;
  for (unsigned int i = 0; i < size; ++i) {
    hex.push_back(kDigits[bytes[i] >> 4]);
    hex.push_back(kDigits[bytes[i] & 0xf]);
  }
  return hex;
}

// The lowercase hex SHA-256 of the file at `path`, read 1 MiB at a time.
absl::StatusOr<std::string> Sha256OfFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::InternalError(absl::StrCat("cannot read ", path, ": ", std::strerror(errno)));
  }
  std::unique_ptr<EVP_MD_CTX, DigestContextDeleter> context(EVP_MD_CTX_new());
  if (!context || EVP_DigestInit_ex(context.get(), EVP_sha256(), nullptr) != 1) {
    return absl::InternalError("cannot start a SHA-256 digest (OpenSSL)");
  }
  std::vector<char> buffer(1 << 20);
  while (in) {
    in.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
    EVP_DigestUpdate(context.get(), buffer.data(), static_cast<size_t>(in.gcount()));
  }
  if (in.bad()) return absl::InternalError(absl::StrCat("error reading ", path));
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  EVP_DigestFinal_ex(context.get(), digest, &size);
  return LowerHex(digest, size);
}

// The file at `entry` as an ArtifactFile of `version`, hashed.
absl::StatusOr<ArtifactFile> HashedFile(const std::filesystem::path& path,
                                        const std::string& version) {
  ArtifactFile file;
  file.filename = path.filename().string();
  file.url = "file://" + path.string();
  file.version = version;
  ASSIGN_OR_RETURN(file.sha256, Sha256OfFile(path.string()));
  return file;
}

}  // namespace

absl::StatusOr<std::vector<ArtifactVersion>> ListFindLinks(const std::string& dir,
                                                           const std::string& project) {
  std::error_code error;
  const std::filesystem::path root = std::filesystem::absolute(dir, error);
  if (error || !std::filesystem::is_directory(root, error)) {
    return absl::NotFoundError(absl::StrCat("the find-links directory ", dir, " does not exist"));
  }
  const std::string normalized = NormalizeProjectName(project);
  std::vector<ArtifactFile> files;
  for (const auto& entry : std::filesystem::directory_iterator(root, error)) {
    if (!entry.is_regular_file(error)) continue;
    std::optional<std::string> version =
        artifact_internal::VersionIfDistributionOf(entry.path().filename().string(), normalized);
    if (!version) continue;
    ASSIGN_OR_RETURN(ArtifactFile file, HashedFile(entry.path().lexically_normal(), *version));
    files.push_back(std::move(file));
  }
  if (error) {
    return absl::InternalError(absl::StrCat("cannot list ", dir, ": ", error.message()));
  }
  return artifact_internal::GroupByVersion(std::move(files));
}

}  // namespace kbisect
