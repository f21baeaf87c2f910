// Copyright 2026 The kbisect Authors.
//
// Transport security for every kbisect gRPC port, built from files named on the command line.
//
// Server side (kbisect-coordinator): TLS with a certificate and key; with a client CA, workers
// and clients authenticate with client certificates signed by it (mutual TLS); with a token as
// well, callers without such a certificate may send "authorization: Bearer TOKEN" instead.
//
// Roles: a client certificate names its role in the organizational unit (OU) of its subject:
// OU=kbisect-worker may call WorkerService only, OU=kbisect-client CoordinatorService only (a
// certificate with both OUs may call both). The bearer token is a client's credential: it
// grants CoordinatorService only. A certificate with no recognised OU may call neither.
// Health checking and server reflection are open to every authenticated caller.
//
// Client side (kbisect-worker, the `kbisect` client commands): TLS when a CA, certificate or
// token is given, the client certificate when given, the bearer token as per-call credentials.
// gRPC only sends call credentials over TLS, so a token without TLS is refused up front.
//
// Secrets (keys, tokens) are never put into a Status message or a log line.
#ifndef KBISECT_COMMON_RPC_CREDENTIALS_H_
#define KBISECT_COMMON_RPC_CREDENTIALS_H_

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "grpcpp/security/auth_context.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/security/server_credentials.h"

namespace kbisect {

// Returns the contents of `path`, which holds `what` (e.g. "the TLS key (--tls-key)"). A
// missing or empty file is InvalidArgument naming `what` and the path, never the contents.
absl::StatusOr<std::string> ReadCredentialFile(const std::string& path, const std::string& what);

// Returns a token file's contents with surrounding whitespace (a trailing newline) removed.
absl::StatusOr<std::string> ReadTokenFile(const std::string& path);

// The subject OU that makes a client certificate a worker's, and the one that makes it a
// client's (a person or a CI job).
inline constexpr char kWorkerRoleOu[] = "kbisect-worker";
inline constexpr char kClientRoleOu[] = "kbisect-client";

// The roles one caller holds.
struct CallerRoles {
  bool worker = false;
  bool client = false;
};

// Returns the roles named by the OU attributes of `subject`, a distinguished name in the RFC 2253
// form gRPC reports ("CN=node-3,OU=kbisect-worker,O=Example"; escapes like "\," and "\2C" are
// understood). Other attributes and unknown OUs are ignored.
CallerRoles RolesFromSubject(absl::string_view subject);

// What the server knows about the caller of one RPC.
struct CallerCredentials {
  // The caller showed a client certificate that verified against the client CA.
  bool has_certificate = false;
  // The roles its subject names (RolesFromSubject).
  CallerRoles certificate_roles;
  // The caller sent the configured bearer token.
  bool valid_token = false;
};

// Decides whether `caller` may call `method`, a gRPC path such as
// "/kbisect.v1.WorkerService/OpenSession". Returns OK, Unauthenticated when the caller has neither
// a certificate nor the token, or PermissionDenied when its role does not allow the method, with a
// message that says what credential the method needs (never the token). `token_configured` only
// changes the wording.
absl::Status AuthorizeCall(const CallerCredentials& caller, absl::string_view method,
                           bool token_configured);

// The RFC 2253 subject of the caller's verified client certificate, or "" when there is none
// (plaintext, TLS without a client certificate). Used to bind worker sessions to certificates.
std::string PeerCertificateSubject(const grpc::AuthContext& context);

struct ServerCredentialOptions {
  // PEM certificate chain and private key of the server. Both or neither.
  std::string cert_file;
  std::string key_file;
  // PEM CA bundle that signs client certificates (mutual TLS). Needs cert_file.
  std::string client_ca_file;
  // Bearer token accepted from clients without a client certificate (already read). Needs
  // cert_file and client_ca_file (workers have no other way to authenticate).
  std::string token;
};

// Returns null when no certificate is configured (the caller decides whether plaintext is
// allowed), otherwise the TLS credentials described at the top; with a client CA, every call is
// authorized by AuthorizeCall. InvalidArgument for an inconsistent combination (a token without
// TLS or without a client CA, a CA without TLS, a certificate without its key) or an unreadable
// file.
absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> MakeServerCredentials(
    const ServerCredentialOptions& options);

struct ClientCredentialOptions {
  // PEM roots that sign the coordinator's certificate; empty with TLS means the system roots.
  std::string ca_file;
  // PEM client certificate and key for mutual TLS. Both or neither.
  std::string cert_file;
  std::string key_file;
  // Bearer token (already read).
  std::string token;
};

// Insecure (plaintext) credentials when nothing is set; TLS otherwise, see the top.
// InvalidArgument for a token without TLS settings (gRPC would not send it), a certificate
// without its key, or an unreadable file.
absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> MakeChannelCredentials(
    const ClientCredentialOptions& options);

// True when `listen_address` ("host:port", "[v6]:port", "unix:...") only accepts connections
// from this machine: localhost, 127.0.0.0/8, ::1 or a unix socket.
bool IsLoopbackAddress(const std::string& listen_address);

}  // namespace kbisect

#endif  // KBISECT_COMMON_RPC_CREDENTIALS_H_
