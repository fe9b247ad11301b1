#include "libs/mcp/json_rpc.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "libs/core/json_depth.h"
#include "libs/core/text.h"

namespace omniforge::mcp {
namespace {

using nlohmann::json;

std::optional<IncomingMessage> Classify(const json& value) {
  if (!value.is_object()) return std::nullopt;
  IncomingMessage message;
  const auto id = value.find("id");
  const bool has_id = id != value.end() && (id->is_string() || id->is_number_integer());
  const auto method = value.find("method");
  if (method != value.end()) {
    if (!method->is_string()) return std::nullopt;
    message.method = method->get<std::string>();
    if (const auto params = value.find("params"); params != value.end()) message.params = *params;
    if (has_id) {
      message.kind = IncomingMessage::Kind::kRequest;
      message.id = *id;
    } else {
      message.kind = IncomingMessage::Kind::kNotification;
    }
    return message;
  }
  if (const auto error = value.find("error"); error != value.end()) {
    message.kind = IncomingMessage::Kind::kError;
    if (id != value.end()) message.id = *id;  // may be null: an error about no request
    if (error->is_object()) {
      const auto code = error->find("code");
      if (code != error->end() && code->is_number_integer()) message.error_code = code->get<int>();
      const auto text = error->find("message");
      if (text != error->end() && text->is_string())
        message.error_message = text->get<std::string>();
      if (const auto data = error->find("data"); data != error->end()) message.error_data = *data;
    }
    return message;
  }
  if (const auto result = value.find("result"); result != value.end() && has_id) {
    message.kind = IncomingMessage::Kind::kResult;
    message.id = *id;
    message.result = *result;
    return message;
  }
  return std::nullopt;
}

}  // namespace

bool IsSupportedProtocolVersion(std::string_view version) {
  for (const char* supported : kSupportedProtocolVersions) {
    if (version == supported) return true;
  }
  return false;
}

std::string EncodeRequest(int64_t id, std::string_view method, const json& params) {
  json message = {{"jsonrpc", "2.0"}, {"id", id}, {"method", method}};
  if (!params.is_null()) message["params"] = params;
  return message.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string EncodeNotification(std::string_view method, const json& params) {
  json message = {{"jsonrpc", "2.0"}, {"method", method}};
  if (!params.is_null()) message["params"] = params;
  return message.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string EncodeResult(const json& id, const json& result) {
  return json{{"jsonrpc", "2.0"}, {"id", id}, {"result", result}}.dump(
      -1, ' ', false, json::error_handler_t::replace);
}

std::string EncodeError(const json& id, int code, std::string_view message) {
  return json{{"jsonrpc", "2.0"}, {"id", id}, {"error", {{"code", code}, {"message", message}}}}
      .dump(-1, ' ', false, json::error_handler_t::replace);
}

absl::StatusOr<std::vector<IncomingMessage>> ParseIncoming(std::string_view text) {
  if (!core::JsonDepthWithin(text)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a message nested more than ", core::kMaxJsonDepth, " levels deep: ", Excerpt(text)));
  }
  json value = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (value.is_discarded()) {
    return absl::InvalidArgumentError(absl::StrCat("not JSON: ", Excerpt(text)));
  }
  std::vector<IncomingMessage> messages;
  if (value.is_array()) {
    for (const json& element : value) {
      if (auto message = Classify(element)) messages.push_back(std::move(*message));
    }
    if (messages.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("batch without a JSON-RPC message: ", Excerpt(text)));
    }
    return messages;
  }
  auto message = Classify(value);
  if (!message) {
    return absl::InvalidArgumentError(absl::StrCat("not a JSON-RPC message: ", Excerpt(text)));
  }
  messages.push_back(std::move(*message));
  return messages;
}

absl::Status StatusFromJsonRpcError(std::string_view server, std::string_view method, int code,
                                    std::string_view message) {
  const std::string text = absl::StrCat("MCP server '", Sv(server), "' answered ", Sv(method), ": ",
                                        Excerpt(message), " (JSON-RPC error ", code, ")");
  switch (code) {
    case kInvalidParams:
    case kInvalidRequest:
      return absl::InvalidArgumentError(text);
    case kMethodNotFound:
      return absl::UnimplementedError(text);
    case kResourceNotFound:
      return absl::NotFoundError(text);
    case kInternalError:
    case kParseError:
      return absl::InternalError(text);
    default:
      return absl::UnknownError(text);
  }
}

std::string Excerpt(std::string_view text, size_t max_bytes) {
  if (text.size() <= max_bytes) return std::string(text);
  return absl::StrCat(Sv(core::Utf8Prefix(text, max_bytes)), "... (", text.size(), " bytes)");
}

}  // namespace omniforge::mcp
