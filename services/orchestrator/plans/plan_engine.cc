#include "services/orchestrator/plans/plan_engine.h"

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "libs/core/clock.h"
#include "libs/core/ids.h"
#include "libs/core/logging.h"
#include "libs/core/metrics.h"
#include "libs/core/text.h"
#include "libs/llm/model_call_proto.h"
#include "libs/trace/span.h"
#include "services/orchestrator/api/public_types.h"
#include "services/orchestrator/approvals/preview.h"
#include "services/orchestrator/downstream/recovery.h"
#include "services/orchestrator/plans/plan_assessment.h"
#include "services/orchestrator/usage/usage_attribution.h"

namespace omniforge::orchestrator {
namespace {

namespace pb = ::omniforge::orchestrator::v1;

// A step's result in the planner's tool result is cut beyond this.
constexpr size_t kMaxResultBytesPerStep = 4000;

std::string Dump(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

void CountPlan(PlanStatus status) {
  core::MetricsRegistry::Global()
      .GetCounter("omniforge_orchestrator_plans_total",
                  "Plan calls of the engine, by the status they left the plan in",
                  {{"status", PlanStatusName(status)}})
      .Inc();
}

core::Counter& StepRetries() {
  static core::Counter& counter = core::MetricsRegistry::Global().GetCounter(
      "omniforge_orchestrator_step_retries_total",
      "Plan steps run again after failing for a temporary reason.", {});
  return counter;
}

// Events for the sink.
pb::ChatEvent StepStart(const Plan& plan, const PlanStep& step) {
  pb::ChatEvent e;
  auto* s = e.mutable_step_start();
  s->set_plan_id(plan.id);
  s->set_step_id(step.id);
  s->set_description(step.description);
  return e;
}

pb::ChatEvent StepComplete(const Plan& plan, const PlanStep& step) {
  pb::ChatEvent e;
  auto* s = e.mutable_step_complete();
  s->set_plan_id(plan.id);
  s->set_step_id(step.id);
  s->set_status(ToProto(step.status));
  s->set_summary(step.status == StepStatus::kCompleted ? step.result_summary : step.error);
  s->set_result_json(Dump(step.result));
  if (step.assessment.has_value()) *s->mutable_assessment() = ToProto(*step.assessment);
  return e;
}

pb::ChatEvent ExecutorMessage(const Plan& plan, const PlanStep& step, pb::DialogueParty sender,
                              std::string kind, std::string text, std::string data_json = "") {
  pb::ChatEvent e;
  auto* m = e.mutable_executor_message();
  m->set_plan_id(plan.id);
  m->set_step_id(step.id);
  m->set_sender(sender);
  m->set_kind(std::move(kind));
  m->set_text(std::move(text));
  m->set_data_json(std::move(data_json));
  return e;
}

pb::ChatEvent PlanCreated(const Plan& plan) {
  pb::ChatEvent e;
  *e.mutable_plan_created()->mutable_plan() = ToProto(plan);
  return e;
}

pb::ChatEvent ReadyForReview(const Plan& plan) {
  pb::ChatEvent e;
  *e.mutable_plan_ready_for_review()->mutable_plan() = ToProto(plan);
  return e;
}

pb::ChatEvent ExecutorSpawned(const Plan& plan, const PlanStep& step) {
  pb::ChatEvent e;
  e.mutable_executor_spawned()->set_plan_id(plan.id);
  e.mutable_executor_spawned()->set_step_id(step.id);
  e.mutable_executor_spawned()->set_dialogue_conversation_id(step.dialogue_conversation_id);
  return e;
}

pb::ChatEvent ProgressMessage(const Plan& plan, const PlanStep& step,
                              const execpb::ProgressUpdate& p) {
  nlohmann::json data = {{"fraction", p.fraction()}};
  if (!p.tool_name().empty()) {
    data["tool"] = p.tool_name();
    data["arguments"] = nlohmann::json::parse(p.arguments_json(), nullptr, false);
  }
  return ExecutorMessage(plan, step, pb::DIALOGUE_PARTY_EXECUTOR, "progress_update", p.message(),
                         Dump(data));
}

pb::ChatEvent PartialResultMessage(const Plan& plan, const PlanStep& step,
                                   const execpb::PartialResult& p) {
  return ExecutorMessage(plan, step, pb::DIALOGUE_PARTY_EXECUTOR, "partial_result",
                         p.tool_name().empty() ? "A finding" : "Result of " + p.tool_name(),
                         p.result_json());
}

// A step's assignment for its executor agent; `inputs` holds the results of
// the steps it depends on.
execpb::ConverseRequest Assignment(const Plan& header, const PlanStep& step, nlohmann::json inputs,
                                   int max_turns) {
  execpb::ConverseRequest assignment;
  execpb::TaskAssignment* task = assignment.mutable_task_assignment();
  task->set_task(step.expected_output.empty()
                     ? step.description
                     : absl::StrCat(step.description, "\nExpected output: ", step.expected_output));
  task->set_goal(header.objective);
  for (const std::string& tool : step.tools) task->add_allowed_tools(tool);
  task->set_writes_approved(header.writes_approved);
  // The user approved the steps as previewed: their tools and targets only.
  task->set_approved_targets_only(header.writes_approved);
  task->set_max_turns(max_turns);
  if (core::IsUuid(header.conversation_id))
    task->set_parent_conversation_id(header.conversation_id);
  task->set_step_id(step.id);
  if (!step.answers.empty()) {
    nlohmann::json answers = nlohmann::json::array();
    for (const StepAnswer& a : step.answers) {
      answers.push_back({{"question", a.question}, {"answer", a.answer}});
    }
    inputs["clarifications"] = answers;
  }
  if (!inputs.empty()) task->set_inputs_json(Dump(inputs));
  // The same key every time this step runs: a re-run replays its calls.
  task->set_idempotency_key(absl::StrCat("plan:", header.id, ":", step.id));
  for (const PlannedCall& call : step.tool_calls) {
    execpb::PlannedToolCall* planned = task->add_tool_calls();
    planned->set_tool_name(call.tool);
    planned->set_arguments_json(Dump(call.arguments));
  }
  return assignment;
}

bool AnyStepFailed(const Plan& plan) {
  for (const PlanStep& step : plan.steps) {
    if (step.status == StepStatus::kFailed) return true;
  }
  return false;
}

// Every step completed, or was left out at the user's word.
bool AllStepsCompleted(const Plan& plan) {
  for (const PlanStep& step : plan.steps) {
    if (step.status != StepStatus::kCompleted && !LeftOutByUser(step)) return false;
  }
  return true;
}

bool DependenciesCompleted(const Plan& plan, const PlanStep& step) {
  for (const std::string& dep : step.depends_on) {
    if (plan.FindStep(dep)->status != StepStatus::kCompleted) return false;
  }
  return true;
}

// The first step `step` depends on that failed or did not run; null when
// there is none.
const PlanStep* UnfinishedDependency(const Plan& plan, const PlanStep& step) {
  for (const std::string& dep : step.depends_on) {
    const PlanStep* d = plan.FindStep(dep);
    if (d->status == StepStatus::kFailed || d->status == StepStatus::kSkipped) return d;
  }
  return nullptr;
}

// The summary of a plan that ended.
std::string Summarise(const Plan& plan) {
  std::vector<std::string> completed, failed, dependents, skipped;
  for (const PlanStep& s : plan.steps) {
    if (s.status == StepStatus::kCompleted) completed.push_back(s.id);
    if (s.status == StepStatus::kSkipped) skipped.push_back(s.id);
    if (s.status == StepStatus::kFailed) (s.attempts > 0 ? failed : dependents).push_back(s.id);
  }
  if (failed.empty() && dependents.empty()) {
    return absl::StrCat("All ", plan.steps.size(), " steps completed.");
  }
  std::string out;
  for (const std::string& id : failed) {
    const PlanStep* s = plan.FindStep(id);
    absl::StrAppend(&out, "Step ", id, " (", s->description, ") failed: ", s->error, ". ");
  }
  if (!dependents.empty()) {
    absl::StrAppend(&out, "Not run because a step they depend on failed: ",
                    absl::StrJoin(dependents, ", "), ". ");
  }
  if (!skipped.empty()) {
    absl::StrAppend(&out, "Not started: ", absl::StrJoin(skipped, ", "), ". ");
  }
  absl::StrAppend(&out, completed.size(), " of ", plan.steps.size(), " steps completed.");
  return out;
}

// The first step that failed while it ran (not one failed for its
// dependency); null when none did.
const PlanStep* FirstFailed(const Plan& plan) {
  for (const PlanStep& step : plan.steps) {
    if (step.status == StepStatus::kFailed && step.attempts > 0) return &step;
  }
  return nullptr;
}

// What the generator's model is told when it re-plans after `failed`.
// The failure and what already succeeded, as the plan's context box holds
// them (BLOCKERS, PROGRESS), bounded.
std::string RevisionFeedback(const Plan& plan, const PlanStep& failed, const Assessment& assessed,
                             const Decision& decision) {
  std::vector<std::string> completed;
  std::vector<std::string> succeeded;
  for (const PlanStep& step : plan.steps) {
    if (step.status != StepStatus::kCompleted) continue;
    completed.push_back(step.id);
    succeeded.push_back(absl::StrCat(
        step.id, ": ",
        core::Shortened(step.result_summary.empty() ? step.description : step.result_summary,
                        200)));
  }
  return absl::StrCat(
      "Step ", failed.id, " (", failed.description,
      ") failed: ", core::Shortened(failed.error.empty() ? "no reason given" : failed.error, 300),
      ". It was assessed ", VerdictName(assessed.verdict), " (score ", assessed.score,
      "/100): ", absl::StrJoin(assessed.reasons, "; "), ". Decision: ", decision.reason, ". ",
      "Context box: BLOCKERS: step ", failed.id, " failed; PROGRESS: ",
      succeeded.empty() ? std::string("nothing succeeded yet") : absl::StrJoin(succeeded, "; "),
      ". ",
      completed.empty() ? std::string("No step completed")
                        : absl::StrCat("Steps ", absl::StrJoin(completed, ", "),
                                       " completed: keep them as they are (their results stay)"),
      ". Re-plan only what is left to reach the objective, another way than the step that "
      "failed, with new ids for new steps; depend on completed steps by their ids.");
}

// The plan's steps after a re-plan: those that completed, as they are,
// then the revision's steps that are not one of them, not started yet.
std::vector<PlanStep> MergeRevision(const std::vector<PlanStep>& steps,
                                    const std::vector<PlanStep>& revised) {
  std::vector<PlanStep> merged;
  std::set<std::string> kept;
  for (const PlanStep& step : steps) {
    if (step.status != StepStatus::kCompleted) continue;
    merged.push_back(step);
    kept.insert(step.id);
  }
  for (const PlanStep& step : revised) {
    if (kept.contains(step.id)) continue;
    PlanStep fresh;
    fresh.id = step.id;
    fresh.description = step.description;
    fresh.tools = step.tools;
    fresh.needs_executor = step.needs_executor;
    fresh.depends_on = step.depends_on;
    fresh.expected_output = step.expected_output;
    fresh.tool_calls = step.tool_calls;
    merged.push_back(std::move(fresh));
  }
  return merged;
}

// How the request a plan is made for was read, when the context says.
RequestClarity ClarityOfRequest(const PlanContext& context) {
  return context.intent.has_value() ? ClarityOf(*context.intent) : RequestClarity{};
}

// A plan naming a tool the approval policy refuses is not made; nor one
// whose step may call a HIGH tool without planning the exact call.
absl::Status Denied(const PlanVerdict& verdict) {
  if (!verdict.unplanned_high.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "a step may call the high-risk tool ", verdict.unplanned_high,
        " only as a planned call with its exact arguments (tool_calls), so the user can approve "
        "exactly that; plan the call"));
  }
  return absl::FailedPreconditionError(absl::StrCat("the approval policy does not allow the tool ",
                                                    verdict.denied_tool,
                                                    "; make the plan without it"));
}

}  // namespace

