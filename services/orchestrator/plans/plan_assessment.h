// The evidence of a plan step, of a plan and of a turn's tool calls, for
// their assessment (assessment.h), read from what really exists: the
// step's status, error and result, what the executor agent said when its
// dialogue ended (its tool calls, status, confidence and limitations), the
// plan's requested outputs and priority entities, the question it waits
// on, each tool call's result (and what the executor said of it), and how
// the user's request was read.
//
// Pure functions: no I/O, thread-safe.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "omniforge/intent/v1/intent_service.pb.h"
#include "omniforge/orchestrator/v1/chat_service.pb.h"
#include "services/orchestrator/plans/assessment.h"
#include "services/orchestrator/plans/plan_model.h"

namespace omniforge::orchestrator {

// What an executor agent said when a step's dialogue ended: task_complete
// (its status, tool calls, confidence, limitations) or error (the partial
// results of its tool calls).
struct ExecutorReport {
  // It did only part of the task (TASK_STATUS_PARTIAL).
  bool partial = false;
  int tool_calls = 0;
  int failed_calls = 0;
  // Its confidence in the result, 0 to 1, when it said.
  std::optional<double> confidence;
  std::vector<std::string> limitations;
};

// How the user's request was read, when the plan's run knows it.
struct RequestClarity {
  std::optional<double> confidence;
  bool ambiguous = false;
};

// The intent service's confidence and ambiguity.
RequestClarity ClarityOf(const ::omniforge::intent::v1::IntentAnalysis& analysis);

// A finished step (completed, failed, or not run because of another step):
// its expected output (else its description), found when it completed with
// data (partial when the executor did only part of it); the plan's priority
// entities that the step's definition names, found when its result or
// summary names them too; its tool work, failed with the step's error when
// it did not complete; the request's clarity; the executor's limitations.
Evidence StepEvidence(const Plan& plan, const PlanStep& step, const ExecutorReport& report,
                      const RequestClarity& clarity);

// A plan's evidence, from its steps' (as assessed when they finished):
// each requested output is judged by the steps that mention it, or by all
// steps when none does (found when they completed with data, partial when
// only some did); without requested outputs, each step's own output. A
// priority entity is found when a completed step's result or summary names
// it. The tool work and limitations of every step that ran, labelled
// "step N"; the request read at its least sure; the question the plan
// waits on.
Evidence PlanEvidence(const Plan& plan);

// The assessment of the plan as it stands (PlanEvidence).
Assessment AssessPlan(const Plan& plan);

// True once a step of the plan ran (only such a plan is assessed).
bool PlanRan(const Plan& plan);

// One tool call of a turn (the model planner's, the local policy's), as
// its assessment reads it.
struct CallOutcome {
  std::string tool;
  bool failed = false;
  // What its result holds: nothing (failed, or empty), part of what was
  // asked (the executor said partial; a plan done with limitations), or it.
  Presence output = Presence::kFound;
  // Why it failed (or, for a plan, why it was blocked), in the result's
  // words, shortened; empty when it did not.
  std::string failure;
  // What the executor said of the result: its confidence, 0 to 1, and what
  // it could not do or check.
  std::optional<double> confidence;
  std::vector<std::string> limitations;
};

// A call's outcome read from its result (JSON text, as the executor or the
// plan engine gave it; `is_error` when the call failed): empty data
// (null, {}, [], "", or an executor result whose "data" is so) is missing;
// "status": "partial" is partial; "confidence" and "limitations" are the
// executor's; an agent_create_plan result is judged by its "assessment"
// (complete found, partial partial, blocked missing and failed; its
// reasons are the limitations). Never fails: a result that is not JSON is
// data.
CallOutcome ReadCallOutcome(const std::string& tool, const std::string& result_json, bool is_error);

// The evidence of tool calls: each call's result an output ("the result of
// list_runs"), its work labelled with its tool (failed with its failure,
// else as sure as the executor said), its limitations labelled too, and
// the request's clarity.
Evidence CallsEvidence(const std::vector<CallOutcome>& calls, const RequestClarity& clarity);

// The assessment as the public API shows it: score, verdict, reasons.
::omniforge::orchestrator::v1::Assessment ToProto(const Assessment& assessment);

}  // namespace omniforge::orchestrator
