#include "services/orchestrator/turn/turn_bus.h"

#include <sodium.h>

#include <nlohmann/json.hpp>

#include "libs/core/text.h"

namespace omniforge::orchestrator {
namespace {

const char* KindName(TurnSignal::Kind kind) {
  switch (kind) {
    case TurnSignal::Kind::kStarted:
      return "started";
    case TurnSignal::Kind::kEnded:
      return "ended";
    case TurnSignal::Kind::kSuspend:
      return "suspend";
    case TurnSignal::Kind::kCancel:
      return "cancel";
  }
  return "";
}

std::optional<TurnSignal::Kind> ParseKind(const std::string& name) {
  for (TurnSignal::Kind kind : {TurnSignal::Kind::kStarted, TurnSignal::Kind::kEnded,
                                TurnSignal::Kind::kSuspend, TurnSignal::Kind::kCancel}) {
    if (name == KindName(kind)) return kind;
  }
  return std::nullopt;
}

std::string Dump(const nlohmann::json& json) {
  return json.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace

std::string TurnConversationDigest(const std::string& tenant_id, const std::string& user_id,
                                   const std::string& conversation_id) {
  const std::string key = tenant_id + '\n' + user_id + '\n' + conversation_id;
  unsigned char digest[16];
  crypto_generichash(digest, sizeof digest, reinterpret_cast<const unsigned char*>(key.data()),
                     key.size(), nullptr, 0);
  char hex[sizeof digest * 2 + 1];
  sodium_bin2hex(hex, sizeof hex, digest, sizeof digest);
  return hex;
}

std::string TurnSignalToText(const TurnSignal& signal, const std::string& origin,
                             size_t max_bytes) {
  nlohmann::json json = {{"kind", KindName(signal.kind)},
                         {"conversation", signal.conversation},
                         {"turn_id", signal.turn_id},
                         {"origin", origin}};
  if (!signal.suspended) return Dump(json);
  SuspendedFlow flow = *signal.suspended;
  json["suspended"] = SuspendedFlowToJson(flow);
  std::string text = Dump(json);
  if (text.size() <= max_bytes) return text;
  flow.box.reset();
  json["suspended"] = SuspendedFlowToJson(flow);
  text = Dump(json);
  if (text.size() <= max_bytes) return text;
  const size_t over = text.size() - max_bytes;
  flow.goal =
      core::Shortened(flow.goal, flow.goal.size() > over + 8 ? flow.goal.size() - over - 8 : 0);
  json["suspended"] = SuspendedFlowToJson(flow);
  return Dump(json);
}

std::optional<TurnSignal> TurnSignalFromText(const std::string& text, std::string* origin) {
  const nlohmann::json json = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!json.is_object()) return std::nullopt;
  auto string_at = [&json](const char* key) {
    auto it = json.find(key);
    return it != json.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  const std::optional<TurnSignal::Kind> kind = ParseKind(string_at("kind"));
  if (!kind) return std::nullopt;
  TurnSignal signal;
  signal.kind = *kind;
  signal.conversation = string_at("conversation");
  signal.turn_id = string_at("turn_id");
  if (signal.conversation.empty()) return std::nullopt;
  if (auto it = json.find("suspended"); it != json.end()) {
    signal.suspended = SuspendedFlowFromJson(*it);
  }
  if (origin != nullptr) *origin = string_at("origin");
  return signal;
}

}  // namespace omniforge::orchestrator
