// Conversion between google.protobuf.Struct (metadata on the wire) and JSON
// (metadata in storage and in the services' logic), walking both directly:
// protobuf's own JSON printer and parser cost tens of microseconds per call,
// and a context window converts the metadata of every message it holds, on
// both sides of the call.
#pragma once

#include <google/protobuf/struct.pb.h>

#include <nlohmann/json.hpp>
#include <string>

namespace omniforge::core {

// The Struct as a JSON object. Whole numbers (up to 2^53) come back as
// integers, the rest as doubles, as protobuf's JSON printer writes them.
nlohmann::json JsonFromStruct(const google::protobuf::Struct& value);

// The JSON as a Struct: `value` must be an object (anything else gives an
// empty Struct). Integers become doubles, as the Struct holds them.
google::protobuf::Struct StructFromJson(const nlohmann::json& value);

// The Struct as JSON text, numbers as JsonFromStruct gives them.
std::string StructToJsonText(const google::protobuf::Struct& metadata);

// Fills `out` from a JSON object; false (and `out` cleared) when `json` is
// not a JSON object.
bool JsonTextToStruct(const std::string& json, google::protobuf::Struct* out);

}  // namespace omniforge::core
