#include "libs/llm/structured_output.h"

#include <cmath>
#include <nlohmann/json.hpp>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "libs/core/json_depth.h"
#include "libs/core/text.h"
#include "libs/llm/errors.h"

namespace omniforge::llm {
namespace {

using Json = nlohmann::json;

// Enough to guide a repair without flooding the prompt.
constexpr size_t kMaxErrors = 10;
constexpr size_t kMaxValueChars = 80;

// Cut at a UTF-8 boundary: the text goes into a status and a prompt.
std::string Shorten(std::string text) {
  if (text.size() <= kMaxValueChars) return text;
  return std::string(core::Utf8Prefix(text, kMaxValueChars)) + "...";
}

std::string Show(const Json& value) {
  return Shorten(value.dump(-1, ' ', false, Json::error_handler_t::replace));
}

bool IsIdentifier(const std::string& key) {
  if (key.empty() || absl::ascii_isdigit(static_cast<unsigned char>(key[0]))) return false;
  for (const char c : key) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  }
  return true;
}

std::string MemberPath(const std::string& parent, const std::string& key) {
  if (IsIdentifier(key)) return absl::StrCat(parent, ".", key);
  return absl::StrCat(parent, "[", Json(key).dump(), "]");
}

const char* TypeOf(const Json& value) {
  switch (value.type()) {
    case Json::value_t::object:
      return "object";
    case Json::value_t::array:
      return "array";
    case Json::value_t::string:
      return "string";
    case Json::value_t::boolean:
      return "boolean";
    case Json::value_t::null:
      return "null";
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned:
      return "integer";
    default:
      return "number";
  }
}

bool HasType(const Json& value, const std::string& type) {
  if (type == "integer") {
    if (value.is_number_integer()) return true;
    // JSON Schema counts 2.0 as an integer.
    return value.is_number_float() && std::isfinite(value.get<double>()) &&
           std::floor(value.get<double>()) == value.get<double>();
  }
  if (type == "number") return value.is_number();
  return type == TypeOf(value);
}

class Validator final {
 public:
  std::vector<std::string>& errors() { return errors_; }

  void Check(const Json& value, const Json& schema, const std::string& path) {
    if (errors_.size() >= kMaxErrors) return;
    if (schema.is_boolean()) {
      if (!schema.get<bool>()) Add(path, "no value is allowed here");
      return;
    }
    if (!schema.is_object()) return;
    if (!CheckType(value, schema, path)) return;
    if (const auto it = schema.find("enum"); it != schema.end() && it->is_array()) {
      bool found = false;
      for (const Json& option : *it) found = found || option == value;
      if (!found) Add(path, absl::StrCat(Show(value), " is not one of ", Show(*it)));
    }
    if (const auto it = schema.find("const"); it != schema.end() && *it != value) {
      Add(path, absl::StrCat(Show(value), " is not ", Show(*it)));
    }
    if (value.is_number()) {
      const double number = value.get<double>();
      if (const auto it = schema.find("minimum");
          it != schema.end() && it->is_number() && number < it->get<double>()) {
        Add(path, absl::StrCat(Show(value), " is less than the minimum ", Show(*it)));
      }
      if (const auto it = schema.find("maximum");
          it != schema.end() && it->is_number() && number > it->get<double>()) {
        Add(path, absl::StrCat(Show(value), " is more than the maximum ", Show(*it)));
      }
    }
    if (const auto it = schema.find("anyOf"); it != schema.end() && it->is_array()) {
      CheckAnyOf(value, *it, path);
    }
    if (value.is_object()) CheckObject(value, schema, path);
    if (value.is_array()) {
      if (const auto items = schema.find("items"); items != schema.end()) {
        for (size_t i = 0; i < value.size(); ++i) {
          Check(value[i], *items, absl::StrCat(path, "[", i, "]"));
        }
      }
    }
  }

 private:
  void Add(const std::string& path, const std::string& what) {
    if (errors_.size() < kMaxErrors) errors_.push_back(absl::StrCat(path, ": ", what));
  }

  // False (with an error) when `value` has none of the schema's types.
  bool CheckType(const Json& value, const Json& schema, const std::string& path) {
    const auto it = schema.find("type");
    if (it == schema.end()) return true;
    std::vector<std::string> types;
    if (it->is_string()) types.push_back(it->get<std::string>());
    if (it->is_array()) {
      for (const Json& t : *it) {
        if (t.is_string()) types.push_back(t.get<std::string>());
      }
    }
    if (types.empty()) return true;
    for (const std::string& type : types) {
      if (HasType(value, type)) return true;
    }
    Add(path, absl::StrCat("expected ", absl::StrJoin(types, " or "), ", got ", TypeOf(value)));
    return false;
  }

  void CheckAnyOf(const Json& value, const Json& alternatives, const std::string& path) {
    for (const Json& alternative : alternatives) {
      Validator trial;
      trial.Check(value, alternative, path);
      if (trial.errors_.empty()) return;
    }
    Add(path, absl::StrCat(Show(value), " matches none of the anyOf alternatives"));
  }

