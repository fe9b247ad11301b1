// What the user is asked about work that failed for good (a tool call that
// failed permanently or whose retries were used up, a plan step the plan
// could not get past) and what their answer does: try it again, go on
// without it, use another agent (the one named was not found), or stop.
// The flow keeps the failure (FlowState::recovery) until the next turn
// answers; the intent service reads the answer against the options offered
// (by position or by their words).
//
// Pure functions: no I/O, deterministic, thread-safe.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"

namespace omniforge::orchestrator {

// One tool call as the flow keeps it, to be made again.
struct KeptCall {
  std::string tool;
  nlohmann::json arguments = nlohmann::json::object();
  // The call's own key when it had one (an approved write); empty: the
  // turn's.
  std::string idempotency_key;
};

// A failure the user was asked about.
struct Recovery {
  // What failed, in plain words ("the tool list_runs", "step s2 of the
  // plan (List the blocked tasks)").
  std::string what;
  // What it does, for the question only (the tool's catalog description,
  // shortened); may be empty.
  std::string detail;
  // Why, as the failure said it, at most kMaxReasonBytes.
  std::string reason;
  // The tool call that failed (empty `tool` for a plan's step) and the
  // calls the turn had not made yet when it failed, in order.
  KeptCall failed;
  std::vector<KeptCall> rest;
  // A plan's step that failed: the plan and the step.
  std::string plan_id;
  std::string step_id;
  // The options offered, in the order numbered (kOption*).
  std::vector<std::string> options;
};

// The options' words, as offered and as the intent service matches them.
inline constexpr char kOptionTryAgain[] = "try again";
inline constexpr char kOptionSkip[] = "skip it and continue";
inline constexpr char kOptionOtherAgent[] = "use another agent";
inline constexpr char kOptionCancel[] = "cancel";

inline constexpr size_t kMaxReasonBytes = 300;

enum class RecoveryChoice { kTryAgain, kSkip, kOtherAgent, kCancel };

// The options for a failure: try again; skip it and continue when work is
// left after it (`more_after`); use another agent when the agent it names
// was not found (`agent_missing`); cancel.
std::vector<std::string> RecoveryOptions(bool more_after, bool agent_missing);

// The question: what failed, why, and the numbered options.
std::string RecoveryQuestion(const Recovery& recovery);

// What the answer picks: `option` is its position from 1 among the
// options offered (the intent service's ReplyDecision.option); nullopt
// for 0 or a position past them.
std::optional<RecoveryChoice> RecoveryChoiceOf(const Recovery& recovery, int option);

// `reason` when it fits in kMaxReasonBytes, else its start and "…" in
// that many bytes.
std::string BoundedReason(std::string_view reason);

// Why a call failed, from its status (when not OK) or the tool's own error
// result (`{"error": {"code", "message"}}`), cut to kMaxReasonBytes: the
// failure's message, never the call's arguments.
std::string FailureReason(const absl::Status& status, const nlohmann::json& result);

// Whether the failure is an agent the call names that was not found:
// NOT_FOUND, or a tool error coded not_found, of a call whose arguments
// name an agent (`agent`, `agent_name`, `agent_id`).
bool AgentNotFound(const absl::Status& status, const nlohmann::json& result,
                   const nlohmann::json& arguments);

// The tool in plain words ("the tool list_runs").
std::string ToolInWords(const std::string& tool);

// As the flow's state stores it; reading is lenient (missing fields are
// empty), nullopt for anything that is not an object.
nlohmann::json RecoveryToJson(const Recovery& recovery);
std::optional<Recovery> RecoveryFromJson(const nlohmann::json& json);

}  // namespace omniforge::orchestrator
