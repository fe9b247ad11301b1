// The bounds of a plan step that every executor agent (LocalDialogue,
// LlmDialogue) applies to each tool call before it runs, whoever chose the
// call: which calls the assignment lets run (the step's tools; WRITE and
// HIGH only when approved and, with approved_targets_only, only on the
// targets the user approved), and the idempotency key each write carries so
// that a re-run step replays its writes instead of repeating them.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "services/executor/src/dialogue.h"
#include "services/executor/src/tool.h"

namespace omniforge::executor {

// Why a call may not run.
struct CallRefusal {
  enum class Reason {
    kNotAllowed,         // not one of the step's tools
    kWriteNotApproved,   // a WRITE or HIGH call and the step's writes were not approved
    kTargetNotApproved,  // a WRITE or HIGH call other than the approved ones
  };
  Reason reason = Reason::kNotAllowed;
  std::string message;  // for the model and the planner

  // The code of the tool error the model reads: "not_available" or
  // "write_not_approved".
  std::string_view code() const;
};

// Whether `assignment` lets its agent call `tool` (of risk `risk`) with
// `arguments` (anything but a JSON object counts as {}); nullopt when it
// may. Refused: a tool not in allowed_tools (when that is empty: any WRITE or
// HIGH tool); a WRITE or HIGH call without writes_approved; with
// approved_targets_only, a WRITE or HIGH call of a tool that tool_calls
// plans calls of, when it matches none of them (a call matches a planned
// call when its arguments are exactly the planned ones: the same keys with
// the same JSON values). READ calls of allowed tools always may.
// Pure; thread-safe.
// `spent` holds the indices of the planned calls that already ran in this
// dialogue: each approved call runs once. On success `matched` (when given)
// is set to the index of the planned call the call is, if any.
std::optional<CallRefusal> CheckStepCall(const Assignment& assignment, const std::string& tool,
                                         ToolRisk risk, const nlohmann::json& arguments,
                                         const std::set<size_t>& spent = {},
                                         size_t* matched = nullptr);

// The planned calls of `tool` in `assignment`, as "tool {arguments}" text
// joined by "; ", for messages; empty when none are planned.
std::string PlannedCallsOf(const Assignment& assignment, const std::string& tool);

// The idempotency keys of one step's writes, derived only from the step's
// key (the planner's: plan and step) and the write's index among the step's
// WRITE and HIGH calls that ran: "<step key>:w<index>". Never from a
// model's call id or turn, so a re-run step whose agent makes the same
// writes in the same order replays them (the ledger returns the first
// result) whatever ids its model chose. READ calls carry no key. Use from
// one thread.
class StepWriteKeys final {
 public:
  explicit StepWriteKeys(std::string step_key = "") : step_key_(std::move(step_key)) {}

  // The key for a call of risk `risk` about to run: empty for a READ call or
  // when the step has no key.
  std::string KeyFor(ToolRisk risk) const;

  // Reports how a call given KeyFor(risk) ended (ToolRuntime::Invoke's
  // status). A write that produced a result (run or replayed) takes its
  // index; one that failed without one (bad arguments, the tool down, the
  // key held by another call) leaves it to the next write, so a re-run
  // whose agent gets a call right at once still lines up with the first run.
  void Ran(ToolRisk risk, const absl::Status& outcome);

 private:
  std::string step_key_;
  int next_write_ = 0;
};

}  // namespace omniforge::executor