std::string PlanToolResult(const Plan& plan) {
  nlohmann::json steps = nlohmann::json::array();
  for (const PlanStep& s : plan.steps) {
    nlohmann::json step = {
        {"id", s.id}, {"description", s.description}, {"status", StepStatusName(s.status)}};
    if (!s.depends_on.empty()) step["depends_on"] = s.depends_on;
    if (!s.result_summary.empty()) step["summary"] = s.result_summary;
    if (!s.error.empty()) step["error"] = s.error;
    if (s.assessment.has_value()) step["assessment"] = AssessmentSummaryJson(*s.assessment);
    if (s.status == StepStatus::kCompleted) {
      const std::string result = Dump(s.result);
      step["result"] =
          result.size() <= kMaxResultBytesPerStep
              ? s.result
              : nlohmann::json{{"truncated", true},
                               {"text", core::Shortened(result, kMaxResultBytesPerStep)}};
    }
    steps.push_back(std::move(step));
  }
  nlohmann::json out = {{"plan_id", plan.id},
                        {"status", PlanStatusName(plan.status)},
                        {"execution_mode", ExecutionModeName(plan.mode)},
                        {"objective", plan.objective},
                        {"steps", steps}};
  if (!plan.summary.empty()) out["summary"] = plan.summary;
  if (PlanRan(plan)) out["assessment"] = AssessmentSummaryJson(AssessPlan(plan));
  if (plan.review_verdict.has_value()) {
    out["review"] = {{"verdict", ReviewVerdictName(*plan.review_verdict)},
                     {"notes", plan.review_notes}};
  }
  if (plan.pending_question.has_value()) {
    out["question"] = {{"step_id", plan.pending_question->step_id},
                       {"text", plan.pending_question->question},
                       {"options", plan.pending_question->options}};
  }
  return Dump(out);
}

