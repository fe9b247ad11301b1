// The plan engine: what `agent_create_plan` does, and everything after.
//
// CreatePlan makes the steps (PlanGenerator), stores the plan and, by its
// execution mode, runs it (auto_execute), stores it for the user's review
// (draft_only: pending_review) or has the reviewer judge it first
// (agent_review: approved runs it, rejected drops it, needs_changes revises
// it once with the notes and asks again; a second needs_changes leaves it to
// the user). The user's review of a draft arrives as Approve, Revise or
// Reject.
//
// Running a plan is a scheduler over the steps' dependencies: every step
// whose dependencies completed starts, up to max_parallel_steps at once,
// each as one dialogue with an executor agent (Converse): the assignment
// (the step, the allowed tools, whether writes are approved, the earlier
// results, an idempotency key made of plan and step), then its progress,
// partial results and questions. A question the planner can answer
// (PlanAdvisor, operation executor_clarification) is answered; any other
// goes to the user and the plan waits (waiting_on_user) until
// AnswerQuestion, which re-runs the step with that answer. A failing step
// fails the steps that depend on it and the plan (unless the plan is
// re-planned: RevisePlan); steps not started yet are skipped; the user may
// then have the step run again or left out (RecoverStep). Every step's progress is stored as it
// happens, so Execute on a plan left running by a crashed orchestrator resumes it: finished steps
// keep their results and are not run again, and an interrupted step runs
// again with the same idempotency key, so its tool calls that already ran
// are not repeated.
//
// Writes pass the approval gate (approval_gate.h): a plan whose steps may
// call a tool the policy does not run unasked (a WRITE or HIGH tool, by
// default) never runs before the user approves it as previewed. Such a plan
// waits for review (pending_review, with a PreviewEvent listing each such
// step's tool and its planned arguments or the constraint an executor agent
// works within) whatever its mode: auto_execute behaves as draft_only, and
// an agent_review verdict of "approved" does not replace the user's
// approval. Only Approve with the digest of the steps the user saw sets
// writes_approved; its steps then run with approved_targets_only, so an
// executor agent may call only the step's tools and the targets its planned
// calls name. A plan naming a tool the policy denies is not made. A plan
// whose steps only read runs at once. The engine never includes gRPC:
// executor dialogues come from a StepExecutors.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "libs/core/clock.h"
#include "libs/core/identity.h"
#include "libs/llm/retry.h"
#include "libs/llm/usage.h"
#include "omniforge/orchestrator/v1/chat_service.pb.h"
#include "services/orchestrator/approvals/approval_gate.h"
#include "services/orchestrator/downstream/plan_executor.h"
#include "services/orchestrator/plans/plan_advisor.h"
#include "services/orchestrator/plans/plan_assessment.h"
#include "services/orchestrator/plans/plan_generator.h"
#include "services/orchestrator/plans/plan_model.h"
#include "services/orchestrator/plans/plan_store.h"
#include "services/orchestrator/usage/usage_attribution.h"

