#include "libs/core/struct_json.h"

#include <cmath>
#include <cstdint>

namespace omniforge::core {
namespace {

using google::protobuf::Value;

nlohmann::json ToJson(const Value& value);

nlohmann::json ToJson(const google::protobuf::Struct& s) {
  nlohmann::json object = nlohmann::json::object();
  for (const auto& [key, value] : s.fields()) object[key] = ToJson(value);
  return object;
}

nlohmann::json ToJson(const Value& value) {
  switch (value.kind_case()) {
    case Value::kNumberValue: {
      // A Struct holds every number as a double; one that is a whole number
      // comes back as an integer, as protobuf's JSON printer writes it, so
      // that counts stored as 2 read back as 2 and not 2.0.
      const double number = value.number_value();
      if (number == std::trunc(number) && std::abs(number) <= 9007199254740992.0) {
        return static_cast<int64_t>(number);
      }
      return number;
    }
    case Value::kStringValue:
      return value.string_value();
    case Value::kBoolValue:
      return value.bool_value();
    case Value::kStructValue:
      return ToJson(value.struct_value());
    case Value::kListValue: {
      nlohmann::json list = nlohmann::json::array();
      for (const Value& item : value.list_value().values()) list.push_back(ToJson(item));
      return list;
    }
    case Value::kNullValue:
    case Value::KIND_NOT_SET:
      break;
  }
  return nullptr;
}

void FromJson(const nlohmann::json& json, Value* out);

void FromJson(const nlohmann::json& object, google::protobuf::Struct* out) {
  auto& fields = *out->mutable_fields();
  for (const auto& [key, value] : object.items()) FromJson(value, &fields[key]);
}

void FromJson(const nlohmann::json& json, Value* out) {
  switch (json.type()) {
    case nlohmann::json::value_t::object:
      FromJson(json, out->mutable_struct_value());
      break;
    case nlohmann::json::value_t::array:
      for (const auto& item : json) FromJson(item, out->mutable_list_value()->add_values());
      if (json.empty()) out->mutable_list_value();
      break;
    case nlohmann::json::value_t::string:
      out->set_string_value(json.get_ref<const std::string&>());
      break;
    case nlohmann::json::value_t::boolean:
      out->set_bool_value(json.get<bool>());
      break;
    case nlohmann::json::value_t::number_integer:
    case nlohmann::json::value_t::number_unsigned:
    case nlohmann::json::value_t::number_float:
      out->set_number_value(json.get<double>());
      break;
    default:
      out->set_null_value(google::protobuf::NULL_VALUE);
      break;
  }
}

}  // namespace

nlohmann::json JsonFromStruct(const google::protobuf::Struct& value) { return ToJson(value); }

google::protobuf::Struct StructFromJson(const nlohmann::json& value) {
  google::protobuf::Struct out;
  if (value.is_object()) FromJson(value, &out);
  return out;
}

std::string StructToJsonText(const google::protobuf::Struct& metadata) {
  // Strings in a parsed Struct are valid UTF-8 (protobuf checked them).
  return ToJson(metadata).dump();
}

bool JsonTextToStruct(const std::string& json, google::protobuf::Struct* out) {
  out->Clear();
  nlohmann::json parsed = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded() || !parsed.is_object()) return false;
  FromJson(parsed, out);
  return true;
}

}  // namespace omniforge::core