// The state of one plan run, shared by the scheduler and the step threads.
struct PlanEngine::Run {
  Run(Plan p, PlanEventSink& s, RequestClarity c) : plan(std::move(p)), clarity(c), sink(s) {}

  // A step that finished (or will not run) judged from its evidence.
  void AssessStep(const Plan& header, PlanStep& step, const ExecutorReport& report) const {
    step.assessment = Assess(StepEvidence(header, step, report, clarity));
  }

  // Emits one event; step threads call it concurrently.
  void Emit(pb::ChatEvent event) {
    absl::MutexLock lock(&emit_mu);
    sink.Emit(std::move(event));
  }

  // A step could not be stored as started: it is pending again and no step
  // starts after it.
  void StepNotStarted(const std::string& step_id, const absl::Status& stored) {
    absl::MutexLock lock(&mu);
    plan.FindStep(step_id)->status = StepStatus::kPending;
    if (storage_error.ok()) storage_error = stored;
    --running;
    changed.SignalAll();
  }

  // A step's thread ends: its copy goes back into the plan, with whether it
  // was stored and the question it escalated, if any.
  void StepEnded(const PlanStep& step, const absl::Status& stored,
                 const std::optional<PendingQuestion>& escalated) {
    absl::MutexLock lock(&mu);
    *plan.FindStep(step.id) = step;
    if (!stored.ok() && storage_error.ok()) storage_error = stored;
    if (escalated.has_value() && !question.has_value()) question = escalated;
    --running;
    changed.SignalAll();
  }

  // Stores a dependent step marked failed or skipped and reports it, called
  // with mu let go: besides the step (pending until now: no step thread has
  // it), the store and the event read only the plan's id and tenant, which
  // no step thread writes. The analysis cannot tell, hence its exemption.
  absl::Status StoreDependent(PlanStore& store,
                              const PlanStep& step) ABSL_NO_THREAD_SAFETY_ANALYSIS {
    absl::Status stored = store.UpdateStep(plan, step);
    if (stored.ok()) Emit(StepComplete(plan, step));
    return stored;
  }

  absl::Mutex mu;
  absl::CondVar changed;
  Plan plan ABSL_GUARDED_BY(mu);
  int running ABSL_GUARDED_BY(mu) = 0;
  std::optional<PendingQuestion> question ABSL_GUARDED_BY(mu);  // the first escalated one
  // Progress that could not be stored. No step starts after it, so no work
  // happens that a resumed run would not know about.
  absl::Status storage_error ABSL_GUARDED_BY(mu);
  std::optional<UsageAttribution> attribution;
  // How the request that started the run was read (set before the steps
  // start, then only read).
  const RequestClarity clarity;
  // Re-plans made in this run, and the last decision on a blocked step
  // (read and written between rounds, when no step runs).
  int revisions = 0;
  std::optional<Decision> decision;

  absl::Mutex emit_mu;
  PlanEventSink& sink;
};

// One step's dialogue with its executor agent, on the step's own thread.
struct PlanEngine::StepRun {
  pb::ExecutorResultEvent* result() { return result_event.mutable_executor_result(); }

  // The final event: the step is done.
  void Completed(const execpb::TaskComplete& done) {
    ended = true;
    report.partial = done.status() == execpb::TASK_STATUS_PARTIAL;
    for (const execpb::ToolCallRecord& call : done.tool_calls()) {
      ++report.tool_calls;
      if (call.is_error()) ++report.failed_calls;
    }
    // Proto3 cannot tell 0 from unset: an executor always says more.
    if (done.confidence() > 0) report.confidence = done.confidence();
    report.limitations.assign(done.limitations().begin(), done.limitations().end());
    step.status = StepStatus::kCompleted;
    step.result_summary = done.summary();
    step.result = nlohmann::json::parse(done.result_json(), nullptr, false);
    if (step.result.is_discarded()) step.result = {{"text", done.result_json()}};
    result()->set_status(PublicTaskStatus(done.status()));
    result()->set_summary(done.summary());
    result()->set_result_json(done.result_json());
  }

  // The final event: the step failed, or stopped for the user's answer.
  void Failed(const execpb::ExecutorError& error) {
    ended = true;
    retryable = error.retryable();
    for (const execpb::PartialResult& partial : error.partial_results()) {
      if (partial.tool_name().empty()) continue;
      ++report.tool_calls;
      if (partial.is_error()) ++report.failed_calls;
    }
    step.status = escalated.has_value() ? StepStatus::kPending : StepStatus::kFailed;
    step.error = escalated.has_value() ? "" : error.message();
    result()->set_error_code(PublicExecutorError(error.code()));
    result()->set_summary(error.message());
  }

  // The step's own copy; the shared plan is read and written under run.mu.
  PlanStep step;
  Plan header;  // the plan without its steps
  // The results of the steps it depends on, until the assignment takes them.
  nlohmann::json inputs = nlohmann::json::object();
  std::unique_ptr<StepDialogue> dialogue;
  // The step's model usage, when it runs for a turn; null otherwise.
  ModelUsage* usage = nullptr;
  bool sent = false;  // the last message reached the executor
  bool spawned = false;
  bool ended = false;      // a final event arrived
  bool retryable = false;  // it failed, and may not fail when run again
  // The question that goes to the user: the step stops and the plan waits.
  std::optional<PendingQuestion> escalated;
  pb::ChatEvent result_event;
  // How the dialogue ended, once it was closed (Finish called).
  absl::Status finished;
  // What the executor said at the end, for the step's assessment.
  ExecutorReport report;
};

// A call's hold on one plan (see PlanEngine): released when it returns.
class PlanEngine::Claim final {
 public:
  static absl::StatusOr<std::unique_ptr<Claim>> On(PlanEngine& engine, const std::string& plan_id) {
    absl::MutexLock lock(&engine.claims_mu_);
    if (!engine.claimed_.insert(plan_id).second) {
      return absl::AbortedError(absl::StrCat(
          "plan ", plan_id, " is being run or changed by another request; try again when it ends"));
    }
    return std::unique_ptr<Claim>(new Claim(engine, plan_id));
  }
  ~Claim() {
    absl::MutexLock lock(&engine_.claims_mu_);
    engine_.claimed_.erase(plan_id_);
  }
  Claim(const Claim&) = delete;
  Claim& operator=(const Claim&) = delete;

 private:
  Claim(PlanEngine& engine, std::string plan_id) : engine_(engine), plan_id_(std::move(plan_id)) {}
  PlanEngine& engine_;
  const std::string plan_id_;
};

absl::StatusOr<Plan> PlanEngine::ClaimAndGet(const core::Identity& who, const std::string& plan_id,
                                             std::unique_ptr<Claim>& claim) {
  auto held = Claim::On(*this, plan_id);
  if (!held.ok()) return held.status();
  claim = *std::move(held);
  return store_.Get(who, plan_id);
}

PlanEngine::PlanEngine(PlanStore& store, StepExecutors& executors, const PlanGenerator& generator,
                       const PlanAdvisor& advisor, PlanEngineOptions options)
    : store_(store),
      executors_(executors),
      generator_(generator),
      advisor_(advisor),
      options_(std::move(options)),
      clock_(options_.clock != nullptr ? *options_.clock : core::SystemClock()) {}