namespace omniforge::orchestrator {

struct PlanEngineOptions {
  // Steps running at once within one plan.
  int max_parallel_steps = 3;
  // Turns of one executor dialogue (the executor's own cap, sent along).
  int max_turns = 10;
  // How long one step's dialogue may take.
  std::chrono::milliseconds step_timeout{120000};
  // A step that failed for a temporary reason (the executor said it may
  // succeed when tried again, or the dialogue broke off UNAVAILABLE) runs
  // again from its start, waiting between attempts.
  llm::RetryPolicy step_retry{
      .max_attempts = 3, .initial_backoff_micros = 200'000, .max_backoff_micros = 5'000'000};
  // How long one model call (generation, review, an answer) may take.
  std::chrono::milliseconds model_timeout{60000};
  // agent_review: how many times a reviewer's needs_changes goes back to
  // the planner's model for a revised plan, each reviewed again; after
  // that (or 0) the plan waits for the user's review with the notes.
  int max_review_rounds = 2;
  // Where the model calls made for a step run in a turn are stored, in the
  // step's row (orchestration.llm_turn_usage): an executor's agent's and
  // the answers to its questions; null: not stored. Must outlive the engine.
  ScopeUsageWriter* usage_writer = nullptr;
  // What runs unasked, and how long a plan's preview can be approved.
  ApprovalPolicy approvals;
  // Time for deadlines, expiry and the steps' start and end (the turn's
  // clock when the engine runs plans in turns); null: the system clock.
  // Must outlive the engine.
  const core::Clock* clock = nullptr;
};

// Receives a plan's events (plan_created, plan_ready_for_review,
// plan_review, step_start, step_complete, executor_spawned,
// executor_message, executor_result) as ChatEvents without seq. Calls come
// from the engine's threads one at a time, never concurrently.
class PlanEventSink {
 public:
  virtual ~PlanEventSink() = default;
  virtual void Emit(::omniforge::orchestrator::v1::ChatEvent event) = 0;
};

// Where a call left the plan.
struct PlanOutcome {
  Plan plan;
  // For the planner's session: the tool result of agent_create_plan (or
  // of the review turn), JSON text: plan_id, status, objective, summary,
  // every step's status, summary and result (long results shortened), the
  // question when the plan waits for the user, the review when there was
  // one.
  std::string tool_result_json;
  // Set when the plan waits for the user's approval of its writes: the
  // digest of the steps previewed and when the preview expires.
  std::string digest;
  int64_t expires_at_micros = 0;
};

class PlanEngine final {
 public:
  // Everything given must outlive the engine. Thread-safe: plans run
  // concurrently (one call per plan at a time).
  PlanEngine(PlanStore& store, StepExecutors& executors, const PlanGenerator& generator,
             const PlanAdvisor& advisor, PlanEngineOptions options = {});

  // agent_create_plan for `who` in `conversation_id` (may be empty). Errors,
  // nothing stored: the generator's (the model failing, a plan that broke a
  // rule twice, no template fits); UNAVAILABLE when the plan cannot be
  // stored. An agent_review plan without a reviewer model is an error too
  // (FAILED_PRECONDITION), stored as failed. Everything after the plan is
  // stored is in the outcome (a failed step: status failed).
  absl::StatusOr<PlanOutcome> CreatePlan(const core::Identity& who,
                                         const std::string& conversation_id,
                                         const PlanRequest& request, const PlanContext& context,
                                         PlanEventSink& sink,
                                         const std::function<bool()>& cancelled = nullptr);

  // Approve, Revise, Reject, Execute and AnswerQuestion act on a plan one
  // call at a time: a second call on a plan another one is still acting on
  // (in this process) is ABORTED, so a plan never runs twice at once.

  // The user approved a pending_review plan ("looks good, run it"): it runs.
  // With `digest` (the preview's), only the steps the user saw run:
  // FAILED_PRECONDITION when the plan changed since. FAILED_PRECONDITION for
  // a plan in another status; NOT_FOUND for a plan that is not the caller's.
  absl::StatusOr<PlanOutcome> Approve(const core::Identity& who, const std::string& plan_id,
                                      PlanEventSink& sink,
                                      const std::function<bool()>& cancelled = nullptr,
                                      const std::string& digest = "", ModelUsage* usage = nullptr);

  // The preview of a pending_review plan again, with a fresh expiry (its
  // last one expired). FAILED_PRECONDITION for a plan in another status.
  absl::StatusOr<PlanOutcome> Preview(const core::Identity& who, const std::string& plan_id,
                                      const PlanContext& context, PlanEventSink& sink);

  // The user asked for changes to a pending_review plan: new steps from the
  // generator with `feedback`, stored, and the plan is ready for review
  // again. Errors as Approve, and the generator's.
  absl::StatusOr<PlanOutcome> Revise(const core::Identity& who, const std::string& plan_id,
                                     const std::string& feedback, const PlanContext& context,
                                     PlanEventSink& sink);

