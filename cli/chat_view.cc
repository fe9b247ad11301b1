#include "cli/chat_view.h"

#include <google/protobuf/util/json_util.h>

#include <map>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "libs/core/text.h"
#include "services/intent/entities/entities.h"

namespace omniforge::cli {
namespace {

namespace pb = ::omniforge::orchestrator::v1;
namespace ipb = ::omniforge::orchestrator::v1;
namespace epb = ::omniforge::orchestrator::v1;

constexpr char kDim[] = "\033[2m";
constexpr char kBold[] = "\033[1m";
constexpr char kRed[] = "\033[31m";
constexpr char kGreen[] = "\033[32m";
constexpr char kYellow[] = "\033[33m";
constexpr char kCyan[] = "\033[36m";
constexpr char kReset[] = "\033[0m";
constexpr char kClearLine[] = "\r\033[K";
constexpr const char* kSpinnerFrames[] = {"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"};

// Tool arguments and results are shown cut to this many bytes.
constexpr size_t kArgumentsShown = 200;
constexpr size_t kResultShown = 160;

// "AGENT_STATE_EXECUTING_TOOL" -> "executing tool".
std::string Words(const std::string& enum_name, const std::string& prefix) {
  std::string name = enum_name.starts_with(prefix) ? enum_name.substr(prefix.size()) : enum_name;
  return absl::StrReplaceAll(absl::AsciiStrToLower(name), {{"_", " "}});
}

// One line of JSON (results may hold newlines).
std::string OneLine(const std::string& text) {
  return absl::StrReplaceAll(text, {{"\r", " "}, {"\n", " "}});
}

std::string Plural(int64_t n, const std::string& one, const std::string& many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

// The event as one line of JSON.
std::string EventJson(const pb::ChatEvent& event) {
  std::string json;
  google::protobuf::util::JsonPrintOptions print;
  print.preserve_proto_field_names = true;
  (void)google::protobuf::util::MessageToJsonString(event, &json, print);
  return json;
}

std::string IntentLine(const ipb::IntentAnalysis& a) {
  std::string line =
      "· understood: " + Words(ipb::ActionType_Name(a.action_type()), "ACTION_TYPE_") + " (" +
      std::to_string(static_cast<int>(a.confidence() * 100)) + "%)";
  for (const auto& [key, value] :
       std::map<std::string, std::string>(a.entities().begin(), a.entities().end())) {
    // What the action acts on, for a caller with no model of its own: the
    // draft and the tool calls that follow show it.
    if (key == intent::kTopicEntity || key == intent::kOperationEntity ||
        key == intent::kSmallTalkEntity || key == intent::kPurposeEntity ||
        key == intent::kSuggestedNameEntity) {
      continue;
    }
    absl::StrAppend(&line, " ", key, "=", value);
  }
  return line;
}

std::string ToolCallLine(const pb::ToolCallEvent& call) {
  std::string line = "→ " + call.tool_name() + " " +
                     core::Shortened(OneLine(call.arguments_json()), kArgumentsShown);
  if (call.risk() != epb::TOOL_RISK_UNSPECIFIED) {
    line += "  (" + Words(epb::ToolRisk_Name(call.risk()), "TOOL_RISK_") + ")";
  }
  return line;
}

std::string ToolResultLine(const pb::ToolResultEvent& result) {
  return "← " + result.tool_name() + (result.is_error() ? " failed" : " ok") + " (" +
         std::to_string(static_cast<int>(result.duration_ms())) +
         " ms): " + core::Shortened(OneLine(result.result_json()), kResultShown);
}

std::string ExecutorMessageLine(const pb::ExecutorMessageEvent& m) {
  const bool from_planner = m.sender() == pb::DIALOGUE_PARTY_PLANNER;
  return std::string("    ") + (from_planner ? "planner → executor" : "executor → planner") + " (" +
         m.kind() + "): " + core::Shortened(OneLine(m.text()), kResultShown);
}

std::string ExecutorResultLine(const pb::ExecutorResultEvent& r) {
  return "· executor result for step " + r.step_id() + ": " +
         Words(epb::TaskStatus_Name(r.status()), "TASK_STATUS_") +
         (r.summary().empty() ? "" : " — " + r.summary());
}

std::string ErrorLine(const pb::ErrorEvent& error) {
  return "! " + error.message() + " (" +
         Words(pb::ChatErrorCode_Name(error.code()), "CHAT_ERROR_CODE_") +
         (error.fatal() ? ", the turn stopped)" : ")");
}

// What the turn knows of the workspace: the screen, the agents, the tools.
std::string OntologyLine(const pb::OntologyLoadedEvent& o) {
  std::string line = "· context: " + Words(pb::ContextType_Name(o.context_type()), "CONTEXT_TYPE_");
  if (!o.entity_id().empty()) absl::StrAppend(&line, " ", o.entity_id());
  absl::StrAppend(&line, ", ",
                  o.agents_listed() ? Plural(o.agent_names_size(), "agent", "agents")
                                    : std::string("agents not listed"),
                  ", ", Plural(o.tool_names_size(), "tool", "tools"));
  return line;
}

// Where the conversation's previous turn left off.
std::string LastTurnLine(const pb::LastTurnContextEvent& last) {
  std::string line =
      "· last turn: " + Words(pb::ActionType_Name(last.action_type()), "ACTION_TYPE_") + ", " +
      Words(pb::FlowStatus_Name(last.flow_status()), "FLOW_STATUS_");
  if (last.pending_actions() > 0) {
    absl::StrAppend(&line, ", ", Plural(last.pending_actions(), "action", "actions"),
                    " waiting for approval");
  }
  if (!last.plan_id().empty()) {
    absl::StrAppend(&line, ", plan ",
                    Words(pb::PlanStatus_Name(last.plan_status()), "PLAN_STATUS_"));
  }
  return line;
}

// An assessment in words: "partial, 72/100", then its reasons.
std::string AssessmentWords(const pb::Assessment& a) {
  std::string words = Words(pb::AssessmentVerdict_Name(a.verdict()), "ASSESSMENT_VERDICT_") + ", " +
                      std::to_string(a.score()) + "/100";
  for (int i = 0; i < a.reasons_size(); ++i) words += (i == 0 ? ": " : "; ") + a.reasons(i);
  return words;
}

// How long the turn took and what it called.
std::string DoneLine(const pb::DoneEvent& done) {
  const pb::TurnUsage& usage = done.usage();
  std::string line = "· done in " + std::to_string(static_cast<int>(usage.duration_ms())) +
                     " ms, " + Plural(usage.tool_calls(), "tool call", "tool calls");
  if (usage.llm_calls() > 0) {
    line += ", " + Plural(usage.llm_calls(), "model call", "model calls") + " (" +
            std::to_string(usage.prompt_tokens() + usage.completion_tokens()) + " tokens)";
  }
  // A turn that waits for the user is judged once it is done.
  if (!done.is_final()) {
    line += "; waiting for your answer";
  } else if (done.has_assessment()) {
    line += "; assessed " + AssessmentWords(done.assessment());
  }
  return line;
}

}  // namespace

ChatOutput ChooseChatOutput(bool json, bool stdout_is_terminal, const char* no_color) {
  if (json) return ChatOutput::kJson;
  if (stdout_is_terminal && no_color == nullptr) return ChatOutput::kTerminal;
  return ChatOutput::kPlain;
}

std::string ChatView::Styled(const std::string& style, const std::string& text) const {
  if (mode_ != ChatOutput::kTerminal || style.empty()) return text;
  return style + text + kReset;
}

void ChatView::ClearSpinner() {
  if (!spinner_drawn_) return;
  out_ << kClearLine;
  spinner_drawn_ = false;
}

void ChatView::DrawSpinner() {
  if (mode_ != ChatOutput::kTerminal || spinner_label_.empty() || text_open_) return;
  out_ << kClearLine << kCyan << kSpinnerFrames[frame_ % std::size(kSpinnerFrames)] << kReset << " "
       << Styled(kDim, spinner_label_) << std::flush;
  spinner_drawn_ = true;
}

void ChatView::CloseText() {
  if (!text_open_) return;
  out_ << "\n";
  text_open_ = false;
}

// A whole line, below which the spinner (if on) is drawn again.
void ChatView::Line(const std::string& style, const std::string& text) {
  CloseText();
  ClearSpinner();
  out_ << Styled(style, text) << "\n";
  DrawSpinner();
  out_ << std::flush;
}

void ChatView::ShowPreview(const pb::PreviewEvent& p) {
  const std::string risk = Words(epb::ToolRisk_Name(p.risk()), "TOOL_RISK_");
  Line(std::string(kBold) + kYellow,
       "⚠ waiting for your approval: " + (p.summary().empty() ? p.tool_name() : p.summary()));
  Line(kYellow, "    action:   " + p.tool_name() + " " +
                    core::Shortened(OneLine(p.arguments_json()), kArgumentsShown));
  if (!p.affected().empty()) {
    Line(kYellow, "    affects:  " + absl::StrJoin(p.affected(), ", "));
  }
  for (const pb::PreviewStep& step : p.steps()) {
    Line(kYellow, "    step " + step.step_id() + ": " + step.tool_name() + " " +
                      (step.arguments_json().empty()
                           ? "(" + step.constraint() + ")"
                           : core::Shortened(OneLine(step.arguments_json()), kArgumentsShown)));
  }
  Line(kYellow,
       "    risk:     " + risk +
           (p.risk_factors().empty() ? "" : " — " + absl::StrJoin(p.risk_factors(), "; ")));
  Line(kDim, R"(    reply "yes" to go ahead, "cancel" to drop it, or say what to change)");
  if (!p.action_id().empty()) {
    Line(kDim, "    or: omniforge chat --conversation <id> --approve " + p.action_id() +
                   "  (or --reject)");
  }
}

void ChatView::ShowPlan(const std::string& heading, const pb::Plan& plan) {
  Line(kBold, heading + ": " + plan.objective() + " (" +
                  Words(pb::ExecutionMode_Name(plan.execution_mode()), "EXECUTION_MODE_") + ", " +
                  Plural(plan.steps_size(), "step", "steps") + ")");
  int number = 0;
  for (const pb::PlanStep& step : plan.steps()) {
    std::string line = "    " + std::to_string(++number) + ". " + step.description();
    if (!step.tools().empty()) line += " [" + absl::StrJoin(step.tools(), ", ") + "]";
    if (!step.depends_on().empty()) line += " after " + absl::StrJoin(step.depends_on(), ", ");
    Line("", line);
  }
}

void ChatView::ShowSession(const pb::SessionEvent& s) {
  if (s.conversation_created()) Line(kDim, "· conversation " + s.conversation_id());
  if (s.replayed()) Line(kDim, "· this turn ran before: its stored answer follows");
  if (!s.suspended_flow_id().empty()) {
    Line(kDim, "· the request still running is on hold while this one is answered");
  }
}

void ChatView::ShowAgentState(const pb::AgentStateEvent& state) {
  std::string label = Words(pb::AgentState_Name(state.state()), "AGENT_STATE_");
  if (!state.details().empty()) label += ": " + state.details();
  if (mode_ == ChatOutput::kTerminal) {
    CloseText();
    ClearSpinner();
    spinner_label_ = label;
    DrawSpinner();
  } else {
    Line("", "· " + label);
  }
}

void ChatView::ShowText(const std::string& delta, bool restart) {
  ClearSpinner();
  spinner_label_.clear();
  // The model's answer broke off and is being given again: what was shown
  // stays on the screen, marked as withdrawn.
  if (restart && text_open_) Line(kDim, "  (the answer broke off; here it is again)");
  if (!text_open_) {
    out_ << Styled(kBold, "omniforge:") << " ";
    text_open_ = true;
  }
  out_ << delta << std::flush;
}

void ChatView::ShowPlanReview(const pb::PlanReviewEvent& review) {
  const pb::ReviewVerdict verdict = review.verdict();
  Line(verdict == pb::REVIEW_VERDICT_APPROVED   ? kGreen
       : verdict == pb::REVIEW_VERDICT_REJECTED ? kRed
                                                : kYellow,
       "· reviewer: " + Words(pb::ReviewVerdict_Name(verdict), "REVIEW_VERDICT_") +
           (review.notes().empty() ? "" : " — " + review.notes()));
}

void ChatView::ShowStepComplete(const pb::StepCompleteEvent& step) {
  const bool ok = step.status() == pb::STEP_STATUS_COMPLETED;
  Line(ok ? kGreen : kRed,
       std::string(ok ? "✓" : "✗") + " step " + step.step_id() + " " +
           Words(pb::StepStatus_Name(step.status()), "STEP_STATUS_") +
           (step.summary().empty() ? "" : ": " + step.summary()) +
           (step.has_assessment() ? " (" + AssessmentWords(step.assessment()) + ")" : ""));
}

void ChatView::Show(const pb::ChatEvent& event) {
  absl::MutexLock lock(&mu_);
  if (mode_ == ChatOutput::kJson) {
    out_ << EventJson(event) << "\n" << std::flush;
    return;
  }
  switch (event.event_case()) {
    case pb::ChatEvent::kSession:
      ShowSession(event.session());
      break;
    case pb::ChatEvent::kAgentState:
      ShowAgentState(event.agent_state());
      break;
    case pb::ChatEvent::kIntent:
      Line(kDim, IntentLine(event.intent().analysis()));
      break;
    case pb::ChatEvent::kToolCall:
      Line(kCyan, ToolCallLine(event.tool_call()));
      break;
    case pb::ChatEvent::kToolResult:
      Line(event.tool_result().is_error() ? kRed : kCyan, ToolResultLine(event.tool_result()));
      break;
    case pb::ChatEvent::kText:
      ShowText(event.text().delta(), event.text().restart());
      break;
    case pb::ChatEvent::kPreview:
      ShowPreview(event.preview());
      break;
    case pb::ChatEvent::kPlanCreated:
      ShowPlan("plan", event.plan_created().plan());
      break;
    case pb::ChatEvent::kPlanReadyForReview:
      ShowPlan("plan waiting for your review", event.plan_ready_for_review().plan());
      Line(kDim, "    reply \"yes\" to run it, or say what to change");
      break;
    case pb::ChatEvent::kPlanReview:
      ShowPlanReview(event.plan_review());
      break;
    case pb::ChatEvent::kStepStart:
      Line("", "▸ step " + event.step_start().step_id() + ": " + event.step_start().description());
      break;
    case pb::ChatEvent::kStepComplete:
      ShowStepComplete(event.step_complete());
      break;
    case pb::ChatEvent::kExecutorSpawned:
      Line(kDim, "· an executor agent takes step " + event.executor_spawned().step_id());
      break;
    case pb::ChatEvent::kExecutorMessage:
      Line(kDim, ExecutorMessageLine(event.executor_message()));
      break;
    case pb::ChatEvent::kExecutorResult:
      Line(kDim, ExecutorResultLine(event.executor_result()));
      break;
    case pb::ChatEvent::kError:
      Line(kRed, ErrorLine(event.error()));
      break;
    case pb::ChatEvent::kNotice:
      // Its words open the reply's text; the line marks it.
      Line(kYellow, "! " + event.notice().agent_name() + ": " +
                        Words(pb::NoticeKind_Name(event.notice().kind()), "NOTICE_KIND_"));
      break;
    case pb::ChatEvent::kOntologyLoaded:
      Line(kDim, OntologyLine(event.ontology_loaded()));
      break;
    case pb::ChatEvent::kLastTurnContext:
      Line(kDim, LastTurnLine(event.last_turn_context()));
      break;
    case pb::ChatEvent::kHeartbeat:
      // The turn still runs: the spinner shows that already.
      break;
    case pb::ChatEvent::kDone:
      spinner_label_.clear();
      Line(kDim, DoneLine(event.done()));
      break;
    case pb::ChatEvent::EVENT_NOT_SET:
      break;
  }
}

void ChatView::Tick() {
  absl::MutexLock lock(&mu_);
  if (!spinner_drawn_) return;
  ++frame_;
  DrawSpinner();
}

void ChatView::EndTurn() {
  absl::MutexLock lock(&mu_);
  spinner_label_.clear();
  CloseText();
  ClearSpinner();
  out_ << std::flush;
}

}  // namespace omniforge::cli