core::TimePoint PlanEngine::ModelDeadline() const {
  return clock_.Now() +
         std::chrono::duration_cast<std::chrono::microseconds>(options_.model_timeout);
}

absl::StatusOr<PlanOutcome> PlanEngine::CreatePlan(const core::Identity& who,
                                                   const std::string& conversation_id,
                                                   const PlanRequest& request,
                                                   const PlanContext& context, PlanEventSink& sink,
                                                   const std::function<bool()>& cancelled) {
  PlanContext bounded = context;
  if (!bounded.deadline.has_value()) bounded.deadline = ModelDeadline();
  auto steps = generator_.Generate(request, bounded);
  if (!steps.ok()) return steps.status();
  const PlanVerdict verdict = DecidePlan(options_.approvals, *steps, context.tools);
  if (verdict.verdict == GateVerdict::kDeny || !verdict.unplanned_high.empty()) {
    return Denied(verdict);
  }
  Plan plan;
  plan.id = core::NewUuid();
  plan.tenant_id = who.tenant_id;
  plan.user_id = who.user_id;
  plan.conversation_id = conversation_id;
  plan.objective = request.objective;
  plan.context_type = context.context_type;
  plan.entity_id = context.entity_id;
  plan.mode = request.mode;
  plan.requested_outputs = request.requested_outputs;
  plan.priority_entities = request.priority_entities;
  plan.steps = *std::move(steps);
  switch (plan.mode) {
    case ExecutionMode::kAutoExecute:
      // Runs at once only when nothing in it needs the user's approval.
      if (verdict.verdict == GateVerdict::kRun) {
        plan.status = PlanStatus::kApproved;
        plan.writes_approved = true;
      } else {
        plan.status = PlanStatus::kPendingReview;
      }
      break;
    case ExecutionMode::kDraftOnly:
      plan.status = PlanStatus::kPendingReview;
      break;
    case ExecutionMode::kAgentReview:
      plan.status = PlanStatus::kDraft;
      break;
  }
  if (absl::Status stored = store_.Create(plan); !stored.ok()) return stored;
  sink.Emit(PlanCreated(plan));
  core::LogInfo("plan created", {{"component", "orchestrator"},
                                 {"plan_id", plan.id},
                                 {"mode", ExecutionModeName(plan.mode)},
                                 {"steps", std::to_string(plan.steps.size())}});
  if (plan.status == PlanStatus::kApproved) {
    return RunPlan(std::move(plan), sink, cancelled, context.usage, &bounded);
  }
  if (plan.status == PlanStatus::kPendingReview) {
    CountPlan(plan.status);
    return ShowForReview(plan, context, sink);
  }
  return ReviewAndRun(std::move(plan), request, bounded, sink, cancelled);
}

absl::StatusOr<PlanOutcome> PlanEngine::ReviewAndRun(Plan plan, const PlanRequest& request,
                                                     const PlanContext& context,
                                                     PlanEventSink& sink,
                                                     const std::function<bool()>& cancelled) {
  // Each needs_changes goes back to the planner's model with the reviewer's
  // notes for a revised plan, which is reviewed again: at most
  // max_review_rounds revisions (none once the turn must stop), then the
  // user decides.
  std::vector<std::string> critiques;
  for (int round = 0;; ++round) {
    auto review = advisor_.ReviewPlan(plan, ModelDeadline(), context.usage);
    if (!review.ok()) {
      plan.status = PlanStatus::kFailed;
      plan.summary = absl::StrCat("The plan could not be reviewed: ", review.status().message());
      if (absl::Status s = store_.Update(plan, {PlanStatus::kDraft}); !s.ok()) return s;
      CountPlan(plan.status);
      return review.status();
    }
    plan.review_verdict = review->verdict;
    plan.review_notes = review->notes;
    pb::ChatEvent event;
    event.mutable_plan_review()->set_plan_id(plan.id);
    event.mutable_plan_review()->set_verdict(ToProto(review->verdict));
    event.mutable_plan_review()->set_notes(review->notes);
    sink.Emit(std::move(event));
    // The reviewer's approval runs a plan that only does what the policy
    // runs unasked; a plan with writes still waits for the user's.
    const bool runs_unasked =
        DecidePlan(options_.approvals, plan.steps, context.tools).verdict == GateVerdict::kRun;
    if (review->verdict == ReviewVerdict::kApproved && runs_unasked) {
      plan.status = PlanStatus::kApproved;
      plan.writes_approved = true;
      if (absl::Status s = store_.Update(plan, {PlanStatus::kDraft}); !s.ok()) return s;
      return RunPlan(std::move(plan), sink, cancelled, context.usage, &context);
    }
    if (review->verdict == ReviewVerdict::kRejected) {
      plan.status = PlanStatus::kRejected;
      plan.summary = absl::StrCat("The reviewer rejected the plan: ", review->notes);
      if (absl::Status s = store_.Update(plan, {PlanStatus::kDraft}); !s.ok()) return s;
      CountPlan(plan.status);
      return PlanOutcome{plan, PlanToolResult(plan)};
    }
    if (review->verdict == ReviewVerdict::kApproved || round >= options_.max_review_rounds ||
        (cancelled && cancelled())) {
      plan.status = PlanStatus::kPendingReview;
      if (absl::Status s = store_.Update(plan, {PlanStatus::kDraft}); !s.ok()) return s;
      CountPlan(plan.status);
      return ShowForReview(plan, context, sink);
    }
    critiques.push_back(review->notes);
    absl::StatusOr<std::optional<PlanOutcome>> failed =
        ReviseForReviewer(plan, request, context, critiques);
    if (!failed.ok()) return failed.status();
    if (failed->has_value()) return **std::move(failed);
    sink.Emit(PlanCreated(plan));
  }
}

absl::StatusOr<std::optional<PlanOutcome>> PlanEngine::ReviseForReviewer(
    Plan& plan, const PlanRequest& request, const PlanContext& context,
    const std::vector<std::string>& critiques) {
  // The latest notes lead; the earlier rounds' follow, so that a revision
  // does not undo what an earlier one fixed.
  std::string feedback = critiques.back();
  for (size_t i = 0; i + 1 < critiques.size(); ++i) {
    absl::StrAppend(&feedback, i == 0 ? "\nThe reviewer's earlier notes, still to keep: " : " / ",
                    critiques[i]);
  }
  PlanContext revision_context = context;
  revision_context.deadline = ModelDeadline();
  auto revised = generator_.Generate(request, revision_context, PlanRevision{plan.steps, feedback});
  std::string failure;
  if (!revised.ok()) {
    failure = absl::StrCat("The plan could not be revised: ", revised.status().message());
  } else if (const PlanVerdict verdict = DecidePlan(options_.approvals, *revised, context.tools);
             verdict.verdict == GateVerdict::kDeny || !verdict.unplanned_high.empty()) {
    failure = std::string(Denied(verdict).message());
  }
  if (!failure.empty()) {
    plan.status = PlanStatus::kFailed;
    plan.summary = std::move(failure);
    if (absl::Status s = store_.Update(plan, {PlanStatus::kDraft}); !s.ok()) return s;
    CountPlan(plan.status);
    return PlanOutcome{plan, PlanToolResult(plan)};
  }
  plan.steps = *std::move(revised);
  if (absl::Status s = store_.Update(plan, {PlanStatus::kDraft}, /*replace_steps=*/true); !s.ok()) {
    return s;
  }
  return std::nullopt;
}