  // The user dropped a pending_review (or waiting_on_user) plan: rejected,
  // nothing runs. Errors as Approve.
  absl::StatusOr<PlanOutcome> Reject(const core::Identity& who, const std::string& plan_id,
                                     const std::string& reason);

  // Runs an approved plan, or resumes one left running (after a restart).
  // `cancelled`, polled between steps, stops new steps from starting: the
  // plan stays running and a later Execute resumes it. Errors as Approve;
  // UNAVAILABLE when progress cannot be stored. `usage`: the turn's model
  // usage (also for Approve and AnswerQuestion, and PlanContext::usage for
  // the others): each step run stores its model calls in a row of its own
  // with the turn's attribution; null: the steps' calls are not stored.
  absl::StatusOr<PlanOutcome> Execute(const core::Identity& who, const std::string& plan_id,
                                      PlanEventSink& sink,
                                      const std::function<bool()>& cancelled = nullptr,
                                      ModelUsage* usage = nullptr);

  // The user's answer to the question a waiting_on_user plan asked: stored
  // with the step, which runs again and gets this answer when it asks the
  // same question; then the plan goes on. INVALID_ARGUMENT for an empty
  // answer; errors otherwise as Approve.
  absl::StatusOr<PlanOutcome> AnswerQuestion(const core::Identity& who, const std::string& plan_id,
                                             const std::string& answer, PlanEventSink& sink,
                                             const std::function<bool()>& cancelled = nullptr,
                                             ModelUsage* usage = nullptr);

  // The user's answer to a plan that failed at `step_id` (the step failed,
  // and the plan could not get past it): with `skip` false the step runs
  // again, with the steps that did not run; with `skip` true it is left out
  // (skipped at the user's word, LeftOutByUser: the steps that depended on
  // it no longer do) and the rest runs. Steps that completed keep their
  // results. FAILED_PRECONDITION for a plan that is not failed or a step
  // that did not fail; errors otherwise as Execute.
  absl::StatusOr<PlanOutcome> RecoverStep(const core::Identity& who, const std::string& plan_id,
                                          const std::string& step_id, bool skip,
                                          PlanEventSink& sink,
                                          const std::function<bool()>& cancelled = nullptr,
                                          ModelUsage* usage = nullptr);

  // The newest plan of `who` in `conversation_id` left approved or running
  // by a turn that ended first (a crashed orchestrator), if any.
  absl::StatusOr<std::optional<std::string>> LatestUnfinished(const core::Identity& who,
                                                              const std::string& conversation_id) {
    return store_.LatestUnfinished(who, conversation_id);
  }

  // The plan as stored. NOT_FOUND for a plan that is not the caller's.
  absl::StatusOr<Plan> Get(const core::Identity& who, const std::string& plan_id) {
    return store_.Get(who, plan_id);
  }

  // Removes the plans of a deleted conversation (PlanStore::Forget).
  absl::StatusOr<int> Forget(const core::Identity& who, const std::string& conversation_id) {
    return store_.Forget(who, conversation_id);
  }

 private:
  struct Run;
  struct StepRun;
  class Claim;

