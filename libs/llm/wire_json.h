// Internal to omniforge_llm_wire: lenient field access on provider JSON, so
// the wire decoders read optional and null fields the same way, and the JSON
// text helpers both encoders need.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "absl/status/statusor.h"
#include "libs/core/text.h"
#include "libs/llm/errors.h"
#include "libs/llm/json_scan.h"

namespace omniforge::llm::wire_internal {

// Ordered: schemas and tool arguments keep the key order the caller or the
// model chose (models generate structured output in schema order, and a
// stable prompt keeps the provider's prompt cache warm).
using Json = nlohmann::ordered_json;

// The parsed value, or nullopt when `text` is not JSON.
inline std::optional<Json> ParseJson(std::string_view text) {
  Json value = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (value.is_discarded()) return std::nullopt;
  return value;
}

// Compact JSON text; invalid UTF-8 in strings is replaced instead of thrown.
// `text` parsed as a JSON object (a tool's schema or arguments, a response
// schema), or kInvalidRequest saying that `what` is not one.
inline absl::StatusOr<Json> JsonObjectFromText(std::string_view text, std::string_view what) {
  std::optional<Json> parsed = ParseJson(text);
  if (!parsed.has_value() || !parsed->is_object()) {
    return LlmError(LlmErrorKind::kInvalidRequest, std::string(what) + " is not a JSON object");
  }
  return std::move(*parsed);
}

inline std::string DumpJson(const Json& value) {
  return value.dump(-1, ' ', false, Json::error_handler_t::replace);
}

// `text` as a JSON string appended to `out`, exactly as DumpJson(Json(text))
// writes it, but without making a JSON value of it when it is well-formed
// UTF-8 (ill-formed text goes through DumpJson, which replaces what is not
// UTF-8). A request carries the conversation's history on every model call.
inline void AppendJsonString(std::string& out, std::string_view text) {
  if (!core::IsValidUtf8(text)) {
    out += DumpJson(Json(std::string(text)));
    return;
  }
  out.reserve(out.size() + text.size() + 2);
  out += '"';
  size_t plain = 0;  // start of the run of characters written as they are
  for (size_t i = 0; i < text.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c != '"' && c != '\\') continue;
    out.append(text, plain, i - plain);
    plain = i + 1;
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default: {
        static constexpr char kHex[] = "0123456789abcdef";
        const char escaped[] = {'\\', 'u', '0', '0', kHex[c >> 4], kHex[c & 0xF]};
        out.append(escaped, sizeof escaped);
      }
    }
  }
  out.append(text, plain, text.size() - plain);
  out += '"';
}

// `text` as it goes into a request, where it must be a JSON object (a tool's
// schema, a response schema): the text itself when the strict scanner
// accepts it, else what a full parser makes of it, else kInvalidRequest
// saying that `what` is not a JSON object. Schemas are JSON already and a
// planner offers its whole catalog on every call, so parsing each one into a
// document only to write it out again would be most of an encoder's work.
inline absl::StatusOr<std::string> ObjectText(const std::string& text, std::string_view what) {
  if (ScansAsJsonObject(text)) return text;
  absl::StatusOr<Json> parsed = JsonObjectFromText(text, what);
  if (!parsed.ok()) return parsed.status();
  return DumpJson(*parsed);
}

// `object_text` (compact JSON of an object, as DumpJson gives) with
// `members` (",\"key\":value..." text) added before its closing brace.
inline std::string WithMembers(std::string object_text, std::string_view members) {
  object_text.insert(object_text.size() - 1, members);
  return object_text;
}

// The member `key` of `object` when `object` is an object that has it,
// else nullptr.
inline const Json* Member(const Json& object, const char* key) {
  if (!object.is_object()) return nullptr;
  auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

// The string member `key`; empty when absent, null or not a string.
inline std::string StringMember(const Json& object, const char* key) {
  const Json* value = Member(object, key);
  return value != nullptr && value->is_string() ? value->get<std::string>() : std::string();
}

// The integer member `key`; 0 when absent, null or not an integer.
inline int64_t IntMember(const Json& object, const char* key) {
  const Json* value = Member(object, key);
  return value != nullptr && value->is_number_integer() ? value->get<int64_t>() : 0;
}

}  // namespace omniforge::llm::wire_internal
