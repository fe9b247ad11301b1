// What a gateway reads of a failed call: its code and the google.rpc
// details decoded from grpc-status-details-bin (ErrorInfo reason, domain and
// metadata, RetryInfo, BadRequest fields). For tests of refusals.
#pragma once

#include <grpcpp/support/status.h>

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "google/rpc/error_details.pb.h"
#include "google/rpc/status.pb.h"

namespace omniforge::testing {

struct Refusal {
  grpc::StatusCode code = grpc::StatusCode::OK;
  std::string reason;
  std::string domain;
  std::map<std::string, std::string> metadata;
  std::optional<std::chrono::milliseconds> retry;
  std::vector<std::string> fields;  // BadRequest field violations
};

inline Refusal Decode(const grpc::Status& status) {
  Refusal out;
  out.code = status.error_code();
  google::rpc::Status details;
  if (status.ok() || !details.ParseFromString(status.error_details())) return out;
  for (const google::protobuf::Any& any : details.details()) {
    google::rpc::ErrorInfo info;
    google::rpc::RetryInfo retry;
    google::rpc::BadRequest bad_request;
    if (any.UnpackTo(&info)) {
      out.reason = info.reason();
      out.domain = info.domain();
      out.metadata.insert(info.metadata().begin(), info.metadata().end());
    } else if (any.UnpackTo(&retry)) {
      out.retry = std::chrono::milliseconds(retry.retry_delay().seconds() * 1000 +
                                            retry.retry_delay().nanos() / 1000000);
    } else if (any.UnpackTo(&bad_request)) {
      for (const auto& violation : bad_request.field_violations()) {
        out.fields.push_back(violation.field());
      }
    }
  }
  return out;
}

}  // namespace omniforge::testing
