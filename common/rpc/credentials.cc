// Copyright 2026 The kbisect Authors.
#include "common/rpc/credentials.h"

#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "grpc/grpc_security_constants.h"
#include "grpcpp/security/auth_metadata_processor.h"

namespace kbisect {
namespace {

constexpr char kWorkerServicePrefix[] = "/kbisect.v1.WorkerService/";
constexpr char kCoordinatorServicePrefix[] = "/kbisect.v1.CoordinatorService/";

// Compares without an early exit, so the time taken does not reveal a matching prefix.
bool ConstantTimeEquals(const std::string& a, const std::string& b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < a.size(); ++i) {
    diff |= static_cast<unsigned char>(a[i] ^ (i < b.size() ? b[i] : 0));
  }
  return diff == 0;
}

// Authorizes every call by the caller's certificate role or the bearer token (AuthorizeCall).
// Installed whenever the server verifies client certificates.
class RoleAuthProcessor final : public grpc::AuthMetadataProcessor {
 public:
  // An empty `token` accepts certificates only.
  explicit RoleAuthProcessor(const std::string& token)
      : expected_(token.empty() ? std::string() : absl::StrCat("Bearer ", token)) {}

  bool IsBlocking() const override { return false; }

  grpc::Status Process(const InputMetadata& metadata, grpc::AuthContext* context,
                       OutputMetadata* consumed, OutputMetadata*) override {
    CallerCredentials caller;
    if (context != nullptr) {
      const std::string subject = PeerCertificateSubject(*context);
      caller.has_certificate = !subject.empty() || context->IsPeerAuthenticated();
      caller.certificate_roles = RolesFromSubject(subject);
    }
    if (!expected_.empty()) {
      const auto range = metadata.equal_range("authorization");
      for (auto it = range.first; it != range.second; ++it) {
        if (ConstantTimeEquals(std::string(it->second.data(), it->second.size()), expected_)) {
          caller.valid_token = true;
        }
      }
      if (caller.valid_token) consumed->insert({"authorization", expected_});
    }
    std::string method;
    auto path = metadata.find(":path");
    if (path != metadata.end()) method.assign(path->second.data(), path->second.size());
    const absl::Status status = AuthorizeCall(caller, method, !expected_.empty());
    if (status.ok()) return grpc::Status::OK;
    return grpc::Status(static_cast<grpc::StatusCode>(status.code()),
                        std::string(status.message()));
  }

 private:
  const std::string expected_;
};

// "\2C" -> ',' and "\," -> ',' in one RFC 2253 attribute value.
std::string UnescapeRfc2253(absl::string_view value) {
  std::string out;
  for (size_t i = 0; i < value.size(); ++i) {
    if (value[i] != '\\' || i + 1 == value.size()) {
      out.push_back(value[i]);
      continue;
    }
    if (i + 2 < value.size() && absl::ascii_isxdigit(value[i + 1]) &&
        absl::ascii_isxdigit(value[i + 2])) {
      auto hex = [](char c) {
        return absl::ascii_isdigit(c) ? c - '0' : absl::ascii_tolower(c) - 'a' + 10;
      };
      out.push_back(static_cast<char>(hex(value[i + 1]) * 16 + hex(value[i + 2])));
      i += 2;
    } else {
      out.push_back(value[++i]);
    }
  }
  return out;
}

}  // namespace

CallerRoles RolesFromSubject(absl::string_view subject) {
  CallerRoles roles;
  // Split into attributes at unescaped ',' and '+' (multi-valued RDNs).
  size_t start = 0;
  for (size_t i = 0; i <= subject.size(); ++i) {
    if (i < subject.size() && subject[i] == '\\') {
      ++i;
      continue;
    }
    if (i < subject.size() && subject[i] != ',' && subject[i] != '+') continue;
    const absl::string_view attribute =
        absl::StripAsciiWhitespace(subject.substr(start, i - start));
    start = i + 1;
    const size_t equals = attribute.find('=');
    if (equals == absl::string_view::npos) continue;
    const absl::string_view type = absl::StripAsciiWhitespace(attribute.substr(0, equals));
    if (!absl::EqualsIgnoreCase(type, "OU") && type != "2.5.4.11") continue;
    const std::string value =
        UnescapeRfc2253(absl::StripAsciiWhitespace(attribute.substr(equals + 1)));
    if (value == kWorkerRoleOu) roles.worker = true;
    if (value == kClientRoleOu) roles.client = true;
  }
  return roles;
}

absl::Status AuthorizeCall(const CallerCredentials& caller, absl::string_view method,
                           bool token_configured) {
  if (!caller.has_certificate && !caller.valid_token) {
    return absl::UnauthenticatedError(token_configured
                                          ? "a client certificate or a valid bearer token is "
                                            "required"
                                          : "a client certificate is required");
  }
  const bool worker_rpc = absl::StartsWith(method, kWorkerServicePrefix);
  const bool client_rpc = absl::StartsWith(method, kCoordinatorServicePrefix);
  // Health checking and reflection: any authenticated caller.
  if (!worker_rpc && !client_rpc) return absl::OkStatus();
  const CallerRoles& roles = caller.certificate_roles;
  const bool no_role = caller.has_certificate && !roles.worker && !roles.client;
  if (worker_rpc && !roles.worker) {
    if (no_role) {
      return absl::PermissionDeniedError(absl::StrCat(
          "the client certificate names no kbisect role: a worker's certificate needs OU=",
          kWorkerRoleOu, " in its subject"));
    }
    return absl::PermissionDeniedError(absl::StrCat(
        "worker RPCs need a worker's client certificate (OU=", kWorkerRoleOu, " in its subject), ",
        caller.has_certificate && roles.client ? "not a client's" : "not a token"));
  }
  if (client_rpc && !roles.client && !caller.valid_token) {
    if (no_role) {
      return absl::PermissionDeniedError(absl::StrCat(
          "the client certificate names no kbisect role: a client's certificate needs OU=",
          kClientRoleOu, " in its subject", token_configured ? " (or use the bearer token)" : ""));
    }
    return absl::PermissionDeniedError(absl::StrCat(
        "client RPCs need a client certificate (OU=", kClientRoleOu, " in its subject)",
        token_configured ? " or the bearer token" : "", ", not a worker's certificate"));
  }
  return absl::OkStatus();
}

std::string PeerCertificateSubject(const grpc::AuthContext& context) {
  for (const grpc::string_ref& value :
       context.FindPropertyValues(GRPC_X509_SUBJECT_PROPERTY_NAME)) {
    if (!value.empty()) return std::string(value.data(), value.size());
  }
  return "";
}

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
  if (!options.token.empty() && options.client_ca_file.empty()) {
    return absl::InvalidArgumentError(
        "--token-file authenticates people and CI jobs only; workers need client certificates: "
        "give --client-ca too");
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
  if (!options.client_ca_file.empty()) {
    credentials->SetAuthMetadataProcessor(std::make_shared<RoleAuthProcessor>(options.token));
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
