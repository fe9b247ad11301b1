// The credentials of a service's channels to the other services: plaintext,
// TLS that verifies the server against a CA, or mutual TLS that also
// presents a client certificate (`client_tls.*`; the servers' side is
// `server.tls_*`, libs/core/server.h).
//
//   client_tls:
//     ca_file: /var/run/secrets/omniforge/tls/ca.crt     # set: TLS
//     cert_file: /var/run/secrets/omniforge/tls/tls.crt  # with key_file:
//     key_file: /var/run/secrets/omniforge/tls/tls.key   #   mutual TLS
//     server_name: ""      # the name checked in the server's certificate
//                          # (default: the host of the address called)
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "libs/core/config.h"

namespace grpc {
class Channel;
class ChannelArguments;
class ChannelCredentials;
}  // namespace grpc

namespace omniforge::core {

struct ClientTlsOptions {
  std::string ca_file;
  std::string cert_file;
  std::string key_file;
  std::string server_name;
  // TLS verified against the system's roots when no ca_file is given (the
  // CLI's --tls, for a public endpoint).
  bool system_roots = false;

  bool enabled() const { return system_roots || !ca_file.empty(); }
};

// Reads client_tls.ca_file, cert_file, key_file and server_name.
ClientTlsOptions ReadClientTlsOptions(ConfigReader& config);

// How a service's channels to the others are secured; the default is
// plaintext.
struct ChannelSecurity {
  std::shared_ptr<grpc::ChannelCredentials> credentials;  // null: plaintext
  std::string server_name;                                // empty: the address's host
};

// The security `options` ask for: plaintext when no CA is set.
// INVALID_ARGUMENT for a certificate without its key (or the reverse), or a
// client certificate without a CA; the reading error for a file that cannot
// be read. Files are read once, here.
absl::StatusOr<ChannelSecurity> MakeChannelSecurity(const ClientTlsOptions& options);

// A channel to `address` with `security` and `args`.
std::shared_ptr<grpc::Channel> CreateServiceChannel(const std::string& address,
                                                    const ChannelSecurity& security,
                                                    grpc::ChannelArguments& args);

}  // namespace omniforge::core
