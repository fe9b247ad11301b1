// One TurnRunner on the fakes of this folder, for unit tests of the turn's
// stages: every collaborator is a fake the test reads or steers, time is a
// FakeClock, every downstream call is logged with its core::Call in
// `calls` (observed_calls.h), flow states are kept in a FakeFlowStore (which can be told to
// fail), model calls are recorded in RecordingUsage and the gate's
// decisions in a MemoryApprovalAudit. With plans
// on, plans are made from the local templates (or by the planner model),
// kept in a FakePlanStore and carried out by FakeStepExecutors.
#pragma once

#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "services/orchestrator/approvals/memory_approval_audit.h"
#include "services/orchestrator/flow/routing.h"
#include "services/orchestrator/plans/plan_advisor.h"
#include "services/orchestrator/plans/plan_engine.h"
#include "services/orchestrator/plans/plan_generator.h"
#include "services/orchestrator/testing/fake_flow_store.h"
#include "services/orchestrator/testing/fake_plan_store.h"
#include "services/orchestrator/testing/fake_step_executors.h"
#include "services/orchestrator/testing/fakes.h"
#include "services/orchestrator/testing/observed_calls.h"
#include "services/orchestrator/testing/recording_usage.h"
#include "services/orchestrator/usage/usage_meter.h"

namespace omniforge::orchestrator::testing {

inline const core::Identity kAlice{"tenant-a", "alice"};
inline const core::Identity kBob{"tenant-a", "bob"};

struct TurnHarness {
  struct Setup {
    TurnOptions options;
    // Turns are planned by this model when set; else by the local policy.
    llm::ChatModel* planner = nullptr;
    bool plans = false;
    // Reviews agent_review plans (the quality profile); null: no reviews.
    llm::ChatModel* reviewer = nullptr;
  };

  explicit TurnHarness(FakeUnderstanding::Answer intent)
      : TurnHarness(std::move(intent), Setup{}) {}
  TurnHarness(FakeUnderstanding::Answer intent, Setup setup) : understanding(std::move(intent)) {
    setup.options.clock = &clock;
    setup.options.usage_writer = &usage;
    setup.options.audit = &audit;
    if (setup.plans) {
      // The executor's project tools, which the plan templates call.
      tools.AddTool("list_project_templates", execpb::TOOL_RISK_READ);
      tools.AddTool("get_project_details", execpb::TOOL_RISK_READ);
      tools.AddTool("list_tasks", execpb::TOOL_RISK_READ);
      tools.AddTool("create_project", execpb::TOOL_RISK_WRITE);
      tools.AddTool("create_context_document", execpb::TOOL_RISK_WRITE);
      // Metered as the service wires them: a plan made in a turn counts in
      // its `done`.
      if (setup.planner != nullptr) {
        plan_model = std::make_unique<MeteredChatModel>(*setup.planner);
      }
      if (setup.reviewer != nullptr) {
        review_model = std::make_unique<MeteredChatModel>(*setup.reviewer);
      }
      generator = std::make_unique<PlanGenerator>(plan_model.get());
      advisor = std::make_unique<PlanAdvisor>(review_model.get(), plan_model.get());
      PlanEngineOptions engine_options;
      engine_options.clock = &clock;  // the turn's
      engine =
          std::make_unique<PlanEngine>(plan_store, executors, *generator, *advisor, engine_options);
    }
    runner =
        std::make_unique<TurnRunner>(seen_memory, seen_understanding, seen_tools, setup.options,
                                     setup.planner, &seen_flows, &errors, engine.get());
  }

  // A request with these words in `conversation_id` (empty: a new one).
  static pb::StreamChatRequest Request(const std::string& message,
                                       const std::string& conversation_id = "",
                                       const std::string& turn_id = "") {
    pb::StreamChatRequest request;
    request.set_message(message);
    request.set_conversation_id(conversation_id);
    request.set_turn_id(turn_id);
    return request;
  }

  // Runs one turn of `who`; the events land in `sink`.
  absl::Status Turn(const std::string& message, RecordingSink& sink,
                    const std::string& conversation_id = "", const std::string& turn_id = "",
                    const core::Identity& who = kAlice) {
    return Send(Request(message, conversation_id, turn_id), sink, who);
  }
  // The same in a context (a screen of the client) about `entity_id`.
  absl::Status TurnIn(pb::ContextType context_type, const std::string& message, RecordingSink& sink,
                      const std::string& conversation_id = "", const std::string& entity_id = "") {
    pb::StreamChatRequest request = Request(message, conversation_id);
    request.set_context_type(context_type);
    request.set_entity_id(entity_id);
    return Send(request, sink);
  }
  absl::Status Send(const pb::StreamChatRequest& request, RecordingSink& sink,
                    const core::Identity& who = kAlice) {
    TurnControl control;
    return runner->Run(who, request, control, sink);
  }

  // The state the flow store keeps for `flow_id` of `who`; nullopt when it
  // keeps none (a flow done within its first turn).
  std::optional<FlowState> Flow(const std::string& flow_id,
                                const core::Identity& who = kAlice) const {
    absl::StatusOr<FlowState> state =
        flows.Kept(core::Call{who, clock.Now() + std::chrono::seconds(1)}, flow_id);
    return state.ok() ? std::optional<FlowState>(*std::move(state)) : std::nullopt;
  }
  // The state of the flow the conversation's last reply belongs to, as a
  // later turn reads it: empty when the store keeps none.
  FlowState LastFlow(const std::string& conversation, const core::Identity& who = kAlice) const {
    const std::vector<convpb::Message> stored = memory.Messages(conversation);
    if (stored.empty()) return {};
    const Routing routing = RoutingFromJson(nlohmann::json::parse(stored.back().metadata_json()));
    return Flow(routing.flow_id, who).value_or(FlowState{});
  }

  FakeClock clock;
  FakeMemory memory;
  FakeUnderstanding understanding;
  FakeTools tools;
  mutable FakeFlowStore flows;
  // What the runner is given: the fakes, each seen through `calls`.
  CallLog calls{clock};
  ObservedMemory seen_memory{memory, calls};
  ObservedUnderstanding seen_understanding{understanding, calls};
  ObservedTools seen_tools{tools, calls};
  ObservedFlowStore seen_flows{flows, calls};
  FakeErrorLog errors;
  RecordingUsage usage;
  MemoryApprovalAudit audit;
  FakePlanStore plan_store;
  FakeStepExecutors executors;
  std::unique_ptr<MeteredChatModel> plan_model;
  std::unique_ptr<MeteredChatModel> review_model;
  std::unique_ptr<PlanGenerator> generator;
  std::unique_ptr<PlanAdvisor> advisor;
  std::unique_ptr<PlanEngine> engine;
  std::unique_ptr<TurnRunner> runner;
};

// The conversation a turn's session event names.
inline std::string ConversationOf(const RecordingSink& sink) {
  return sink.events.empty() ? "" : sink.events.front().session().conversation_id();
}

}  // namespace omniforge::orchestrator::testing
