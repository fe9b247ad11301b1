// Stage 5, Decide, with a planner model: the model plans, streams its
// answer and runs what the gate lets run unasked itself (through the
// turn's guardrails, stage_act.cc); what it proposes goes to the gate.
#include "libs/core/ids.h"
#include "libs/core/logging.h"
#include "services/orchestrator/turn/turn_pass.h"

namespace omniforge::orchestrator {
namespace {

// The model's session reaches the turn through this: its text streams out,
// its tools and plans run under the turn's guardrails.
class TurnPlannerIo final : public PlannerIo {
 public:
  explicit TurnPlannerIo(TurnPass& turn) : turn_(turn) {}
  void Text(const std::string& delta) override {
    turn_.emit().Next().mutable_text()->set_delta(delta);
    turn_.emit().Send();
  }
  void RestartText(const std::string& kept) override {
    pb::TextEvent& text = *turn_.emit().Next().mutable_text();
    text.set_delta(kept);
    text.set_restart(true);
    turn_.emit().Send();
  }
  std::optional<ToolRun> RunTool(const ToolStep& step) override {
    return turn_.RunTool(step, nullptr);
  }
  std::optional<ToolRun> CreatePlan(const std::string& arguments_json) override {
    return turn_.CreatePlan(arguments_json);
  }
  bool Stopped() override { return turn_.Stopped(); }

 private:
  TurnPass& turn_;
};

}  // namespace

llm::ChatModel& TurnPass::PlannerModel() const {
  const auto profiled = runner_.metered_by_context_.find(context_type_);
  return profiled != runner_.metered_by_context_.end() ? *profiled->second
                                                       : *runner_.metered_planner_;
}

bool TurnPass::Stopped() const {
  return control_.cancelled() || control_.suspend_requested() || ctx_.Expired();
}

PlannerRequest TurnPass::ModelRequest() const {
  PlannerRequest plan;
  plan.message = request_.message();
  plan.context_type = context_type_;
  plan.entity_id = request_.entity_id();
  for (const convpb::Message& m : history_.messages()) {
    if (m.role() == convpb::ROLE_USER || m.role() == convpb::ROLE_ASSISTANT) {
      plan.history.emplace_back(m.role() == convpb::ROLE_USER, m.content());
    }
  }
  plan.agents = agents_;
  plan.time_zone = time_zone_;
  // A spoken edit goes to the model with what it changes.
  if (last_ && !resuming_) plan.pending = last_->pending;
  plan.approvals = &runner_.options_.approvals;
  plan.user = ContentRiskUserOf(ctx_.who().user_id);
  plan.box = carried_;
  plan.clarifications = last_ && continuing_ ? last_->clarifications : 0;
  plan.max_clarifications = runner_.options_.max_clarifications;
  plan.resuming = resuming_;
  plan.tools = (catalog_ != nullptr ? catalog_ : runner_.Catalog(DownstreamCall()))->tools;
  // A plan's steps need tools: with none on offer, no plan either.
  plan.offer_plans = PlansOn() && !plan.tools.empty();
  plan.max_iterations = runner_.options_.max_iterations;
  plan.deadline = ctx_.deadline();
  // Polled while the model streams, possibly off this thread: atomics only.
  TurnControl* control = &control_;
  plan.cancelled = [control] { return control->cancelled() || control->suspend_requested(); };
  return plan;
}

void TurnPass::AskModel() {
  PlannerRequest plan = ModelRequest();
  plan.usage = &model_calls_;
  emit_.State(pb::AGENT_STATE_THINKING, "Planning");
  TurnPlannerIo io(*this);
  stage_ = "planner_stream";
  planned_ = RunModelPlanner(PlannerModel(), plan, io);
  if (planned_.stopped) {
    // Cancelled, suspended or out of time: no fallback, keep what was said.
    planned_.answered = true;
    if (!control_.cancelled()) TrySuspend();
    // Time ran out while the model answered (the stream is cut at the
    // turn's deadline) or between its steps.
    if (!control_.cancelled() && !suspended_ && ctx_.Expired()) ReportOutOfTime();
  }
  if (planned_.answered) {
    // The model failed after part of its answer went out or its tools ran
    // (a stream that kept breaking off, a provider that stopped answering):
    // what was said and done stays, and the user is told it is cut short.
    if (!planned_.error.empty() && !planned_.stopped) {
      emit_.Error(pb::CHAT_ERROR_CODE_MODEL_FAILED,
                  "the language model failed before finishing its answer; what it said and "
                  "did so far is kept",
                  /*fatal=*/false, planned_.error);
    }
    TakeModelAnswer(plan);
    return;
  }
  emit_.Error(pb::CHAT_ERROR_CODE_MODEL_FAILED,
              "the language model could not answer; answering without it", /*fatal=*/false,
              planned_.error);
  core::LogWarn(
      "planner model failed",
      {{"component", "orchestrator"}, {"stage", "planner_stream"}, {"error", planned_.error}});
  // An answer to a question is not met with another question.
  if (continuing_ && last_->clarifications > 0) input_.max_clarifications = 0;
}

void TurnPass::TakeModelAnswer(const PlannerRequest& plan) {
  move_.action_type = analysis_.action_type();
  move_.entities.insert(analysis_.entities().begin(), analysis_.entities().end());
  move_.propose = planned_.propose;
  for (const std::string& tool : planned_.denied) {
    decisions_.push_back({core::NewUuid(), "", tool, "the model asked for " + tool,
                          runner_.RiskOf(DownstreamCall(), tool), pb::ACTION_OUTCOME_DENIED,
                          "policy"});
  }
  // A question counts against the cap; past it, the flow does not wait.
  move_.clarifying = planned_.asked && plan.clarifications < runner_.options_.max_clarifications;
  if (move_.clarifying) move_.asked = kAskedModel;
  text_ = planned_.text;
  text_sent_ = !text_.empty();
  if (planned_.iteration_limit) {
    emit_.Error(pb::CHAT_ERROR_CODE_ITERATION_LIMIT,
                "the planner reached its limit of " +
                    std::to_string(runner_.options_.max_iterations) +
                    " steps; what was done so far is kept",
                /*fatal=*/true);
    ContextBox::Add(box_.blockers, "the planner reached its iteration limit");
  }
  if (suspended_) ContextBox::Add(box_.next, "finish the answer to: " + goal_);
}

}  // namespace omniforge::orchestrator
