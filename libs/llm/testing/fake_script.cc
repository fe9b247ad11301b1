// ParseFakeScript: the JSON form of a fake provider's rules (format in
// fake_provider.h). Unknown keys are errors so a typo cannot silently turn a
// rule into one that matches everything.
#include <algorithm>
#include <initializer_list>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "libs/llm/testing/fake_provider.h"

namespace omniforge::llm::testing {
namespace {

using nlohmann::json;

absl::Status Fail(const std::string& path, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat("fake script: ", path, ": ", what));
}

absl::Status CheckObject(const json& value, const std::string& path,
                         std::initializer_list<std::string_view> keys) {
  if (!value.is_object()) return Fail(path, "must be an object");
  for (const auto& item : value.items()) {
    if (std::find(keys.begin(), keys.end(), item.key()) == keys.end()) {
      return Fail(absl::StrCat(path, ".", item.key()), "unknown key");
    }
  }
  return absl::OkStatus();
}

// Each reader leaves `out` alone when `key` is absent.
class Reader {
 public:
  Reader(const json& object, std::string path) : object_(object), path_(std::move(path)) {}

  absl::Status String(const char* key, std::string& out) const {
    const json* value = Find(key);
    if (value == nullptr) return absl::OkStatus();
    if (!value->is_string()) return Fail(At(key), "must be a string");
    out = value->get<std::string>();
    return absl::OkStatus();
  }

  absl::Status Int(const char* key, int64_t& out) const {
    const json* value = Find(key);
    if (value == nullptr) return absl::OkStatus();
    if (!value->is_number_integer()) return Fail(At(key), "must be an integer");
    out = value->get<int64_t>();
    return absl::OkStatus();
  }

  absl::Status Int(const char* key, int& out) const {
    int64_t wide = out;
    if (absl::Status status = Int(key, wide); !status.ok()) return status;
    if (wide < std::numeric_limits<int>::min() || wide > std::numeric_limits<int>::max()) {
      return Fail(At(key), "out of range");
    }
    out = static_cast<int>(wide);
    return absl::OkStatus();
  }

  absl::Status Bool(const char* key, std::optional<bool>& out) const {
    const json* value = Find(key);
    if (value == nullptr) return absl::OkStatus();
    if (!value->is_boolean()) return Fail(At(key), "must be true or false");
    out = value->get<bool>();
    return absl::OkStatus();
  }

  // A string is JSON text already (kept byte for byte, valid or not); any
  // other value is serialised.
  absl::Status JsonText(const char* key, std::optional<std::string>& out) const {
    const json* value = Find(key);
    if (value == nullptr) return absl::OkStatus();
    out = value->is_string() ? value->get<std::string>() : value->dump();
    return absl::OkStatus();
  }

  const json* Find(const char* key) const {
    const auto it = object_.find(key);
    return it == object_.end() ? nullptr : &*it;
  }

  std::string At(const std::string& key) const { return absl::StrCat(path_, ".", key); }

