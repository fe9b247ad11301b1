#include "services/orchestrator/turn/turn_bus.h"

#include <sodium.h>

#include <algorithm>
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

// A conversation's digest as TurnConversationDigest makes it.
bool IsDigest(const std::string& text) {
  return text.size() == 32 && std::all_of(text.begin(), text.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

bool IsIdOrEmpty(const std::string& text) { return text.empty() || core::IsSafeToken(text); }

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

std::string TurnSignalToText(const TurnSignal& signal, const std::string& origin) {
  nlohmann::json json = {{"kind", KindName(signal.kind)},
                         {"conversation", signal.conversation},
                         {"turn_id", signal.turn_id},
                         {"origin", origin}};
  if (!signal.set_aside_flow_id.empty()) json["set_aside"] = signal.set_aside_flow_id;
  return Dump(json);
}

std::optional<TurnSignal> TurnSignalFromText(const std::string& text, std::string* origin) {
  const nlohmann::json json = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!json.is_object()) return std::nullopt;
  auto string_at = [](const nlohmann::json& object, const char* key) {
    auto it = object.find(key);
    return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  const std::optional<TurnSignal::Kind> kind = ParseKind(string_at(json, "kind"));
  if (!kind) return std::nullopt;
  TurnSignal signal;
  signal.kind = *kind;
  signal.conversation = string_at(json, "conversation");
  signal.turn_id = string_at(json, "turn_id");
  signal.set_aside_flow_id = string_at(json, "set_aside");
  // An older replica sent the suspended flow whole: its id is all that is read.
  if (auto it = json.find("suspended"); it != json.end() && it->is_object()) {
    signal.set_aside_flow_id = string_at(*it, "flow_id");
  }
  const std::string sender = string_at(json, "origin");
  if (!IsDigest(signal.conversation) || !IsIdOrEmpty(signal.turn_id) ||
      !IsIdOrEmpty(signal.set_aside_flow_id) || !IsIdOrEmpty(sender)) {
    return std::nullopt;
  }
  if (origin != nullptr) *origin = sender;
  return signal;
}

}  // namespace omniforge::orchestrator
