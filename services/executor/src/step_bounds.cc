#include "services/executor/src/step_bounds.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace omniforge::executor {
namespace {

nlohmann::json ParseObject(const std::string& text) {
  auto parsed = nlohmann::json::parse(text.empty() ? std::string("{}") : text, nullptr, false);
  return parsed.is_object() ? parsed : nlohmann::json::object();
}

// The call is the planned one: the same arguments, no more and no fewer
// (an approved update of an agent's schedule approves no new recipients).
bool Matches(const nlohmann::json& planned, const nlohmann::json& actual) {
  return planned == actual;
}

std::string Dump(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace

std::string_view CallRefusal::code() const {
  return reason == Reason::kNotAllowed ? "not_available" : "write_not_approved";
}

std::optional<CallRefusal> CheckStepCall(const Assignment& assignment, const std::string& tool,
                                         ToolRisk risk, const nlohmann::json& arguments,
                                         const std::set<size_t>& spent, size_t* matched) {
  const std::vector<std::string>& allowed = assignment.allowed_tools;
  const bool listed = std::find(allowed.begin(), allowed.end(), tool) != allowed.end();
  if (allowed.empty() ? risk != ToolRisk::kRead : !listed) {
    return CallRefusal{CallRefusal::Reason::kNotAllowed,
                       absl::StrCat("'", tool, "' is not one of this step's tools")};
  }
  if (risk == ToolRisk::kRead) return std::nullopt;
  if (!assignment.writes_approved) {
    return CallRefusal{
        CallRefusal::Reason::kWriteNotApproved,
        absl::StrCat("'", tool, "' is a ", std::string(ToolRiskName(risk)),
                     " tool and this step's writes were not approved; nothing was run")};
  }
  if (!assignment.approved_targets_only) return std::nullopt;
  const nlohmann::json actual = arguments.is_object() ? arguments : nlohmann::json::object();
  bool planned = false;
  bool ran_already = false;
  for (size_t i = 0; i < assignment.tool_calls.size(); ++i) {
    const PlannedCall& call = assignment.tool_calls[i];
    if (call.tool_name != tool) continue;
    planned = true;
    if (!Matches(ParseObject(call.arguments_json), actual)) continue;
    if (spent.count(i) != 0) {
      ran_already = true;  // each approved call runs once
      continue;
    }
    if (matched != nullptr) *matched = i;
    return std::nullopt;
  }
  if (!planned) return std::nullopt;
  if (ran_already) {
    return CallRefusal{CallRefusal::Reason::kTargetNotApproved,
                       absl::StrCat("this ", tool,
                                    " call already ran in this step; the user approved it once, "
                                    "so it was not run again")};
  }
  return CallRefusal{CallRefusal::Reason::kTargetNotApproved,
                     absl::StrCat("this ", tool,
                                  " call was not approved by the user and was not run: the "
                                  "approved ",
                                  tool, " calls are ", PlannedCallsOf(assignment, tool),
                                  " (exactly those arguments)")};
}

std::string PlannedCallsOf(const Assignment& assignment, const std::string& tool) {
  std::vector<std::string> calls;
  for (const PlannedCall& call : assignment.tool_calls) {
    if (call.tool_name == tool) {
      calls.push_back(absl::StrCat(tool, " ", Dump(ParseObject(call.arguments_json))));
    }
  }
  return absl::StrJoin(calls, "; ");
}

std::string StepWriteKeys::KeyFor(ToolRisk risk) const {
  if (risk == ToolRisk::kRead || step_key_.empty()) return "";
  return absl::StrCat(step_key_, ":w", next_write_);
}

void StepWriteKeys::Ran(ToolRisk risk, const absl::Status& outcome) {
  if (risk != ToolRisk::kRead && outcome.ok()) ++next_write_;
}

}  // namespace omniforge::executor
