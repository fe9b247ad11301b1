#include "services/intent/src/rules.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "libs/words/lists.h"
#include "services/intent/src/cues.h"
#include "services/intent/src/followup_cues.h"
#include "services/intent/src/send_slots.h"
#include "services/intent/src/text.h"

namespace omniforge::intent {
namespace {

using WordSet = words::WordSet;

void Merge(std::map<std::string, std::string>& into,
           const std::map<std::string, std::string>& from) {
  for (const auto& [k, v] : from) into[k] = v;
}

// The list item whose name or description shares the most distinctive
// words with the message ("the salesforce one"); nullopt on a tie.
std::optional<std::string> BestDescribed(const std::vector<std::string_view>& words,
                                         const std::vector<std::string>& list,
                                         const std::vector<CatalogItem>& agents) {
  static const std::set<std::string_view> ignore = {
      "the",    "one",   "ones", "no",   "not",   "that", "this",  "a",   "an", "other",
      "please", "ok",    "okay", "yes",  "i",     "mean", "meant", "?",   "it", "of",
      "for",    "to",    "and",  "with", "agent", "bot",  "thing", "run", "do", "is",
      "was",    "which", "on",   "in",   "my",    "our",  "sorry"};
  std::optional<std::string> best;
  int best_score = 0;
  bool tie = false;
  for (const std::string& name : list) {
    std::string text = name;
    for (const CatalogItem& a : agents) {
      if (a.name == name) text += " " + a.description;
    }
    const std::string normalized = NormalizeText(text);
    const std::vector<std::string_view> item_words = Words(normalized);
    int score = 0;
    for (std::string_view w : words) {
      if (ignore.contains(w) || w.size() < 3) continue;
      // "routing" finds "router": the same first four letters of longer words.
      const bool found = std::any_of(item_words.begin(), item_words.end(), [&](std::string_view x) {
        return x == w || (x.size() >= 5 && w.size() >= 5 && x.substr(0, 4) == w.substr(0, 4));
      });
      if (found) ++score;
    }
    if (score > best_score) {
      best = name;
      best_score = score;
      tie = false;
    } else if (score > 0 && score == best_score) {
      tie = true;
    }
  }
  if (tie) return std::nullopt;
  return best;
}

// An answer of a rule that keeps the message's entities.
RuleAnswer Answer(const Situation& s, Action action, Reference reference, std::string why) {
  RuleAnswer out;
  out.action = action;
  out.reference = reference;
  out.reasoning = std::move(why);
  out.entities = s.entities;
  return out;
}

std::string Phrase(Action action) { return std::string(ActionPhrase(action)); }

bool NewAgentOrSkill(Action action) {
  return action == Action::kCreateAgent || action == Action::kCreateSkill;
}

// What a reference asks of an agent the user already has: creating and
// talking are not, so those become a question about it.
Action ForExistingAgent(Action action) {
  if (NewAgentOrSkill(action) || action == Action::kConversation || action == Action::kUnknown) {
    return Action::kQueryInfo;
  }
  return action;
}

bool MentionsSkill(const std::vector<std::string_view>& words) {
  return ContainsPhrase(words, "skill") || ContainsPhrase(words, "skills");
}

// ------------------------------------------------------------- fast path

std::optional<RuleAnswer> EmptyMessage(const Message& m) {
  if (!std::all_of(m.words.begin(), m.words.end(), [](std::string_view w) { return w == "?"; })) {
    return std::nullopt;
  }
  RuleAnswer out;
  out.action = Action::kUnknown;
  out.is_ambiguous = true;
  out.reasoning = "The message is empty.";
  std::vector<std::string> names;
  for (size_t i = 0; i < m.request.agents.size() && i < 3; ++i) {
    names.push_back(m.request.agents[i].name);
  }
  out.clarifying_question =
      names.empty()
          ? "What would you like to do? I can set up a new agent, run or change one, or answer "
            "questions about your workspace."
          : "What would you like to do? I can set up a new agent, run or change one of yours (" +
                absl::StrJoin(names, ", ") + "), or answer questions about them.";
  return out;
}

// "@name" naming one of the user's agents, and where the mention ends.
struct Mention {
  const CatalogItem* agent = nullptr;
  size_t at = 0;
  size_t end = 0;
};

std::optional<Mention> FindMention(const IntentRequest& request) {
  const std::string& m = request.message;
  for (size_t at = m.find('@'); at != std::string::npos; at = m.find('@', at + 1)) {
    if (at > 0 &&
        (absl::ascii_isalnum(static_cast<unsigned char>(m[at - 1])) || m[at - 1] == '.')) {
      continue;  // an e-mail address
    }
    size_t end = at + 1;
    while (end < m.size() && (absl::ascii_isalnum(static_cast<unsigned char>(m[end])) ||
                              m[end] == '-' || m[end] == '_' || m[end] == '.')) {
      ++end;
    }
    while (end > at + 1 && m[end - 1] == '.') --end;  // a sentence's full stop
    const std::string name = m.substr(at + 1, end - at - 1);
    auto agent =
        std::find_if(request.agents.begin(), request.agents.end(),
                     [&](const CatalogItem& c) { return absl::EqualsIgnoreCase(c.name, name); });
    if (agent != request.agents.end()) return Mention{&*agent, at, end};
  }
  return std::nullopt;
}

// What the rest of a message addressed to an agent asks of it: "@x" alone
// or with a task runs it; a verb that says otherwise wins.
Action MentionAction(const std::string& rest) {
  const std::optional<Action> verb = VerbAction(rest);
  Action action = verb && !NewAgentOrSkill(*verb) && *verb != Action::kUpdateAgent
                      ? *verb
                      : Action::kExecuteTask;
  if (verb == Action::kUpdateAgent) {
    const std::string rest_normalized = NormalizeText(rest);
    const std::vector<std::string_view> rest_words = Words(rest_normalized);
    // "@x change the schedule" is a change; "@x make a summary" is a task.
    for (std::string_view cue : {"change", "update", "edit", "modify", "rename", "reschedule",
                                 "configure", "switch", "tweak", "adjust"}) {
      if (FindPhrase(rest_words, cue) >= 0 && FindPhrase(rest_words, cue) <= 2) {
        action = Action::kUpdateAgent;
      }
    }
  }
  // "@statute-tracker also warn at 30 days, not just 90", "@x from now on
  // cc legal": what it does from now on changes.
  const std::string normalized = NormalizeText(rest);
  const std::vector<std::string_view> words = Words(normalized);
  if (action == Action::kExecuteTask &&
      (AsksStandingChange(words) ||
       ContainsAnyPhrase(words, {"not just", "also", "always", "never", "no more"}))) {
    action = Action::kUpdateAgent;
  }
  return action;
}

std::optional<RuleAnswer> AddressedAgent(const Message& m) {
  const std::optional<Mention> mention = FindMention(m.request);
  if (!mention) return std::nullopt;
  // "@x" alone answering "which agent should I pause?" is that answer, read
  // with the history.
  const std::vector<HistoryTurn>& history = m.request.history;
  if (m.words.size() <= 3 && !history.empty() && history.back().role == Role::kAssistant &&
      absl::StrContains(Lowercase(history.back().content), "which") &&
      absl::StrContains(history.back().content, "?")) {
    return std::nullopt;
  }
  const std::string& name = mention->agent->name;
  const std::string& text = m.request.message;
  RuleAnswer out;
  out.entities = m.entities;
  out.entities["agent_name"] = name;
  out.action = MentionAction(text.substr(0, mention->at) + " " + text.substr(mention->end));
  out.reasoning =
      out.action == Action::kExecuteTask
          ? "The message addresses @" + name + " directly, so it is a task for it."
          : "The message addresses @" + name + " and asks to " + Phrase(out.action) + ".";
  return out;
}

// --------------------------------------------- offers, recaps, closings

std::optional<RuleAnswer> Recap(const Situation& s) {
  // About the conversation itself, when there is one and the message
  // names none of the user's agents ("what did we agree for the digest?"
  // asks about the agent).
  const bool about_conversation =
      s.context.has_history && (AsksForConversationSummary(s.message.words) ||
                                (!s.named_agent && (AsksAboutTheConversation(s.message.words) ||
                                                    AsksWhereThingsStand(s.message.words))));
  // "the second thing you said — what does that one check?" picks.
  if ((!IsRecap(s.message.words) && !about_conversation) || s.ordinal) return std::nullopt;
  RuleAnswer out = Answer(s, Action::kConversation, Reference::kRecap,
                          "The user wants to pick the conversation back up: a recap is due.");
  out.summary_worthy = true;
  return out;
}

std::optional<RuleAnswer> Closing(const Situation& s) {
  if (!IsClosing(s.message.words)) return std::nullopt;
  const std::optional<Action>& offer = s.context.proposal;
  RuleAnswer out = Answer(s, Action::kConversation, offer ? Reference::kDecline : Reference::kNone,
                          "The user has nothing more to ask for now.");
  out.alternative = offer;
  return out;
}

// "yes, as a skill" to an offer to set up an agent.
std::optional<RuleAnswer> ConfirmOfferAsSkill(const Situation& s) {
  const Context& c = s.context;
  if (!c.proposal || !IsConfirmation(s.message.words) || *c.proposal != Action::kCreateAgent ||
      !MentionsSkill(s.message.words)) {
    return std::nullopt;
  }
  RuleAnswer out = Answer(s, Action::kCreateSkill, Reference::kConfirmation,
                          "The user said yes to the assistant's offer, for a skill.");
  Merge(out.entities, c.proposal_entities);
  return out;
}

std::vector<std::string_view> MaskListed(const Situation& s);

// The clauses of a message as written: split at , . ! ; and at a dash
// between spaces, each normalized.
std::vector<std::string> Clauses(std::string_view message) {
  std::vector<std::string> out;
  std::string current;
  auto flush = [&] {
    std::string normalized = NormalizeText(current);
    if (!normalized.empty()) out.push_back(std::move(normalized));
    current.clear();
  };
  for (size_t i = 0; i < message.size(); ++i) {
    const char ch = message[i];
    const bool dash = ch == '-' && i > 0 && message[i - 1] == ' ' && i + 1 < message.size() &&
                      message[i + 1] == ' ';
    const bool long_dash = message.substr(i, 3) == "\u2014" || message.substr(i, 3) == "\u2013";
    if (ch == ',' || ch == '.' || ch == '!' || ch == ';' || dash || long_dash) {
      flush();
      if (long_dash) i += 2;
    } else {
      current += ch;
    }
  }
  flush();
  return out;
}

// "looks fine, email the draft", "ok good, forward it to the journalist":
// a yes, then, in the next clause, a send with an object or a run, when
// `offered` was no run.
bool NewRequestAfterYes(const Situation& s, Action offered) {
  const std::vector<std::string> clauses = Clauses(s.message.request.message);
  if (clauses.size() < 2) return false;
  const std::vector<std::string_view> yes = Words(clauses[0]);
  const bool approves =
      IsConfirmation(yes) || (yes.size() <= 3 && !ContainsAnyPhrase(yes, {"not", "dont", "no"}) &&
                              ContainsAnyPhrase(yes, {"good", "fine", "great", "perfect", "nice",
                                                      "ok", "okay", "cool", "lgtm"}));
  if (!approves) return false;
  for (size_t i = 1; i < clauses.size(); ++i) {
    const std::string& normalized = clauses[i];
    const std::vector<std::string_view> words = Words(normalized);
    // A send with an object ("email the draft", "forward it to the
    // journalist"), not a time for it ("send at 4pm tho"), or a run.
    const bool send = IsSendVerbForm(words.front()) && words.size() >= 2 &&
                      !OneOf(words[1], {"at", "on", "by", "every", "daily", "weekly", "monthly",
                                        "tho", "though", "from", "before", "after", "later"});
    const bool run = LeadingVerb(words) && VerbAction(normalized) == Action::kExecuteTask;
    // "send it to cfo@acme.io too": one more recipient for what is offered.
    const bool adds = ContainsAnyPhrase(words, {"too", "also", "as well", "instead", "only"});
    return (send || run) && !adds && offered != Action::kExecuteTask;
  }
  return false;
}

// "yes, do that": what the assistant offered, with its entities.
// The assistant's last turn offers to do something to "it" or "this
// agent" ("Would you like me to delete it?").
bool OfferPointsAtAgent(const Situation& s) {
  const std::vector<HistoryTurn>& history = s.message.request.history;
  if (history.empty() || history.back().role != Role::kAssistant) return false;
  const std::string normalized = NormalizeText(history.back().content);
  return words::ContainsAnyEntry(Words(normalized), "offer_agent_pointers");
}

// A clause that is only a yes (`yes`) or only a no, beside words that
// soften it (reply_clause_hedges): "that would be perfect honestly", "go
// ahead", "hmm tempting but no".
bool ClauseReplies(const std::vector<std::string_view>& words, bool yes) {
  constexpr size_t kMaxReplyClauseWords = 6;
  if (words.empty() || words.size() > kMaxReplyClauseWords) return false;
  static const WordSet& hedges = words::List("reply_clause_hedges");
  bool said = false;
  for (std::string_view w : words) {
    const bool reply =
        yes ? words::Contains("confirm_intent", w) : words::Contains("reply_clause_noes", w);
    said = said || reply;
    if (!reply && !hedges.contains(w)) return false;
  }
  return said;
}

// A clause that only remarks: no figure (a value: "no, 45", "hmm no, 36
// hours"), no verb leading it, no question, nothing asked for ("just tell
// me when it runs").
bool OnlyRemarks(const std::vector<std::string_view>& words) {
  return !ContainsPhrase(words, "?") && !LeadingVerb(words) &&
         std::none_of(words.begin(), words.end(),
                      [](std::string_view w) {
                        return std::any_of(w.begin(), w.end(), [](char c) {
                          return std::isdigit(static_cast<unsigned char>(c)) != 0;
                        });
                      }) &&
         !ContainsAnyPhrase(words, {"tell me", "show me", "can you", "could you", "please",
                                    "instead", "make it", "should"});
}

// "That makes sense. Please proceed.", "just reconnected it, go ahead",
// "hmm tempting but no, honestly those emails are half the reason we talk
// to buyers": one of the first clauses replies by itself and the others
// only remark (no verb leading a request, no question).
bool RepliesInAClause(const Situation& s, bool yes) {
  constexpr size_t kReplyClauses = 3;
  // "The PTO reminder, please.": an answer naming an agent, not a bare yes.
  if (yes && s.named_agent) return false;
  const std::vector<std::string> clauses = Clauses(s.message.request.message);
  if (clauses.size() < 2) return false;
  std::optional<size_t> reply;
  for (size_t i = 0; i < clauses.size() && i < kReplyClauses && !reply; ++i) {
    if (ClauseReplies(Words(clauses[i]), yes)) reply = i;
  }
  if (!reply) return false;
  // A no gives its reason in so many words ("the director prefers to call
  // those donors personally"); a short clause beside it may be a new value.
  constexpr size_t kMinReasonWords = 4;
  bool reason = yes;
  for (size_t i = 0; i < clauses.size(); ++i) {
    if (i == *reply) continue;
    reason = reason || Words(clauses[i]).size() >= kMinReasonWords;
  }
  if (!reason) return false;
  for (size_t i = 0; i < clauses.size(); ++i) {
    if (i == *reply) continue;
    const std::vector<std::string_view> words = Words(clauses[i]);
    // A yes beside a no is no reply; nor is a no beside a value or a request.
    if (words::ContainsAnyEntry(words, "reply_clause_noes") ||
        (yes ? ContainsPhrase(words, "?") || LeadingVerb(words) : !OnlyRemarks(words))) {
      return false;
    }
  }
  return true;
}

std::optional<RuleAnswer> ConfirmOffer(const Situation& s) {
  const Context& c = s.context;
  if (!c.proposal || !(IsConfirmation(s.message.words) || RepliesInAClause(s, true))) {
    return std::nullopt;
  }
  // "yeah show details for the one before uptime-pinger": a yes that goes
  // on to pick from the list is the pick.
  if (!c.last_list.empty() && ReadRelativePosition(MaskListed(s))) return std::nullopt;
  if (NewRequestAfterYes(s, *c.proposal)) return std::nullopt;
  RuleAnswer out =
      Answer(s, *c.proposal, Reference::kConfirmation,
             "The user said yes to the assistant's offer to " + Phrase(*c.proposal) + ".");
  // A word of an agent's name in a yes to a draft of something new ("Ok
  // but without the amount") names no agent.
  const bool named_exactly =
      s.named_agent &&
      absl::StrContains(Lowercase(s.message.request.message), Lowercase(*s.named_agent));
  if (NewAgentOrSkill(*c.proposal) && !named_exactly) out.entities.erase("agent_name");
  Merge(out.entities, c.proposal_entities);
  // "Want me to send it now?" about the agent the conversation is on.
  // "Would you like me to delete it?" too; a lifecycle offer that points at
  // nothing is about the workspace.
  if (!out.entities.contains("agent_name") && c.last_agent && !NewAgentOrSkill(*c.proposal) &&
      (*c.proposal != Action::kManagePlatform || OfferPointsAtAgent(s))) {
    out.entities["agent_name"] = *c.last_agent;
  }
  // "yes, but at 9am": the offer, with one value changed.
  if (CarriesEdit(s.message.request.message)) {
    if (std::string value = CorrectedValue(s.message.request.message); !value.empty()) {
      out.entities["corrected_value"] = value;
    }
  }
  return out;
}

std::optional<RuleAnswer> DeclineOffer(const Situation& s) {
  const Context& c = s.context;
  if (!c.proposal || !(IsDecline(s.message.words) || RepliesInAClause(s, false))) {
    return std::nullopt;
  }
  RuleAnswer out =
      Answer(s, Action::kConversation, Reference::kDecline,
             "The user declined the assistant's offer to " + Phrase(*c.proposal) + ".");
  // A word of the no may match an agent's name ("leave it", leave-tracker):
  // a decline acts on nothing.
  out.entities.erase("agent_name");
  out.alternative = c.proposal;
  return out;
}

// "lease renewals", "FOIA" in answer to "Which agent should I pause?": the
// agent named, for what the user had asked (else what the question's verb
// says).
std::optional<RuleAnswer> AnswerToWhichAgent(const Situation& s) {
  const std::vector<HistoryTurn>& history = s.message.request.history;
  if (history.empty() || history.back().role != Role::kAssistant || s.ordinal) {
    return std::nullopt;  // "the first, ...": a pick from the list
  }
  // The answer is the first clause; a reason may follow ("the payroll
  // export one, accountant does it now").
  const std::string answer = NormalizeText(SplitAny(s.message.request.message, ",.;!(")[0]);
  const std::vector<std::string_view> answer_words = Words(answer);
  if (answer_words.empty() || answer_words.size() > 8 || s.message.words.size() > 14) {
    return std::nullopt;
  }
  const std::string& question = history.back().content;
  const std::string normalized = NormalizeText(question);
  const std::vector<std::string_view> question_words = Words(normalized);
  if (question.find('?') == std::string::npos || !ContainsPhrase(question_words, "which")) {
    return std::nullopt;
  }
  // A name, else a description of one of the user's agents ("the xero
  // categorising bot", "royalties").
  std::optional<std::string> agent = s.named_agent;
  if (!agent) {
    std::vector<std::string> names;
    for (const CatalogItem& item : s.message.request.agents) names.push_back(item.name);
    agent = BestDescribed(answer_words, names, s.message.request.agents);
  }
  if (!agent) return std::nullopt;
  // "run the grant tracker" says what it wants; "grant tracker" is a name.
  if (LeadingVerb(s.message.words) &&
      !absl::StrContains(*agent, std::string(s.message.words.front()))) {
    return std::nullopt;
  }
  // The verb of the request the question followed ("move one of my agents
  // to 7am") says more than the model's reading of it.
  std::optional<Action> wanted;
  if (history.size() >= 2 && history[history.size() - 2].role == Role::kUser) {
    wanted = VerbAction(history[history.size() - 2].content);
  }
  if (!wanted || NewAgentOrSkill(*wanted)) wanted = s.context.previous_action;
  if (!wanted || NewAgentOrSkill(*wanted) || *wanted == Action::kConversation ||
      *wanted == Action::kUnknown) {
    wanted = VerbAction(question);
  }
  const Action action = ForExistingAgent(wanted.value_or(Action::kQueryInfo));
  RuleAnswer out = Answer(s, action, Reference::kOrdinal,
                          "The user answers the assistant's question with " + *agent +
                              ", for what was asked: " + Phrase(action) + ".");
  out.entities["agent_name"] = *agent;
  return out;
}

// "hmm no, not right now", "pass", "let's park that" to an offer, a draft
// in progress or a question of the assistant's: nothing to do.
std::optional<RuleAnswer> RefuseOffer(const Situation& s) {
  const Context& c = s.context;
  const std::vector<HistoryTurn>& history = s.message.request.history;
  const bool asked = !history.empty() && history.back().role == Role::kAssistant &&
                     history.back().content.find('?') != std::string::npos;
  if (!(c.proposal || c.in_progress || asked) ||
      !(OpensWithRefusal(s.message.words) || DoesItThemselves(s.message.words))) {
    return std::nullopt;
  }
  const std::optional<Action> declined = c.proposal ? c.proposal : c.in_progress;
  RuleAnswer out = Answer(s, Action::kConversation, Reference::kDecline,
                          "The user turned down what the assistant offered.");
  out.entities.erase("agent_name");
  out.alternative = declined;
  return out;
}

// ------------------------------------------------ picks from a list

// The position of the agent last talked about in the last list, or -1.
int CurrentIndex(const Context& c) {
  int current = -1;
  const int size = static_cast<int>(c.last_list.size());
  for (int i = 0; i < size && c.last_agent; ++i) {
    if (c.last_list[i] == *c.last_agent) current = i;
  }
  return current;
}

// What a pick asks done with the item: the verb of a clause beside the
// one that picks ("the one listed before the trash one, run it on ..."),
// else the message's; a standing change ("make it cc dr patel from now
// on") changes the agent. Whether the verb was said outright goes to
// `is_explicit`.
std::optional<Action> PickVerb(const Situation& s, bool& is_explicit) {
  std::optional<Action> verb = s.agent_verb;
  is_explicit = s.verb_is_explicit;
  // A question asks about the pick, whatever its clauses say.
  if (ContainsPhrase(s.message.words, "?")) return verb;
  const std::vector<std::string_view> clauses = SplitAny(s.message.request.message, ",;:.!?");
  for (size_t i = 0; clauses.size() >= 2 && i < clauses.size(); ++i) {
    const std::string normalized = NormalizeText(clauses[i]);
    const std::vector<std::string_view> words = Words(normalized);
    if (words.empty() || FindOrdinal(clauses[i]) || ReadRelativePosition(words)) continue;
    const std::optional<Action> own = VerbAction(clauses[i]);
    if (own && !NewAgentOrSkill(*own) && VerbIsExplicit(clauses[i])) {
      verb = own;
      is_explicit = true;
      break;
    }
  }
  if ((!verb || verb == Action::kExecuteTask || verb == Action::kQueryInfo) &&
      AsksStandingChange(s.message.words)) {
    verb = Action::kUpdateAgent;
    is_explicit = true;
  }
  return verb;
}

// `picked` from the last list (`how` says how, for the reasoning): for
// what the verb asks, else for what the list was offered for.
RuleAnswer AnswerPick(const Situation& s, const std::string& picked, const std::string& how) {
  const Context& c = s.context;
  bool is_explicit = false;
  const std::optional<Action> verb = PickVerb(s, is_explicit);
  if (verb && !(*verb == Action::kQueryInfo && !is_explicit)) {
    RuleAnswer out = Answer(s, *verb, Reference::kOrdinal,
                            how + " is " + picked + " in the list the assistant gave; the verb " +
                                "asks to " + Phrase(*verb) + ".");
    out.entities["agent_name"] = picked;
    return out;
  }
  // A bare "the second one": what the list was offered for.
  std::optional<Action> wanted = c.list_action;
  if (!wanted && c.proposal) wanted = c.proposal;
  // A pick that says what it wants ("number 2, i need the report before my
  // 1:1"): the model reads the rest of the message.
  if (!wanted && s.content_words >= 5) {
    const std::vector<Prediction> ranked = s.classifier.Predict(s.message.request.message);
    if (!ranked.empty() && ranked[0].probability >= 0.5f &&
        (ranked[0].action == Action::kExecuteTask || ranked[0].action == Action::kUpdateAgent ||
         ranked[0].action == Action::kManagePlatform)) {
      wanted = ranked[0].action;
    }
  }
  if (!wanted) wanted = c.previous_action;
  const Action action = ForExistingAgent(wanted.value_or(Action::kQueryInfo));
  RuleAnswer out =
      Answer(s, action, Reference::kOrdinal,
             how + " picks " + picked +
                 " from the assistant's list, for what was being done: " + Phrase(action) + ".");
  out.entities["agent_name"] = picked;
  return out;
}

// The user's agents the last list holds.
std::vector<CatalogItem> ListedItems(const Situation& s) {
  const Context& c = s.context;
  std::vector<CatalogItem> listed;
  for (const CatalogItem& agent : s.message.request.agents) {
    if (std::find(c.last_list.begin(), c.last_list.end(), agent.name) != c.last_list.end()) {
      listed.push_back(agent);
    }
  }
  return listed;
}

// Where the word at `at` of `masked` (MaskListed: each listed name one
// word) stands in the message's own words: the same word at or after it.
size_t OriginalIndex(const Situation& s, const std::vector<std::string_view>& masked, size_t at) {
  const std::vector<std::string_view>& words = s.message.words;
  if (at >= masked.size()) return words.size();
  for (size_t k = at; k < words.size(); ++k) {
    if (words[k] == masked[at]) return k;
  }
  return words.size();
}

// Where the anchor of a relative position stands in the last list: an
// item named exactly, or by its distinctive words ("the payroll one"); a
// position ("the last", "number 3"); the item talked about last ("the one
// above it"). -1 when nothing anchors.
int RelativeAnchor(const Situation& s, const std::vector<int>& named, size_t at) {
  const Context& c = s.context;
  if (!named.empty()) return named.front();
  const int size = static_cast<int>(c.last_list.size());
  const std::vector<CatalogItem> listed = ListedItems(s);
  // The words right after the direction first ("after the eta tracker,
  // bump it to warn 3 days before free time runs out").
  constexpr size_t kAnchorWords = 4;
  const std::vector<std::string_view>& words = s.message.words;
  std::string after;
  for (size_t k = at + 1; k < words.size() && k <= at + kAnchorWords; ++k) {
    after += std::string(words[k]) + " ";
  }
  std::optional<std::string> loose = MatchCatalogItem(after, listed);
  if (!loose) loose = MatchCatalogItem(s.message.request.message, listed);
  if (loose) {
    return static_cast<int>(std::find(c.last_list.begin(), c.last_list.end(), *loose) -
                            c.last_list.begin());
  }
  // A possessive anchor reads as the position itself ("number 3's predecessor").
  const std::string text =
      absl::StrReplaceAll(s.message.request.message, {{"'s ", " "}, {"’s ", " "}});
  if (const std::optional<OrdinalRef> ordinal = FindOrdinal(text)) {
    if (const int i = ordinal->Resolve(size, CurrentIndex(c)); i >= 0) return i;
  }
  if (ContainsAnyPhrase(s.message.words, {"it", "its", "that", "this one", "that one"})) {
    return CurrentIndex(c);
  }
  return -1;
}

// The message's words with each name of an item of the last list as one
// kListedItem.
std::vector<std::string_view> MaskListed(const Situation& s) {
  std::vector<std::string_view> words = s.message.words;
  for (const std::string& name : s.context.last_list) {
    const std::string normalized = NormalizeText(name);
    const std::vector<std::string_view> name_words = Words(normalized);
    for (int at = FindPhrase(words, normalized); at >= 0 && !name_words.empty();
         at = FindPhrase(words, normalized)) {
      words.erase(words.begin() + at + 1,
                  words.begin() + at + static_cast<long>(name_words.size()));
      words[static_cast<size_t>(at)] = kListedItem;
    }
  }
  return words;
}

// The listed items the words after "between" (at `at`) name loosely on
// each side of its "and", in list positions; empty unless both resolve.
std::vector<int> LooseAnchorsBetween(const Situation& s, size_t at) {
  const Context& c = s.context;
  const std::vector<std::string_view>& words = s.message.words;
  if (at >= words.size()) return {};
  const std::vector<CatalogItem> listed = ListedItems(s);
  const auto after = words.begin() + static_cast<long>(at) + 1;
  const auto and_at = std::find(after, words.end(), "and");
  if (and_at == words.end() || and_at == after) return {};
  const auto side = [&](auto from, auto to) -> int {
    std::string text;
    for (auto it = from; it != to; ++it) text += std::string(*it) + " ";
    const std::optional<std::string> match = MatchCatalogItem(text, listed);
    if (!match) return -1;
    return static_cast<int>(std::find(c.last_list.begin(), c.last_list.end(), *match) -
                            c.last_list.begin());
  };
  constexpr long kSideWords = 5;
  const int first = side(after, and_at);
  const int second = side(and_at + 1, and_at + std::min<long>(kSideWords, words.end() - and_at));
  if (first < 0 || second < 0 || first == second) return {};
  return {first, second};
}

// "the one listed before X", "whatever sits right below X", "number 3's
// predecessor", "the one above the last", "the one in between the other
// two", "pause the agent listed two after X": the anchor's neighbour in
// the last list, by index.
std::optional<RuleAnswer> PickRelative(const Situation& s) {
  const Context& c = s.context;
  if (c.last_list.empty()) return std::nullopt;
  const std::vector<std::string_view> masked = MaskListed(s);
  const std::optional<RelativeRef> position = ReadRelativePosition(masked);
  if (!position) return std::nullopt;
  const int size = static_cast<int>(c.last_list.size());
  std::vector<int> named;
  for (const std::string& name :
       CatalogItemsInOrder(s.message.request.message, s.message.request.agents)) {
    const auto it = std::find(c.last_list.begin(), c.last_list.end(), name);
    if (it != c.last_list.end()) named.push_back(static_cast<int>(it - c.last_list.begin()));
  }
  // "between the price watcher and the covers report": anchors named by
  // their distinctive words, one on each side of the "and".
  if (position->position == RelativePosition::kBetween && named.size() < 2) {
    named = LooseAnchorsBetween(s, OriginalIndex(s, masked, position->at));
  }
  int picked = -1;
  int anchor = -1;
  if (position->position == RelativePosition::kBetween) {
    if (named.size() >= 2 && std::abs(named[0] - named[1]) == 2) {
      picked = (named[0] + named[1]) / 2;
    } else if (named.size() < 2 && size == 3) {
      picked = 1;  // "the one in between the other two"
    }
    anchor = named.empty() ? picked : named.front();
  } else {
    // "the previous one", "the next one": from the item talked about last,
    // unless an item is named.
    const bool from_current = named.empty() && position->at < masked.size() &&
                              words::Contains("relative_from_current", masked[position->at]);
    anchor = from_current && CurrentIndex(c) >= 0
                 ? CurrentIndex(c)
                 : RelativeAnchor(s, named, OriginalIndex(s, masked, position->at));
    const int step = position->position == RelativePosition::kBefore ? -1 : 1;
    if (anchor >= 0) picked = anchor + step * position->offset;
  }
  if (picked < 0 || picked >= size || anchor < 0) return std::nullopt;
  return AnswerPick(s, c.last_list[picked], "the position relative to " + c.last_list[anchor]);
}

// "leave the recall one alone but the other one ...": the message names
// `agent` as "the <word of its name> one" beside "the other one".
bool NamesOneBeside(const std::vector<std::string_view>& words, const std::string& agent) {
  const std::string name = NormalizeText(agent);
  const std::vector<std::string_view> parts = Words(name);
  for (size_t i = 0; i + 2 < words.size(); ++i) {
    if (words[i] == "the" && words[i + 2] == "one" && words[i + 1] != "other" &&
        std::find(parts.begin(), parts.end(), words[i + 1]) != parts.end()) {
      return true;
    }
  }
  return false;
}

// "b", "option c": a letter picks only from a list labelled with letters
// ("a) ...", "(b) ...", "b. ...").
bool ListHasLetter(const Situation& s, char letter) {
  const std::vector<HistoryTurn>& history = s.message.request.history;
  const auto last = std::find_if(history.rbegin(), history.rend(), [](const HistoryTurn& turn) {
    return turn.role == Role::kAssistant;
  });
  if (last == history.rend()) return false;
  const std::string text = Lowercase(last->content);
  for (size_t at = text.find(letter); at != std::string::npos; at = text.find(letter, at + 1)) {
    const bool starts =
        at == 0 || text[at - 1] == '\n' || text[at - 1] == ' ' || text[at - 1] == '(';
    // "a)", "b. ", "c: "; not "e.g."
    const bool labels = at + 1 < text.size() &&
                        (text[at + 1] == ')' || ((text[at + 1] == '.' || text[at + 1] == ':') &&
                                                 (at + 2 >= text.size() || text[at + 2] == ' ')));
    if (starts && labels) return true;
  }
  return false;
}

// "the second one", "#2", "the last one", "the other one".
std::optional<RuleAnswer> PickByOrdinal(const Situation& s) {
  const Context& c = s.context;
  if (c.last_list.empty() || !s.ordinal) return std::nullopt;
  int current = CurrentIndex(c);
  if (s.named_agent) {
    // "leave the recall one alone but the other one should wait a day":
    // the other than the one the message names.
    const auto named = std::find(c.last_list.begin(), c.last_list.end(), *s.named_agent);
    if (s.ordinal->kind != OrdinalRef::Kind::kOther || named == c.last_list.end() ||
        !NamesOneBeside(s.message.words, *s.named_agent)) {
      return std::nullopt;
    }
    current = static_cast<int>(named - c.last_list.begin());
  }
  if (s.ordinal->letter && !ListHasLetter(s, s.ordinal->text[0])) {
    return std::nullopt;
  }
  const int index = s.ordinal->Resolve(static_cast<int>(c.last_list.size()), current);
  if (index < 0) return std::nullopt;
  RuleAnswer out = AnswerPick(s, c.last_list[index], "\"" + s.ordinal->text + "\"");
  out.entities["ordinal"] = std::to_string(index + 1);
  return out;
}

// "the salesforce one": the listed agent whose name or description fits.
std::optional<RuleAnswer> PickByDescription(const Situation& s) {
  const Context& c = s.context;
  const std::vector<std::string_view>& words = s.message.words;
  if (s.named_agent || c.last_list.empty() || s.ordinal || words.size() > 8 ||
      !ContainsPhrase(words, "one")) {
    return std::nullopt;
  }
  const std::optional<std::string> picked =
      BestDescribed(words, c.last_list, s.message.request.agents);
  if (!picked) return std::nullopt;
  return AnswerPick(s, *picked, "the description");
}

// "the newsletter one", "not that one, the routing one" with no list to
// pick from: the agent whose name or description fits, among all of the
// user's agents (other than the one just talked about when the user says
// "not that" or "the other"), for what the user was asking about.
std::optional<RuleAnswer> PickAmongAgents(const Situation& s) {
  const Context& c = s.context;
  const std::vector<std::string_view>& words = s.message.words;
  if (s.named_agent || s.ordinal || !c.last_list.empty() || !c.previous_action ||
      words.size() > 8 || !ContainsPhrase(words, "one")) {
    return std::nullopt;
  }
  const bool another = ContainsAnyPhrase(words, {"not", "no", "other", "another"});
  std::vector<std::string> candidates;
  for (const CatalogItem& agent : s.message.request.agents) {
    if (another && c.last_agent && agent.name == *c.last_agent) continue;
    candidates.push_back(agent.name);
  }
  const std::optional<std::string> picked =
      BestDescribed(words, candidates, s.message.request.agents);
  if (!picked) return std::nullopt;
  const Action action =
      ForExistingAgent(s.agent_verb && s.verb_is_explicit ? *s.agent_verb : *c.previous_action);
  RuleAnswer out = Answer(
      s, action, Reference::kOrdinal,
      "The description picks " + *picked + " among the user's agents, for " + Phrase(action) + ".");
  out.entities["agent_name"] = *picked;
  return out;
}

// ---------------------------------------- corrections and follow-ups

// Corrections continue the draft in progress: "actually make it weekly",
// "no, 45", "thursday at noon instead". While a new agent or skill is
// drafted, a loose mention of an existing one ("use hubspot" beside
// hubspot-deal-updater) is a detail of the draft; only its exact name
// points elsewhere.
std::optional<RuleAnswer> DraftCorrection(const Situation& s) {
  const Context& c = s.context;
  const std::vector<std::string_view>& words = s.message.words;
  if (!c.in_progress || words.size() > 16 || s.ordinal) return std::nullopt;
  const bool named_exactly =
      s.named_agent &&
      absl::StrContains(Lowercase(s.message.request.message), Lowercase(*s.named_agent));
  const bool drafting_new = NewAgentOrSkill(*c.in_progress);
  const auto drafted_agent = c.in_progress_entities.find("agent_name");
  const bool about_the_draft =
      !s.named_agent || (drafting_new && !named_exactly) ||
      (drafted_agent != c.in_progress_entities.end() && drafted_agent->second == *s.named_agent);
  const bool adjusts = !s.agent_verb || *s.agent_verb == Action::kUpdateAgent ||
                       (*s.agent_verb == Action::kQueryInfo && HasCorrectionCue(words));
  if (!about_the_draft || !adjusts || NewRequestAfterYes(s, *c.in_progress)) return std::nullopt;
  RuleAnswer out =
      Answer(s, *c.in_progress, Reference::kCorrection,
             "The user adjusts the " +
                 std::string(*c.in_progress == Action::kUpdateAgent ? "change" : "draft") +
                 " in progress (" + Phrase(*c.in_progress) + ").");
  if (drafting_new && !named_exactly) out.entities.erase("agent_name");
  std::map<std::string, std::string> merged = c.in_progress_entities;
  Merge(merged, out.entities);
  out.entities = std::move(merged);
  if (std::string value = CorrectedValue(s.message.request.message); !value.empty()) {
    out.entities["corrected_value"] = value;
  }
  return out;
}

// A message this long may still be only a new value for the last request.
constexpr size_t kMaxTypedCorrectionWords = 14;

// "sorry, I meant the March report", "Janet Kim, not Ortiz": the last
// request again, with the value it corrects.
std::optional<RuleAnswer> CorrectLastRequest(const Situation& s) {
  const Context& c = s.context;
  if (!c.previous_action) return std::nullopt;
  const std::string previous = NormalizeText(c.previous_text);
  std::string value;
  if (IsCorrection(s.message.words) || ReplacesPreviousValue(s.message.words, Words(previous))) {
    value = CorrectedValue(s.message.request.message);
  } else if (s.message.words.size() <= kMaxTypedCorrectionWords &&
             !ContainsPhrase(s.message.words, "?") &&
             !(s.verb_is_explicit && s.verb && *s.verb != *c.previous_action)) {
    // "every 4 hours is plenty" after "every 2 hours": another value of the
    // same form, and no request of another kind.
    value = ReplacedTypedValue(s.message.request.message, c.previous_text);
  }
  if (value.empty()) return std::nullopt;
  // A request the model could not place, about an agent, was a question
  // about it.
  Action action = *c.previous_action;
  if ((action == Action::kUnknown || action == Action::kConversation) && c.last_agent) {
    action = Action::kQueryInfo;
  }
  RuleAnswer out =
      Answer(s, action, Reference::kCorrection,
             "The user corrects the last request (" + Phrase(action) + ") to \"" + value + "\".");
  const bool named_exactly =
      s.named_agent &&
      absl::StrContains(Lowercase(s.message.request.message), Lowercase(*s.named_agent));
  std::map<std::string, std::string> merged = c.previous_entities;
  if (!named_exactly) out.entities.erase("agent_name");
  Merge(merged, out.entities);
  out.entities = std::move(merged);
  if (!out.entities.contains("agent_name") && c.last_agent && !NewAgentOrSkill(action)) {
    out.entities["agent_name"] = *c.last_agent;
  }
  // "I meant the lab results one": the value names another of the agents.
  if (!named_exactly && !NewAgentOrSkill(action)) {
    if (auto other = MatchCatalogItem(value, s.message.request.agents)) {
      out.entities["agent_name"] = *other;
    }
  }
  out.entities["corrected_value"] = value;
  return out;
}

// "also menu-sync pls", "the attendance one too": nothing but an agent
// and a word of repeating (followup_same_again_cues), in a few words
// (followup_same_again_words).
bool OnlyAnotherAgentAgain(const Situation& s) {
  const std::vector<std::string_view>& words = s.message.masked_words;
  const std::string name = NormalizeText(*s.named_agent);
  const std::vector<std::string_view> name_words = Words(name);
  bool cue = false;
  for (std::string_view w : words) {
    if (w == kNameStandIn ||
        std::find(name_words.begin(), name_words.end(), w) != name_words.end()) {
      continue;
    }
    if (words::Contains("followup_same_again_cues", w)) {
      cue = true;
    } else if (!words::Contains("followup_same_again_words", w)) {
      return false;
    }
  }
  return cue || ContainsPhrase(words, "as well");
}

// "same for X", "what about X": the previous request, for another agent.
std::optional<RuleAnswer> SameForNamedAgent(const Situation& s) {
  const Context& c = s.context;
  const std::vector<std::string_view>& words = s.message.words;
  // "ooh actually do the same for the club pickup one": a repeat anywhere.
  const bool same = ContainsAnyPhrase(words, {"do the same", "same for", "same thing for"});
  if (!s.named_agent || !c.previous_action || (words.size() > 10 && !same) ||
      !(OnlyAnotherAgentAgain(s) || same ||
        (AsksForSameAgain(words) && !(s.agent_verb && s.verb_is_explicit)))) {
    return std::nullopt;
  }
  RuleAnswer out = Answer(s, *c.previous_action, Reference::kNone,
                          "A follow-up asking for the same as before (" +
                              Phrase(*c.previous_action) + ") for " + *s.named_agent + ".");
  out.entities["agent_name"] = *s.named_agent;
  return out;
}

// "do the same for march": the previous request again, on the agent the
// conversation is about.
std::optional<RuleAnswer> SameAgainOnLastAgent(const Situation& s) {
  const Context& c = s.context;
  const std::vector<std::string_view>& words = s.message.words;
  if (s.named_agent || !c.previous_action || !c.last_agent || NewAgentOrSkill(*c.previous_action) ||
      !(ContainsPhrase(words, "do the same") || ContainsPhrase(words, "same thing") ||
        FindPhrase(words, "same for") == 0 || FindPhrase(words, "same with") == 0)) {
    return std::nullopt;
  }
  RuleAnswer out = Answer(s, *c.previous_action, Reference::kPronoun,
                          "A follow-up asking for the same as before (" +
                              Phrase(*c.previous_action) + ") on " + *c.last_agent + ".");
  out.entities["agent_name"] = *c.last_agent;
  return out;
}

// "and last week?", "what about yesterday?": the previous question or
// request again, with a new detail, about the agent the conversation is on.
std::optional<RuleAnswer> FollowUpDetail(const Situation& s) {
  const Context& c = s.context;
  const std::vector<std::string_view>& words = s.message.words;
  if (s.named_agent || !c.previous_action || !c.last_agent || words.size() > 6 ||
      !(FindPhrase(words, "and") == 0 || FindPhrase(words, "what about") == 0 ||
        FindPhrase(words, "how about") == 0) ||
      s.verb_is_explicit ||
      !(*c.previous_action == Action::kQueryInfo || *c.previous_action == Action::kExecuteTask)) {
    return std::nullopt;
  }
  RuleAnswer out =
      Answer(s, *c.previous_action, Reference::kPronoun,
             "A follow-up asking for the same as before (" + Phrase(*c.previous_action) + ") on " +
                 *c.last_agent + ", with a new detail.");
  out.entities["agent_name"] = *c.last_agent;
  return out;
}

// Where `words` point at something with a pronoun or a demonstrative:
// kNoun for "those numbers", "these 3 dates" (a thing, never an agent),
// kPronoun for "it", "them", "merge those", "set that up".
enum class Pointing { kNone, kPronoun, kNoun };

Pointing PointsAt(const std::vector<std::string_view>& words) {
  static const WordSet& stop = words::List("clarify_stop_words");
  static const WordSet& agents = words::List("clarify_generic_agent_words");
  static const WordSet& times = words::List("clarify_time_nouns");
  Pointing found = Pointing::kNone;
  for (size_t i = 0; i < words.size(); ++i) {
    const std::string_view w = words[i];
    if (w == "it" || w == "them") found = Pointing::kPronoun;
    if (w != "those" && w != "these" && w != "that" && w != "this") continue;
    size_t k = i + 1;
    while (k < words.size() && std::isdigit(static_cast<unsigned char>(words[k][0])) != 0) ++k;
    if (k < words.size() && !stop.contains(words[k]) && !agents.contains(words[k]) &&
        !times.contains(words[k]) && words[k] != "?") {
      return Pointing::kNoun;
    }
    if (k == words.size() || stop.contains(words[k])) found = Pointing::kPronoun;
  }
  return found;
}

// "print it", "merge them": a word the model does not know as a verb,
// right before the pronoun, opens the message.
bool UnknownVerbOnPronoun(const std::vector<std::string_view>& words) {
  size_t i = 0;
  while (i < words.size() && words::Contains("filler_intent", words[i])) ++i;
  // "love it", "got it", "nah it's fine": a reaction, not work.
  if (i < words.size() &&
      (words::Contains("confirm_intent", words[i]) || words::Contains("decline_intent", words[i]) ||
       words::Contains("clarify_stop_words", words[i]) ||
       words::Contains("clarify_reactions", words[i]))) {
    return false;
  }
  return i + 1 < words.size() && (words[i + 1] == "it" || words[i + 1] == "them" ||
                                  words[i + 1] == "those" || words[i + 1] == "these");
}

// "shorten it to 100 words" after a draft, "put those numbers in the
// #finance channel" after figures, "merge them" after two records: a
// pronoun or a demonstrative that stands for what the assistant just gave
// (not for an agent it named), worked on now; "set that up" after a
// description of what an agent would do builds it.
std::optional<RuleAnswer> TaskOnAssistantOutput(const Situation& s) {
  const Context& c = s.context;
  const std::vector<std::string_view>& words = s.message.words;
  if (c.last_output == Output::kNone || ContainsPhrase(words, "?") || !c.last_list.empty()) {
    return std::nullopt;
  }
  const bool named_exactly =
      s.named_agent &&
      absl::StrContains(Lowercase(s.message.request.message), Lowercase(*s.named_agent));
  const Pointing pointing = PointsAt(words);
  if (named_exactly || pointing == Pointing::kNone ||
      (pointing == Pointing::kPronoun && c.last_output_names_agent)) {
    return std::nullopt;
  }
  const std::string& said = s.message.request.history.back().content;
  const bool builds = (s.verb == Action::kCreateAgent || ContainsPhrase(words, "up")) &&
                      (absl::StrContains(said, "would") || absl::StrContains(said, "could"));
  if (pointing == Pointing::kPronoun && c.last_output != Output::kText && !builds) {
    return std::nullopt;
  }
  if (!builds && (s.verb == Action::kManagePlatform || s.verb == Action::kQueryInfo ||
                  s.verb == Action::kCreateAgent || s.verb == Action::kCreateSkill ||
                  (!s.verb && !UnknownVerbOnPronoun(words)))) {
    return std::nullopt;
  }
  const Action action = builds ? Action::kCreateAgent : Action::kExecuteTask;
  RuleAnswer out = Answer(
      s, action, Reference::kPronoun,
      "The message points at what the assistant just gave; it asks to " + Phrase(action) + ".");
  out.entities.erase("agent_name");
  // "run those reports again" after an agent's output: that agent's work.
  if (pointing == Pointing::kNoun && c.last_output_names_agent && c.last_agent && !builds) {
    out.entities["agent_name"] = *c.last_agent;
  }
  return out;
}

// "do what Kenji said on ledger-export", "ok put it back to how it was
// before the audit": a change to the agent named, else the one the
// conversation is about, made from what the history shows.
std::optional<RuleAnswer> ChangeFromHistory(const Situation& s) {
  const Context& c = s.context;
  const bool apply = AppliesASuggestion(s.message.words);
  if (!c.has_history || !(apply || PutsItBack(s.message.words))) return std::nullopt;
  const std::optional<std::string> agent = s.named_agent ? s.named_agent : c.last_agent;
  if (!agent) return std::nullopt;
  // Undoing a pause or a deletion is a lifecycle step too.
  const Action action = !apply && c.previous_action == Action::kManagePlatform
                            ? Action::kManagePlatform
                            : Action::kUpdateAgent;
  RuleAnswer out =
      Answer(s, action, Reference::kPronoun,
             std::string(apply ? "The user asks to apply what the conversation shows was suggested"
                               : "The user asks to put the agent back as it was") +
                 ", to " + *agent + ".");
  out.entities["agent_name"] = *agent;
  return out;
}

// "pause it", "change that", "run now": a verb on the agent last talked
// about.
std::optional<RuleAnswer> PronounToLastAgent(const Situation& s) {
  const Context& c = s.context;
  const bool implicit_object = s.content_words <= 5 && s.verb_is_explicit;
  if (!(s.pronoun || (implicit_object && !s.named_agent)) || !c.last_agent || !s.agent_verb) {
    return std::nullopt;
  }
  RuleAnswer out =
      Answer(s, *s.agent_verb, Reference::kPronoun,
             "\"it\" is " + *c.last_agent + ", the agent last talked about; the verb asks to " +
                 Phrase(*s.agent_verb) + ".");
  out.entities["agent_name"] = *c.last_agent;
  return out;
}

// "leave that aisle out" after the user said what shelf-gap-finder gets
// wrong: a verb that edits what an agent does, on something the exchange
// about that agent talked of, changes it.
std::optional<RuleAnswer> EditOfAgentInPlay(const Situation& s) {
  const Context& c = s.context;
  const std::vector<std::string_view>& words = s.message.words;
  if (!c.last_agent || !c.last_output_names_agent || ContainsPhrase(words, "?") ||
      (s.named_agent && s.named_agent != c.last_agent)) {
    return std::nullopt;
  }
  size_t i = 0;
  while (i < words.size() && words::Contains("filler_intent", words[i])) ++i;
  if (i >= words.size() || !words::Contains("agent_edit_verbs", words[i])) return std::nullopt;
  const std::string previous = NormalizeText(c.previous_text);
  const std::vector<std::string_view> talked_of = Words(previous);
  const bool on_what_was_said = std::any_of(words.begin() + i + 1, words.end(), [&](auto w) {
    return w.size() >= 4 && !words::Contains("clarify_stop_words", w) &&
           std::find(talked_of.begin(), talked_of.end(), w) != talked_of.end();
  });
  if (!on_what_was_said) return std::nullopt;
  RuleAnswer out = Answer(
      s, Action::kUpdateAgent, Reference::kPronoun,
      "The message edits what " + *c.last_agent + ", the agent the exchange is about, does.");
  out.entities["agent_name"] = *c.last_agent;
  return out;
}

// An agent named with a leading verb: "run the sales digest anyway", "ok,
// have the pager thing ignore outage tickets".
std::optional<RuleAnswer> NamedAgentWithVerb(const Situation& s) {
  if (!s.named_agent || !s.agent_verb || !LeadingVerb(s.message.masked_words)) return std::nullopt;
  const bool named_exactly =
      absl::StrContains(Lowercase(s.message.request.message), Lowercase(*s.named_agent));
  // "shorten this headline to 60 chars: <text>": a word of an agent's name
  // beside material the message carries is a task on the material.
  if (!named_exactly && IsSelfContainedTask(s.message.words, s.message.request.message)) {
    return std::nullopt;
  }
  // "make me a brand new agent that posts the overnight tickets": a word
  // of an agent's name in a request for a new one.
  if (!named_exactly && ContainsAnyPhrase(s.message.words, {"new agent", "new bot", "brand new",
                                                            "new skill", "another agent"})) {
    return std::nullopt;
  }
  return Answer(s, *s.agent_verb, Reference::kNone,
                "The message names " + *s.named_agent + " and starts with a verb asking to " +
                    Phrase(*s.agent_verb) + ".");
}

// "backup verification - restore 3 random files not 1", "Claims backlog
// report: group by region first": an agent named first, then what it
// should do differently from now on.
std::optional<RuleAnswer> AgentThenInstruction(const Situation& s) {
  if (!s.named_agent) return std::nullopt;
  const std::string& text = s.message.request.message;
  size_t cut = std::string::npos;
  for (std::string_view separator : {":", " - ", " — ", " – ", "→", "->"}) {
    const size_t at = text.find(separator);
    if (at != std::string::npos && at < cut) cut = at;
  }
  if (cut == std::string::npos || cut == 0) return std::nullopt;
  // Everything before the separator names the agent.
  const std::string head = NormalizeText(text.substr(0, cut));
  const std::vector<std::string_view> head_words = Words(head);
  // "shorten this headline to 60 chars: ..." is a task, not a name.
  if (head_words.empty() || head_words.size() > 5 || LeadingVerb(head_words) ||
      MatchCatalogItem(head, s.message.request.agents) != s.named_agent) {
    return std::nullopt;
  }
  const std::string rest = NormalizeText(text.substr(cut));
  const std::vector<std::string_view> rest_words = Words(rest);
  const bool changes =
      std::any_of(rest.begin(), rest.end(), [](char ch) { return ch >= '0' && ch <= '9'; }) ||
      ContainsAnyPhrase(rest_words,
                        {"should",  "never",    "always",   "not",     "no more", "only",    "also",
                         "instead", "from now", "any more", "anymore", "max",     "at most", "skip",
                         "include", "exclude",  "dont",     "first",   "then",    "changed"});
  if (!changes) return std::nullopt;
  return Answer(
      s, Action::kUpdateAgent, Reference::kNone,
      "The message names " + *s.named_agent + " first, then says what it should do differently.");
}

constexpr Rule<Message> kFastPathRules[] = {
    {.name = "empty_message", .confidence = 0.0f, .apply = &EmptyMessage},
    {.name = "addressed_agent", .confidence = 0.97f, .apply = &AddressedAgent},
};

constexpr Rule<Situation> kReferenceRules[] = {
    {.name = "recap", .confidence = 0.95f, .apply = &Recap},
    {.name = "closing", .confidence = 0.9f, .apply = &Closing},
    {.name = "confirm_offer_as_skill", .confidence = 0.9f, .apply = &ConfirmOfferAsSkill},
    {.name = "confirm_offer", .confidence = 0.92f, .apply = &ConfirmOffer},
    {.name = "decline_offer", .confidence = 0.9f, .apply = &DeclineOffer},
    {.name = "refuse_offer", .confidence = 0.85f, .apply = &RefuseOffer},
    {.name = "change_from_history", .confidence = 0.8f, .apply = &ChangeFromHistory},
    {.name = "answer_to_which_agent", .confidence = 0.88f, .apply = &AnswerToWhichAgent},
    {.name = "pick_relative", .confidence = 0.88f, .apply = &PickRelative},
    {.name = "pick_by_ordinal", .confidence = 0.9f, .apply = &PickByOrdinal},
    {.name = "pick_by_description", .confidence = 0.9f, .apply = &PickByDescription},
    {.name = "pick_among_agents", .confidence = 0.8f, .apply = &PickAmongAgents},
    {.name = "draft_correction", .confidence = 0.85f, .apply = &DraftCorrection},
    {.name = "correct_last_request", .confidence = 0.8f, .apply = &CorrectLastRequest},
    {.name = "same_for_named_agent", .confidence = 0.85f, .apply = &SameForNamedAgent},
    {.name = "same_again_on_last_agent", .confidence = 0.85f, .apply = &SameAgainOnLastAgent},
    {.name = "follow_up_detail", .confidence = 0.8f, .apply = &FollowUpDetail},
    {.name = "task_on_assistant_output", .confidence = 0.8f, .apply = &TaskOnAssistantOutput},
    {.name = "pronoun_to_last_agent", .confidence = 0.88f, .apply = &PronounToLastAgent},
    {.name = "edit_of_agent_in_play", .confidence = 0.75f, .apply = &EditOfAgentInPlay},
    {.name = "agent_then_instruction", .confidence = 0.8f, .apply = &AgentThenInstruction},
    {.name = "named_agent_with_verb", .confidence = 0.85f, .apply = &NamedAgentWithVerb},
};

// A recurring window or condition on when something runs ("between 10pm
// and 6am", "at weekends", "overnight"), not a date it resumes on.
bool LimitsWhenItRuns(const std::vector<std::string_view>& words) {
  if (words::ContainsAnyEntry(words, "recurring_windows")) return true;
  const int between = FindPhrase(words, "between");
  if (between < 0) return false;
  const auto is_time = [](std::string_view w) {
    return std::isdigit(static_cast<unsigned char>(w.front())) != 0 || w == "noon" ||
           w == "midnight";
  };
  int times = 0;
  for (size_t k = static_cast<size_t>(between) + 1; k < words.size(); ++k)
    times += is_time(words[k]);
  return times >= 2;
}

}  // namespace

Message::Message(const IntentRequest& request)
    : request(request),
      normalized(NormalizeText(request.message)),
      words(Words(normalized)),
      masked(WithoutCatalogNames(request.message, request)),
      masked_normalized(NormalizeText(masked)),
      masked_words(Words(masked_normalized)),
      entities(ExtractEntities(masked)) {}

Situation ReadSituation(const Message& message, const Context& context,
                        const LocalClassifier& classifier) {
  const IntentRequest& request = message.request;
  Situation s{.message = message, .context = context, .classifier = classifier};
  s.entities = message.entities;
  s.named_agent = MatchCatalogItem(request.message, request.agents);
  if (s.named_agent) s.entities["agent_name"] = *s.named_agent;
  if (auto skill = MatchCatalogItem(request.message, request.skills)) {
    s.entities["skill_name"] = *skill;
  }
  for (std::string_view w : message.words) s.content_words += w != "?";
  s.verb = VerbAction(message.masked);
  // "stop it sending between 10pm and 6am": switched off only some of the
  // time, it still runs; what it does changes (LABELS.md: lifecycle is on
  // or off, "skip weekends" is a change).
  if (s.verb == Action::kManagePlatform && LimitsWhenItRuns(message.masked_words)) {
    s.verb = Action::kUpdateAgent;
  }
  if (s.verb && !NewAgentOrSkill(*s.verb)) s.agent_verb = s.verb;
  s.verb_is_explicit = VerbIsExplicit(message.masked);
  s.ordinal = FindOrdinal(request.message);
  if (s.ordinal && context.last_list.empty()) s.ordinal.reset();  // "no, 45": a number
  if (s.ordinal && s.named_agent && s.ordinal->kind != OrdinalRef::Kind::kOther) {
    const int index = s.ordinal->Resolve(static_cast<int>(context.last_list.size()), -1);
    // A word of a name somewhere in a long message ("the claim is over
    // 10k") does not outweigh "the first of those".
    const bool loose =
        !absl::StrContains(Lowercase(request.message), Lowercase(*s.named_agent)) &&
        ContainsAnyPhrase(message.words,
                          {"of those", "of them", "of these", "on the list", "on ur list",
                           "on your list", "in the list", "in that list", "you listed"});
    if (index >= 0 && (context.last_list[index] == *s.named_agent || loose)) s.named_agent.reset();
  }
  s.pronoun = !s.named_agent && (HasAgentPronoun(request.message) || VerbOnThat(message.words));
  return s;
}

std::span<const Rule<Message>> FastPathRules() { return kFastPathRules; }

std::span<const Rule<Situation>> ReferenceRules() { return kReferenceRules; }

}  // namespace omniforge::intent
