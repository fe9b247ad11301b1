#include "libs/core/server.h"

#include <google/protobuf/stubs/logging.h>
#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/health_check_service_interface.h>
#include <grpcpp/security/server_credentials.h>
#include <grpcpp/server.h>
#include <grpcpp/server_builder.h>

#include "absl/synchronization/mutex.h"
#include "libs/core/files.h"
#include "libs/core/grpc_metrics.h"
#include "libs/core/logging.h"
#include "libs/core/process_metrics.h"

namespace omniforge::core {
namespace {

// Protobuf reports parse problems (e.g. invalid UTF-8 in a request) through
// its own logger; send them to the JSON log instead of raw stderr. The
// messages name fields, never their content.
void LogProtobufMessage(google::protobuf::LogLevel level, const char* filename, int line,
                        const std::string& message) {
  const LogFields fields = {{"component", "protobuf"},
                            {"source", std::string(filename) + ":" + std::to_string(line)}};
  if (level >= google::protobuf::LOGLEVEL_ERROR) {
    LogWarn(message, fields);
  } else {
    LogDebug(message, fields);
  }
}

}  // namespace

ServerOptions ReadServerOptions(ConfigReader& config, int default_port, int default_metrics_port) {
  ServerOptions options;
  options.host = config.String("server.host", options.host);
  options.port = static_cast<int>(config.Int("server.port", default_port, 0, 65535));
  options.metrics_host = config.String("server.metrics_host", options.metrics_host);
  options.metrics_port =
      static_cast<int>(config.Int("server.metrics_port", default_metrics_port, -1, 65535));
  options.drain_timeout = std::chrono::seconds(config.Int("server.drain_timeout_s", 15, 0, 3600));
  options.max_receive_bytes = static_cast<int>(
      config.Int("server.max_receive_bytes", options.max_receive_bytes, 1024, 64 << 20));
  options.max_connection_age =
      std::chrono::seconds(config.Int("server.max_connection_age_s", 300, 0, 86400));
  options.tls_cert_file = config.String("server.tls_cert_file", "");
  options.tls_key_file = config.String("server.tls_key_file", "");
  options.tls_client_ca_file = config.String("server.tls_client_ca_file", "");
  return options;
}

ServiceServer::ServiceServer(ServerOptions options) : options_(std::move(options)) {}

ServiceServer::~ServiceServer() { Shutdown(); }

void ServiceServer::AddService(grpc::Service* service) { services_.push_back(service); }

absl::Status ServiceServer::Start() {
  google::protobuf::SetLogHandler(&LogProtobufMessage);
  // Debian builds abseil with lock-order (deadlock) detection on, which
  // costs every absl::Mutex operation gRPC performs a graph update; it is a
  // debugging aid, not something to pay for in a server.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();

  auto credentials = Credentials();
  if (!credentials.ok()) return credentials.status();

  grpc::ServerBuilder builder;
  builder.AddListeningPort(options_.host + ":" + std::to_string(options_.port), *credentials,
                           &port_);
  builder.SetMaxReceiveMessageSize(options_.max_receive_bytes);
  // Keepalive: let long-lived internal channels ping through idle periods.
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, 10000);
  if (options_.max_connection_age.count() > 0) {
    builder.AddChannelArgument(
        GRPC_ARG_MAX_CONNECTION_AGE_MS,
        static_cast<int>(std::chrono::milliseconds(options_.max_connection_age).count()));
    // Longer than a chat turn may run, so a turn is never cut by the GOAWAY.
    builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_AGE_GRACE_MS, 120000);
  }
  for (grpc::Service* service : services_) builder.RegisterService(service);
  std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> metrics;
  metrics.push_back(MakeServerMetricsFactory());
  builder.experimental().SetInterceptorCreators(std::move(metrics));
  server_ = builder.BuildAndStart();
  if (!server_ || port_ == 0) {
    return absl::UnavailableError("cannot listen on " + options_.host + ":" +
                                  std::to_string(options_.port));
  }
  server_->GetHealthCheckService()->SetServingStatus(true);

  if (options_.metrics_port >= 0) {
    RegisterProcessMetrics(MetricsRegistry::Global(), LoggingService());
    metrics_server_ = std::make_unique<MetricsHttpServer>(MetricsRegistry::Global());
    metrics_port_ = metrics_server_->Start(options_.metrics_host, options_.metrics_port);
    if (metrics_port_ < 0) {
      return absl::UnavailableError("cannot serve metrics on " + options_.metrics_host + ":" +
                                    std::to_string(options_.metrics_port));
    }
  }
  LogInfo("server started", {{"port", std::to_string(port_)},
                             {"metrics_port", std::to_string(metrics_port_)},
                             {"tls", options_.tls_cert_file.empty()        ? "off"
                                     : options_.tls_client_ca_file.empty() ? "on"
                                                                           : "mutual"}});
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> ServiceServer::Credentials() const {
  if (options_.tls_cert_file.empty() && options_.tls_key_file.empty()) {
    if (!options_.tls_client_ca_file.empty()) {
      return absl::InvalidArgumentError(
          "server.tls_client_ca_file needs server.tls_cert_file and server.tls_key_file");
    }
    return grpc::InsecureServerCredentials();
  }
  auto cert = ReadFile(options_.tls_cert_file);
  auto key = ReadFile(options_.tls_key_file);
  if (!cert.ok()) return cert.status();
  if (!key.ok()) return key.status();
  grpc::SslServerCredentialsOptions ssl;
  ssl.pem_key_cert_pairs.push_back({*key, *cert});
  if (!options_.tls_client_ca_file.empty()) {
    auto ca = ReadFile(options_.tls_client_ca_file);
    if (!ca.ok()) return ca.status();
    ssl.pem_root_certs = *std::move(ca);
    ssl.client_certificate_request = GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY;
  }
  return grpc::SslServerCredentials(ssl);
}

void ServiceServer::Shutdown() {
  if (shut_down_ || !server_) return;
  shut_down_ = true;
  LogInfo("draining", {{"timeout_s", std::to_string(options_.drain_timeout.count())}});
  server_->GetHealthCheckService()->SetServingStatus(false);
  server_->Shutdown(std::chrono::system_clock::now() + options_.drain_timeout);
  server_->Wait();
  if (metrics_server_) metrics_server_->Stop();
  LogInfo("stopped");
}

sigset_t BlockTerminationSignals() {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  return signals;
}

int WaitForTerminationSignal(const sigset_t& signals) {
  int signal_number = 0;
  sigwait(&signals, &signal_number);
  return signal_number;
}

}  // namespace omniforge::core
