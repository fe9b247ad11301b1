#include "services/intent/src/analyzer.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "services/intent/src/conversation_context.h"
#include "services/intent/src/cues.h"
#include "services/intent/src/followup_cues.h"
#include "services/intent/src/rules.h"
#include "services/intent/src/text.h"

namespace omniforge::intent {
namespace {

// Names of the answers the model gives when no rule applies (beside those
// of rules.h).
constexpr std::string_view kNoKnownWordsRule = "no_known_words";
constexpr std::string_view kModelRule = "model";
constexpr std::string_view kModelNamedAgentVerbRule = "model_named_agent_verb";
constexpr std::string_view kModelImperativeCueRule = "model_imperative_cue";
constexpr std::string_view kModelStandingInstructionRule = "model_standing_instruction";
constexpr std::string_view kModelSelfContainedTaskRule = "model_self_contained_task";
constexpr std::string_view kModelQuestionRule = "model_question";
constexpr std::string_view kModelNamingRule = "model_naming";
constexpr std::string_view kModelStandingChangeRule = "model_standing_change";
constexpr std::string_view kModelRemovalRule = "model_removal_from_output";
constexpr std::string_view kModelAgentSettingRule = "model_agent_setting";
constexpr std::string_view kModelOneShotOrderRule = "model_one_shot_order";

// The confidence when no word of the message is known to the model.
constexpr float kNoKnownWordsConfidence = 0.3f;
// A verb that only makes sense for an existing agent, or an unmistakable
// imperative, outranks the model's reading with at least this probability.
constexpr float kOverrideFloor = 0.6f;
// An imperative cue overrides the model only when the model is below this.
constexpr float kImperativeCueBelow = 0.7f;
// A runner-up below this is no alternative.
constexpr float kAlternativeFloor = 0.05f;

std::string AgentPhrase(const std::map<std::string, std::string>& entities,
                        std::string_view fallback) {
  auto it = entities.find("agent_name");
  return it != entities.end() ? it->second : std::string(fallback);
}

std::string ActionChoice(Action action, const std::map<std::string, std::string>& e) {
  auto get = [&](const char* key) {
    auto it = e.find(key);
    return it == e.end() ? std::string() : it->second;
  };
  std::string out;
  switch (action) {
    case Action::kCreateAgent:
      out = "set up a new agent";
      if (!get("data_source").empty()) absl::StrAppend(&out, " for ", get("data_source"));
      if (!get("schedule").empty()) absl::StrAppend(&out, " that runs ", get("schedule"));
      return out;
    case Action::kUpdateAgent:
      return "change " + AgentPhrase(e, "one of your existing agents");
    case Action::kCreateSkill:
      out = "add a reusable skill";
      if (!get("data_source").empty()) absl::StrAppend(&out, " for ", get("data_source"));
      return out;
    case Action::kExecuteTask:
      return "run " + AgentPhrase(e, "it") + " now";
    case Action::kQueryInfo:
      return e.contains("agent_name") ? "look up how " + get("agent_name") + " is doing"
                                      : "look that up for you";
    case Action::kManagePlatform:
      return e.contains("agent_name") ? "pause, resume or remove " + get("agent_name")
                                      : "change a workspace setting";
    case Action::kConversation:
      return "just talk it through";
    case Action::kUnknown:
      return "something else";
  }
  return "something else";
}

// The reasoning with the name of the rule that answered, for logs and the
// planner.
std::string WithRule(std::string_view reasoning, std::string_view rule) {
  return std::string(reasoning) + " [rule: " + std::string(rule) + "]";
}

template <typename Input>
LocalResult Answered(const Rule<Input>& rule, Source source, RuleAnswer answer) {
  LocalResult result;
  result.rule = rule.name;
  IntentAnalysis& a = result.analysis;
  a.source = source;
  a.action = answer.action;
  a.confidence = rule.confidence;
  a.entities = std::move(answer.entities);
  a.reasoning = WithRule(answer.reasoning, rule.name);
  a.is_ambiguous = answer.is_ambiguous;
  a.alternative = answer.alternative;
  a.clarifying_question = std::move(answer.clarifying_question);
  a.reference = answer.reference;
  a.summary_worthy = answer.summary_worthy;
  return result;
}

// The model's top two actions for a message, after the checks that may
// override its reading, and the name of the one that did.
struct ModelReading {
  Prediction top;
  std::optional<Prediction> second;
  std::string_view rule = kModelRule;
};

// The model's probability for `action`, at least kOverrideFloor: what an
// answer that overrides the model's top reading gets.
float OverrideProbability(const std::vector<Prediction>& ranked, Action action) {
  float p = 0;
  for (const Prediction& prediction : ranked) {
    if (prediction.action == action) p = prediction.probability;
  }
  return std::max(kOverrideFloor, p);
}

bool IsAction(Action a) {
  return a == Action::kCreateAgent || a == Action::kUpdateAgent || a == Action::kExecuteTask ||
         a == Action::kManagePlatform;
}

// What the grammar of the message says against the model's reading, with
// the name of the reading, or nullopt: a question about how things stand
// asks for no work; a name given with a verb of naming renames; an order
// to pass something on once, with no trigger or recurrence, is done now;
// a verb of changing one of an agent's settings changes it; taking
// something out of what an agent sends changes that agent, and so does a
// marker of a lasting change ("instead", "from now on") on a task.
std::optional<std::pair<Action, std::string_view>> GrammarReading(const Situation& s, Action top) {
  const std::vector<std::string_view>& words = s.message.masked_words;
  if (IsAction(top) && AsksHowThingsStand(words)) {
    return std::pair{Action::kQueryInfo, kModelQuestionRule};
  }
  if (std::optional<Action> naming = NamingAction(words, s.message.masked)) {
    return std::pair{*naming, kModelNamingRule};
  }
  // Read as anything but a new agent, an order to pass something on is
  // one only with something to pass on and no lifecycle verb ("tell me a
  // story" asks the assistant; "give me billing admin", "share the digest
  // with tom" are lifecycle).
  const bool one_shot_reading =
      top == Action::kCreateAgent ||
      ((top == Action::kUnknown || top == Action::kConversation ||
        top == Action::kManagePlatform) &&
       s.verb != Action::kManagePlatform && words.size() >= 3 &&
       !ContainsAnyPhrase(words, {"tell me", "tell us", "give me", "give us", "remind me"}));
  if (one_shot_reading && IsOneShotOrder(words)) {
    return std::pair{Action::kExecuteTask, kModelOneShotOrderRule};
  }
  if (top == Action::kManagePlatform && ChangesAnAgentSetting(words)) {
    return std::pair{Action::kUpdateAgent, kModelAgentSettingRule};
  }
  if (top != Action::kQueryInfo && RemovesFromAgentOutput(words)) {
    return std::pair{Action::kUpdateAgent, kModelRemovalRule};
  }
  if (top == Action::kExecuteTask && AsksStandingChange(words)) {
    return std::pair{Action::kUpdateAgent, kModelStandingChangeRule};
  }
  return std::nullopt;
}

ModelReading ReadModel(const Situation& s, const std::vector<Prediction>& ranked) {
  ModelReading r{ranked[0]};
  if (ranked.size() > 1) r.second = ranked[1];
  // An existing agent named with a verb that only makes sense for existing
  // agents is not a request for a new one.
  if (s.named_agent &&
      (r.top.action == Action::kCreateAgent || r.top.action == Action::kCreateSkill ||
       r.top.action == Action::kUnknown || r.top.action == Action::kConversation)) {
    if (s.agent_verb) {
      r.second = r.top;
      r.top = Prediction{*s.agent_verb, std::max(r.top.probability, kOverrideFloor)};
      r.rule = kModelNamedAgentVerbRule;
    }
  }
  // An unsure model yields to a command that starts with an unmistakable
  // lifecycle or run verb ("halt the etl", "kick off the invoice run") and
  // to an explicit request for a new skill.
  if (r.top.probability < kImperativeCueBelow) {
    std::optional<Action> cue = ImperativeCue(s.message.masked_words);
    if (cue && *cue != r.top.action) {
      r.second = r.top;
      r.top = Prediction{*cue, OverrideProbability(ranked, *cue)};
      r.rule = kModelImperativeCueRule;
    }
  }
  // Loose matches ("the headline" beside headline-ab-tester) do not count.
  const bool names_agent_exactly =
      s.named_agent &&
      absl::StrContains(Lowercase(s.message.request.message), Lowercase(*s.named_agent));
  // A standing instruction with a trigger and work to do is a new agent
  // ("every monday at 8, email each adjuster their open claims"), unless
  // the message spells out one of the user's agents. A task on material
  // the message carries ("translate into french: ...") is done once, now.
  if (r.top.action != Action::kCreateAgent && r.top.action != Action::kCreateSkill &&
      !names_agent_exactly && IsStandingInstruction(s.message.masked_words, s.message.masked)) {
    r.second = r.top;
    r.top = Prediction{Action::kCreateAgent, std::max(kOverrideFloor, r.top.probability)};
    r.rule = kModelStandingInstructionRule;
  } else if (r.top.action != Action::kExecuteTask && !names_agent_exactly &&
             IsSelfContainedTask(s.message.masked_words, s.message.masked)) {
    r.second = r.top;
    r.top = Prediction{Action::kExecuteTask, std::max(kOverrideFloor, r.top.probability)};
    r.rule = kModelSelfContainedTaskRule;
  }
  const auto grammar = GrammarReading(s, r.top.action);
  if (grammar && grammar->first != r.top.action) {
    r.second = r.top;
    r.top = Prediction{grammar->first, OverrideProbability(ranked, grammar->first)};
    r.rule = grammar->second;
  }
  return r;
}

// Why the LLM (when configured) should look at a model answer, or empty.
std::string LlmReason(const Situation& s, const IntentAnalysis& a, const AnalyzerOptions& options) {
  const Context& c = s.context;
  if (s.pronoun && !c.last_agent && c.has_history) return "a pronoun with no agent to refer to";
  if (a.is_ambiguous || a.confidence < options.llm_threshold) return "low local confidence";
  if (s.message.words.size() <= 3 && c.has_history) return "a short follow-up";
  return "";
}

LocalResult NoKnownWords(const Situation& s) {
  LocalResult result;
  result.rule = kNoKnownWordsRule;
  IntentAnalysis& a = result.analysis;
  a.entities = s.entities;
  a.action = Action::kUnknown;
  a.confidence = kNoKnownWordsConfidence;
  a.is_ambiguous = true;
  a.reasoning = WithRule("No word of the message is known to the model.", kNoKnownWordsRule);
  a.clarifying_question = ClarifyingQuestion(Action::kUnknown, std::nullopt, a.entities);
  result.needs_llm = true;
  result.llm_reason = "unknown words";
  return result;
}

// The model's answer, on the message alone, when no rule applies.
LocalResult ModelAnswer(const Situation& s, const AnalyzerOptions& options) {
  const std::vector<Prediction> ranked = s.classifier.Predict(s.message.request.message);
  if (ranked.empty()) return NoKnownWords(s);
  const auto [top, second, rule] = ReadModel(s, ranked);
  LocalResult result;
  result.rule = rule;
  IntentAnalysis& a = result.analysis;
  a.entities = s.entities;
  a.action = top.action;
  a.confidence = top.probability;
  if (second && second->probability >= kAlternativeFloor && second->action != top.action) {
    a.alternative = second->action;
  }
  const float second_p = second ? second->probability : 0.0f;
  a.is_ambiguous = top.probability < options.low_confidence ||
                   top.probability - second_p < options.ambiguity_margin;
  a.reasoning =
      absl::StrCat("The local model reads this as ", std::string(ActionPhrase(top.action)), " (",
                   std::lround(top.probability * 100), "%)");
  if (a.alternative) {
    absl::StrAppend(&a.reasoning, "; runner-up: ", std::string(ActionPhrase(*a.alternative)), " (",
                    std::lround(second_p * 100), "%)");
  }
  a.reasoning = WithRule(absl::StrCat(a.reasoning, "."), rule);
  if (a.is_ambiguous) {
    a.clarifying_question = ClarifyingQuestion(top.action, a.alternative, a.entities);
  }
  // A short follow-up about the agent just discussed ("why?", "how much did
  // that cost?") is about that agent.
  // "message them now", "how long have those been waiting?" lean on it too.
  const bool leans_on_history =
      s.message.words.size() <= 6 ||
      ContainsAnyPhrase(s.message.words, {"them", "those", "these", "they", "it"});
  if (!a.entities.contains("agent_name") && s.context.last_agent && leans_on_history &&
      (a.action == Action::kQueryInfo || a.action == Action::kExecuteTask ||
       a.action == Action::kManagePlatform || a.action == Action::kUpdateAgent)) {
    a.entities["agent_name"] = *s.context.last_agent;
  }
  result.llm_reason = LlmReason(s, a, options);
  result.needs_llm = !result.llm_reason.empty();
  return result;
}

}  // namespace

std::string ClarifyingQuestion(Action first, std::optional<Action> second,
                               const std::map<std::string, std::string>& entities) {
  if (!second || *second == first) {
    return "Just to be sure: should I " + ActionChoice(first, entities) + "?";
  }
  return "Should I " + ActionChoice(first, entities) + ", or " + ActionChoice(*second, entities) +
         "?";
}

LocalAnalyzer::LocalAnalyzer(const LocalClassifier& classifier, AnalyzerOptions options)
    : classifier_(classifier), options_(options) {}

LocalResult LocalAnalyzer::Analyze(const IntentRequest& request) const {
  // "anyway, unrelated: ..." reads only the new request, as if it opened
  // a conversation; "thank you!! could you also create ..." the request
  // after the thanks, in the same conversation.
  if (std::optional<ReadPart> part = PartToRead(request)) {
    LocalResult result = Analyze(part->request);
    result.analysis.reasoning =
        (part->new_topic ? "A new topic: only the request after the marker is read. "
                         : "Thanks first: the request after them is read. ") +
        result.analysis.reasoning;
    return result;
  }
  const Message message(request);
  for (const Rule<Message>& rule : FastPathRules()) {
    if (std::optional<RuleAnswer> answer = rule.apply(message)) {
      return Answered(rule, Source::kFastPath, *std::move(answer));
    }
  }
  const Context context = ReadContext(request, classifier_, options_.history_turns);
  const Situation situation = ReadSituation(message, context, classifier_);
  for (const Rule<Situation>& rule : ReferenceRules()) {
    if (std::optional<RuleAnswer> answer = rule.apply(situation)) {
      return Answered(rule, Source::kLocalModel, *std::move(answer));
    }
  }
  return ModelAnswer(situation, options_);
}

}  // namespace omniforge::intent
