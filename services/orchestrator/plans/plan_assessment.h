// The evidence of a plan step and of a plan, for their assessment
// (assessment.h), read from what really exists: the step's status, error
// and result, what the executor agent said when its dialogue ended (its
// tool calls, status, confidence and limitations), the plan's requested
// outputs and priority entities, the question it waits on, and how the
// user's request was read.
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

// The assessment as the public API shows it: score, verdict, reasons.
::omniforge::orchestrator::v1::Assessment ToProto(const Assessment& assessment);

}  // namespace omniforge::orchestrator
