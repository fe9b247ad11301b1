#include "services/intent/src/action_details.h"

#include <algorithm>
#include <cctype>

#include "libs/core/text.h"
#include "libs/words/lists.h"
#include "libs/words/tokens.h"
#include "services/intent/src/request_parts.h"
#include "services/intent/src/text.h"

namespace omniforge::intent {
namespace {

// A purpose is at most this long (a draft's description is no longer).
constexpr size_t kMaxPurposeBytes = 2000;

constexpr std::string_view kDetailKeys[] = {
    kTopicEntity,           kOperationEntity,     kSmallTalkEntity,
    kPurposeEntity,         kSuggestedNameEntity, kAttendeesEntity,
    kDurationMinutesEntity, kDayEntity,           kTimeEntity,
    kPartOfDayEntity,       kTitleEntity};

bool BeginsAWord(const std::vector<std::string>& words, std::string_view beginning) {
  return std::any_of(words.begin(), words.end(), [beginning](const std::string& word) {
    return word.compare(0, beginning.size(), beginning) == 0;
  });
}

// The value of the first entry of list `name`, in file order, that begins
// a word of `words` and whose value is not `skipped`; empty when none does.
std::string FirstBeginning(const std::vector<std::string>& words, std::string_view name,
                           std::string_view skipped = {}) {
  for (const words::Entry& entry : words::Entries(name)) {
    if (entry.value != skipped && BeginsAWord(words, entry.text)) return entry.value;
  }
  return "";
}

bool HasWordOf(const std::vector<std::string>& words, std::string_view name) {
  return words::ContainsAnyEntry(words, name, words::Tokenizer::kAsciiAlnum);
}

bool Is(const IntentAnalysis& a, Action action) {
  return a.action == action || a.alternative == action;
}

// Whether a new agent or skill may be drafted from the message: asked for,
// the runner-up, a task no agent of the user's is named for, or an
// analysis that asks first (its answer may ask for the draft).
bool MayBeDrafted(const IntentAnalysis& a) {
  return Is(a, Action::kCreateAgent) || Is(a, Action::kCreateSkill) ||
         (a.action == Action::kExecuteTask && !a.entities.contains("agent_name")) ||
         a.action == Action::kUnknown || a.is_ambiguous || a.clarification.needed ||
         !a.parts.empty();
}

}  // namespace

std::string QueryTopic(const std::vector<std::string>& words, bool names_agent) {
  const bool about_runs = FirstBeginning(words, "query_topics") == "runs";
  if (about_runs && !HasWordOf(words, "query_all_agents")) return "runs";
  const bool whole_list = HasWordOf(words, "query_lists");
  // One agent named and no list asked for: that agent.
  if (names_agent && !whole_list) return "agent";
  if (std::string topic = FirstBeginning(words, "query_topics", "runs"); !topic.empty()) {
    return topic;
  }
  // Nothing said: the agent in play, if any (the caller's to know).
  return whole_list ? "agents" : "agent";
}

std::string LifecycleOperation(const std::vector<std::string>& words) {
  std::string operation = FirstBeginning(words, "lifecycle_operations");
  return operation.empty() ? "other" : operation;
}

std::string SmallTalk(const std::vector<std::string>& words) {
  for (const std::string& thanks : words::List("thanks")) {
    if (BeginsAWord(words, thanks)) return "thanks";
  }
  return "greeting";
}

std::string DraftPurpose(std::string_view message) {
  std::string text(message);
  const std::string lower = Lowercase(text);
  for (const words::Entry& ask : words::Entries("help_asks")) {
    const size_t at = lower.rfind(ask.text);
    if (at != std::string::npos && at > 0 && lower.size() - at < ask.text.size() + 4) {
      text.resize(at);
      break;
    }
  }
  while (!text.empty() && std::string_view(" \t\n?.!,;:-").find(text.back()) != std::string::npos) {
    text.pop_back();
  }
  // A dash (an em or en dash) left at the end.
  for (std::string_view dash : {"\xE2\x80\x94", "\xE2\x80\x93"}) {
    if (text.size() >= dash.size() &&
        text.compare(text.size() - dash.size(), dash.size(), dash) == 0) {
      text.resize(text.size() - dash.size());
      while (!text.empty() && text.back() == ' ') text.pop_back();
    }
  }
  return text.empty() ? std::string(message) : text;
}

std::string SuggestedName(std::string_view message) {
  std::string request;
  for (const std::string& part : RequestParts(message)) {
    request += (request.empty() ? "" : " and ") + part;
  }
  std::vector<std::string> picked;
  for (const std::string& word : words::Tokens(request, words::Tokenizer::kAsciiAlnum)) {
    if (word.size() < 3 || std::isdigit(static_cast<unsigned char>(word[0])) != 0 ||
        words::Contains("name_skip", word) ||
        std::find(picked.begin(), picked.end(), word) != picked.end()) {
      continue;
    }
    picked.push_back(word);
    if (picked.size() == 3) break;
  }
  std::string name;
  for (const std::string& word : picked) name += (name.empty() ? "" : "-") + word;
  if (name.empty()) name = "assistant";
  name = name.substr(0, 60);
  return picked.size() < 3 ? name + "-agent" : name;
}

bool IsActionDetail(std::string_view key) {
  return std::find(std::begin(kDetailKeys), std::end(kDetailKeys), key) != std::end(kDetailKeys);
}

void ApplyActionDetails(const IntentRequest& request, IntentAnalysis& analysis) {
  IntentAnalysis& a = analysis;
  for (std::string_view key : kDetailKeys) a.entities.erase(std::string(key));
  const std::vector<std::string> words =
      words::Tokens(request.message, words::Tokenizer::kAsciiAlnum);
  const std::string purpose = DraftPurpose(request.message);
  a.parts = PartsWithAgents(purpose, request.agents);
  if (Is(a, Action::kQueryInfo) || Is(a, Action::kManagePlatform) || a.action == Action::kUnknown) {
    a.entities[kTopicEntity] = QueryTopic(words, a.entities.contains("agent_name"));
  }
  if (Is(a, Action::kManagePlatform)) a.entities[kOperationEntity] = LifecycleOperation(words);
  if (Is(a, Action::kConversation)) a.entities[kSmallTalkEntity] = SmallTalk(words);
  if (MayBeDrafted(a)) {
    a.entities[kPurposeEntity] = core::Shortened(purpose, kMaxPurposeBytes);
    a.entities[kSuggestedNameEntity] = SuggestedName(purpose);
  }
}

}  // namespace omniforge::intent
