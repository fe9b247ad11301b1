// Parsing a request that a callback method received as raw bytes, so that
// bytes protobuf refuses (a string field that is not valid UTF-8, bytes that
// are not the message at all) get INVALID_ARGUMENT naming the field instead
// of gRPC's own INTERNAL with no message. Shared by the orchestrator's
// services (ChatService, KeyAdminService).
#pragma once

#include <grpcpp/support/byte_buffer.h>

#include "absl/status/status.h"
#include "google/protobuf/message.h"

namespace omniforge::orchestrator {

// Parses `raw` into `message`. INVALID_ARGUMENT when it does not parse:
// INVALID_UTF8 naming the string field that is not valid UTF-8, else
// REQUEST_MALFORMED (an empty field in its field violation). Thread-safe.
absl::Status ParseRawRequest(const grpc::ByteBuffer& raw, google::protobuf::Message& message);

}  // namespace omniforge::orchestrator
