#include "services/orchestrator/planner/domain_flow.h"

#include <cstdlib>

#include "absl/strings/ascii.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace omniforge::orchestrator::flows {

using nlohmann::json;

std::string At(const StateMap& m, const char* key) {
  auto it = m.find(key);
  return it == m.end() ? std::string() : it->second;
}

json JsonAt(const StateMap& m, const char* key, const json& fallback) {
  const json parsed = json::parse(At(m, key), nullptr, /*allow_exceptions=*/false);
  return parsed.is_discarded() ? fallback : parsed;
}

std::vector<std::string> NamesAt(const StateMap& m, const char* key) {
  std::vector<std::string> names;
  for (absl::string_view name : absl::StrSplit(At(m, key), ',')) {
    name = absl::StripAsciiWhitespace(name);
    if (!name.empty()) names.emplace_back(name);
  }
  return names;
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
  if (result.is_object() && result.contains("limitations") && result["limitations"].is_array() &&
      !result["limitations"].empty() && result["limitations"][0].is_string()) {
    return result["limitations"][0].get<std::string>();
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

std::string CurrentName(const StateMap& m, const std::vector<std::string>& names,
                        const ContactKeys& keys) {
  const size_t next = static_cast<size_t>(std::atoi(At(m, keys.next).c_str()));
  return next < names.size() ? names[next] : std::string();
}

ToolStep FindContactsCall(const StateMap& m, const std::string& name, const ContactKeys& keys) {
  const std::string query = At(m, keys.query).empty() ? name : At(m, keys.query);
  return ToolStep{"contacts__find_contacts", {{"query", query}}};
}

void TakeContacts(StateMap& m, const json& data, const ContactKeys& keys) {
  json found = json::array();
  for (const json& match : data.value("matches", json::array())) {
    found.push_back({{"name", match.value("name", "")}, {"email", match.value("email", "")}});
  }
  if (found.size() == 1) {
    json people = JsonAt(m, keys.people, json::array());
    people.push_back(found[0]);
    m[keys.people] = people.dump();
    m[keys.next] = std::to_string(std::atoi(At(m, keys.next).c_str()) + 1);
    m.erase(keys.query);
    return;
  }
  m[keys.stage] = keys.stage_who;
  m[keys.options] = found.dump();
}

std::vector<std::string> ContactLabels(const json& people) {
  std::vector<std::string> labels;
  for (const json& p : people) {
    labels.push_back(p.value("name", "") + " (" + p.value("email", "") + ")");
  }
  return labels;
}

std::string WhichQuestion(const std::string& name, const json& options) {
  std::string question = "Which " + name + " do you mean?";
  const std::vector<std::string> labels = ContactLabels(options);
  for (size_t i = 0; i < labels.size(); ++i) {
    question += "\n" + std::to_string(i + 1) + ". " + labels[i];
  }
  return question;
}

std::vector<std::string> ContactNames(const json& options) {
  std::vector<std::string> names;
  for (const json& option : options) names.push_back(option.value("name", ""));
  return names;
}

std::string NotFoundQuestion(const StateMap& m, const std::string& name, const ContactKeys& keys) {
  const std::string looked_up = At(m, keys.query).empty() ? name : At(m, keys.query);
  return "I couldn't find \"" + looked_up +
         "\" among your contacts. Who do you mean? Tell me their full name or email address.";
}

::omniforge::intent::v1::IntentAnalysis AnswerAnalysis(
    const StateMap& entities, const ::omniforge::intent::v1::IntentAnalysis& heard,
    const std::string& message, const std::string& flow, const AnswerKeys& keys) {
  namespace intentpb = ::omniforge::intent::v1;
  intentpb::IntentAnalysis analysis;
  analysis.set_action_type(intentpb::ACTION_TYPE_EXECUTE_TASK);
  analysis.set_confidence(1.0f);
  analysis.set_source(intentpb::INTENT_SOURCE_FAST_PATH);
  analysis.set_reasoning("the answer to the " + flow +
                         " flow's question: " + heard.reply().reasoning());
  auto& out = *analysis.mutable_entities();
  out.insert(entities.begin(), entities.end());
  if (heard.reply().option() > 0) out[keys.picked] = std::to_string(heard.reply().option());
  const intentpb::ReplyKind kind = heard.reply().kind();
  out[keys.verdict] = kind == intentpb::REPLY_KIND_APPROVE  ? "approve"
                      : kind == intentpb::REPLY_KIND_REJECT ? "reject"
                                                            : "answer";
  out[keys.answer] = message;
  return analysis;
}

}  // namespace omniforge::orchestrator::flows