absl::StatusOr<PlanOutcome> PlanEngine::Approve(const core::Identity& who,
                                                const std::string& plan_id, PlanEventSink& sink,
                                                const std::function<bool()>& cancelled,
                                                const std::string& digest, ModelUsage* usage) {
  std::unique_ptr<Claim> claim;
  auto plan = ClaimAndGet(who, plan_id, claim);
  if (!plan.ok()) return plan.status();
  if (plan->status != PlanStatus::kPendingReview) {
    return absl::FailedPreconditionError(
        absl::StrCat("plan ", plan_id, " is ", PlanStatusName(plan->status),
                     "; only a plan waiting for review can be approved"));
  }
  // A tool the operator denied since the preview never runs.
  for (const PlanStep& step : plan->steps) {
    for (const std::string& tool : step.tools) {
      if (auto it = options_.approvals.tools.find(tool);
          it != options_.approvals.tools.end() && it->second == GateVerdict::kDeny) {
        return Denied({GateVerdict::kDeny, tool});
      }
    }
  }
  if (!digest.empty() && PlanDigest(plan->steps) != digest) {
    return absl::FailedPreconditionError(
        "the plan changed since it was previewed; nothing ran; look at it again before "
        "approving");
  }
  plan->status = PlanStatus::kApproved;
  plan->writes_approved = true;
  if (absl::Status s = store_.Update(*plan, {PlanStatus::kPendingReview}); !s.ok()) return s;
  return RunPlan(*std::move(plan), sink, cancelled, usage);
}

absl::StatusOr<PlanOutcome> PlanEngine::Revise(const core::Identity& who,
                                               const std::string& plan_id,
                                               const std::string& feedback,
                                               const PlanContext& context, PlanEventSink& sink) {
  if (feedback.find_first_not_of(" \t\r\n") == std::string::npos) {
    return absl::InvalidArgumentError("feedback: say what to change");
  }
  std::unique_ptr<Claim> claim;
  auto plan = ClaimAndGet(who, plan_id, claim);
  if (!plan.ok()) return plan.status();
  if (plan->status != PlanStatus::kPendingReview) {
    return absl::FailedPreconditionError(
        absl::StrCat("plan ", plan_id, " is ", PlanStatusName(plan->status),
                     "; only a plan waiting for review can be revised"));
  }
  PlanRequest request{plan->objective, plan->mode, plan->requested_outputs,
                      plan->priority_entities};
  PlanContext bounded = context;
  bounded.context_type = plan->context_type;
  if (bounded.entity_id.empty()) bounded.entity_id = plan->entity_id;
  if (!bounded.deadline.has_value()) bounded.deadline = ModelDeadline();
  auto steps = generator_.Generate(request, bounded, PlanRevision{plan->steps, feedback});
  if (!steps.ok()) return steps.status();
  if (const PlanVerdict verdict = DecidePlan(options_.approvals, *steps, bounded.tools);
      verdict.verdict == GateVerdict::kDeny || !verdict.unplanned_high.empty()) {
    return Denied(verdict);
  }
  plan->steps = *std::move(steps);
  if (absl::Status s = store_.Update(*plan, {PlanStatus::kPendingReview}, true); !s.ok()) {
    return s;
  }
  sink.Emit(PlanCreated(*plan));
  return ShowForReview(*plan, bounded, sink);
}

absl::StatusOr<PlanOutcome> PlanEngine::Preview(const core::Identity& who,
                                                const std::string& plan_id,
                                                const PlanContext& context, PlanEventSink& sink) {
  std::unique_ptr<Claim> claim;
  auto plan = ClaimAndGet(who, plan_id, claim);
  if (!plan.ok()) return plan.status();
  if (plan->status != PlanStatus::kPendingReview) {
    return absl::FailedPreconditionError(absl::StrCat(
        "plan ", plan_id, " is ", PlanStatusName(plan->status), "; it is not waiting for review"));
  }
  return ShowForReview(*plan, context, sink);
}

PlanOutcome PlanEngine::ShowForReview(const Plan& plan, const PlanContext& context,
                                      PlanEventSink& sink) const {
  PlanOutcome outcome{plan, PlanToolResult(plan), PlanDigest(plan.steps),
                      clock_.NowMicros() + std::chrono::duration_cast<std::chrono::microseconds>(
                                               options_.approvals.pending_ttl)
                                               .count()};
  sink.Emit(ReadyForReview(plan));
  pb::ChatEvent preview;
  FillPlanPreview(plan, context.tools, options_.approvals, outcome.digest,
                  outcome.expires_at_micros, *preview.mutable_preview());
  sink.Emit(std::move(preview));
  return outcome;
}

absl::StatusOr<PlanOutcome> PlanEngine::Reject(const core::Identity& who,
                                               const std::string& plan_id,
                                               const std::string& reason) {
  std::unique_ptr<Claim> claim;
  auto plan = ClaimAndGet(who, plan_id, claim);
  if (!plan.ok()) return plan.status();
  plan->status = PlanStatus::kRejected;
  plan->pending_question.reset();
  plan->summary =
      reason.empty() ? "The user rejected the plan." : "The user rejected the plan: " + reason;
  if (absl::Status s =
          store_.Update(*plan, {PlanStatus::kPendingReview, PlanStatus::kWaitingOnUser});
      !s.ok()) {
    return s;
  }
  CountPlan(plan->status);
  return PlanOutcome{*plan, PlanToolResult(*plan)};
}

absl::StatusOr<PlanOutcome> PlanEngine::Execute(const core::Identity& who,
                                                const std::string& plan_id, PlanEventSink& sink,
                                                const std::function<bool()>& cancelled,
                                                ModelUsage* usage) {
  std::unique_ptr<Claim> claim;
  auto plan = ClaimAndGet(who, plan_id, claim);
  if (!plan.ok()) return plan.status();
  if (plan->status != PlanStatus::kApproved && plan->status != PlanStatus::kRunning) {
    return absl::FailedPreconditionError(
        absl::StrCat("plan ", plan_id, " is ", PlanStatusName(plan->status),
                     "; only an approved or running plan can be run"));
  }
  return RunPlan(*std::move(plan), sink, cancelled, usage);
}