 private:
  const json& object_;
  std::string path_;
};

#define RETURN_IF_ERROR(expr)               \
  do {                                      \
    if (absl::Status s = (expr); !s.ok()) { \
      return s;                             \
    }                                       \
  } while (false)

absl::Status ParseMatch(const json& value, const std::string& path, FakeMatch& out) {
  RETURN_IF_ERROR(CheckObject(value, path,
                              {"api", "operation", "model", "last_user_contains", "last_user_regex",
                               "tool_offered", "last_is_tool_result"}));
  const Reader r(value, path);
  RETURN_IF_ERROR(r.String("api", out.api));
  RETURN_IF_ERROR(r.String("operation", out.operation));
  RETURN_IF_ERROR(r.String("model", out.model));
  RETURN_IF_ERROR(r.String("last_user_contains", out.last_user_contains));
  RETURN_IF_ERROR(r.String("last_user_regex", out.last_user_regex));
  RETURN_IF_ERROR(r.String("tool_offered", out.tool_offered));
  return r.Bool("last_is_tool_result", out.last_is_tool_result);
}

absl::Status ParseReply(const json& value, const std::string& path, FakeReply& out) {
  RETURN_IF_ERROR(
      CheckObject(value, path, {"text", "tool_calls", "json", "usage", "finish_reason"}));
  const Reader r(value, path);
  RETURN_IF_ERROR(r.String("text", out.text));
  RETURN_IF_ERROR(r.JsonText("json", out.json));
  RETURN_IF_ERROR(r.String("finish_reason", out.finish_reason));
  if (const json* calls = r.Find("tool_calls")) {
    if (!calls->is_array()) return Fail(r.At("tool_calls"), "must be an array");
    for (size_t i = 0; i < calls->size(); ++i) {
      const std::string at = absl::StrCat(path, ".tool_calls[", i, "]");
      const json& call = (*calls)[i];
      RETURN_IF_ERROR(CheckObject(call, at, {"id", "name", "arguments"}));
      const Reader c(call, at);
      FakeToolCall tool_call;
      RETURN_IF_ERROR(c.String("id", tool_call.id));
      RETURN_IF_ERROR(c.String("name", tool_call.name));
      if (tool_call.name.empty()) return Fail(c.At("name"), "required");
      std::optional<std::string> arguments;
      RETURN_IF_ERROR(c.JsonText("arguments", arguments));
      tool_call.arguments_json = arguments.value_or("{}");
      out.tool_calls.push_back(std::move(tool_call));
    }
  }
  if (const json* usage = r.Find("usage")) {
    const std::string at = r.At("usage");
    RETURN_IF_ERROR(CheckObject(*usage, at, {"prompt", "completion", "cached"}));
    const Reader u(*usage, at);
    FakeUsage parsed;
    RETURN_IF_ERROR(u.Int("prompt", parsed.prompt_tokens));
    RETURN_IF_ERROR(u.Int("completion", parsed.completion_tokens));
    RETURN_IF_ERROR(u.Int("cached", parsed.cached_tokens));
    out.usage = parsed;
  }
  return absl::OkStatus();
}

absl::Status ParseFault(const json& value, const std::string& path, FakeFault& out) {
  RETURN_IF_ERROR(CheckObject(
      value, path, {"kind", "status", "retry_after", "body", "hang_ms", "after_deltas"}));
  const Reader r(value, path);
  std::string kind;
  RETURN_IF_ERROR(r.String("kind", kind));
  static const std::pair<std::string_view, FakeFault::Kind> kKinds[] = {
      {"none", FakeFault::Kind::kNone},
      {"status", FakeFault::Kind::kStatus},
      {"hang", FakeFault::Kind::kHang},
      {"malformed_json", FakeFault::Kind::kMalformedJson},
      {"cut_stream", FakeFault::Kind::kCutStream},
      {"invalid_structured_output", FakeFault::Kind::kInvalidStructuredOutput},
      {"stream_error", FakeFault::Kind::kStreamError},
  };
  const auto* found = std::find_if(std::begin(kKinds), std::end(kKinds),
                                   [&](const auto& entry) { return entry.first == kind; });
  if (found == std::end(kKinds)) {
    return Fail(r.At("kind"),
                "must be one of none, status, hang, malformed_json, cut_stream, "
                "invalid_structured_output, stream_error");
  }
  out.kind = found->second;
  RETURN_IF_ERROR(r.Int("status", out.status));
  RETURN_IF_ERROR(r.String("retry_after", out.retry_after));
  RETURN_IF_ERROR(r.String("body", out.body));
  RETURN_IF_ERROR(r.Int("hang_ms", out.hang_ms));
  return r.Int("after_deltas", out.after_deltas);
}

absl::Status ParseRule(const json& value, const std::string& path, FakeRule& out) {
  RETURN_IF_ERROR(CheckObject(value, path,
                              {"match", "times", "reply", "fault", "chunk_chars",
                               "first_byte_delay_ms", "chunk_delay_ms", "one_write"}));
  const Reader r(value, path);
  if (const json* match = r.Find("match"))
    RETURN_IF_ERROR(ParseMatch(*match, r.At("match"), out.match));
  if (const json* reply = r.Find("reply"))
    RETURN_IF_ERROR(ParseReply(*reply, r.At("reply"), out.reply));
  if (const json* fault = r.Find("fault"))
    RETURN_IF_ERROR(ParseFault(*fault, r.At("fault"), out.fault));
  RETURN_IF_ERROR(r.Int("times", out.times));
  RETURN_IF_ERROR(r.Int("chunk_chars", out.chunk_chars));
  RETURN_IF_ERROR(r.Int("first_byte_delay_ms", out.first_byte_delay_ms));
  std::optional<bool> one_write;
  RETURN_IF_ERROR(r.Bool("one_write", one_write));
  out.one_write = one_write.value_or(false);
  return r.Int("chunk_delay_ms", out.chunk_delay_ms);
}

#undef RETURN_IF_ERROR

}  // namespace

absl::StatusOr<std::vector<FakeRule>> ParseFakeScript(std::string_view json_text) {
  const json script = json::parse(json_text, nullptr, false);
  if (script.is_discarded()) return Fail("<root>", "not valid JSON");
  if (absl::Status status = CheckObject(script, "<root>", {"rules"}); !status.ok()) return status;
  std::vector<FakeRule> rules;
  const auto list = script.find("rules");
  if (list == script.end()) return rules;
  if (!list->is_array()) return Fail("rules", "must be an array");
  for (size_t i = 0; i < list->size(); ++i) {
    FakeRule rule;
    if (absl::Status status = ParseRule((*list)[i], absl::StrCat("rules[", i, "]"), rule);
        !status.ok()) {
      return status;
    }
    rules.push_back(std::move(rule));
  }
  return rules;
}

}  // namespace omniforge::llm::testing
