#include "services/orchestrator/api/raw_request.h"

#include <grpcpp/support/proto_buffer_reader.h>

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "libs/core/error_catalog.h"
#include "libs/core/error_reason.h"
#include "services/orchestrator/api/request_fields.h"

namespace omniforge::orchestrator {

absl::Status ParseRawRequest(const grpc::ByteBuffer& raw, google::protobuf::Message& message) {
  grpc::ByteBuffer copy(raw);
  grpc::ProtoBufferReader reader(&copy);
  if (message.ParseFromZeroCopyStream(&reader)) return absl::OkStatus();
  std::vector<grpc::Slice> slices;
  std::string bytes;
  if (raw.Dump(&slices).ok()) {
    for (const grpc::Slice& slice : slices) {
      bytes.append(reinterpret_cast<const char*>(slice.begin()), slice.size());
    }
  }
  const std::string field = InvalidUtf8Field(*message.GetDescriptor(), bytes);
  if (!field.empty()) {
    return core::InvalidField(field, core::kReasonInvalidUtf8, "must be valid UTF-8");
  }
  return core::WithFieldViolation(
      core::WithReason(absl::InvalidArgumentError(absl::StrCat(
                           "request is not a valid ", message.GetDescriptor()->full_name())),
                       core::kReasonRequestMalformed),
      "", "the request bytes are not a " + message.GetDescriptor()->full_name());
}

}  // namespace omniforge::orchestrator