absl::StatusOr<PlanOutcome> PlanEngine::AnswerQuestion(
    const core::Identity& who, const std::string& plan_id, const std::string& answer,
    PlanEventSink& sink, const std::function<bool()>& cancelled, ModelUsage* usage) {
  if (answer.find_first_not_of(" \t\r\n") == std::string::npos) {
    return absl::InvalidArgumentError("answer: must not be empty");
  }
  std::unique_ptr<Claim> claim;
  auto plan = ClaimAndGet(who, plan_id, claim);
  if (!plan.ok()) return plan.status();
  if (plan->status != PlanStatus::kWaitingOnUser || !plan->pending_question.has_value()) {
    return absl::FailedPreconditionError(absl::StrCat("plan ", plan_id, " is ",
                                                      PlanStatusName(plan->status),
                                                      "; it is not waiting for an answer"));
  }
  PlanStep* step = plan->FindStep(plan->pending_question->step_id);
  if (step == nullptr) return absl::InternalError("the question names a step the plan lacks");
  step->answers.push_back({plan->pending_question->question, answer, "user"});
  if (absl::Status s = store_.UpdateStep(*plan, *step); !s.ok()) return s;
  return RunPlan(*std::move(plan), sink, cancelled, usage);
}

absl::StatusOr<PlanOutcome> PlanEngine::RecoverStep(
    const core::Identity& who, const std::string& plan_id, const std::string& step_id, bool skip,
    PlanEventSink& sink, const std::function<bool()>& cancelled, ModelUsage* usage) {
  std::unique_ptr<Claim> claim;
  auto plan = ClaimAndGet(who, plan_id, claim);
  if (!plan.ok()) return plan.status();
  const PlanStep* failed = plan->FindStep(step_id);
  if (plan->status != PlanStatus::kFailed || failed == nullptr ||
      failed->status != StepStatus::kFailed) {
    return absl::FailedPreconditionError(
        absl::StrCat("plan ", plan_id, " is ", PlanStatusName(plan->status),
                     "; only the failed step of a failed plan can be run again or left out"));
  }
  const std::string error = failed->error;
  for (PlanStep& step : plan->steps) {
    if (step.status == StepStatus::kCompleted) continue;
    if (skip && step.id == step_id) {
      step.status = StepStatus::kSkipped;
      step.error = absl::StrCat(kLeftOutByUser, " after it failed: ", error);
      continue;
    }
    if (skip) std::erase(step.depends_on, step_id);
    step.status = StepStatus::kPending;
    step.error.clear();
    step.result_summary.clear();
    step.result = nlohmann::json::object();
    step.assessment.reset();
    step.started_micros = 0;
    step.finished_micros = 0;
  }
  plan->summary.clear();
  if (absl::Status s = store_.Update(*plan, {PlanStatus::kFailed}, /*replace_steps=*/true);
      !s.ok()) {
    return s;
  }
  core::LogInfo("failed plan step recovered at the user's word",
                {{"component", "orchestrator"},
                 {"plan_id", plan_id},
                 {"step_id", step_id},
                 {"choice", skip ? "left out" : "run again"}});
  return RunPlan(*std::move(plan), sink, cancelled, usage);
}

absl::StatusOr<PlanOutcome> PlanEngine::RunPlan(Plan plan, PlanEventSink& sink,
                                                const std::function<bool()>& cancelled,
                                                const ModelUsage* usage,
                                                const PlanContext* made_in) {
  const PlanStatus from = plan.status;
  plan.status = PlanStatus::kRunning;
  plan.pending_question.reset();
  plan.summary.clear();
  if (absl::Status s = store_.Update(plan, {from}); !s.ok()) return s;
  // A step left running by an orchestrator that stopped runs again (its
  // idempotency key keeps the tool calls that already ran from repeating).
  for (PlanStep& step : plan.steps) {
    if (step.status == StepStatus::kRunning) step.status = StepStatus::kPending;
  }

  const ExecutionMode mode = plan.mode;
  Run run(std::move(plan), sink,
          made_in != nullptr ? ClarityOfRequest(*made_in) : RequestClarity{});
  if (usage != nullptr) {
    run.attribution = usage->attribution();
    run.attribution->execution_mode = ExecutionModeName(mode);
  }
  // Each round runs the steps until none can start; a step that failed
  // blocks the plan, and the assessment decides whether what is left is
  // re-planned (a plan made in this call only: its context is at hand).
  for (int iteration = 1;; ++iteration) {
    RunSteps(run, cancelled);
    if (made_in == nullptr || !RevisePlan(run, *made_in, iteration, cancelled)) break;
  }
  return EndRun(run);
}

void PlanEngine::RunSteps(Run& run, const std::function<bool()>& cancelled) {
  std::vector<std::thread> threads;
  {
    absl::MutexLock lock(&run.mu);
    bool stop_starting = false;
    for (;;) {
      FailDependents(run);
      stop_starting = stop_starting || AnyStepFailed(run.plan) || run.question.has_value() ||
                      !run.storage_error.ok() || (cancelled && cancelled());
      if (!stop_starting) StartReadySteps(run, threads);
      if (run.running == 0) break;
      run.changed.Wait(&run.mu);
    }
  }
  for (std::thread& t : threads) t.join();
}

void PlanEngine::FailDependents(Run& run) ABSL_EXCLUSIVE_LOCKS_REQUIRED(run.mu) {
  for (bool changed = true; changed;) {
    changed = false;
    for (PlanStep& step : run.plan.steps) {
      if (step.status != StepStatus::kPending) continue;
      const PlanStep* d = UnfinishedDependency(run.plan, step);
      if (d == nullptr) continue;
      step.status = d->status == StepStatus::kFailed ? StepStatus::kFailed : StepStatus::kSkipped;
      step.error = absl::StrCat("not run: it depends on step ", d->id, ", which ",
                                d->status == StepStatus::kFailed ? "failed" : "did not run");
      step.finished_micros = clock_.NowMicros();
      run.AssessStep(run.plan, step, {});
      run.mu.Unlock();
      const absl::Status stored = run.StoreDependent(store_, step);
      run.mu.Lock();
      if (!stored.ok() && run.storage_error.ok()) run.storage_error = stored;
      changed = true;
    }
  }
}

void PlanEngine::StartReadySteps(Run& run, std::vector<std::thread>& threads)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(run.mu) {
  for (PlanStep& step : run.plan.steps) {
    if (run.running >= options_.max_parallel_steps) break;
    if (step.status != StepStatus::kPending || !DependenciesCompleted(run.plan, step)) continue;
    step.status = StepStatus::kRunning;
    ++run.running;
    // The step runs under the turn's trace and log fields, in a span of its own.
    threads.emplace_back([this, &run, id = step.id, ambient = core::CurrentAmbient()]() mutable {
      const core::ScopedAmbient scope(std::move(ambient));
      trace::ScopedSpan span("plan.step");
      span.span().SetAttribute("plan.step_id", id);
      RunStep(run, id);
    });
  }
}

