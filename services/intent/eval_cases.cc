#include "services/intent/eval_cases.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

namespace omniforge::intent::eval {
namespace {

namespace pb = ::omniforge::intent::v1;
using Json = nlohmann::json;

pb::ActionType ParseActionType(const std::string& name) {
  pb::ActionType value = pb::ACTION_TYPE_UNSPECIFIED;
  if (!pb::ActionType_Parse("ACTION_TYPE_" + name, &value)) return pb::ACTION_TYPE_UNSPECIFIED;
  return value;
}

std::string ShortName(int action) {
  std::string name = pb::ActionType_Name(static_cast<pb::ActionType>(action));
  return name.substr(std::string("ACTION_TYPE_").size());
}

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
  return s;
}

std::string Entity(const pb::IntentAnalysis& got, const std::string& key) {
  const auto it = got.entities().find(key);
  return it == got.entities().end() ? "" : it->second;
}

bool ListsSlot(const pb::Clarification& clarification, std::string slot) {
  std::transform(slot.begin(), slot.end(), slot.begin(),
                 [](unsigned char ch) { return static_cast<char>(std::toupper(ch)); });
  pb::MissingSlot value = pb::MISSING_SLOT_UNSPECIFIED;
  if (!pb::MissingSlot_Parse("MISSING_SLOT_" + slot, &value)) return false;
  return std::find(clarification.missing().begin(), clarification.missing().end(), value) !=
         clarification.missing().end();
}

std::string SlotsOf(const pb::Clarification& clarification) {
  std::string slots;
  for (int s : clarification.missing()) {
    slots += " " + Lower(pb::MissingSlot_Name(static_cast<pb::MissingSlot>(s)).substr(13));
  }
  return slots;
}

// One parsed line; nlohmann's exceptions (a missing or mistyped field)
// are turned into INVALID_ARGUMENT by the caller.
LabelledCase ParseCase(const Json& line) {
  LabelledCase c;
  c.id = line.value("id", "");
  c.category = c.id.substr(0, c.id.rfind('-'));
  for (const Json& a : line.value("agents", Json::array())) {
    c.agents.push_back({a.at("name").get<std::string>(), a.value("description", "")});
  }
  for (const Json& t : line.value("history", Json::array())) {
    c.history.push_back(
        {t.at("role").get<std::string>() == "assistant", t.at("content").get<std::string>()});
  }
  c.message = line.at("message").get<std::string>();
  const Json& expect = line.at("expect");
  c.expect.action_type = expect.value("action_type", "");
  c.expect.agent_name = expect.value("agent_name", "");
  c.expect.corrected_value = expect.value("corrected_value", "");
  if (expect.contains("summary_worthy")) {
    c.expect.summary_worthy = expect.at("summary_worthy").get<bool>();
  }
  c.expect.clarify = expect.value("clarify", false);
  for (const Json& slot : expect.value("missing", Json::array())) {
    c.expect.missing.push_back(slot.get<std::string>());
  }
  return c;
}

void PrintMisses(const std::vector<std::string>& misses) {
  if (misses.empty()) return;
  std::printf("misses:\n");
  for (const auto& m : misses) std::printf("  %s\n", m.c_str());
}

}  // namespace

absl::StatusOr<std::vector<LabelledCase>> ReadCases(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError("cannot read " + path);
  std::vector<LabelledCase> cases;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    const Json parsed = Json::parse(line, nullptr, false);
    if (parsed.is_discarded()) return absl::InvalidArgumentError(path + ": a line is not JSON");
    try {
      cases.push_back(ParseCase(parsed));
    } catch (const Json::exception& e) {
      return absl::InvalidArgumentError(path + ": case " + parsed.value("id", "?") + ": " +
                                        e.what());
    }
  }
  return cases;
}

pb::AnalyzeIntentRequest RequestOf(const LabelledCase& c) {
  pb::AnalyzeIntentRequest request;
  request.set_message(c.message);
  for (const LabelledCase::Agent& a : c.agents) {
    auto* item = request.add_available_agents();
    item->set_name(a.name);
    item->set_description(a.description);
  }
  for (const LabelledCase::Turn& t : c.history) {
    auto* turn = request.add_history();
    turn->set_role(t.assistant ? pb::TURN_ROLE_ASSISTANT : pb::TURN_ROLE_USER);
    turn->set_content(t.content);
  }
  return request;
}

bool IsOlderCase(const LabelledCase& c) {
  const size_t dash = c.id.rfind('-');
  return dash != std::string::npos && dash + 1 < c.id.size() &&
         std::all_of(c.id.begin() + static_cast<std::ptrdiff_t>(dash) + 1, c.id.end(),
                     [](unsigned char ch) { return std::isdigit(ch) != 0; });
}

std::string AnswerOf(const pb::IntentAnalysis& got) {
  const std::string agent = Entity(got, "agent_name");
  const std::string value = Entity(got, "corrected_value");
  std::string answer = ShortName(got.action_type()) + (agent.empty() ? "" : "/" + agent) +
                       (value.empty() ? "" : " [" + value + "]");
  if (got.summary_worthy()) answer += " summary_worthy";
  if (got.clarification().needed()) answer += " clarify" + SlotsOf(got.clarification());
  return answer;
}

