#include "services/orchestrator/flow/flow_state.h"

namespace omniforge::orchestrator {

namespace execpb = ::omniforge::executor::v1;
namespace intentpb = ::omniforge::intent::v1;

using flow_json::ActionAt;
using flow_json::EntitiesAt;
using flow_json::StringAt;
using flow_json::StringsAt;

namespace flow_json {

std::string StringAt(const nlohmann::json& json, const char* key) {
  auto it = json.find(key);
  return it != json.end() && it->is_string() ? it->get<std::string>() : std::string();
}

intentpb::ActionType ActionAt(const nlohmann::json& json, const char* key) {
  intentpb::ActionType action = intentpb::ACTION_TYPE_UNSPECIFIED;
  return intentpb::ActionType_Parse(StringAt(json, key), &action)
             ? action
             : intentpb::ACTION_TYPE_UNSPECIFIED;
}

std::map<std::string, std::string> EntitiesAt(const nlohmann::json& json, const char* key) {
  std::map<std::string, std::string> entities;
  if (auto it = json.find(key); it != json.end() && it->is_object()) {
    for (const auto& [name, value] : it->items()) {
      if (value.is_string()) entities[name] = value.get<std::string>();
    }
  }
  return entities;
}

std::vector<std::string> StringsAt(const nlohmann::json& json, const char* key) {
  std::vector<std::string> strings;
  if (auto it = json.find(key); it != json.end() && it->is_array()) {
    for (const auto& item : *it) {
      if (item.is_string()) strings.push_back(item.get<std::string>());
    }
  }
  return strings;
}

}  // namespace flow_json

namespace {

// The version of FlowStateToJson's shape; routing metadata of older
// versions has no `format`.
constexpr int kFlowStateFormat = 2;

std::optional<ContextBox> BoxAt(const nlohmann::json& json) {
  auto it = json.find("context_box");
  if (it == json.end() || !it->is_object()) return std::nullopt;
  return ContextBoxFromJson(*it);
}

int64_t IntAt(const nlohmann::json& object, const char* key) {
  auto it = object.find(key);
  return it != object.end() && it->is_number_integer() ? it->get<int64_t>() : 0;
}

nlohmann::json PlanRefToJson(const PlanRef& plan) {
  nlohmann::json json = {
      {"plan_id", plan.plan_id}, {"status", plan.status}, {"objective", plan.objective}};
  if (!plan.digest.empty()) {
    json["digest"] = plan.digest;
    json["expires_at_micros"] = plan.expires_at_micros;
  }
  return json;
}

std::optional<PlanRef> PlanRefAt(const nlohmann::json& json) {
  auto it = json.find("plan");
  if (it == json.end() || !it->is_object()) return std::nullopt;
  PlanRef plan{StringAt(*it, "plan_id"), StringAt(*it, "status"), StringAt(*it, "objective"),
               StringAt(*it, "digest"), IntAt(*it, "expires_at_micros")};
  if (plan.plan_id.empty() || plan.status.empty()) return std::nullopt;
  return plan;
}

nlohmann::json PendingToJson(const PendingAction& action) {
  return {{"action_id", action.action_id},
          {"tool", action.tool},
          {"arguments", action.arguments},
          {"risk", execpb::ToolRisk_Name(action.risk)},
          {"summary", action.summary},
          {"digest", action.digest},
          {"expires_at_micros", action.expires_at_micros},
          {"targets", action.targets},
          {"risk_reasons", action.risk_reasons}};
}

std::optional<PendingAction> PendingFromJson(const nlohmann::json& json) {
  if (!json.is_object()) return std::nullopt;
  PendingAction pending;
  pending.action_id = StringAt(json, "action_id");
  pending.tool = StringAt(json, "tool");
  pending.summary = StringAt(json, "summary");
  pending.digest = StringAt(json, "digest");
  pending.expires_at_micros = IntAt(json, "expires_at_micros");
  if (auto args = json.find("arguments"); args != json.end() && args->is_object()) {
    pending.arguments = *args;
  }
  if (auto targets = json.find("targets"); targets != json.end() && targets->is_object()) {
    pending.targets = *targets;
  }
  if (auto reasons = json.find("risk_reasons"); reasons != json.end() && reasons->is_array()) {
    for (const nlohmann::json& reason : *reasons) {
      if (reason.is_string()) pending.risk_reasons.push_back(reason.get<std::string>());
    }
  }
  // An unknown risk reads as HIGH: the preview says more, never less.
  execpb::ToolRisk risk = execpb::TOOL_RISK_HIGH;
  if (execpb::ToolRisk_Parse(StringAt(json, "risk"), &risk)) pending.risk = risk;
  if (pending.tool.empty()) return std::nullopt;
  return pending;
}

std::vector<PendingAction> PendingAt(const nlohmann::json& json) {
  std::vector<PendingAction> pending;
  if (auto it = json.find("pending_actions"); it != json.end() && it->is_array()) {
    for (const nlohmann::json& item : *it) {
      if (std::optional<PendingAction> action = PendingFromJson(item)) {
        pending.push_back(*std::move(action));
      }
    }
  } else if (auto old = json.find("pending"); old != json.end()) {
    // One action, as an older release stored it (no digest: it is
    // previewed again before anything runs).
    if (std::optional<PendingAction> action = PendingFromJson(*old)) {
      pending.push_back(*std::move(action));
    }
  }
  return pending;
}

// The status routing metadata without one implied.
FlowStatus ImpliedStatus(const nlohmann::json& json, const FlowState& state) {
  if (auto it = json.find("suspended"); it != json.end() && it->is_boolean() && it->get<bool>()) {
    return FlowStatus::kSuspended;
  }
  const bool waits = !state.pending.empty() || state.clarifications > 0 || state.plan.has_value();
  return waits ? FlowStatus::kWaiting : FlowStatus::kDone;
}

}  // namespace

const char* FlowStatusName(FlowStatus status) {
  switch (status) {
    case FlowStatus::kWaiting:
      return "waiting";
    case FlowStatus::kSuspended:
      return "suspended";
    case FlowStatus::kDone:
      break;
  }
  return "done";
}

FlowStatus ParseFlowStatus(const std::string& name) {
  if (name == "waiting") return FlowStatus::kWaiting;
  if (name == "suspended") return FlowStatus::kSuspended;
  return FlowStatus::kDone;
}

SuspendedFlow SuspendedFlowOf(const FlowState& state) {
  return SuspendedFlow{state.flow_id,      state.goal,   state.action_type,
                       state.box.entities, std::nullopt, state.plan};
}

nlohmann::json SuspendedFlowToJson(const SuspendedFlow& flow) {
  nlohmann::json json = {{"flow_id", flow.flow_id},
                         {"goal", flow.goal},
                         {"action_type", intentpb::ActionType_Name(flow.action_type)},
                         {"entities", flow.entities}};
  if (flow.box) json["context_box"] = ContextBoxToJson(*flow.box);
  if (flow.plan) json["plan"] = PlanRefToJson(*flow.plan);
  return json;
}

std::optional<SuspendedFlow> SuspendedFlowFromJson(const nlohmann::json& json) {
  if (!json.is_object()) return std::nullopt;
  SuspendedFlow flow;
  flow.flow_id = StringAt(json, "flow_id");
  flow.goal = StringAt(json, "goal");
  flow.action_type = ActionAt(json, "action_type");
  flow.entities = EntitiesAt(json, "entities");
  flow.box = BoxAt(json);
  flow.plan = PlanRefAt(json);
  if (flow.flow_id.empty()) return std::nullopt;
  return flow;
}

nlohmann::json FlowStateToJson(const FlowState& state) {
  nlohmann::json json = nlohmann::json::object();
  json["format"] = kFlowStateFormat;
  json["flow_id"] = state.flow_id;
  json["conversation_id"] = state.conversation_id;
  json["turn_id"] = state.turn_id;
  json["revision"] = state.revision;
  json["status"] = FlowStatusName(state.status);
  json["goal"] = state.goal;
  json["action_type"] = intentpb::ActionType_Name(state.action_type);
  json["entities"] = state.entities;
  json["listed_agents"] = state.listed_agents;
  if (!state.pending.empty()) {
    nlohmann::json actions = nlohmann::json::array();
    for (const PendingAction& action : state.pending) actions.push_back(PendingToJson(action));
    json["pending_actions"] = std::move(actions);
  }
  json["clarifications"] = state.clarifications;
  if (!state.asked.empty()) json["asked"] = state.asked;
  if (state.plan) json["plan"] = PlanRefToJson(*state.plan);
  if (state.suspended_flow) json["suspended_flow"] = SuspendedFlowToJson(*state.suspended_flow);
  if (state.recovery) json["recovery"] = RecoveryToJson(*state.recovery);
  json["tools_used"] = state.tools_used;
  json["context_box"] = ContextBoxToJson(state.box);
  return json;
}

FlowState FlowStateFromJson(const nlohmann::json& json) {
  FlowState state;
  if (!json.is_object()) return state;
  state.flow_id = StringAt(json, "flow_id");
  state.conversation_id = StringAt(json, "conversation_id");
  state.turn_id = StringAt(json, "turn_id");
  state.revision = IntAt(json, "revision");
  state.goal = StringAt(json, "goal");
  state.action_type = ActionAt(json, "action_type");
  state.entities = EntitiesAt(json, "entities");
  state.listed_agents = StringsAt(json, "listed_agents");
  state.pending = PendingAt(json);
  if (auto it = json.find("clarifications"); it != json.end() && it->is_number_integer()) {
    state.clarifications = it->get<int>();
  }
  state.asked = StringAt(json, "asked");
  state.plan = PlanRefAt(json);
  if (auto it = json.find("suspended_flow"); it != json.end()) {
    state.suspended_flow = SuspendedFlowFromJson(*it);
  }
  if (auto it = json.find("recovery"); it != json.end()) state.recovery = RecoveryFromJson(*it);
  state.tools_used = StringsAt(json, "tools_used");
  if (std::optional<ContextBox> box = BoxAt(json)) state.box = *std::move(box);
  state.status = json.contains("status") ? ParseFlowStatus(StringAt(json, "status"))
                                         : ImpliedStatus(json, state);
  return state;
}

}  // namespace omniforge::orchestrator