// Every step thread has been joined: the run is this thread's alone, which
// the analysis cannot tell.
bool PlanEngine::RevisePlan(Run& run, const PlanContext& context, int iteration,
                            const std::function<bool()>& cancelled) ABSL_NO_THREAD_SAFETY_ANALYSIS {
  Plan& plan = run.plan;
  const PlanStep* failed = FirstFailed(plan);
  if (failed == nullptr || !failed->assessment.has_value() || !run.storage_error.ok() ||
      run.question.has_value() || (cancelled && cancelled())) {
    return false;
  }
  const Assessment assessed = *failed->assessment;
  const std::string failed_id = failed->id;
  run.decision = Decide(assessed, {iteration, run.revisions, /*work_left=*/true});
  if (run.decision->move == NextMove::kRevisePlan &&
      (!generator_.uses_model() || context.local_only)) {
    // The local planner's templates have no other way: the plan stops.
    run.decision =
        Decision{NextMove::kExit, absl::StrCat("blocked (score ", assessed.score,
                                               "); without a model the plan is not re-planned")};
  }
  run.Emit(ExecutorMessage(plan, *failed, pb::DIALOGUE_PARTY_PLANNER,
                           NextMoveName(run.decision->move), run.decision->reason,
                           Dump(AssessmentSummaryJson(assessed))));
  if (run.decision->move != NextMove::kRevisePlan) return false;

  PlanContext revision_context = context;
  revision_context.deadline = ModelDeadline();
  const PlanRequest request{plan.objective, plan.mode, plan.requested_outputs,
                            plan.priority_entities};
  auto revised = generator_.Generate(
      request, revision_context,
      PlanRevision{plan.steps, RevisionFeedback(plan, *failed, assessed, *run.decision)});
  std::vector<PlanStep> steps;
  if (revised.ok()) steps = MergeRevision(plan.steps, *revised);
  absl::Status usable = revised.ok() ? ValidateStepGraph(steps) : revised.status();
  if (usable.ok() &&
      DecidePlan(options_.approvals, steps, context.tools).verdict != GateVerdict::kRun) {
    usable = absl::FailedPreconditionError("the new steps need the user's approval");
  }
  if (!usable.ok()) {
    run.decision = Decision{NextMove::kExit,
                            absl::StrCat("the plan could not be re-planned: ", usable.message())};
    return false;
  }
  Plan replanned = plan;
  replanned.steps = std::move(steps);
  if (absl::Status s = store_.Update(replanned, {PlanStatus::kRunning}, /*replace_steps=*/true);
      !s.ok()) {
    run.storage_error = s;
    return false;
  }
  plan = std::move(replanned);
  ++run.revisions;
  run.Emit(PlanCreated(plan));
  core::LogInfo("plan re-planned", {{"component", "orchestrator"},
                                    {"plan_id", plan.id},
                                    {"blocked_step", failed_id},
                                    {"steps", std::to_string(plan.steps.size())}});
  return true;
}

// Every step thread has been joined: the run is this thread's alone, which
// the analysis cannot tell.
absl::StatusOr<PlanOutcome> PlanEngine::EndRun(Run& run) ABSL_NO_THREAD_SAFETY_ANALYSIS {
  if (!run.storage_error.ok()) {
    core::LogError("plan run stopped: its progress cannot be stored",
                   {{"component", "orchestrator"},
                    {"stage", "plan_execute"},
                    {"plan_id", run.plan.id},
                    {"error", std::string(run.storage_error.message())}});
    return run.storage_error;
  }
  Plan& plan_now = run.plan;
  if (AnyStepFailed(plan_now)) {
    for (PlanStep& step : plan_now.steps) {
      if (step.status != StepStatus::kPending) continue;
      step.status = StepStatus::kSkipped;
      step.error = "not started: the plan failed first";
      run.AssessStep(plan_now, step, {});
      if (absl::Status s = store_.UpdateStep(plan_now, step); !s.ok()) return s;
      run.Emit(StepComplete(plan_now, step));
    }
    plan_now.status = PlanStatus::kFailed;
    plan_now.summary = Summarise(plan_now);
    if (run.revisions > 0 && run.decision.has_value() && run.decision->move == NextMove::kExit) {
      absl::StrAppend(&plan_now.summary, " Stopped: ", run.decision->reason, ".");
    }
  } else if (run.question.has_value()) {
    plan_now.status = PlanStatus::kWaitingOnUser;
    plan_now.pending_question = run.question;
    plan_now.summary = absl::StrCat("Step ", run.question->step_id,
                                    " needs the user's answer: ", run.question->question);
  } else if (AllStepsCompleted(plan_now)) {
    plan_now.status = PlanStatus::kCompleted;
    plan_now.summary = Summarise(plan_now);
  } else {
    plan_now.summary = "Stopped before every step ran; running the plan again resumes it.";
  }
  if (run.revisions > 0) {
    plan_now.summary =
        absl::StrCat("Re-planned ", run.revisions, run.revisions == 1 ? " time" : " times",
                     " after a step was blocked. ", plan_now.summary);
  }
  if (absl::Status s = store_.Update(plan_now, {PlanStatus::kRunning}); !s.ok()) return s;
  CountPlan(plan_now.status);
  core::LogInfo("plan run ended", {{"component", "orchestrator"},
                                   {"plan_id", plan_now.id},
                                   {"status", PlanStatusName(plan_now.status)}});
  return PlanOutcome{plan_now, PlanToolResult(plan_now)};
}

void PlanEngine::RunStep(Run& run, const std::string& step_id) {
  // The step's model calls, stored as a row of its own.
  std::optional<ModelUsage> step_usage;
  if (run.attribution.has_value()) step_usage.emplace(*run.attribution, options_.usage_writer);

  for (int attempt = 1;; ++attempt) {
    StepRun s;
    s.usage = step_usage.has_value() ? &*step_usage : nullptr;
    if (!StartStep(run, step_id, s)) return;
    if (attempt == 1) run.Emit(StepStart(s.header, s.step));
    OpenDialogue(run, s);
    Converse(run, s);
    if (RetryStep(run, s, attempt)) continue;
    EndStep(run, s);
    return;
  }
}

// Its tool calls keep their idempotency keys (the plan's and the step's),
// so a write that ran in a failed attempt does not run again.
bool PlanEngine::RetryStep(Run& run, StepRun& s, int attempt) {
  if (s.escalated.has_value()) return false;
  if (!s.ended) {
    // The dialogue broke off: temporary when the executor could not be
    // reached or was overloaded; a step that used up its time does not get
    // it again.
    s.finished = s.dialogue->Finish();
    s.dialogue.reset();
    if (s.finished.ok() || s.finished.code() == absl::StatusCode::kDeadlineExceeded ||
        ClassifyStatus(s.finished.code()) != Failure::kTemporary) {
      return false;
    }
    s.retryable = true;
    s.step.error = absl::StrCat("the executor's dialogue broke off: ", s.finished.message());
  } else if (s.step.status != StepStatus::kFailed || !s.retryable) {
    return false;
  }
  const int64_t wait = llm::RetryWaitMicros(options_.step_retry, attempt,
                                            llm::DefaultRandom().Uniform(), std::nullopt);
  if (attempt >= options_.step_retry.max_attempts) return false;
  if (s.dialogue != nullptr) {
    s.finished = s.dialogue->Finish();
    s.dialogue.reset();
  }
  core::LogWarn("plan step failed for a temporary reason; running it again",
                {{"component", "orchestrator"},
                 {"plan_id", s.header.id},
                 {"step_id", s.step.id},
                 {"attempt", absl::StrCat(attempt)},
                 {"error", s.step.error}});
  StepRetries().Inc();
  run.Emit(
      ExecutorMessage(s.header, s.step, pb::DIALOGUE_PARTY_PLANNER, "retry",
                      absl::StrCat("Running step ", s.step.id, " again (attempt ", attempt + 1,
                                   " of ", options_.step_retry.max_attempts, "): ", s.step.error)));
  {
    // The next attempt starts from the plan's copy: it counts this one.
    absl::MutexLock lock(&run.mu);
    PlanStep* shared = run.plan.FindStep(s.step.id);
    shared->attempts = s.step.attempts;
    shared->answers = s.step.answers;
  }
  llm::DefaultClock().SleepFor(wait, nullptr);
  return true;
}

