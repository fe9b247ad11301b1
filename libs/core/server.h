// The bootstrap every omniforge service shares: a gRPC server with health
// (grpc.health.v1) and reflection, optional TLS, a Prometheus /metrics
// endpoint, and a graceful drain on SIGTERM/SIGINT.
//
// Typical main():
//   sigset_t signals = BlockTerminationSignals();   // before any thread starts
//   ServiceServer server(options);
//   server.AddService(&my_service);
//   if (auto s = server.Start(); !s.ok()) return 1;
//   WaitForTerminationSignal(signals);
//   server.Shutdown();                              // drains in-flight calls
#pragma once

#include <signal.h>  // NOLINT(modernize-deprecated-headers): POSIX sigset_t, not <csignal>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "libs/core/config.h"
#include "libs/core/metrics.h"

namespace grpc {
class Server;
class ServerCredentials;
class Service;
}  // namespace grpc

namespace omniforge::core {

struct ServerOptions {
  std::string host = "0.0.0.0";
  int port = 0;  // 0 picks a free port
  std::string metrics_host = "0.0.0.0";
  int metrics_port = -1;  // -1 disables /metrics, 0 picks a free port
  std::chrono::seconds drain_timeout{15};
  int max_receive_bytes = 4 * 1024 * 1024;
  // Connections older than this get a GOAWAY (calls in flight finish, for up
  // to two minutes), so callers reconnect and re-resolve: replicas added by
  // an autoscaler join their round robin. 0: no limit.
  std::chrono::seconds max_connection_age{300};
  std::string tls_cert_file;  // both set: TLS; both empty: plaintext
  std::string tls_key_file;
  // Set (with TLS): mutual TLS, every client presents a certificate this CA
  // signed, or the connection is refused before any call.
  std::string tls_client_ca_file;
};

// Reads `server.*` keys: host, port, metrics_host, metrics_port,
// drain_timeout_s, max_receive_bytes, max_connection_age_s, tls_cert_file,
// tls_key_file, tls_client_ca_file.
ServerOptions ReadServerOptions(ConfigReader& config, int default_port, int default_metrics_port);

class ServiceServer final {
 public:
  explicit ServiceServer(ServerOptions options);
  ~ServiceServer();

  // Services must outlive the server. Call before Start.
  void AddService(grpc::Service* service);

  // Binds and starts serving; the health status becomes SERVING.
  // UNAVAILABLE when the port cannot be bound, INVALID_ARGUMENT on bad TLS files.
  absl::Status Start();

  int port() const { return port_; }
  int metrics_port() const { return metrics_port_; }

  // Marks the server NOT_SERVING, stops accepting calls and waits up to the
  // drain timeout for in-flight calls (streams included) to finish, then
  // cancels what is left. Idempotent.
  void Shutdown();

 private:
  // The listening port's credentials from options_ (files read here).
  absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> Credentials() const;

  ServerOptions options_;
  std::vector<grpc::Service*> services_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<MetricsHttpServer> metrics_server_;
  int port_ = 0;
  int metrics_port_ = -1;
  bool shut_down_ = false;
};

// Blocks SIGTERM and SIGINT in the calling thread and every thread it starts
// afterwards, so they can be received with WaitForTerminationSignal.
sigset_t BlockTerminationSignals();

// Waits for SIGTERM or SIGINT; returns the signal number.
int WaitForTerminationSignal(const sigset_t& signals);

}  // namespace omniforge::core