void PrintCategories(const CategoryCounts& by_category) {
  for (const auto& [category, counts] : by_category) {
    std::printf("  %-16s %3d / %3d  %.3f\n", category.c_str(), counts.first, counts.second,
                counts.second == 0 ? 0.0 : static_cast<double>(counts.first) / counts.second);
  }
}

bool FollowupTally::Add(const LabelledCase& c, const pb::IntentAnalysis& got) {
  const LabelledCase::Expect& expect = c.expect;
  const bool action_match = got.action_type() == ParseActionType(expect.action_type);
  const std::string got_agent = Entity(got, "agent_name");
  const bool agent_match = got_agent == expect.agent_name;
  const std::string got_value = Entity(got, "corrected_value");
  bool value_match = true;
  if (!expect.corrected_value.empty()) {
    ++corrected_expected_;
    value_match = !got_value.empty() &&
                  Lower(got_value).find(Lower(expect.corrected_value)) != std::string::npos;
    corrected_ok_ += value_match;
  }
  bool summary_match = true;
  if (expect.summary_worthy.has_value()) {
    ++summary_expected_;
    summary_match = got.summary_worthy() == *expect.summary_worthy;
    summary_ok_ += summary_match;
  }
  const bool ok = action_match && agent_match && value_match && summary_match;
  ++n_;
  action_ok_ += action_match;
  agent_ok_ += agent_match;
  all_ok_ += ok;
  if (IsOlderCase(c)) {
    ++older_;
    older_ok_ += ok;
  }
  auto& cat = by_category_[c.category];
  cat.first += ok;
  ++cat.second;
  if (!ok) {
    const std::string& want_agent = expect.agent_name;
    const std::string& want_value = expect.corrected_value;
    misses_.push_back(c.id + ": \"" + c.message + "\" expected " + expect.action_type +
                      (want_agent.empty() ? "" : "/" + want_agent) +
                      (want_value.empty() ? "" : " [" + want_value + "]") + ", got " +
                      ShortName(got.action_type()) + (got_agent.empty() ? "" : "/" + got_agent) +
                      (got_value.empty() ? "" : " [" + got_value + "]") +
                      (summary_match ? "" : " (summary_worthy wrong)") + " — " + got.reasoning());
  }
  return ok;
}

void FollowupTally::Print(const std::string& path, Split split) const {
  std::printf(
      "\nfollow-ups (%s): %d cases; action %d, agent_name %d, corrected_value %d / %d, "
      "summary_worthy %d / %d, all %d\n",
      path.c_str(), n_, action_ok_, agent_ok_, corrected_ok_, corrected_expected_, summary_ok_,
      summary_expected_, all_ok_);
  PrintCategories(by_category_);
  std::printf("  the older cases alone: %d / %d\n", older_ok_, older_);
  if (split == Split::kDev) PrintMisses(misses_);
}

bool ClarifyTally::Add(const LabelledCase& c, const pb::IntentAnalysis& got) {
  const LabelledCase::Expect& expect = c.expect;
  const bool want_clarify = expect.clarify;
  const bool asked = got.clarification().needed();
  bool ok = asked == want_clarify;
  const std::string got_agent = Entity(got, "agent_name");
  const std::string& want_agent = expect.agent_name;
  if (ok && !want_clarify) {
    ok = got.action_type() == ParseActionType(expect.action_type) &&
         (want_agent.empty() || got_agent == want_agent);
  }
  if (want_clarify) {
    ++should_ask_;
    asked_right_ += asked;
    bool found = false;
    for (const std::string& slot : expect.missing) {
      found = found || ListsSlot(got.clarification(), slot);
    }
    slot_found_ += found;
  } else {
    ++should_proceed_;
    proceeded_right_ += ok;
  }
  ++n_;
  ok_total_ += ok;
  auto& cat = by_category_[c.category];
  cat.first += ok;
  ++cat.second;
  if (!ok) {
    misses_.push_back(
        c.id + ": \"" + c.message + "\" expected " + (want_clarify ? "clarify" : "proceed ") +
        (want_clarify ? "" : expect.action_type) + (want_agent.empty() ? "" : "/" + want_agent) +
        ", got " +
        (asked ? "clarify" + SlotsOf(got.clarification()) + " \"" + got.clarifying_question() + "\""
               : "proceed " + ShortName(got.action_type()) +
                     (got_agent.empty() ? "" : "/" + got_agent)) +
        " — " + got.reasoning());
  }
  return ok;
}

void ClarifyTally::Print(const std::string& path, Split split) const {
  std::printf(
      "\nclarify-or-proceed (%s): %d cases, %d right; asked %d / %d that should ask, proceeded "
      "right %d / %d; missing-slot recall %.3f\n",
      path.c_str(), n_, ok_total_, asked_right_, should_ask_, proceeded_right_, should_proceed_,
      missing_slot_recall());
  PrintCategories(by_category_);
  if (split == Split::kDev) PrintMisses(misses_);
}

}  // namespace omniforge::intent::eval
