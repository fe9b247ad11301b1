#include "services/orchestrator/planner/email_flow.h"

#include <cstdlib>
#include <vector>

#include "libs/core/ids.h"
#include "services/intent/entities/email_entities.h"
#include "services/intent/entities/entities.h"
#include "services/orchestrator/planner/domain_flow.h"

namespace omniforge::orchestrator {

namespace {

namespace intentpb = ::omniforge::intent::v1;
namespace execpb = ::omniforge::executor::v1;
using nlohmann::json;

// The flow's own keys in the state (beside the intent's entities).
constexpr char kPeople[] = "email_flow_people";    // JSON [{name, email}] resolved, in order
constexpr char kNext[] = "email_flow_next";        // the recipient looked up next (from 0)
constexpr char kQuery[] = "email_flow_query";      // what to look that recipient up by instead
constexpr char kStage[] = "email_flow_stage";      // kStageWho while the question waits
constexpr char kOptions[] = "email_flow_options";  // JSON: the contacts the question offered
constexpr char kDraft[] = "email_flow_draft";      // JSON {draft_id, to, subject, body}
constexpr char kFailed[] = "email_flow_failed";    // a tool's failure, in words
constexpr char kStageWho[] = "who";
constexpr char kDropped[] = "dropped";
// The answer to the flow's question (EmailAnswer).
constexpr char kPicked[] = "email_flow_option";  // the option's position from 1
constexpr char kVerdict[] = "email_flow_reply";  // approve, reject or answer
constexpr char kAnswer[] = "email_flow_answer";  // the answer as written
constexpr flows::ContactKeys kContacts{kPeople, kNext, kQuery, kStage, kOptions, kStageWho};

using flows::AndList;
using flows::At;
using flows::DataOf;
using flows::FailureWords;
using flows::JsonAt;

// The recipient looked up now, as the user named them.
std::string CurrentName(const EmailState& m) {
  return flows::CurrentName(m, flows::NamesAt(m, intent::kEmailToEntity), kContacts);
}

Move BaseMove(const EmailState& m) {
  Move move;
  move.action_type = intentpb::ACTION_TYPE_EXECUTE_TASK;
  move.entities = m;
  for (const char* key : {kPicked, kVerdict, kAnswer}) move.entities.erase(key);
  return move;
}

Move AskWho(EmailState& m) {
  const json options = JsonAt(m, kOptions, json::array());
  const std::string name = CurrentName(m);
  Move move = BaseMove(m);
  move.reply = options.empty() ? flows::NotFoundQuestion(m, name, kContacts)
                               : flows::WhichQuestion(name, options);
  move.listed_agents = flows::ContactNames(options);
  move.clarifying = true;
  move.asked = kAskedEmail;
  return move;
}

// "Hi Sarah and John,": the recipients by their first names.
std::string Greeting(const json& people) {
  std::vector<std::string> first;
  for (const json& p : people) {
    const std::string name = p.value("name", p.value("email", ""));
    first.push_back(name.substr(0, name.find(' ')));
  }
  return "Hi " + AndList(first) + ",";
}

json EmailsOf(const json& people) {
  json emails = json::array();
  for (const json& p : people) emails.push_back(p.value("email", ""));
  return emails;
}

ToolStep DraftCall(const EmailState& m) {
  const json people = JsonAt(m, kPeople, json::array());
  std::string subject = At(m, intent::kEmailSubjectEntity);
  if (subject.empty()) subject = "Hello";
  const std::string said = At(m, intent::kEmailBodyEntity);
  const std::string body =
      Greeting(people) + "\n\n" + (said.empty() ? "" : said + "\n\n") + "Best regards";
  return {"email__draft_message", {{"to", EmailsOf(people)}, {"subject", subject}, {"body", body}}};
}

Move ProposeSending(const EmailState& m) {
  const json draft = JsonAt(m, kDraft, json::object());
  const json people = JsonAt(m, kPeople, json::array());
  json args = {{"to", draft.value("to", json::array())},
               {"subject", draft.value("subject", "")},
               {"body", draft.value("body", "")},
               {"draft_id", draft.value("draft_id", "")}};
  const std::string to = AndList(flows::ContactLabels(people));
  const std::string summary = "send \"" + draft.value("subject", "") + "\" to " + to + ".";
  Move move = BaseMove(m);
  move.reply = "Here is the draft (saved among your drafts):\n\nTo: " + to +
               "\nSubject: " + draft.value("subject", "") + "\n\n" + draft.value("body", "") +
               "\n\nShall I send it? Say \"yes\" to send it, or \"no\" to leave it unsent.";
  move.propose.push_back(PendingAction{core::NewUuid(), "email__send_message", std::move(args),
                                       execpb::TOOL_RISK_WRITE, summary});
  return move;
}

// The state with the answer to the flow's question applied.
void ApplyAnswer(EmailState& m) {
  const json options = JsonAt(m, kOptions, json::array());
  const int picked = std::atoi(At(m, kPicked).c_str());
  const bool in_range = picked >= 1 && picked <= static_cast<int>(options.size());
  m.erase(kStage);
  m.erase(kOptions);
  if (At(m, kVerdict) == "reject" && !in_range) {
    m[kStage] = kDropped;
  } else if (in_range) {
    json people = JsonAt(m, kPeople, json::array());
    people.push_back(options[picked - 1]);
    m[kPeople] = people.dump();
    m[kNext] = std::to_string(std::atoi(At(m, kNext).c_str()) + 1);
    m.erase(kQuery);
  } else {
    m[kQuery] = At(m, kAnswer);
  }
  for (const char* key : {kPicked, kVerdict, kAnswer}) m.erase(key);
}

}  // namespace

bool IsEmailTurn(const PolicyInput& in) {
  const auto& entities = in.intent.entities();
  if (in.intent.action_type() != intentpb::ACTION_TYPE_EXECUTE_TASK ||
      !entities.contains(intent::kEmailToEntity) || entities.contains(intent::kAttendeesEntity)) {
    return false;
  }
  if (in.last && in.last->asked == kAskedEmail && entities.contains(kVerdict)) return true;
  return !in.last || in.goal.empty() || in.goal == in.message;
}

EmailState EmailAtStart(const PolicyInput& in) {
  EmailState m(in.intent.entities().begin(), in.intent.entities().end());
  m.erase(kFailed);
  if (in.last && in.last->asked == kAskedEmail && m.contains(kVerdict)) {
    ApplyAnswer(m);
  } else {
    for (const char* key : {kPeople, kNext, kQuery, kStage, kOptions, kDraft}) m.erase(key);
  }
  return m;
}

EmailStep NextEmailStep(EmailState& m) {
  EmailStep step;
  if (At(m, kStage) == kDropped) {
    step.move = BaseMove(m);
    step.move.reply = "All right, nothing is sent.";
  } else if (const std::string failed = At(m, kFailed); !failed.empty()) {
    step.move = BaseMove(m);
    step.move.reply = "I could not prepare the email: " + failed;
  } else if (At(m, kStage) == kStageWho) {
    step.move = AskWho(m);
  } else if (const std::string name = CurrentName(m); !name.empty()) {
    step.call = flows::FindContactsCall(m, name, kContacts);
  } else if (!m.contains(kDraft)) {
    step.call = DraftCall(m);
  } else {
    step.move = ProposeSending(m);
  }
  return step;
}

void TakeEmailResult(EmailState& m, const ToolStep& call, const json& result, bool is_error) {
  if (is_error || (result.is_object() && result.value("status", "") == "error")) {
    m[kFailed] = call.tool + " failed: " + FailureWords(result);
    return;
  }
  const json data = DataOf(result);
  if (call.tool == "contacts__find_contacts") {
    flows::TakeContacts(m, data, kContacts);
  } else if (call.tool == "email__draft_message") {
    json draft = call.arguments;
    draft["draft_id"] = data.value("draft_id", "");
    m[kDraft] = draft.dump();
  }
}

intentpb::IntentAnalysis EmailAnswer(const FlowState& last, const intentpb::IntentAnalysis& heard,
                                     const std::string& message) {
  return flows::AnswerAnalysis(last.entities, heard, message, "email",
                               {kPicked, kVerdict, kAnswer});
}

Move RunEmailFlow(EmailState email, const EmailToolRun& run) {
  while (true) {
    EmailStep step = NextEmailStep(email);
    if (!step.call) return std::move(step.move);
    const std::optional<std::pair<json, bool>> ran = run(*step.call);
    if (!ran) {
      Move stopped;
      stopped.action_type = intentpb::ACTION_TYPE_EXECUTE_TASK;
      stopped.entities = email;
      return stopped;
    }
    TakeEmailResult(email, *step.call, ran->first, ran->second);
  }
}

bool IsEmailProgress(const std::string& key) { return key.rfind("email_flow_", 0) == 0; }

std::string DescribeEmailResult(const ToolStep& step, const json& result, bool is_error) {
  if (step.tool != "email__send_message") return "";
  const json data = DataOf(result);
  if (is_error || !data.contains("message") || !data["message"].is_object()) {
    return "It was not sent: " + FailureWords(result);
  }
  const json& message = data["message"];
  std::vector<std::string> to;
  for (const json& address : message.value("to", json::array())) {
    if (address.is_string()) to.push_back(address.get<std::string>());
  }
  return "Sent \"" + message.value("subject", std::string("the email")) + "\" to " + AndList(to) +
         " (" + message.value("id", std::string("new message")) + "). It is in your sent mail.";
}

}  // namespace omniforge::orchestrator