  // Claims `plan_id` for the calling operation (`claim` holds it until the
  // operation returns) and reads the plan.
  absl::StatusOr<Plan> ClaimAndGet(const core::Identity& who, const std::string& plan_id,
                                   std::unique_ptr<Claim>& claim);
  absl::StatusOr<PlanOutcome> ReviewAndRun(Plan plan, const PlanRequest& request,
                                           const PlanContext& context, PlanEventSink& sink,
                                           const std::function<bool()>& cancelled);
  // A revision of `plan` by the planner's model with the reviewer's
  // `critiques` (oldest first), stored in place of its steps: nullopt. When
  // it cannot be made (the model failed, the policy refuses a tool of it)
  // the plan is stored as failed and that is the outcome. The store's error
  // when the plan cannot be stored.
  absl::StatusOr<std::optional<PlanOutcome>> ReviseForReviewer(
      Plan& plan, const PlanRequest& request, const PlanContext& context,
      const std::vector<std::string>& critiques);
  // `made_in`: the context the plan was made in, when it runs in the same
  // call (its request's clarity goes into the assessments, and a blocked
  // plan can be re-planned); null for a plan the user reviewed.
  absl::StatusOr<PlanOutcome> RunPlan(Plan plan, PlanEventSink& sink,
                                      const std::function<bool()>& cancelled,
                                      const ModelUsage* usage,
                                      const PlanContext* made_in = nullptr);
  // Once no step runs after round `iteration`: when a step failed and the
  // decision on its assessment is REVISE_PLAN, the generator's model
  // re-plans what did not complete with the assessment in its context, and
  // the new steps replace those (stored; true: run them). False when the
  // plan goes no further: nothing failed, no model, the decision is EXIT,
  // or the new steps cannot run unasked or be stored (run.decision says
  // why, for the summary).
  bool RevisePlan(Run& run, const PlanContext& context, int iteration,
                  const std::function<bool()>& cancelled);
  // Starts the steps as their dependencies complete, each on its own
  // thread, until none runs; returns when every thread has ended.
  void RunSteps(Run& run, const std::function<bool()>& cancelled);
  // Fails (or skips) every pending step that depends on a step that failed
  // (or did not run), transitively. Called with run.mu held; it is let go
  // while a step is stored.
  // (Run is defined in the .cc file: the definitions carry the lock
  // annotations.)
  void FailDependents(Run& run);
  // Starts the pending steps whose dependencies completed, up to
  // max_parallel_steps at once. Called with run.mu held.
  void StartReadySteps(Run& run, std::vector<std::thread>& threads);
  // Once no step runs: the plan's status and summary, stored; the error
  // when the run's progress could not be stored.
  absl::StatusOr<PlanOutcome> EndRun(Run& run);
  // Emits the review and preview events of `plan`, stored as
  // pending_review; the outcome carries the preview's digest and expiry.
  PlanOutcome ShowForReview(const Plan& plan, const PlanContext& context,
                            PlanEventSink& sink) const;
  // One step's dialogue, on its own thread.
  void RunStep(Run& run, const std::string& step_id);
  // Takes the step's copy and stores it as running; false (the run told)
  // when that cannot be stored.
  bool StartStep(Run& run, const std::string& step_id, StepRun& s);
  // Opens the step's dialogue and sends the assignment.
  void OpenDialogue(Run& run, StepRun& s);
  // Reads the executor's messages until the dialogue ends.
  void Converse(Run& run, StepRun& s);
  // The executor asked: an answer the step has, the planner's, or none (the
  // question goes to the user and the dialogue is cancelled).
  void OnQuestion(Run& run, StepRun& s, const execpb::Question& q);
  // Closes the dialogue, emits the result and stores the step; a step whose
  // question went to the user is pending again.
  void EndStep(Run& run, StepRun& s);
  // A step that failed for a temporary reason with attempts left: its
  // dialogue closed, the retry told, the wait waited; true when it is to
  // run again.
  bool RetryStep(Run& run, StepRun& s, int attempt);
  core::TimePoint ModelDeadline() const;

  PlanStore& store_;
  StepExecutors& executors_;
  const PlanGenerator& generator_;
  const PlanAdvisor& advisor_;
  const PlanEngineOptions options_;
  const core::Clock& clock_;

  absl::Mutex claims_mu_;
  std::set<std::string> claimed_ ABSL_GUARDED_BY(claims_mu_);  // plans a call acts on
};

// The tool result JSON of a plan (exposed for tests and for the turn).
std::string PlanToolResult(const Plan& plan);

}  // namespace omniforge::orchestrator
