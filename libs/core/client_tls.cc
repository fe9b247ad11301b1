#include "libs/core/client_tls.h"

#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>
#include <grpcpp/support/channel_arguments.h>

#include "libs/core/files.h"
#include "libs/core/grpc_metrics.h"

namespace omniforge::core {

ClientTlsOptions ReadClientTlsOptions(ConfigReader& config) {
  ClientTlsOptions options;
  options.ca_file = config.String("client_tls.ca_file", "");
  options.cert_file = config.String("client_tls.cert_file", "");
  options.key_file = config.String("client_tls.key_file", "");
  options.server_name = config.String("client_tls.server_name", "");
  return options;
}

absl::StatusOr<ChannelSecurity> MakeChannelSecurity(const ClientTlsOptions& options) {
  if (options.cert_file.empty() != options.key_file.empty()) {
    return absl::InvalidArgumentError(
        "client_tls.cert_file and client_tls.key_file go together (a client certificate and "
        "its key)");
  }
  if (!options.enabled()) {
    if (!options.cert_file.empty()) {
      return absl::InvalidArgumentError(
          "client_tls.cert_file needs client_tls.ca_file: the server is verified first");
    }
    return ChannelSecurity{};
  }
  grpc::SslCredentialsOptions ssl;
  if (!options.ca_file.empty()) {  // else gRPC's default roots
    auto ca = ReadFile(options.ca_file);
    if (!ca.ok()) return ca.status();
    ssl.pem_root_certs = *std::move(ca);
  }
  if (!options.cert_file.empty()) {
    auto cert = ReadFile(options.cert_file);
    if (!cert.ok()) return cert.status();
    auto key = ReadFile(options.key_file);
    if (!key.ok()) return key.status();
    ssl.pem_cert_chain = *std::move(cert);
    ssl.pem_private_key = *std::move(key);
  }
  return ChannelSecurity{grpc::SslCredentials(ssl), options.server_name};
}

std::shared_ptr<grpc::Channel> CreateServiceChannel(const std::string& address,
                                                    const ChannelSecurity& security,
                                                    grpc::ChannelArguments& args) {
  if (security.credentials == nullptr) {
    return grpc::experimental::CreateCustomChannelWithInterceptors(
        address, grpc::InsecureChannelCredentials(), args, ClientMetricsInterceptors());
  }
  if (!security.server_name.empty()) args.SetSslTargetNameOverride(security.server_name);
  return grpc::experimental::CreateCustomChannelWithInterceptors(address, security.credentials,
                                                                 args, ClientMetricsInterceptors());
}

}  // namespace omniforge::core
