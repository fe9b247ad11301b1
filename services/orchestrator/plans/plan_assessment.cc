#include "services/orchestrator/plans/plan_assessment.h"

#include <algorithm>
#include <cstddef>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "libs/core/text.h"

namespace omniforge::orchestrator {
namespace {

namespace pb = ::omniforge::orchestrator::v1;

// Names in reasons are cut beyond this.
constexpr size_t kMaxNameBytes = 200;

std::string Dump(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string Lower(const std::string& s) { return absl::AsciiStrToLower(s); }

// A result that holds something: not null and not empty.
bool HasData(const nlohmann::json& result) {
  if (result.is_null()) return false;
  if (result.is_object() || result.is_array() || result.is_string()) return !result.empty();
  return true;
}

// What the step produced, lower-cased: its summary and its result.
std::string ResultText(const PlanStep& step) {
  return Lower(absl::StrCat(step.result_summary, "\n", Dump(step.result)));
}

// What the step is for, lower-cased: its description, expected output,
// tools and planned calls.
std::string DefinitionText(const PlanStep& step) {
  std::string text = absl::StrCat(step.description, "\n", step.expected_output, "\n",
                                  absl::StrJoin(step.tools, " "));
  for (const PlannedCall& call : step.tool_calls) {
    absl::StrAppend(&text, "\n", call.tool, " ", Dump(call.arguments));
  }
  return Lower(text);
}

// True when `text` (lower-cased) names `name` as a whole.
bool Names(const std::string& text, const std::string& name) {
  const std::string needle = Lower(std::string(absl::StripAsciiWhitespace(name)));
  return !needle.empty() && text.find(needle) != std::string::npos;
}

// True when `text` (lower-cased) holds at least half of the words of
// `phrase` of 4 letters or more (all of its words when it has none such).
bool Mentions(const std::string& text, const std::string& phrase) {
  if (Names(text, phrase)) return true;
  std::vector<std::string> words;
  for (absl::string_view w : absl::StrSplit(
           Lower(phrase), absl::ByAnyChar(" \t\n.,;:!?()[]{}\"'/-"), absl::SkipEmpty())) {
    if (w.size() >= 4) words.emplace_back(w);
  }
  if (words.empty()) return false;
  size_t held = 0;
  for (const std::string& w : words) {
    if (text.find(w) != std::string::npos) ++held;
  }
  return 2 * held >= words.size();
}

std::string OutputName(const PlanStep& step) {
  return core::Shortened(step.expected_output.empty() ? step.description : step.expected_output,
                         kMaxNameBytes);
}

// How much of its own output a step holds: as assessed when it finished,
// else by its status alone (a step finished by a release before
// assessments is taken at its word).
Presence StepOutput(const PlanStep& step) {
  if (step.assessment.has_value() && !step.assessment->evidence.outputs.empty()) {
    return step.assessment->evidence.outputs.front().presence;
  }
  return step.status == StepStatus::kCompleted ? Presence::kFound : Presence::kMissing;
}

// A requested output: held by the steps that mention it (any of them), or
// by all steps when none does (all of them for found).
Presence RequestedOutput(const Plan& plan, const std::string& output) {
  std::vector<Presence> mentioned, all;
  for (const PlanStep& step : plan.steps) {
    const Presence held = StepOutput(step);
    all.push_back(held);
    if (Mentions(absl::StrCat(DefinitionText(step), "\n", ResultText(step)), output)) {
      mentioned.push_back(held);
    }
  }
  auto count = [](const std::vector<Presence>& of, Presence p) {
    return std::count(of.begin(), of.end(), p);
  };
  if (!mentioned.empty()) {
    if (count(mentioned, Presence::kFound) > 0) return Presence::kFound;
    return count(mentioned, Presence::kPartial) > 0 ? Presence::kPartial : Presence::kMissing;
  }
  if (!all.empty() && count(all, Presence::kFound) == static_cast<std::ptrdiff_t>(all.size())) {
    return Presence::kFound;
  }
  return count(all, Presence::kMissing) < static_cast<std::ptrdiff_t>(all.size())
             ? Presence::kPartial
             : Presence::kMissing;
}

// The step's label in a plan's reasons: "step 2", by its place in the plan
// (as the reply lists the steps).
std::string StepLabel(const Plan& plan, const PlanStep& step) {
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    if (plan.steps[i].id == step.id) return absl::StrCat("step ", i + 1);
  }
  return absl::StrCat("step ", step.id);
}

// The tool work of a step that ran, labelled for the plan.
void AddStepWork(const Plan& plan, const PlanStep& step, Evidence& out) {
  const std::string label = StepLabel(plan, step);
  if (step.assessment.has_value()) {
    for (ToolWork work : step.assessment->evidence.work) {
      work.label = work.label.empty() ? label : absl::StrCat(label, ", ", work.label);
      out.work.push_back(std::move(work));
    }
    for (const std::string& limitation : step.assessment->evidence.limitations) {
      out.limitations.push_back(absl::StrCat(label, ": ", limitation));
    }
    return;
  }
  if (step.status != StepStatus::kCompleted && step.status != StepStatus::kFailed) return;
  ToolWork work;
  work.label = label;
  if (step.status == StepStatus::kFailed) {
    work.failure = step.error.empty() ? "it failed" : step.error;
  }
  out.work.push_back(std::move(work));
}

// An executor's or a plan's result reads as its data; other results are
// data themselves.
const nlohmann::json& DataOf(const nlohmann::json& result) {
  if (result.is_object()) {
    if (auto it = result.find("data"); it != result.end() && result.contains("status")) return *it;
  }
  return result;
}

// Why a failed call failed: its "error" (or "message"), else its text.
std::string FailureOf(const nlohmann::json& result, const std::string& text) {
  if (result.is_object()) {
    for (const char* key : {"error", "message"}) {
      auto it = result.find(key);
      if (it != result.end() && it->is_string() && !it->get<std::string>().empty()) {
        return core::Shortened(it->get<std::string>(), kMaxNameBytes);
      }
    }
  }
  return core::Shortened(text.empty() ? "it failed" : text, kMaxNameBytes);
}

// A plan's result: found, partial or missing by its assessment's verdict;
// its reasons as the call's limitations.
void ReadPlanResult(const nlohmann::json& result, CallOutcome& out) {
  auto it = result.find("assessment");
  if (it == result.end()) return;
  const std::optional<Assessment> assessed = AssessmentFromJson(*it);
  if (!assessed.has_value()) return;
  out.output = assessed->verdict == Verdict::kComplete  ? Presence::kFound
               : assessed->verdict == Verdict::kPartial ? Presence::kPartial
                                                        : Presence::kMissing;
  if (assessed->verdict == Verdict::kBlocked) {
    out.failure = absl::StrCat("the plan was blocked (score ", assessed->score, ")");
  }
  out.limitations = assessed->reasons;
}

}  // namespace

CallOutcome ReadCallOutcome(const std::string& tool, const std::string& result_json,
                            bool is_error) {
  CallOutcome out;
  out.tool = tool;
  nlohmann::json result = nlohmann::json::parse(result_json, nullptr, /*allow_exceptions=*/false);
  if (result.is_discarded()) result = result_json;
  if (is_error) {
    out.failed = true;
    out.output = Presence::kMissing;
    out.failure = FailureOf(result, result_json);
    return out;
  }
  if (!HasData(DataOf(result))) out.output = Presence::kMissing;
  if (!result.is_object()) return out;
  if (result.value("status", "") == "partial" && out.output == Presence::kFound) {
    out.output = Presence::kPartial;
  }
  if (auto it = result.find("confidence"); it != result.end() && it->is_number()) {
    out.confidence = std::clamp(it->get<double>(), 0.0, 1.0);
  }
  if (auto it = result.find("limitations"); it != result.end() && it->is_array()) {
    for (const nlohmann::json& l : *it) {
      if (l.is_string()) out.limitations.push_back(core::Shortened(l.get<std::string>(), 300));
    }
  }
  ReadPlanResult(result, out);
  return out;
}

Evidence CallsEvidence(const std::vector<CallOutcome>& calls, const RequestClarity& clarity) {
  Evidence e;
  for (const CallOutcome& call : calls) {
    e.outputs.push_back({"the result of " + call.tool, call.output});
    ToolWork work;
    work.label = call.tool;
    work.calls = 1;
    work.failure = call.failure;
    if (call.failed && work.failure.empty()) work.failure = "it failed";
    work.confidence = call.confidence;
    e.work.push_back(std::move(work));
    for (const std::string& limitation : call.limitations) {
      e.limitations.push_back(absl::StrCat(call.tool, ": ", limitation));
    }
  }
  e.intent_confidence = clarity.confidence;
  e.ambiguous = clarity.ambiguous;
  return e;
}

RequestClarity ClarityOf(const ::omniforge::intent::v1::IntentAnalysis& analysis) {
  RequestClarity clarity;
  if (analysis.confidence() > 0) clarity.confidence = analysis.confidence();
  clarity.ambiguous = analysis.is_ambiguous();
  return clarity;
}

Evidence StepEvidence(const Plan& plan, const PlanStep& step, const ExecutorReport& report,
                      const RequestClarity& clarity) {
  Evidence e;
  const bool completed = step.status == StepStatus::kCompleted;
  Presence output = Presence::kMissing;
  if (completed && HasData(step.result))
    output = report.partial ? Presence::kPartial : Presence::kFound;
  e.outputs.push_back({OutputName(step), output});

  const std::string definition = DefinitionText(step);
  const std::string produced = ResultText(step);
  for (const std::string& entity : plan.priority_entities) {
    if (!Names(definition, entity)) continue;
    e.entities.push_back(
        {entity, completed && Names(produced, entity) ? Presence::kFound : Presence::kMissing});
  }

  ToolWork work;
  work.calls = report.tool_calls;
  work.failed_calls = report.failed_calls;
  work.confidence = report.confidence;
  if (!completed) work.failure = step.error.empty() ? "the step did not complete" : step.error;
  e.work.push_back(std::move(work));

  e.intent_confidence = clarity.confidence;
  e.ambiguous = clarity.ambiguous;
  e.limitations = report.limitations;
  return e;
}

Evidence PlanEvidence(const Plan& plan) {
  Evidence e;
  if (!plan.requested_outputs.empty()) {
    for (const std::string& output : plan.requested_outputs) {
      e.outputs.push_back({core::Shortened(output, kMaxNameBytes), RequestedOutput(plan, output)});
    }
  } else {
    for (const PlanStep& step : plan.steps)
      e.outputs.push_back({OutputName(step), StepOutput(step)});
  }

  std::string produced;
  for (const PlanStep& step : plan.steps) {
    if (step.status == StepStatus::kCompleted) absl::StrAppend(&produced, ResultText(step), "\n");
  }
  for (const std::string& entity : plan.priority_entities) {
    e.entities.push_back({entity, Names(produced, entity) ? Presence::kFound : Presence::kMissing});
  }

  for (const PlanStep& step : plan.steps) {
    if (step.attempts > 0) AddStepWork(plan, step, e);
    if (!step.assessment.has_value()) continue;
    const Evidence& s = step.assessment->evidence;
    if (s.intent_confidence.has_value()) {
      e.intent_confidence = std::min(e.intent_confidence.value_or(1.0), *s.intent_confidence);
    }
    e.ambiguous = e.ambiguous || s.ambiguous;
  }
  if (plan.pending_question.has_value()) {
    e.open_questions.push_back(plan.pending_question->question);
  }
  return e;
}

Assessment AssessPlan(const Plan& plan) { return Assess(PlanEvidence(plan)); }

bool PlanRan(const Plan& plan) {
  for (const PlanStep& step : plan.steps) {
    if (step.attempts > 0) return true;
  }
  return false;
}

pb::Assessment ToProto(const Assessment& assessment) {
  pb::Assessment out;
  out.set_score(assessment.score);
  switch (assessment.verdict) {
    case Verdict::kComplete:
      out.set_verdict(pb::ASSESSMENT_VERDICT_COMPLETE);
      break;
    case Verdict::kPartial:
      out.set_verdict(pb::ASSESSMENT_VERDICT_PARTIAL);
      break;
    case Verdict::kBlocked:
      out.set_verdict(pb::ASSESSMENT_VERDICT_BLOCKED);
      break;
  }
  for (const std::string& reason : assessment.reasons) out.add_reasons(reason);
  return out;
}

}  // namespace omniforge::orchestrator
