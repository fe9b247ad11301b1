#include "libs/core/grpc_status.h"

#include <string>

#include "google/rpc/error_details.pb.h"
#include "google/rpc/status.pb.h"
#include "libs/core/retry_hint.h"

namespace omniforge::core {

grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  const auto code = static_cast<grpc::StatusCode>(status.code());
  std::string message(status.message());
  const auto retry = RetryAfter(status);
  if (!retry) return grpc::Status(code, message);
  // The standard place for details: google.rpc.Status in the
  // grpc-status-details-bin trailer, which gRPC fills from the third argument.
  google::rpc::RetryInfo info;
  info.mutable_retry_delay()->set_seconds(retry->count() / 1000);
  info.mutable_retry_delay()->set_nanos(static_cast<int32_t>(retry->count() % 1000) * 1000000);
  google::rpc::Status details;
  details.set_code(static_cast<int32_t>(code));
  details.set_message(message);
  details.add_details()->PackFrom(info);
  return grpc::Status(code, message, details.SerializeAsString());
}

absl::Status FromGrpcStatus(const grpc::Status& status) {
  if (status.ok()) return absl::OkStatus();
  absl::Status out(static_cast<absl::StatusCode>(status.error_code()), status.error_message());
  if (status.error_details().empty()) return out;
  google::rpc::Status details;
  if (!details.ParseFromString(status.error_details())) return out;
  for (const google::protobuf::Any& any : details.details()) {
    google::rpc::RetryInfo info;
    if (any.UnpackTo(&info)) {
      return WithRetryAfter(std::move(out),
                            std::chrono::milliseconds(info.retry_delay().seconds() * 1000 +
                                                      info.retry_delay().nanos() / 1000000));
    }
  }
  return out;
}

}  // namespace omniforge::core
