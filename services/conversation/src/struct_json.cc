#include "services/conversation/src/struct_json.h"

#include <nlohmann/json.hpp>

namespace omniforge::conversation {
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
    case Value::kNumberValue:
      return value.number_value();
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

}  // namespace omniforge::conversation
