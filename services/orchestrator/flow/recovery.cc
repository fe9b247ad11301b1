#include "services/orchestrator/flow/recovery.h"

#include "absl/strings/ascii.h"
#include "libs/core/text.h"

namespace omniforge::orchestrator {

using nlohmann::json;

namespace {

std::string StringAt(const json& object, const char* key) {
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// The tool's own error object of a result, if it has one.
const json* ToolError(const json& result) {
  if (!result.is_object()) return nullptr;
  auto it = result.find("error");
  return it != result.end() && it->is_object() ? &*it : nullptr;
}

json CallToJson(const KeptCall& call) {
  return json{{"tool", call.tool}, {"arguments", call.arguments}, {"key", call.idempotency_key}};
}

KeptCall CallFromJson(const json& object) {
  KeptCall call;
  if (!object.is_object()) return call;
  call.tool = StringAt(object, "tool");
  if (auto it = object.find("arguments"); it != object.end() && it->is_object()) {
    call.arguments = *it;
  }
  call.idempotency_key = StringAt(object, "key");
  return call;
}

}  // namespace

std::vector<std::string> RecoveryOptions(bool more_after, bool agent_missing) {
  std::vector<std::string> options = {kOptionTryAgain};
  if (more_after) options.emplace_back(kOptionSkip);
  if (agent_missing) options.emplace_back(kOptionOtherAgent);
  options.emplace_back(kOptionCancel);
  return options;
}

std::string RecoveryQuestion(const Recovery& recovery) {
  std::string text = "This did not work: " + recovery.what;
  if (!recovery.detail.empty()) text += " (" + core::Shortened(recovery.detail, 120) + ")";
  text += recovery.reason.empty() ? "." : " failed: " + recovery.reason;
  if (!text.empty() && text.back() != '.') text += '.';
  text += "\nWhat would you like me to do?";
  for (size_t i = 0; i < recovery.options.size(); ++i) {
    std::string option = recovery.options[i];
    if (!option.empty()) option[0] = absl::ascii_toupper(option[0]);
    text += "\n" + std::to_string(i + 1) + ". " + option;
  }
  text += "\nAnswer with a number or the option's words.";
  return text;
}

std::optional<RecoveryChoice> RecoveryChoiceOf(const Recovery& recovery, int option) {
  if (option < 1 || static_cast<size_t>(option) > recovery.options.size()) return std::nullopt;
  const std::string& picked = recovery.options[static_cast<size_t>(option) - 1];
  if (picked == kOptionTryAgain) return RecoveryChoice::kTryAgain;
  if (picked == kOptionSkip) return RecoveryChoice::kSkip;
  if (picked == kOptionOtherAgent) return RecoveryChoice::kOtherAgent;
  if (picked == kOptionCancel) return RecoveryChoice::kCancel;
  return std::nullopt;
}

std::string BoundedReason(std::string_view reason) {
  constexpr size_t kEllipsisBytes = 3;  // "…"
  if (reason.size() <= kMaxReasonBytes) return std::string(reason);
  return core::Shortened(reason, kMaxReasonBytes - kEllipsisBytes);
}

std::string FailureReason(const absl::Status& status, const json& result) {
  std::string reason;
  if (!status.ok()) {
    reason = std::string(status.message());
    if (reason.empty()) reason = absl::StatusCodeToString(status.code());
  } else if (const json* error = ToolError(result)) {
    reason = StringAt(*error, "message");
    if (reason.empty()) reason = StringAt(*error, "code");
  }
  if (reason.empty()) reason = "it failed";
  return BoundedReason(reason);
}

bool AgentNotFound(const absl::Status& status, const json& result, const json& arguments) {
  bool not_found = absl::IsNotFound(status);
  if (status.ok()) {
    const json* error = ToolError(result);
    not_found = error != nullptr && absl::AsciiStrToLower(StringAt(*error, "code")) == "not_found";
  }
  if (!not_found || !arguments.is_object()) return false;
  for (const char* key : {"agent", "agent_name", "agent_id"}) {
    if (arguments.contains(key)) return true;
  }
  return false;
}

std::string ToolInWords(const std::string& tool) { return "the tool " + tool; }

json RecoveryToJson(const Recovery& recovery) {
  json rest = json::array();
  for (const KeptCall& call : recovery.rest) rest.push_back(CallToJson(call));
  return json{{"what", recovery.what},       {"detail", recovery.detail},
              {"reason", recovery.reason},   {"failed", CallToJson(recovery.failed)},
              {"rest", std::move(rest)},     {"plan_id", recovery.plan_id},
              {"step_id", recovery.step_id}, {"options", recovery.options}};
}

std::optional<Recovery> RecoveryFromJson(const json& object) {
  if (!object.is_object()) return std::nullopt;
  Recovery recovery;
  recovery.what = StringAt(object, "what");
  recovery.detail = StringAt(object, "detail");
  recovery.reason = BoundedReason(StringAt(object, "reason"));
  if (auto it = object.find("failed"); it != object.end()) recovery.failed = CallFromJson(*it);
  if (auto it = object.find("rest"); it != object.end() && it->is_array()) {
    for (const json& call : *it) recovery.rest.push_back(CallFromJson(call));
  }
  recovery.plan_id = StringAt(object, "plan_id");
  recovery.step_id = StringAt(object, "step_id");
  if (auto it = object.find("options"); it != object.end() && it->is_array()) {
    for (const json& option : *it) {
      if (option.is_string()) recovery.options.push_back(option.get<std::string>());
    }
  }
  return recovery;
}

}  // namespace omniforge::orchestrator
