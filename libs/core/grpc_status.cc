#include "libs/core/grpc_status.h"

#include <string>

#include "google/rpc/error_details.pb.h"
#include "google/rpc/status.pb.h"
#include "libs/core/error_reason.h"
#include "libs/core/retry_hint.h"
#include "libs/core/text.h"

namespace omniforge::core {
namespace {

// A status message on the wire is at most this long (gRPC's metadata limit
// is 8 KiB by default, and grpc-message is percent-encoded).
constexpr size_t kMaxStatusMessageBytes = 1024;

void AddRetryInfo(std::chrono::milliseconds after, google::rpc::Status& details) {
  google::rpc::RetryInfo info;
  info.mutable_retry_delay()->set_seconds(after.count() / 1000);
  info.mutable_retry_delay()->set_nanos(static_cast<int32_t>(after.count() % 1000) * 1000000);
  details.add_details()->PackFrom(info);
}

void AddErrorInfo(const absl::Status& status, google::rpc::Status& details) {
  google::rpc::ErrorInfo info;
  info.set_reason(ReasonOf(status));
  info.set_domain(kErrorDomain);
  for (const auto& [key, value] : ReasonMetadataOf(status)) (*info.mutable_metadata())[key] = value;
  details.add_details()->PackFrom(info);
}

void AddBadRequest(const std::vector<FieldViolation>& violations, google::rpc::Status& details) {
  google::rpc::BadRequest bad_request;
  for (const FieldViolation& violation : violations) {
    google::rpc::BadRequest::FieldViolation* out = bad_request.add_field_violations();
    out->set_field(violation.field);
    out->set_description(violation.description);
  }
  details.add_details()->PackFrom(bad_request);
}

// The details read back into the payloads they were sent from.
absl::Status WithDetails(absl::Status status, const google::rpc::Status& details) {
  for (const google::protobuf::Any& any : details.details()) {
    google::rpc::RetryInfo retry;
    google::rpc::ErrorInfo info;
    google::rpc::BadRequest bad_request;
    if (any.Is<google::rpc::RetryInfo>() && any.UnpackTo(&retry)) {
      status = WithRetryAfter(std::move(status),
                              std::chrono::milliseconds(retry.retry_delay().seconds() * 1000 +
                                                        retry.retry_delay().nanos() / 1000000));
    } else if (any.Is<google::rpc::ErrorInfo>() && any.UnpackTo(&info)) {
      status = WithReason(
          std::move(status), info.reason(),
          std::map<std::string, std::string>(info.metadata().begin(), info.metadata().end()));
    } else if (any.Is<google::rpc::BadRequest>() && any.UnpackTo(&bad_request)) {
      for (const auto& violation : bad_request.field_violations()) {
        status = WithFieldViolation(std::move(status), violation.field(), violation.description());
      }
    }
  }
  return status;
}

}  // namespace

grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  const auto code = static_cast<grpc::StatusCode>(status.code());
  // A message may quote what the caller sent: capped, so that no input
  // can make the status overflow the response's metadata (grpc-message).
  const std::string message = Shortened(std::string(status.message()), kMaxStatusMessageBytes);
  const auto retry = RetryAfter(status);
  const bool reasoned = !ReasonOf(status).empty();
  const std::vector<FieldViolation> violations = FieldViolationsOf(status);
  if (!retry && !reasoned && violations.empty()) return grpc::Status(code, message);
  // The standard place for details: google.rpc.Status in the
  // grpc-status-details-bin trailer, which gRPC fills from the third argument.
  google::rpc::Status details;
  details.set_code(static_cast<int32_t>(code));
  details.set_message(message);
  if (reasoned) AddErrorInfo(status, details);
  if (retry) AddRetryInfo(*retry, details);
  if (!violations.empty()) AddBadRequest(violations, details);
  return grpc::Status(code, message, details.SerializeAsString());
}

absl::Status FromGrpcStatus(const grpc::Status& status) {
  if (status.ok()) return absl::OkStatus();
  absl::Status out(static_cast<absl::StatusCode>(status.error_code()), status.error_message());
  if (status.error_details().empty()) return out;
  google::rpc::Status details;
  if (!details.ParseFromString(status.error_details())) return out;
  return WithDetails(std::move(out), details);
}

}  // namespace omniforge::core
