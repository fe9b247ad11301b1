// What the local domain flows (meeting_flow, email_flow) share: reading
// their state (the intent's entities and the flow's own keys, strings in a
// map), the data and failure of a domain tool's result, and finding the
// people the user named among their contacts one after the other, asking
// which one when a name matches several (or none).
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "omniforge/intent/v1/intent_service.pb.h"
#include "services/orchestrator/flow/move.h"

namespace omniforge::orchestrator::flows {

using StateMap = std::map<std::string, std::string>;

// The value at `key` ("" when absent).
std::string At(const StateMap& m, const char* key);
// The JSON at `key`, `fallback` when absent or not JSON.
nlohmann::json JsonAt(const StateMap& m, const char* key, const nlohmann::json& fallback);
// The comma-separated names at `key`, trimmed, empty ones left out.
std::vector<std::string> NamesAt(const StateMap& m, const char* key);

// A domain tool's data: {"data": ...} through the executor, else the
// object itself.
nlohmann::json DataOf(const nlohmann::json& result);
// Why a domain tool failed, in its own words.
std::string FailureWords(const nlohmann::json& result);
// "a", "a and b", "a, b and c".
std::string AndList(const std::vector<std::string>& items);

// Where a flow keeps the people it finds: `people` (JSON [{name, email}],
// found, in order), `next` (the position of the name looked up next),
// `query` (what to look that name up by instead, the user's answer),
// `stage` and `options` (the question waiting: `stage_who`, and the
// contacts it offered).
struct ContactKeys {
  const char* people;
  const char* next;
  const char* query;
  const char* stage;
  const char* options;
  const char* stage_who;
};

// The name looked up now, as the user said it ("" once all are found).
std::string CurrentName(const StateMap& m, const std::vector<std::string>& names,
                        const ContactKeys& keys);
// The contacts lookup for `name` (or the user's answer about it).
ToolStep FindContactsCall(const StateMap& m, const std::string& name, const ContactKeys& keys);
// Takes a contacts lookup's result: one match is that person found (the
// next name is looked up after it); none or several wait for the user
// (the stage is `stage_who`, the options the matches).
void TakeContacts(StateMap& m, const nlohmann::json& data, const ContactKeys& keys);
// "Sarah Chen (sarah.chen@example.com)" for each contact.
std::vector<std::string> ContactLabels(const nlohmann::json& people);
// "Which John do you mean?" and the matching contacts `options`, numbered.
std::string WhichQuestion(const std::string& name, const nlohmann::json& options);
// The names of the contacts `options` (what the answer is matched against).
std::vector<std::string> ContactNames(const nlohmann::json& options);
// The question when no contact matched `name` (or the answer about it).
std::string NotFoundQuestion(const StateMap& m, const std::string& name, const ContactKeys& keys);

// Where a flow reads the user's answer to its question: `picked` (the
// option's position from 1), `verdict` (approve, reject or answer) and
// `answer` (the words as written).
struct AnswerKeys {
  const char* picked;
  const char* verdict;
  const char* answer;
};

// The understanding of a reply to `flow`'s question (the intent service
// heard it as `heard`): the flow's state `entities` carried on, with the
// option, the verdict and the words under `keys`.
::omniforge::intent::v1::IntentAnalysis AnswerAnalysis(
    const StateMap& entities, const ::omniforge::intent::v1::IntentAnalysis& heard,
    const std::string& message, const std::string& flow, const AnswerKeys& keys);

}  // namespace omniforge::orchestrator::flows