  void CheckObject(const Json& value, const Json& schema, const std::string& path) {
    static const Json kNoProperties = Json::object();
    const auto props_it = schema.find("properties");
    const Json& properties =
        props_it != schema.end() && props_it->is_object() ? *props_it : kNoProperties;
    if (const auto it = schema.find("required"); it != schema.end() && it->is_array()) {
      for (const Json& name : *it) {
        if (name.is_string() && !value.contains(name.get<std::string>())) {
          Add(path, absl::StrCat("missing required property ", name.dump()));
        }
      }
    }
    const auto additional = schema.find("additionalProperties");
    for (const auto& [key, member] : value.items()) {
      const std::string member_path = MemberPath(path, key);
      if (const auto property = properties.find(key); property != properties.end()) {
        Check(member, *property, member_path);
      } else if (additional != schema.end()) {
        if (additional->is_boolean() && !additional->get<bool>()) {
          Add(path, absl::StrCat("unexpected property ", Json(key).dump()));
        } else {
          Check(member, *additional, member_path);
        }
      }
    }
  }

  std::vector<std::string> errors_;
};

// A discarded (unparsable) document is neither.
bool IsSchema(const Json& schema) { return schema.is_object() || schema.is_boolean(); }

std::string RepairPrompt(const std::string& problem) {
  return absl::StrCat(
      "Your previous answer does not match the required JSON schema: ", problem,
      "\nReply with only the corrected JSON document that matches the schema: no explanation, "
      "no Markdown code fence.");
}

}  // namespace

absl::Status ValidateJsonAgainstSchema(std::string_view json_text, std::string_view schema_json) {
  const Json schema = Json::parse(schema_json, nullptr, /*allow_exceptions=*/false);
  if (!IsSchema(schema)) {
    return absl::InvalidArgumentError("the schema is not a JSON schema (object or boolean)");
  }
  // The validator walks the value recursively.
  if (absl::Status deep = core::CheckJsonDepth("$", json_text); !deep.ok()) return deep;
  Json value;
  try {
    value = Json::parse(json_text);
  } catch (const Json::parse_error& e) {
    return absl::InvalidArgumentError(absl::StrCat("$: not valid JSON: ", e.what()));
  }
  Validator validator;
  validator.Check(value, schema, "$");
  if (validator.errors().empty()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrJoin(validator.errors(), "; "));
}

std::string_view StripJsonFence(std::string_view text) {
  const auto trim = [](std::string_view s) {
    while (!s.empty() && absl::ascii_isspace(static_cast<unsigned char>(s.front()))) {
      s.remove_prefix(1);
    }
    while (!s.empty() && absl::ascii_isspace(static_cast<unsigned char>(s.back()))) {
      s.remove_suffix(1);
    }
    return s;
  };
  text = trim(text);
  constexpr std::string_view kFence = "```";
  if (text.size() < 2 * kFence.size() || !text.starts_with(kFence) || !text.ends_with(kFence)) {
    return text;
  }
  std::string_view inner = text.substr(kFence.size(), text.size() - 2 * kFence.size());
  // The opening fence's line may name a language ("json"); the JSON starts
  // on the next line.
  const size_t newline = inner.find('\n');
  if (newline == std::string_view::npos) return text;
  inner.remove_prefix(newline + 1);
  return trim(inner);
}

absl::StatusOr<StructuredResult> CompleteStructured(ChatModel& model, ChatRequest request,
                                                    const CallContext& context) {
  if (!request.response_format.has_value()) {
    return LlmError(LlmErrorKind::kInvalidRequest,
                    "CompleteStructured needs a request with response_format");
  }
  const std::string schema = request.response_format->schema;
  if (!IsSchema(Json::parse(schema, nullptr, /*allow_exceptions=*/false))) {
    return LlmError(LlmErrorKind::kInvalidRequest,
                    "response_format.schema is not a JSON schema (object or boolean)");
  }

  absl::StatusOr<ChatResponse> first = model.Complete(request, context);
  if (!first.ok()) return first.status();
  std::string json(StripJsonFence(first->content));
  const absl::Status problem = ValidateJsonAgainstSchema(json, schema);
  if (problem.ok()) return StructuredResult{std::move(json), *std::move(first), false};

  // Anthropic rejects empty assistant turns; an empty answer is described in
  // the validation error anyway.
  if (!first->content.empty()) {
    request.messages.push_back(ChatMessage{.role = Role::kAssistant, .content = first->content});
  }
  request.messages.push_back(
      ChatMessage{.role = Role::kUser, .content = RepairPrompt(std::string(problem.message()))});
  absl::StatusOr<ChatResponse> second = model.Complete(request, context);
  if (!second.ok()) return second.status();
  second->usage.prompt_tokens += first->usage.prompt_tokens;
  second->usage.completion_tokens += first->usage.completion_tokens;
  second->usage.cached_tokens += first->usage.cached_tokens;
  second->cost_usd += first->cost_usd;
  json = std::string(StripJsonFence(second->content));
  const absl::Status still = ValidateJsonAgainstSchema(json, schema);
  if (still.ok()) return StructuredResult{std::move(json), *std::move(second), true};
  return LlmError(LlmErrorKind::kInvalidOutput,
                  absl::StrCat("the model's answer does not match the schema, even after a "
                               "repair: ",
                               still.message()));
}

}  // namespace omniforge::llm
