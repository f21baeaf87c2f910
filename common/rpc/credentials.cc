// Copyright 2026 The kbisect Authors.
#include "common/rpc/credentials.h"

#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "grpcpp/security/auth_metadata_processor.h"

namespace kbisect {
namespace {

constexpr char kWorkerServicePrefix[] = "/kbisect.v1.WorkerService/";

// Compares without an early exit, so the time taken does not reveal a matching prefix.
bool ConstantTimeEquals(const std::string& a, const std::string& b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < a.size(); ++i) {
    diff |= static_cast<unsigned char>(a[i] ^ (i < b.size() ? b[i] : 0));
  }
  return diff == 0;
}

// Accepts callers with a verified client certificate; others must present the bearer token and
// may then only use the client-facing service.
class TokenAuthProcessor final : public grpc::AuthMetadataProcessor {
 public:
  explicit TokenAuthProcessor(std::string token) : expected_(absl::StrCat("Bearer ", token)) {}

  bool IsBlocking() const override { return false; }

  grpc::Status Process(const InputMetadata& metadata, grpc::AuthContext* context,
                       OutputMetadata* consumed, OutputMetadata*) override {
    if (context != nullptr && context->IsPeerAuthenticated()) return grpc::Status::OK;
    bool authorized = false;
    const auto range = metadata.equal_range("authorization");
    for (auto it = range.first; it != range.second; ++it) {
      if (ConstantTimeEquals(std::string(it->second.data(), it->second.size()), expected_)) {
        authorized = true;
      }
    }
    if (!authorized) {
      return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                          "a client certificate or a valid bearer token is required");
    }
    consumed->insert({"authorization", expected_});
    auto path = metadata.find(":path");
    if (path != metadata.end() &&
        absl::StartsWith(absl::string_view(path->second.data(), path->second.size()),
                         kWorkerServicePrefix)) {
      return grpc::Status(grpc::StatusCode::PERMISSION_DENIED,
                          "worker RPCs need a worker's client certificate, not a token");
    }
    return grpc::Status::OK;
  }

 private:
  const std::string expected_;
};

}  // namespace

absl::StatusOr<std::string> ReadCredentialFile(const std::string& path, const std::string& what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::InvalidArgumentError(absl::StrCat("cannot read ", what, " from ", path));
  }
  std::stringstream contents;
  contents << in.rdbuf();
  if (contents.str().empty()) {
    return absl::InvalidArgumentError(absl::StrCat(what, " file ", path, " is empty"));
  }
  return contents.str();
}

absl::StatusOr<std::string> ReadTokenFile(const std::string& path) {
  absl::StatusOr<std::string> token = ReadCredentialFile(path, "the bearer token");
  if (!token.ok()) return token.status();
  std::string stripped(absl::StripAsciiWhitespace(*token));
  if (stripped.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("the token file ", path, " is blank"));
  }
  return stripped;
}

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> MakeServerCredentials(
    const ServerCredentialOptions& options) {
  if (options.cert_file.empty() != options.key_file.empty()) {
    return absl::InvalidArgumentError("--tls-cert and --tls-key go together: give both");
  }
  if (options.cert_file.empty()) {
    if (!options.client_ca_file.empty() || !options.token.empty()) {
      return absl::InvalidArgumentError(
          "--client-ca and --token-file need TLS: give --tls-cert and --tls-key too (a token "
          "sent in plaintext could be read by anyone on the network)");
    }
    return std::shared_ptr<grpc::ServerCredentials>();
  }
  grpc::SslServerCredentialsOptions ssl;
  grpc::SslServerCredentialsOptions::PemKeyCertPair pair;
  absl::StatusOr<std::string> cert =
      ReadCredentialFile(options.cert_file, "the server certificate (--tls-cert)");
  if (!cert.ok()) return cert.status();
  absl::StatusOr<std::string> key =
      ReadCredentialFile(options.key_file, "the server key (--tls-key)");
  if (!key.ok()) return key.status();
  pair.cert_chain = *std::move(cert);
  pair.private_key = *std::move(key);
  ssl.pem_key_cert_pairs.push_back(std::move(pair));
  if (!options.client_ca_file.empty()) {
    absl::StatusOr<std::string> ca =
        ReadCredentialFile(options.client_ca_file, "the client CA (--client-ca)");
    if (!ca.ok()) return ca.status();
    ssl.pem_root_certs = *std::move(ca);
    // With a token, callers may come without a certificate; any certificate shown is verified.
    ssl.client_certificate_request =
        options.token.empty() ? GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY
                              : GRPC_SSL_REQUEST_CLIENT_CERTIFICATE_AND_VERIFY;
  }
  std::shared_ptr<grpc::ServerCredentials> credentials = grpc::SslServerCredentials(ssl);
  if (!options.token.empty()) {
    credentials->SetAuthMetadataProcessor(std::make_shared<TokenAuthProcessor>(options.token));
  }
  return credentials;
}

absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> MakeChannelCredentials(
    const ClientCredentialOptions& options) {
  if (options.cert_file.empty() != options.key_file.empty()) {
    return absl::InvalidArgumentError(
        "a client certificate and its key go together: give both --tls-cert and --tls-key");
  }
  const bool tls = !options.ca_file.empty() || !options.cert_file.empty();
  if (!tls) {
    if (!options.token.empty()) {
      return absl::InvalidArgumentError(
          "a bearer token is only sent over TLS: give the coordinator's CA with --tls-ca");
    }
    return grpc::InsecureChannelCredentials();
  }
  grpc::SslCredentialsOptions ssl;
  if (!options.ca_file.empty()) {
    absl::StatusOr<std::string> ca =
        ReadCredentialFile(options.ca_file, "the coordinator's CA (--tls-ca)");
    if (!ca.ok()) return ca.status();
    ssl.pem_root_certs = *std::move(ca);
  }
  if (!options.cert_file.empty()) {
    absl::StatusOr<std::string> cert =
        ReadCredentialFile(options.cert_file, "the client certificate (--tls-cert)");
    if (!cert.ok()) return cert.status();
    absl::StatusOr<std::string> key =
        ReadCredentialFile(options.key_file, "the client key (--tls-key)");
    if (!key.ok()) return key.status();
    ssl.pem_cert_chain = *std::move(cert);
    ssl.pem_private_key = *std::move(key);
  }
  std::shared_ptr<grpc::ChannelCredentials> credentials = grpc::SslCredentials(ssl);
  if (!options.token.empty()) {
    credentials =
        grpc::CompositeChannelCredentials(credentials, grpc::AccessTokenCredentials(options.token));
  }
  return credentials;
}

bool IsLoopbackAddress(const std::string& listen_address) {
  const std::string address = absl::AsciiStrToLower(listen_address);
  if (absl::StartsWith(address, "unix:") || absl::StartsWith(address, "unix-abstract:")) {
    return true;
  }
  std::string host;
  if (absl::StartsWith(address, "[")) {
    const size_t close = address.find(']');
    if (close == std::string::npos) return false;
    host = address.substr(1, close - 1);
  } else {
    const size_t colon = address.rfind(':');
    host = colon == std::string::npos ? address : address.substr(0, colon);
  }
  return host == "localhost" || host == "::1" || absl::StartsWith(host, "127.");
}

}  // namespace kbisect
