// The preview of an action that waits for the user's approval: what would
// run, who or what it touches, and why it asks first, in words that fit the
// tool (a deletion, a connected service's tool, a schedule, recipients).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "omniforge/orchestrator/v1/chat_service.pb.h"
#include "services/orchestrator/approvals/approval_gate.h"
#include "services/orchestrator/flow/flow_state.h"
#include "services/orchestrator/plans/plan_model.h"

namespace omniforge::orchestrator {

void FillPreview(const PendingAction& action, ::omniforge::orchestrator::v1::PreviewEvent& preview);

// The preview of `plan` waiting for the user's approval: each step's tools
// that the policy does not run unasked, with the planned arguments or, where
// an executor agent will choose them, the constraint it works within.
// action_id and plan_id are the plan's id.
void FillPlanPreview(const Plan& plan,
                     const std::vector<::omniforge::executor::v1::ToolDescriptor>& tools,
                     const ApprovalPolicy& policy, const std::string& digest,
                     int64_t expires_at_micros,
                     ::omniforge::orchestrator::v1::PreviewEvent& preview);

// The schedule of create/update_agent arguments as it will be stored
// ("every Monday at 09:00 (UTC)"); the words as given when they cannot be
// read.
// Without a time_zone in `args` and none in the words, the zone is the one
// the executor picks (`zone_when_none`: the user's for a new agent, the
// agent's own for a change).
std::string ScheduleInWords(const nlohmann::json& args,
                            const std::string& zone_when_none = "your time zone");

// The steps of create/update_agent arguments in words ("lists the tasks of
// 'Harbor' still to do"); empty when they have none.
std::string StepsInWords(const nlohmann::json& args);

// The words of an agent draft (create_agent's arguments): its name, what it
// does, when it runs, what it reads and whom it sends to.
std::string DescribeAgentDraft(const nlohmann::json& args);

// What `tool` called with `arguments` would do, as a preview's summary says
// it. The platform's agent tools say what happens to the agent (a deletion
// names what goes with it) and a draft what the new agent does; another
// tool is named with what its catalog `description` says it does (its
// first sentence) and the arguments it was given, each value cut to 200
// characters.
std::string ActionSummary(const std::string& tool, const nlohmann::json& arguments,
                          const std::string& description);

}  // namespace omniforge::orchestrator
