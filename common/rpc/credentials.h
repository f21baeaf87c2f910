// Copyright 2026 The kbisect Authors.
//
// Transport security for every kbisect gRPC port, built from files named on the command line.
//
// Server side (kbisect-coordinator): TLS with a certificate and key; with a client CA, workers
// (and clients) may authenticate with client certificates signed by it (mutual TLS); with a
// token, callers without such a certificate must send "authorization: Bearer TOKEN". A caller
// that authenticated with the token only (a person or CI job) may not call WorkerService.
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

#include "absl/status/statusor.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/security/server_credentials.h"

namespace kbisect {

// Returns the contents of `path`, which holds `what` (e.g. "the TLS key (--tls-key)"). A
// missing or empty file is InvalidArgument naming `what` and the path, never the contents.
absl::StatusOr<std::string> ReadCredentialFile(const std::string& path, const std::string& what);

// Returns a token file's contents with surrounding whitespace (a trailing newline) removed.
absl::StatusOr<std::string> ReadTokenFile(const std::string& path);

struct ServerCredentialOptions {
  // PEM certificate chain and private key of the server. Both or neither.
  std::string cert_file;
  std::string key_file;
  // PEM CA bundle that signs client certificates (mutual TLS). Needs cert_file.
  std::string client_ca_file;
  // Bearer token accepted from callers without a client certificate (already read). Needs
  // cert_file.
  std::string token;
};

// Returns null when no certificate is configured (the caller decides whether plaintext is
// allowed), otherwise the TLS credentials described at the top. InvalidArgument for an
// inconsistent combination or unreadable file.
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
