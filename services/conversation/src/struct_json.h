// Conversion between google.protobuf.Struct (metadata on the wire) and JSON
// text (metadata in storage), walking both directly: protobuf's own JSON
// printer and parser cost tens of microseconds per call, and a context
// window converts the metadata of every message it returns.
#pragma once

#include <google/protobuf/struct.pb.h>

#include <string>

namespace omniforge::conversation {

// The Struct as a JSON object. Numbers are doubles, as in the Struct.
std::string StructToJsonText(const google::protobuf::Struct& metadata);

// Fills `out` from a JSON object; false (and `out` cleared) when `json` is
// not a JSON object.
bool JsonTextToStruct(const std::string& json, google::protobuf::Struct* out);

}  // namespace omniforge::conversation
