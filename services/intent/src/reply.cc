#include "services/intent/src/reply.h"

#include <algorithm>
#include <optional>
#include <set>

#include "libs/words/lists.h"
#include "libs/words/tokens.h"

namespace omniforge::intent {
namespace {

using Words = std::vector<std::string>;

// The words of a reply: ASCII letters and digits lower-cased, every byte of
// a non-ASCII character kept (names in any script are words).
Words ReplyWords(std::string_view text) { return words::Tokens(text, words::Tokenizer::kUtf8); }

// A reply as the rules read it: its words, its lower-cased text, and the
// analysis of it.
struct Reply {
  std::string_view message;
  Words words;
  std::string lower;
  const IntentAnalysis& analysis;
};

bool HasAny(const Words& words, std::string_view list) {
  return words::ContainsAnyEntry(words, list, words::Tokenizer::kUtf8);
}

// Words that change what was asked: a reply with one of them is an edit.
bool HasChangeMarker(const Reply& r) {
  return HasAny(r.words, "change_reply") ||
         words::ContainsAnySubstring(r.lower, "change_substrings");
}

bool IsDecline(const Reply& r) {
  return (r.words.size() <= 4 && HasAny(r.words, "decline_reply")) ||
         words::ContainsAnySubstring(r.lower, "decline_substrings");
}

// "no, make it weekly", "no but on fridays": a no that revises the action
// rather than dropping it.
bool Revises(const Reply& r) { return HasAny(r.words, "revise"); }

bool HasConfirmationSignal(const Reply& r) {
  return HasAny(r.words, "confirm_reply") || HasAny(r.words, "confirm_phrases");
}

// A confirmation is nothing but a yes: every word is a yes word, a filler
// word around a yes, or a word of what is pending's own names (`own`). "I'll
// do it myself", "undo it", "do that tomorrow", "ok wait", "explain the
// plan" are not.
bool OnlyConfirms(const Words& words, const std::set<std::string>& own) {
  static const words::WordSet& yes = words::List("confirm_reply");
  static const words::WordSet& filler = words::List("filler_reply");
  for (const std::string& w : words) {
    if (!yes.contains(w) && !filler.contains(w) && own.count(w) == 0) return false;
  }
  return !words.empty();
}

bool IsQuestion(const Reply& r) { return words::EndsWithQuestionMark(r.message); }

// Anything that is no reply to what is pending: a recap when the message
// asks where things stand, else a new request (a question, another ask).
ReplyDecision Elsewhere(const Reply& r, std::string reasoning) {
  ReplyDecision out;
  out.kind = r.analysis.summary_worthy ? ReplyKind::kRecap : ReplyKind::kNewRequest;
  out.reasoning = std::move(reasoning);
  return out;
}

ReplyDecision Decided(ReplyKind kind, std::string reasoning) {
  ReplyDecision out;
  out.kind = kind;
  out.reasoning = std::move(reasoning);
  return out;
}

std::string Lower(std::string_view s) { return words::Lowercase(s); }

// The names the actions act on, lower-cased.
std::set<std::string> TargetNames(const std::vector<PendingActionRef>& actions) {
  std::set<std::string> names;
  for (const PendingActionRef& action : actions) {
    for (const std::string& target : action.targets) names.insert(Lower(target));
  }
  return names;
}

// Whether `value` appears among the actions' settings.
bool SettingsHold(const std::vector<PendingActionRef>& actions, const std::string& value) {
  const std::string lower = Lower(value);
  for (const PendingActionRef& action : actions) {
    for (const auto& [key, setting] : action.settings) {
      if (Lower(setting).find(lower) != std::string::npos) return true;
    }
  }
  return false;
}

// The words the actions may be named by: their tools' and targets' names
// ("yes, delete alpha-reports").
std::set<std::string> OwnWords(const std::vector<PendingActionRef>& actions) {
  std::set<std::string> own;
  for (const PendingActionRef& action : actions) {
    for (std::string& w : ReplyWords(action.tool)) own.insert(std::move(w));
    for (const std::string& target : action.targets) {
      for (std::string& w : ReplyWords(target)) own.insert(std::move(w));
    }
  }
  return own;
}

// What the reply changes that the actions do not have: another agent it
// names, a schedule, recipients or a data source it gives that they do not
// hold.
std::map<std::string, std::string> Changes(const Reply& r, const IntentRequest& request) {
  std::map<std::string, std::string> changes;
  const std::set<std::string> targets = TargetNames(request.pending.actions);
  for (const std::string& name : NamedAgents(r.message, request.agents)) {
    if (targets.count(Lower(name)) == 0) {
      changes.emplace("agent", name);
      break;
    }
  }
  // The reply's own settings: the analysis also carries the flow's from
  // earlier turns, which are no change.
  const std::map<std::string, std::string> said = ExtractEntities(r.message);
  for (const char* key : {"schedule", "recipients", "data_source"}) {
    auto it = said.find(key);
    if (it != said.end() && !it->second.empty() &&
        !SettingsHold(request.pending.actions, it->second)) {
      changes.emplace(key, it->second);
    }
  }
  return changes;
}

// "yes, just alpha" with several actions waiting approves alpha's only.
std::vector<std::string> NamedActions(const Reply& r, const IntentRequest& request) {
  std::set<std::string> named;
  for (const std::string& name : NamedAgents(r.message, request.agents)) named.insert(Lower(name));
  std::vector<std::string> ids;
  if (named.empty()) return ids;
  for (const PendingActionRef& action : request.pending.actions) {
    for (const std::string& target : action.targets) {
      if (named.count(Lower(target)) != 0) {
        ids.push_back(action.id);
        break;
      }
    }
  }
  return ids;
}

// The actions previewed: a question decides nothing; another target or
// setting, a change marker or a correction edit (a bare no beside a change
// marker drops); a no drops; a yes and nothing else approves.
ReplyDecision ReadActionsReply(const Reply& r, const IntentRequest& request) {
  if (IsQuestion(r)) return Elsewhere(r, "a question about what waits: it keeps waiting");
  std::map<std::string, std::string> changes = Changes(r, request);
  const bool corrects = r.analysis.reference == Reference::kCorrection;
  if (!changes.empty() || HasChangeMarker(r) || corrects) {
    // "no, delete beta instead" changes it; "no, don't" only drops it.
    if (IsDecline(r) && changes.empty() && !Revises(r)) {
      return Decided(ReplyKind::kReject, "a no beside a change marker, naming nothing else");
    }
    ReplyDecision out = Decided(ReplyKind::kEdit, "the reply changes what was previewed");
    out.fields = std::move(changes);
    if (auto it = r.analysis.entities.find("corrected_value"); it != r.analysis.entities.end()) {
      out.fields.emplace("corrected_value", it->second);
    }
    return out;
  }
  if (IsDecline(r) || r.analysis.reference == Reference::kDecline) {
    return Decided(ReplyKind::kReject, "the reply declines what was previewed");
  }
  const bool says_yes =
      HasConfirmationSignal(r) || r.analysis.reference == Reference::kConfirmation;
  if (says_yes && OnlyConfirms(r.words, OwnWords(request.pending.actions))) {
    ReplyDecision out = Decided(ReplyKind::kApprove, "the reply says yes and nothing else");
    out.action_ids = NamedActions(r, request);
    return out;
  }
  return Elsewhere(r, "neither a yes, a no nor a change of what was previewed");
}

// A plan under review follows the same rule, with nothing of its own to
// name: a change revises it; a question or another request leaves it
// waiting.
std::optional<ReplyDecision> ReadPlanReply(const Reply& r, PlanStage stage) {
  const bool rejects = IsDecline(r) && !Revises(r);
  switch (stage) {
    case PlanStage::kReview:
      if (rejects) return Decided(ReplyKind::kReject, "the plan is declined");
      if (HasChangeMarker(r)) return Decided(ReplyKind::kEdit, "the plan is to change");
      if (IsQuestion(r)) return std::nullopt;
      if (HasConfirmationSignal(r) && OnlyConfirms(r.words, {})) {
        return Decided(ReplyKind::kApprove, "the plan is approved");
      }
      return std::nullopt;
    case PlanStage::kWaitingOnUser:
      // A question of the user's own is not the answer to the step's.
      if (rejects) return Decided(ReplyKind::kReject, "the plan is dropped");
      if (IsQuestion(r)) return std::nullopt;
      return Decided(ReplyKind::kAnswer, "the answer to the plan step's question");
    case PlanStage::kRunning:
      if (AsksToResume(r.message)) return Decided(ReplyKind::kResume, "finish the plan");
      return std::nullopt;
    case PlanStage::kNone:
      break;
  }
  return std::nullopt;
}

// The agent an answer to "which agent?" picks: by position among the
// options (the user's agents when none were listed), else by name.
std::optional<std::string> AgentAnswer(const Reply& r, const IntentRequest& request) {
  std::vector<std::string> names = request.pending.options;
  if (names.empty()) {
    for (const CatalogItem& agent : request.agents) names.push_back(agent.name);
  }
  if (std::optional<OrdinalRef> ordinal = FindOrdinal(r.message)) {
    const int at = ordinal->Resolve(static_cast<int>(names.size()), -1);
    if (at >= 0) return names[static_cast<size_t>(at)];
    return std::nullopt;
  }
  return MatchCatalogItem(r.message, request.agents);
}

// The option a reply names by its words when it gives no position: the
// one option all of whose words it has ("try again"), or, in a reply of at
// most four words, whose first word it has ("skip", "cancel please"). 0
// when it names none, or more than one.
int OptionNamed(const Reply& r, const std::vector<std::string>& options) {
  const std::set<std::string> said(r.words.begin(), r.words.end());
  int named = 0;
  for (size_t i = 0; i < options.size(); ++i) {
    const Words own = ReplyWords(options[i]);
    if (own.empty()) continue;
    const bool all = std::all_of(own.begin(), own.end(),
                                 [&said](const std::string& w) { return said.contains(w); });
    if (!all && !(r.words.size() <= 4 && said.contains(own.front()))) continue;
    if (named != 0) return 0;
    named = static_cast<int>(i) + 1;
  }
  return named;
}

// The answer to the question asked: what it gives (entities, the agent
// picked, the option's position). One that settles nothing is a recap or,
// for the options, a request of its own when the analysis finds one; else
// it is still the answer (the question may be asked again).
ReplyDecision ReadAnswer(const Reply& r, const IntentRequest& request) {
  ReplyDecision out = Decided(ReplyKind::kAnswer, "the answer to the question asked");
  const QuestionKind kind = request.pending.question;
  if (kind == QuestionKind::kOption) {
    if (std::optional<OrdinalRef> ordinal = FindOrdinal(r.message)) {
      const int size = static_cast<int>(request.pending.options.size());
      out.option = ordinal->Resolve(size == 0 ? 3 : size, -1) + 1;
    } else {
      out.option = OptionNamed(r, request.pending.options);
    }
  } else {
    out.fields = ExtractEntities(r.message);
    if (kind == QuestionKind::kAgent) {
      if (std::optional<std::string> agent = AgentAnswer(r, request)) {
        out.fields["agent_name"] = *agent;
      }
    }
  }
  if (out.option > 0 || !out.fields.empty()) return out;
  if (r.analysis.summary_worthy) return Elsewhere(r, "asks where things stand");
  const bool a_request = r.analysis.action != Action::kUnknown && !r.analysis.is_ambiguous;
  if (kind == QuestionKind::kOption && a_request) {
    return Elsewhere(r, "picks no option: a request of its own");
  }
  out.reasoning = "the answer settles nothing the question asked";
  return out;
}

}  // namespace

bool AsksToResume(std::string_view message) {
  const Words words = words::Tokens(message, words::Tokenizer::kAsciiAlnum);
  if (words.empty() || words.size() > 10) return false;
  return words::ContainsAnyEntry(words, "resume", words::Tokenizer::kAsciiAlnum);
}

std::vector<std::string> NamedAgents(std::string_view message,
                                     const std::vector<CatalogItem>& agents) {
  std::vector<std::string> names;
  names.reserve(agents.size());
  for (const CatalogItem& agent : agents) names.push_back(agent.name);
  return words::MentionedNames(message, names);
}

ReplyDecision ReadReply(const IntentRequest& request, const IntentAnalysis& analysis) {
  const Reply r{request.message, ReplyWords(request.message), Lower(request.message), analysis};
  const PendingContext& pending = request.pending;
  if (!pending.resumable_goal.empty() && AsksToResume(r.message)) {
    return Decided(ReplyKind::kResume, "go on with the flow set aside");
  }
  if (std::optional<ReplyDecision> plan = ReadPlanReply(r, pending.plan)) return *std::move(plan);
  if (!pending.actions.empty()) return ReadActionsReply(r, request);
  if (pending.question != QuestionKind::kNone) return ReadAnswer(r, request);
  if (pending.plan == PlanStage::kNone && AsksToResume(r.message)) {
    return Decided(ReplyKind::kResume, "asks to go on with what was being done");
  }
  return Elsewhere(r, "nothing pending is answered");
}

}  // namespace omniforge::intent
