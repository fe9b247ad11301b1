#include "services/orchestrator/planner/email_flow.h"

#include <cstdlib>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "libs/core/ids.h"
#include "services/intent/entities/email_entities.h"
#include "services/intent/entities/entities.h"

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

std::string At(const EmailState& m, const char* key) {
  auto it = m.find(key);
  return it == m.end() ? std::string() : it->second;
}

json JsonAt(const EmailState& m, const char* key, const json& fallback) {
  const json parsed = json::parse(At(m, key), nullptr, /*allow_exceptions=*/false);
  return parsed.is_discarded() ? fallback : parsed;
}

std::vector<std::string> Recipients(const EmailState& m) {
  std::vector<std::string> names;
  for (absl::string_view name : absl::StrSplit(At(m, intent::kEmailToEntity), ',')) {
    name = absl::StripAsciiWhitespace(name);
    if (!name.empty()) names.emplace_back(name);
  }
  return names;
}

std::string CurrentName(const EmailState& m) {
  const std::vector<std::string> names = Recipients(m);
  const size_t next = static_cast<size_t>(std::atoi(At(m, kNext).c_str()));
  return next < names.size() ? names[next] : std::string();
}

json DataOf(const json& result) {
  if (result.is_object() && result.contains("data") && result["data"].is_object()) {
    return result["data"];
  }
  return result.is_object() ? result : json::object();
}

std::string FailureWords(const json& result) {
  const json data = DataOf(result);
  if (data.contains("error") && data["error"].is_object()) {
    return data["error"].value("message", data["error"].dump());
  }
  if (result.is_object() && result.contains("error") && result["error"].is_string()) {
    return result["error"].get<std::string>();
  }
  return result.dump().substr(0, 300);
}

std::string AndList(const std::vector<std::string>& items) {
  if (items.size() <= 1) return items.empty() ? "" : items.front();
  return absl::StrJoin(items.begin(), items.end() - 1, ", ") + " and " + items.back();
}

// "Sarah Chen (sarah.chen@example.com)" for each person.
std::vector<std::string> Labels(const json& people) {
  std::vector<std::string> labels;
  for (const json& p : people) {
    labels.push_back(p.value("name", "") + " (" + p.value("email", "") + ")");
  }
  return labels;
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
  Move move;
  if (options.empty()) {
    const std::string looked_up = At(m, kQuery).empty() ? name : At(m, kQuery);
    move = BaseMove(m);
    move.reply = "I couldn't find \"" + looked_up +
                 "\" among your contacts. Who do you mean? Tell me their full name or email "
                 "address.";
  } else {
    move = BaseMove(m);
    move.reply = "Which " + name + " do you mean?";
    const std::vector<std::string> labels = Labels(options);
    for (size_t i = 0; i < labels.size(); ++i) {
      move.reply += "\n" + std::to_string(i + 1) + ". " + labels[i];
      move.listed_agents.push_back(options[i].value("name", ""));
    }
  }
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
  const std::string to = AndList(Labels(people));
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

void TakeContacts(EmailState& m, const json& data) {
  json found = json::array();
  for (const json& match : data.value("matches", json::array())) {
    found.push_back({{"name", match.value("name", "")}, {"email", match.value("email", "")}});
  }
  if (found.size() == 1) {
    json people = JsonAt(m, kPeople, json::array());
    people.push_back(found[0]);
    m[kPeople] = people.dump();
    m[kNext] = std::to_string(std::atoi(At(m, kNext).c_str()) + 1);
    m.erase(kQuery);
    return;
  }
  m[kStage] = kStageWho;
  m[kOptions] = found.dump();
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
    const std::string query = At(m, kQuery).empty() ? name : At(m, kQuery);
    step.call = ToolStep{"contacts__find_contacts", {{"query", query}}};
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
    TakeContacts(m, data);
  } else if (call.tool == "email__draft_message") {
    json draft = call.arguments;
    draft["draft_id"] = data.value("draft_id", "");
    m[kDraft] = draft.dump();
  }
}

intentpb::IntentAnalysis EmailAnswer(const FlowState& last, const intentpb::IntentAnalysis& heard,
                                     const std::string& message) {
  intentpb::IntentAnalysis analysis;
  analysis.set_action_type(intentpb::ACTION_TYPE_EXECUTE_TASK);
  analysis.set_confidence(1.0f);
  analysis.set_source(intentpb::INTENT_SOURCE_FAST_PATH);
  analysis.set_reasoning("the answer to the email flow's question: " + heard.reply().reasoning());
  auto& entities = *analysis.mutable_entities();
  entities.insert(last.entities.begin(), last.entities.end());
  if (heard.reply().option() > 0) entities[kPicked] = std::to_string(heard.reply().option());
  const intentpb::ReplyKind kind = heard.reply().kind();
  entities[kVerdict] = kind == intentpb::REPLY_KIND_APPROVE  ? "approve"
                       : kind == intentpb::REPLY_KIND_REJECT ? "reject"
                                                             : "answer";
  entities[kAnswer] = message;
  return analysis;
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