bool PlanEngine::StartStep(Run& run, const std::string& step_id, StepRun& s) {
  {
    absl::MutexLock lock(&run.mu);
    s.step = *run.plan.FindStep(step_id);
    s.header = run.plan;
    s.header.steps.clear();
    for (const std::string& dep : s.step.depends_on) {
      const PlanStep* d = run.plan.FindStep(dep);
      s.inputs[dep] = {{"summary", d->result_summary}, {"result", d->result}};
    }
  }
  s.step.status = StepStatus::kRunning;
  s.step.attempts += 1;
  s.step.started_micros = clock_.NowMicros();
  s.step.finished_micros = 0;
  s.step.error.clear();
  s.step.assessment.reset();
  if (absl::Status stored = store_.UpdateStep(s.header, s.step); !stored.ok()) {
    run.StepNotStarted(step_id, stored);
    return false;
  }
  return true;
}

void PlanEngine::OpenDialogue(Run& run, StepRun& s) {
  const execpb::ConverseRequest assignment =
      Assignment(s.header, s.step, std::move(s.inputs), options_.max_turns);
  // Not cancelled from outside: a plan stops between steps (`cancelled`),
  // and a step's dialogue ends when the step does.
  const core::Identity who{s.header.tenant_id, s.header.user_id};
  const core::Call call{who, clock_.Now() + std::chrono::duration_cast<std::chrono::microseconds>(
                                                options_.step_timeout)};
  s.dialogue = executors_.Open(call);
  run.Emit(ExecutorMessage(s.header, s.step, pb::DIALOGUE_PARTY_PLANNER, "task_assignment",
                           assignment.task_assignment().task(), Dump(StepsToJson({s.step})[0])));
  s.result()->set_plan_id(s.header.id);
  s.result()->set_step_id(s.step.id);
  s.sent = s.dialogue->Send(assignment);
}

void PlanEngine::Converse(Run& run, StepRun& s) {
  while (s.sent) {
    std::optional<execpb::ConverseResponse> message = s.dialogue->Read();
    if (!message.has_value()) break;
    // The agent's model calls are the step's: recorded in its row (a step
    // run for no turn has none: its calls are counted, not stored).
    llm::UsageSink* const calls =
        s.usage != nullptr ? static_cast<llm::UsageSink*>(s.usage) : options_.usage_writer;
    if (calls != nullptr) {
      for (const auto& call : message->model_calls()) calls->Record(llm::FromProto(call));
    }
    if (!s.spawned) {
      s.spawned = true;
      s.step.dialogue_conversation_id = message->dialogue_conversation_id();
      run.Emit(ExecutorSpawned(s.header, s.step));
    }
    if (message->has_progress_update()) {
      run.Emit(ProgressMessage(s.header, s.step, message->progress_update()));
    } else if (message->has_partial_result()) {
      run.Emit(PartialResultMessage(s.header, s.step, message->partial_result()));
    } else if (message->has_question()) {
      OnQuestion(run, s, message->question());
    } else if (message->has_task_complete()) {
      s.Completed(message->task_complete());
    } else if (message->has_error()) {
      s.Failed(message->error());
    }
  }
}

void PlanEngine::OnQuestion(Run& run, StepRun& s, const execpb::Question& q) {
  const std::vector<std::string> options(q.options().begin(), q.options().end());
  run.Emit(ExecutorMessage(s.header, s.step, pb::DIALOGUE_PARTY_EXECUTOR, "question", q.text(),
                           Dump({{"question_id", q.question_id()}, {"options", options}})));
  if (s.escalated.has_value()) return;  // cancelled already; waiting for the end
  std::optional<std::string> reply;
  for (const StepAnswer& a : s.step.answers) {
    if (a.question == q.text()) reply = a.answer;
  }
  if (!reply.has_value()) {
    Plan snapshot;
    {
      absl::MutexLock lock(&run.mu);
      snapshot = run.plan;
    }
    QuestionAnswer answer =
        advisor_.AnswerQuestion(snapshot, s.step, q.text(), options, ModelDeadline(), s.usage);
    if (answer.answered) {
      reply = answer.answer;
      s.step.answers.push_back({q.text(), answer.answer, "planner"});
    } else {
      // Only the user can answer: the step stops and the plan waits.
      s.escalated = PendingQuestion{s.step.id, q.text(), options};
      execpb::ConverseRequest cancel;
      cancel.mutable_cancel()->set_reason(
          absl::StrCat("the question goes to the user: ", answer.reason));
      s.sent = s.dialogue->Send(cancel);
      return;
    }
  }
  execpb::ConverseRequest clarification;
  clarification.mutable_clarification()->set_question_id(q.question_id());
  clarification.mutable_clarification()->set_answer(*reply);
  run.Emit(ExecutorMessage(s.header, s.step, pb::DIALOGUE_PARTY_PLANNER, "clarification", *reply));
  s.sent = s.dialogue->Send(clarification);
}

void PlanEngine::EndStep(Run& run, StepRun& s) {
  absl::Status finished = s.finished;
  if (s.dialogue != nullptr) {
    finished = s.dialogue->Finish();
    s.dialogue.reset();
  }
  if (!s.ended) {
    s.step.status = StepStatus::kFailed;
    s.step.error = absl::StrCat("the executor's dialogue ended without a result: ",
                                finished.ok() ? "the stream closed" : finished.message());
    s.result()->set_error_code(pb::EXECUTOR_ERROR_CODE_INTERNAL);
    s.result()->set_summary(s.step.error);
  }
  if (s.escalated.has_value()) {
    s.step.status = StepStatus::kPending;
    s.step.error.clear();
    s.step.started_micros = 0;
  } else {
    s.step.finished_micros = clock_.NowMicros();
    run.AssessStep(s.header, s.step, s.report);
    run.Emit(std::move(s.result_event));
  }
  const absl::Status stored = store_.UpdateStep(s.header, s.step);
  if (stored.ok() && !s.escalated.has_value()) run.Emit(StepComplete(s.header, s.step));
  run.StepEnded(s.step, stored, s.escalated);
}

}  // namespace omniforge::orchestrator
