// Which field of a request that protobuf refused to parse is at fault, so
// that the refusal can name it (google.rpc.BadRequest) instead of the
// whole message. No gRPC here.
#pragma once

#include <string>
#include <string_view>

#include "google/protobuf/descriptor.h"

namespace omniforge::orchestrator {

// The path (`message`, `decision.arguments_json`) of the first string field
// of `type`, in the wire bytes `bytes`, that is not valid UTF-8; empty when
// none is (or the bytes are not a protobuf message at all).
std::string InvalidUtf8Field(const google::protobuf::Descriptor& type, std::string_view bytes);

}  // namespace omniforge::orchestrator
