#include "services/intent/src/analyzer.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "services/intent/src/entities.h"
#include "services/intent/src/lexicon.h"
#include "services/intent/src/text.h"

namespace omniforge::intent {
namespace {

// ---------------------------------------------------------------- lexicons

bool OnlyWordsFrom(const std::vector<std::string_view>& words,
                   const std::set<std::string_view>& allowed,
                   const std::set<std::string_view>& required) {
  bool has_required = false;
  for (std::string_view w : words) {
    if (required.contains(w)) {
      has_required = true;
    } else if (!allowed.contains(w)) {
      return false;
    }
  }
  return has_required;
}

const std::set<std::string_view>& Filler() {
  static const std::set<std::string_view> words = {
      "please", "pls",   "plz",     "thanks", "thank", "you",     "thx",    "ty",     "it",
      "that",   "this",  "do",      "go",     "ahead", "lets",    "let",    "us",     "just",
      "now",    "then",  "and",     "so",     "one",   "for",     "me",     "the",    "a",
      "can",    "will",  "would",   "be",     "good",  "great",   "fine",   "sounds", "sound",
      "is",     "all",   "im",      "i",      "am",    "totally", "really", "very",   "much",
      "right",  "away",  "on",      "with",   "make",  "create",  "run",    "set",    "up",
      "course", "of",    "exactly", "works",  "work",  "idea",    "plan",   "deal",   "cool",
      "nice",   "looks", "look",    "ok",     "okay",  "?"};
  return words;
}

bool IsAffirmative(std::string_view w) {
  static const std::set<std::string_view> yes = {"yes",
                                                 "yeah",
                                                 "yep",
                                                 "yup",
                                                 "ya",
                                                 "yea",
                                                 "yess",
                                                 "yesss",
                                                 "sure",
                                                 "ok",
                                                 "okay",
                                                 "k",
                                                 "kk",
                                                 "y",
                                                 "si",
                                                 "oui",
                                                 "ja",
                                                 "absolutely",
                                                 "definitely",
                                                 "confirm",
                                                 "confirmed",
                                                 "correct",
                                                 "proceed",
                                                 "approved",
                                                 "approve",
                                                 "agreed",
                                                 "perfect",
                                                 "great",
                                                 "alright",
                                                 "aight",
                                                 "lgtm",
                                                 "certainly",
                                                 "please",
                                                 "go",
                                                 "do",
                                                 "sounds",
                                                 "love",
                                                 "affirmative",
                                                 "fine",
                                                 "cool",
                                                 "nice",
                                                 "\xF0\x9F\x91\x8D",
                                                 "\xF0\x9F\x91\x8C",
                                                 "\xE2\x9C\x85",
                                                 "\xF0\x9F\x99\x8C"};
  return yes.contains(w);
}

// "yes", "sure thing", "yes please, asap", "love it, yes", "yes, delete":
// short, with an affirmative word among the first three and no "no" before it.
bool IsConfirmation(const std::vector<std::string_view>& words) {
  if (words.empty() || words.size() > 12) return false;
  // "yeah what does the fourth one do?" asks something new.
  if (ContainsPhrase(words, "?")) {
    for (std::string_view q : {"what", "how", "why", "which", "when", "who", "where", "whats"}) {
      if (ContainsPhrase(words, q)) return false;
    }
  }
  for (size_t i = 0; i < words.size() && i < 3; ++i) {
    const std::string_view w = words[i];
    if (w == "no" || w == "not" || w == "dont" || w == "nope" || w == "nah" || w == "cancel" ||
        w == "wait" || w == "stop") {
      return false;
    }
    if (!IsAffirmative(w)) continue;
    // "do" and "go" only count as "do it", "do that", "go ahead", "go for it".
    const std::string_view next = i + 1 < words.size() ? words[i + 1] : "";
    if (w == "do" && next != "it" && next != "that" && next != "this") continue;
    if (w == "go" && next != "ahead" && next != "for") continue;
    if (w == "please" && next != "do" && !next.empty()) continue;
    if ((w == "sounds" || w == "love") && next.empty()) continue;
    return true;
  }
  return false;
}

bool IsDecline(const std::vector<std::string_view>& words) {
  static const std::set<std::string_view> no = {
      "no",    "nope", "nah",   "cancel", "never",    "mind",   "nevermind",
      "dont",  "not",  "skip",  "forget", "stop",     "hold",   "off",
      "later", "wait", "leave", "n",      "negative", "neither"};
  static const std::set<std::string_view> extra = {
      "yet",     "anymore", "about", "it",    "bother", "need", "needed",
      "changed", "my",      "mind",  "thats", "ok",     "okay", "actually"};
  if (words.empty() || words.size() > 8) return false;
  std::set<std::string_view> allowed = Filler();
  allowed.erase("do");  // "no, do it" is not a decline
  allowed.insert(no.begin(), no.end());
  allowed.insert(extra.begin(), extra.end());
  return OnlyWordsFrom(words, allowed, no);
}

bool IsRecap(const std::vector<std::string_view>& words) {
  // "recap?", "quick recap please": a bare recap is of the conversation; "the
  // sales recap" is a report.
  if (ContainsPhrase(words, "recap") && words.size() <= 4 &&
      !ContainsAnyPhrase(words, {"the recap", "a recap of the", "recap bot", "recap agent"})) {
    return true;
  }
  return ContainsAnyPhrase(words, {"recap what",
                                   "recap where",
                                   "recap so far",
                                   "recap of our",
                                   "recap of this",
                                   "recap of the conversation",
                                   "recap of the chat",
                                   "recap for me",
                                   "where were we",
                                   "where was i",
                                   "what were we",
                                   "what was i",
                                   "remind me",
                                   "catch me up",
                                   "fill me in",
                                   "what did we decide",
                                   "what did we agree",
                                   "what did we talk",
                                   "what did we discuss",
                                   "where did we leave",
                                   "where we left",
                                   "pick up where",
                                   "pick it up where",
                                   "what were we doing",
                                   "summarize our conversation",
                                   "summarise our conversation",
                                   "summary of our conversation",
                                   "where are we at",
                                   "where are we with",
                                   "what have we done so far",
                                   "lost track",
                                   "bring me up to speed",
                                   "what was the plan",
                                   "refresh my memory",
                                   "where were u",
                                   "what did we end up",
                                   "end up deciding",
                                   "where we landed",
                                   "where did we land",
                                   "what did we land on",
                                   "summarize this conversation",
                                   "summarise this conversation",
                                   "summarize this chat",
                                   "summarise this chat",
                                   "summarize our chat",
                                   "summarise our chat",
                                   "summary of this conversation",
                                   "summary of this chat",
                                   "recap this",
                                   "step were we on",
                                   "step are we on",
                                   "were we on",
                                   "have we agreed",
                                   "have we decided",
                                   "agreed so far",
                                   "decided so far",
                                   "done so far",
                                   "covered so far"});
}

// "nope that's all, cheers", "no thanks, all good": the user has nothing
// more to ask.
bool IsClosing(const std::vector<std::string_view>& words) {
  static const std::set<std::string_view> allowed = {
      "no",      "nope",     "nah",    "thats",      "that",       "is",      "its",     "all",
      "thanks",  "thank",    "you",    "cheers",     "ty",         "thx",     "nothing", "else",
      "im",      "i",        "am",     "good",       "were",       "we",      "are",     "done",
      "for",     "now",      "ok",     "okay",       "great",      "perfect", "bye",     "so",
      "much",    "fine",     "all",    "set",        "it",         "for",     "today",   "cool",
      "awesome", "then",     "really", "appreciate", "everything", "covered", "sorted",  "need",
      "dont",    "anything", "more"};
  static const std::set<std::string_view> closing = {
      "thats all", "nothing else", "all good", "all set",   "im good", "were good",
      "thats it",  "all done",     "im done",  "were done", "for now", "for today"};
  if (words.empty() || words.size() > 10) return false;
  for (std::string_view w : words) {
    if (!allowed.contains(w)) return false;
  }
  for (size_t i = 0; i + 1 < words.size(); ++i) {
    std::string pair = std::string(words[i]) + " " + std::string(words[i + 1]);
    if (closing.contains(pair)) return true;
  }
  return false;
}

// "Anything else?", "Can I help with anything else?": a question that
// closes a request rather than asking about it.
bool AsksForAnythingElse(std::string_view text) {
  const std::string normalized = NormalizeText(text);
  const std::vector<std::string_view> words = Words(normalized);
  return ContainsAnyPhrase(words, {"anything else", "something else", "what else", "anything more",
                                   "help with anything"});
}

bool HasCorrectionCue(const std::vector<std::string_view>& words) {
  return ContainsAnyPhrase(words, {"actually",
                                   "instead",
                                   "rather",
                                   "wait",
                                   "no",
                                   "not",
                                   "make it",
                                   "change it",
                                   "switch it",
                                   "switch to",
                                   "use",
                                   "oh and",
                                   "also",
                                   "and",
                                   "but",
                                   "scratch that",
                                   "on second thought",
                                   "hmm",
                                   "oops",
                                   "sorry",
                                   "correction",
                                   "i meant",
                                   "i mean",
                                   "only",
                                   "plus",
                                   "add",
                                   "except",
                                   "without",
                                   "change",
                                   "make that",
                                   "how about",
                                   "what about",
                                   "better",
                                   "too"});
}

bool AsksForSameAgain(const std::vector<std::string_view>& words) {
  for (std::string_view phrase : {"same for", "same with", "same thing for", "do the same",
                                  "and the other", "what about", "how about", "and for", "and"}) {
    if (FindPhrase(words, phrase) == 0) return true;
  }
  return false;
}

// A sentence in which the assistant offers to do something and waits for a
// yes.
bool IsProposal(std::string_view text) {
  const std::string normalized = NormalizeText(text);
  const std::vector<std::string_view> words = Words(normalized);
  if (!ContainsPhrase(words, "?")) {
    for (std::string_view phrase : {"let me know", "say yes", "confirm", "reply yes",
                                    "just say the word", "give me the go ahead"}) {
      if (ContainsPhrase(words, phrase)) return true;
    }
    return false;
  }
  // "Create it?", "Send the invite?": a closing question that starts with a
  // verb.
  const std::vector<std::string_view> sentences = SplitAny(text, ".!\n");
  if (!sentences.empty() && sentences.back().ends_with("?")) {
    const std::string last = NormalizeText(sentences.back());
    const std::vector<std::string_view> last_words = Words(last);
    if (!last_words.empty() && last_words[0] != "what" && last_words[0] != "which" &&
        last_words[0] != "how" && last_words[0] != "why" && last_words[0] != "when" &&
        last_words[0] != "who" && last_words[0] != "where" && last_words[0] != "is" &&
        last_words[0] != "does" && last_words[0] != "did" && VerbAction(last).has_value()) {
      return true;
    }
  }
  return ContainsAnyPhrase(
      words, {"want me to", "shall i",     "should i",      "would you like", "do you want",
              "like me to", "ok to",       "okay to",       "go ahead",       "proceed",
              "confirm",    "sound good",  "sounds good",   "look good",      "looks good",
              "look right", "looks right", "ready to",      "can i",          "may i",
              "i can",      "i could",     "ill",           "i will",         "all set",
              "want it",    "want this",   "want that",     "does that work", "does this work",
              "is that ok", "is this ok",  "is that right", "good to go",     "happy with",
              "should we",  "shall we"});
}

constexpr std::string_view kOfferCues[] = {"want me to",
                                           "shall i",
                                           "should i",
                                           "would you like me to",
                                           "do you want me to",
                                           "like me to",
                                           "i can",
                                           "i could",
                                           "ill",
                                           "i will",
                                           "let me",
                                           "ok to",
                                           "okay to",
                                           "can i",
                                           "ready to",
                                           "id",
                                           "i would",
                                           "do you want to",
                                           "want to"};

// The action an assistant turn offers: the verb right after an offer ("I can
// set up ...", "Want me to pause ...?"), sentence by sentence, else the verb
// of a closing imperative question ("Rotate it?").
std::optional<Action> ProposalAction(std::string_view text) {
  const std::vector<std::string_view> sentences = SplitAny(text, ".!?\n");
  std::optional<Action> found;
  for (std::string_view sentence : sentences) {
    const std::string normalized = NormalizeText(sentence);
    const std::vector<std::string_view> words = Words(normalized);
    for (std::string_view cue : kOfferCues) {
      const int at = FindPhrase(words, cue);
      if (at < 0) continue;
      std::string rest;
      for (size_t i = at + Words(cue).size(); i < words.size(); ++i) {
        // "go ahead and pause it": skip the filler before the real verb.
        if (rest.empty() && (words[i] == "go" || words[i] == "ahead" || words[i] == "and" ||
                             words[i] == "also" || words[i] == "just" || words[i] == "quickly" ||
                             words[i] == "to" || words[i] == "now" || words[i] == "first")) {
          continue;
        }
        rest.append(words[i]);
        rest.push_back(' ');
      }
      std::optional<Action> verb = VerbAction(rest, 3);
      // "I can build a skill that ...": what is built decides.
      if (verb == Action::kCreateAgent &&
          (ContainsPhrase(words, "skill") || ContainsPhrase(words, "skills"))) {
        verb = Action::kCreateSkill;
      }
      if (verb && *verb != Action::kQueryInfo) found = verb;  // the latest offer counts
      break;
    }
  }
  if (found) return found;
  if (!sentences.empty()) {
    std::optional<Action> verb = VerbAction(sentences.back());
    if (verb && *verb != Action::kQueryInfo) return verb;
  }
  return std::nullopt;
}

// The sentences that name what is offered (for entities).
std::string ProposalText(std::string_view text) {
  const std::vector<std::string_view> sentences = SplitAny(text, ".!?\n");
  for (size_t i = sentences.size(); i-- > 0;) {
    const std::string normalized = NormalizeText(sentences[i]);
    const std::vector<std::string_view> words = Words(normalized);
    for (std::string_view cue : kOfferCues) {
      if (!ContainsPhrase(words, cue)) continue;
      const size_t from = i > 0 && ContainsPhrase(words, "it") ? i - 1 : i;
      std::string out;
      for (size_t j = from; j < sentences.size(); ++j) {
        out.append(sentences[j]);
        out.append(". ");
      }
      return out;
    }
  }
  return std::string(text);
}

// ----------------------------------------------------------- the context

struct Context {
  std::vector<std::string> last_list;  // agents of the last turn that listed two or more
  std::optional<Action> list_action;   // what that list was offered for ("which one should I run?")
  std::optional<std::string> last_agent;  // the agent last talked about
  std::optional<Action> proposal;         // the assistant's last turn offers this
  std::map<std::string, std::string> proposal_entities;
  std::optional<Action> in_progress;  // an agent or skill being drafted
  std::map<std::string, std::string> in_progress_entities;
  std::optional<Action> previous_action;  // what the user last asked for
  std::map<std::string, std::string> previous_entities;
  bool has_history = false;
};

std::vector<std::string> AgentsOf(const HistoryTurn& turn, const std::vector<CatalogItem>& agents) {
  if (!turn.listed_agents.empty()) return turn.listed_agents;
  return CatalogItemsInOrder(turn.content, agents);
}

std::optional<std::string> SingleAgentOf(const HistoryTurn& turn,
                                         const std::vector<CatalogItem>& agents) {
  if (auto it = turn.entities.find("agent_name"); it != turn.entities.end()) return it->second;
  std::vector<std::string> named = CatalogItemsInOrder(turn.content, agents);
  if (named.size() == 1) return named[0];
  if (named.empty() && turn.role == Role::kUser) return MatchCatalogItem(turn.content, agents);
  return std::nullopt;
}

}  // namespace

std::optional<Action> VerbAction(std::string_view text, size_t within_words) {
  const std::string normalized = NormalizeText(text);
  const std::vector<std::string_view> words = Words(normalized);
  const bool skill = ContainsPhrase(words, "skill") || ContainsPhrase(words, "skills");
  static const auto& kVerbs = VerbLexicon();
  struct Verb {
    std::string_view verb;
    std::vector<std::string_view> parts;
    Action action;
  };
  // Longer verbs first, so "set up" wins over "set" at the same word.
  static const std::vector<Verb> kSplitVerbs = [] {
    std::vector<Verb> out;
    out.reserve(std::size(kVerbs));
    for (const auto& [verb, action] : kVerbs) out.push_back({verb, Words(verb), action});
    std::stable_sort(out.begin(), out.end(),
                     [](const Verb& a, const Verb& b) { return a.parts.size() > b.parts.size(); });
    return out;
  }();
  // Scan word by word so the earliest verb wins.
  for (size_t i = 0; i < words.size() && i < within_words; ++i) {
    for (const auto& [verb, parts, action] : kSplitVerbs) {
      if (i + parts.size() > words.size()) continue;
      bool match = true;
      for (size_t j = 0; j < parts.size() && match; ++j) match = words[i + j] == parts[j];
      if (!match) continue;
      const std::string_view next = i + parts.size() < words.size() ? words[i + parts.size()] : "";
      const bool platform_object = next == "project" || next == "a" || next == "the";
      if (action == Action::kCreateAgent) {
        if (platform_object && (ContainsPhrase(words, "project") || ContainsPhrase(words, "task") ||
                                ContainsPhrase(words, "tasks"))) {
          return Action::kManagePlatform;
        }
        return skill ? Action::kCreateSkill : Action::kCreateAgent;
      }
      if ((verb == "post" || verb == "push") && ContainsPhrase(words, "now")) {
        return Action::kExecuteTask;
      }
      if (verb == "list" && i > 0) continue;  // a noun ("the founders list")
      if (verb == "give" && (next == "me" || next == "us")) continue;  // "give me the numbers"
      // "set up a new ..." is creation; "set it to fridays" is a change.
      if (verb == "make" && (next == "a" || next == "an" || next == "new")) {
        return skill ? Action::kCreateSkill : Action::kCreateAgent;
      }
      if ((verb == "remove" || verb == "delete") && ContainsPhrase(words, "from")) {
        return Action::kUpdateAgent;
      }
      if (verb == "send" &&
          (ContainsPhrase(words, "invite") || ContainsPhrase(words, "invitation") ||
           ContainsPhrase(words, "request"))) {
        return Action::kManagePlatform;
      }
      if (verb == "send" && (ContainsPhrase(words, "now") || ContainsPhrase(words, "again"))) {
        return Action::kExecuteTask;
      }
      if (verb == "stop" && (next == "sending" || next == "emailing" || next == "including")) {
        return Action::kUpdateAgent;
      }
      if ((verb == "is" || verb == "does" || verb == "did" || verb == "was") && i > 0) continue;
      return action;
    }
  }
  for (std::string_view cue : {"instead", "from now on", "anymore", "rather than", "only"}) {
    if (ContainsPhrase(words, cue)) return Action::kUpdateAgent;
  }
  if (ContainsPhrase(words, "?")) return Action::kQueryInfo;
  return std::nullopt;
}

namespace {

// What an assistant turn offers to do, if it offers anything; `asked` is
// what the user asked for just before it.
std::optional<Action> OfferOf(const HistoryTurn& turn, std::optional<Action> asked,
                              const IntentRequest& request, const LocalClassifier& classifier) {
  if (turn.action && turn.pending_action) return turn.action;
  if (turn.role != Role::kAssistant || !IsProposal(turn.content)) return std::nullopt;
  std::optional<Action> offered = ProposalAction(turn.content);
  if (!offered) {
    // An offer with no known verb: ask the model about it.
    std::vector<Prediction> ranked = classifier.Predict(ProposalText(turn.content));
    if (!ranked.empty()) offered = ranked[0].action;
  }
  // A draft of something new that the user asked for keeps its kind; an
  // offer to change one of the user's agents by name is a change.
  if (offered == Action::kUpdateAgent && asked &&
      (*asked == Action::kCreateAgent || *asked == Action::kCreateSkill) &&
      CatalogItemsInOrder(turn.content, request.agents).empty()) {
    offered = asked;
  }
  return offered;
}

// A user turn that neither answers an offer nor asks for something new: a
// question ("how many alerts would that give?") or a short acknowledgement
// ("nice", "hmm ok").
bool IsSideTalk(std::string_view text) {
  const std::string normalized = NormalizeText(text);
  const std::vector<std::string_view> words = Words(normalized);
  if (words.empty() || IsConfirmation(words) || IsDecline(words)) return false;
  if (ContainsPhrase(words, "?")) return true;
  static const std::set<std::string_view> question_starts = {
      "what", "whats", "how", "why",  "when", "which", "who",   "where", "does", "doesnt",
      "do",   "dont",  "is",  "isnt", "are",  "can",   "could", "would", "will"};
  if (question_starts.contains(words[0])) return true;
  return words.size() <= 3 && !VerbAction(normalized).has_value();
}

Context ReadContext(const IntentRequest& request, const LocalClassifier& classifier,
                    int max_turns) {
  Context c;
  const auto& history = request.history;
  const size_t begin =
      history.size() > static_cast<size_t>(max_turns) ? history.size() - max_turns : 0;
  c.has_history = begin < history.size();

  // The last list and the agent last talked about, newest turn first.
  bool list_done = false;
  bool agent_done = false;
  for (size_t i = history.size(); i-- > begin && !(list_done && agent_done);) {
    const HistoryTurn& turn = history[i];
    if (turn.role != Role::kUser && turn.role != Role::kAssistant) continue;
    if (!list_done && turn.role == Role::kAssistant) {
      std::vector<std::string> listed = AgentsOf(turn, request.agents);
      if (listed.size() >= 2) {
        c.last_list = std::move(listed);
        list_done = true;
        if (turn.action) {
          c.list_action = turn.action;
        } else {
          // "Which one should I run?", "Which one do you want to delete?"
          for (std::string_view sentence : SplitAny(turn.content, ".!\n")) {
            const std::string normalized = NormalizeText(sentence);
            const std::vector<std::string_view> words = Words(normalized);
            const int at = FindPhrase(words, "which");
            if (at < 0) continue;
            std::string rest;
            for (size_t i = at + 1; i < words.size(); ++i) {
              rest.append(words[i]);
              rest.push_back(' ');
            }
            c.list_action = VerbAction(rest);
          }
        }
      }
    }
    if (!agent_done) {
      if (auto single = SingleAgentOf(turn, request.agents)) {
        c.last_agent = single;
        agent_done = true;
      }
    }
  }

  // The last user turn: what the user asked for.
  const HistoryTurn* last_user = nullptr;
  const HistoryTurn* last_assistant = nullptr;
  size_t last_user_index = 0;
  for (size_t i = history.size(); i-- > begin;) {
    if (history[i].role == Role::kAssistant && last_assistant == nullptr && last_user == nullptr) {
      last_assistant = &history[i];
    }
    if (history[i].role == Role::kUser) {
      last_user = &history[i];
      last_user_index = i;
      break;
    }
  }
  if (last_user != nullptr) {
    if (last_user->action) {
      c.previous_action = last_user->action;
    } else {
      std::vector<Prediction> ranked = classifier.Predict(last_user->content);
      if (!ranked.empty()) c.previous_action = ranked[0].action;
    }
    c.previous_entities =
        last_user->entities.empty() ? ExtractEntities(last_user->content) : last_user->entities;
    if (auto agent = SingleAgentOf(*last_user, request.agents)) {
      c.previous_entities["agent_name"] = *agent;
    }
  }

  // The assistant's last turn (after the last user turn): a proposal?
  if (last_assistant != nullptr) {
    const HistoryTurn* offer_turn = last_assistant;
    std::optional<Action> offered =
        OfferOf(*last_assistant, c.previous_action, request, classifier);
    // An offer the user has not answered yet stays open while the user only
    // asked about it or acknowledged it ("how many alerts would that give?",
    // "nice"): up to two exchanges back.
    for (size_t i = last_user_index, exchanges = 0; !offered && exchanges < 2 && i > begin;) {
      if (!IsSideTalk(history[i].content)) break;
      size_t assistant = i;
      while (assistant-- > begin && history[assistant].role != Role::kAssistant) {
      }
      if (assistant < begin || assistant >= i) break;
      size_t user = assistant;
      while (user-- > begin && history[user].role != Role::kUser) {
      }
      std::optional<Action> asked;
      if (user >= begin && user < assistant) {
        if (history[user].action) {
          asked = history[user].action;
        } else if (auto ranked = classifier.Predict(history[user].content); !ranked.empty()) {
          asked = ranked[0].action;
        }
      }
      offered = OfferOf(history[assistant], asked, request, classifier);
      if (offered) offer_turn = &history[assistant];
      if (user < begin || user >= assistant) break;
      i = user;
      ++exchanges;
    }
    const HistoryTurn& turn = *offer_turn;
    if (offered) {
      c.proposal = offered;
      c.proposal_entities = turn.entities.empty() ? ExtractEntities(turn.content) : turn.entities;
      std::vector<std::string> named =
          CatalogItemsInOrder(ProposalText(turn.content), request.agents);
      if (named.empty()) named = CatalogItemsInOrder(turn.content, request.agents);
      if (!c.proposal_entities.contains("agent_name") && named.size() == 1 &&
          *offered != Action::kCreateAgent && *offered != Action::kCreateSkill) {
        c.proposal_entities["agent_name"] = named[0];
      }
    }
    auto drafting = [](std::optional<Action> a) {
      return a && (*a == Action::kCreateAgent || *a == Action::kUpdateAgent ||
                   *a == Action::kCreateSkill);
    };
    if (drafting(c.proposal)) {
      c.in_progress = c.proposal;
      c.in_progress_entities = c.proposal_entities;
    } else if (drafting(c.previous_action) && absl::StrContains(turn.content, "?") &&
               !AsksForAnythingElse(turn.content)) {
      c.in_progress = c.previous_action;
      c.in_progress_entities = c.previous_entities;
    }
    if (c.in_progress == Action::kUpdateAgent && !c.in_progress_entities.contains("agent_name")) {
      if (auto it = c.previous_entities.find("agent_name"); it != c.previous_entities.end()) {
        c.in_progress_entities["agent_name"] = it->second;
      } else if (c.last_agent) {
        c.in_progress_entities["agent_name"] = *c.last_agent;
      }
    }
  }
  return c;
}

void Merge(std::map<std::string, std::string>& into,
           const std::map<std::string, std::string>& from) {
  for (const auto& [k, v] : from) into[k] = v;
}

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

// True when the message starts (after filler like "ok", "please", "can
// you") with a verb of the lexicon: "run the sales digest anyway".
bool LeadingVerb(const std::vector<std::string_view>& words) {
  static const std::set<std::string_view> filler = {
      "ok",      "okay", "so",     "then", "please", "pls",  "can",  "could",
      "would",   "you",  "just",   "now",  "right",  "fine", "good", "great",
      "alright", "hey",  "and",    "also", "yeah",   "hmm",  "well", "actually",
      "oh",      "u",    "kindly", "lets", "let",    "us",   "go",   "ahead"};
  for (std::string_view w : words) {
    if (filler.contains(w)) continue;
    const std::optional<Action> verb = VerbAction(w);
    return verb.has_value() && *verb != Action::kQueryInfo;
  }
  return false;
}

// The action an unmistakable message asks for: a question about what agents
// or skills can do (QUERY_INFO), something done once (EXECUTE_TASK), a
// message starting (after filler) with a lifecycle verb (MANAGE_PLATFORM)
// or a run verb (EXECUTE_TASK), or a request for a new skill.
std::optional<Action> ImperativeCue(const std::vector<std::string_view>& words) {
  // "can agents call other agents?", "does a skill cost extra?"
  static const std::set<std::string_view> asks = {"can", "could", "do",  "does",
                                                  "is",  "are",   "will"};
  static const std::set<std::string_view> subjects = {"agent", "agents", "bot",
                                                      "bots",  "skill",  "skills"};
  if (words.size() >= 3 && asks.contains(words[0])) {
    const bool article = words[1] == "a" || words[1] == "an" || words[1] == "the";
    if (subjects.contains(words[article ? 2 : 1])) return Action::kQueryInfo;
  }
  // "just this once, send it to the whole company" (LABELS.md: a one-off
  // is a task, not a change).
  if (ContainsAnyPhrase(words, {"just this once", "this once", "just once", "one time more",
                                "this time only", "only this time", "one off"})) {
    return Action::kExecuteTask;
  }
  static const std::set<std::string_view> filler = {
      "ok",    "okay",  "so",     "then", "please", "pls",     "plz", "can",
      "could", "would", "you",    "u",    "just",   "now",     "hey", "hi",
      "and",   "also",  "kindly", "go",   "ahead",  "quickly", "pls"};
  static const std::set<std::string_view> manage = {
      "pause",   "unpause", "resume",  "halt",       "stop",       "delete",     "remove",
      "disable", "enable",  "archive", "unarchive",  "deactivate", "reactivate", "suspend",
      "invite",  "revoke",  "rotate",  "disconnect", "kill",       "mute",       "unmute",
      "freeze",  "retire",  "snooze",  "connect",    "reconnect"};
  static const std::set<std::string_view> run = {"run",     "rerun",  "trigger", "kick",
                                                 "execute", "launch", "retry"};
  for (size_t i = 0; i < words.size(); ++i) {
    if (filler.contains(words[i])) continue;
    // "stop sending x" changes behaviour; "remove x from y" too.
    const std::string_view next = i + 1 < words.size() ? words[i + 1] : "";
    // "invite the attendees to the webinar" is a task, not a new member;
    // "kick off a project" is the workspace's project list.
    const bool to_an_event = ContainsAnyPhrase(
        words, {"webinar", "meeting", "call", "event", "session", "demo", "party", "workshop"});
    if (manage.contains(words[i]) && !next.ends_with("ing") && !ContainsPhrase(words, "from") &&
        !(words[i] == "invite" && to_an_event)) {
      return Action::kManagePlatform;
    }
    if (run.contains(words[i]) && !ContainsPhrase(words, "project")) return Action::kExecuteTask;
    // "turn the digest off until march", "shut the old importer down".
    if (words[i] == "turn" || words[i] == "switch" || words[i] == "shut") {
      for (size_t j = i + 1; j < words.size() && j <= i + 5; ++j) {
        if (words[j] == "off" || words[j] == "down") return Action::kManagePlatform;
      }
    }
    break;
  }
  // "has anyone made a skill that ...?" asks; it does not order one.
  static const std::set<std::string_view> question_starts = {
      "has", "have", "is", "are", "does", "do", "did", "what", "which", "who", "where", "how"};
  if (!words.empty() && question_starts.contains(words[0])) return std::nullopt;
  for (std::string_view phrase :
       {"new skill", "a skill", "skill for", "skill that", "skill to", "reusable skill"}) {
    if (ContainsPhrase(words, phrase)) return Action::kCreateSkill;
  }
  return std::nullopt;
}

// "change that", "undo that", "fix this": a verb whose object is a bare
// "that" or "this" at the end of a clause.
bool VerbOnThat(const std::vector<std::string_view>& words) {
  for (size_t i = 0; i + 1 < words.size(); ++i) {
    if ((words[i + 1] == "that" || words[i + 1] == "this") &&
        (i + 2 == words.size() || words[i + 2] == "?" || words[i + 2] == "one") &&
        SingleWordVerb(words[i]).has_value()) {
      return true;
    }
  }
  return false;
}

// True when the verb is a real word of the message, not only a closing "?".
bool verb_is_explicit(std::string_view text) {
  const std::string normalized = NormalizeText(text);
  std::string without_question;
  for (std::string_view w : Words(normalized)) {
    if (w == "?") continue;
    without_question.append(w);
    without_question.push_back(' ');
  }
  return VerbAction(without_question).has_value();
}

// The list item whose name or description shares the most distinctive
// words with the message ("the salesforce one"); nullopt on a tie.
std::optional<std::string> PickByDescription(const std::vector<std::string_view>& words,
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
  LocalResult result;
  IntentAnalysis& a = result.analysis;
  a.source = Source::kLocalModel;
  const std::string normalized = NormalizeText(request.message);
  const std::vector<std::string_view> words = Words(normalized);

  // 1. Fast path: an empty message.
  if (std::all_of(words.begin(), words.end(), [](std::string_view w) { return w == "?"; })) {
    a.source = Source::kFastPath;
    a.action = Action::kUnknown;
    a.confidence = 0;
    a.is_ambiguous = true;
    a.reasoning = "The message is empty.";
    std::vector<std::string> names;
    for (size_t i = 0; i < request.agents.size() && i < 3; ++i)
      names.push_back(request.agents[i].name);
    a.clarifying_question =
        names.empty()
            ? "What would you like to do? I can set up a new agent, run or change one, or answer "
              "questions about your workspace."
            : "What would you like to do? I can set up a new agent, run or change one of yours (" +
                  absl::StrJoin(names, ", ") + "), or answer questions about them.";
    return result;
  }

  a.entities = ExtractEntities(request.message);

  // 1. Fast path: "@agent-name" naming one of the user's agents.
  {
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
      if (agent == request.agents.end()) continue;
      a.source = Source::kFastPath;
      a.entities["agent_name"] = agent->name;
      std::string rest = m.substr(0, at) + " " + m.substr(end);
      std::optional<Action> verb = VerbAction(rest);
      // "@x" alone or with a task runs it; a verb that says otherwise wins.
      a.action = verb && *verb != Action::kCreateAgent && *verb != Action::kCreateSkill &&
                         *verb != Action::kUpdateAgent
                     ? *verb
                     : Action::kExecuteTask;
      if (verb == Action::kUpdateAgent) {
        const std::string rest_normalized = NormalizeText(rest);
        const std::vector<std::string_view> rest_words = Words(rest_normalized);
        // "@x change the schedule" is a change; "@x make a summary" is a task.
        for (std::string_view cue : {"change", "update", "edit", "modify", "rename", "reschedule",
                                     "configure", "switch", "tweak", "adjust"}) {
          if (FindPhrase(rest_words, cue) >= 0 && FindPhrase(rest_words, cue) <= 2) {
            a.action = Action::kUpdateAgent;
          }
        }
      }
      a.confidence = 0.97f;
      a.reasoning =
          a.action == Action::kExecuteTask
              ? "The message addresses @" + agent->name + " directly, so it is a task for it."
              : "The message addresses @" + agent->name + " and asks to " +
                    std::string(ActionPhrase(a.action)) + ".";
      return result;
    }
  }

  const Context context = ReadContext(request, classifier_, options_.history_turns);
  std::optional<std::string> named_agent = MatchCatalogItem(request.message, request.agents);
  if (named_agent) a.entities["agent_name"] = *named_agent;
  if (auto skill = MatchCatalogItem(request.message, request.skills))
    a.entities["skill_name"] = *skill;

  auto finish_rule = [&](Action action, float confidence, Reference reference, std::string why) {
    a.action = action;
    a.confidence = confidence;
    a.reference = reference;
    a.reasoning = std::move(why);
    return result;
  };

  // 3. References into the conversation.
  if (IsRecap(words)) {
    a.summary_worthy = true;
    return finish_rule(Action::kConversation, 0.95f, Reference::kRecap,
                       "The user wants to pick the conversation back up: a recap is due.");
  }
  if (IsClosing(words)) {
    if (context.proposal) a.alternative = context.proposal;
    return finish_rule(Action::kConversation, 0.9f,
                       context.proposal ? Reference::kDecline : Reference::kNone,
                       "The user has nothing more to ask for now.");
  }
  if (context.proposal && IsConfirmation(words)) {
    Merge(a.entities, context.proposal_entities);
    if (*context.proposal == Action::kCreateAgent &&
        (ContainsPhrase(words, "skill") || ContainsPhrase(words, "skills"))) {
      return finish_rule(Action::kCreateSkill, 0.9f, Reference::kConfirmation,
                         "The user said yes to the assistant's offer, for a skill.");
    }
    // "Want me to send it now?" about the agent the conversation is on.
    if (!a.entities.contains("agent_name") && context.last_agent &&
        *context.proposal != Action::kCreateAgent && *context.proposal != Action::kCreateSkill &&
        *context.proposal != Action::kManagePlatform) {
      a.entities["agent_name"] = *context.last_agent;
    }
    return finish_rule(*context.proposal, 0.92f, Reference::kConfirmation,
                       "The user said yes to the assistant's offer to " +
                           std::string(ActionPhrase(*context.proposal)) + ".");
  }
  if (context.proposal && IsDecline(words)) {
    a.alternative = context.proposal;
    return finish_rule(Action::kConversation, 0.9f, Reference::kDecline,
                       "The user declined the assistant's offer to " +
                           std::string(ActionPhrase(*context.proposal)) + ".");
  }

  size_t content_words = 0;
  for (std::string_view w : words) content_words += w != "?";
  std::optional<Action> verb = VerbAction(request.message);
  // Verbs that can apply to an agent the user already has.
  const bool has_agent_verb =
      verb.has_value() && *verb != Action::kCreateAgent && *verb != Action::kCreateSkill;
  const Action agent_verb = has_agent_verb ? *verb : Action::kUnknown;

  // Ordinals ("the second one") and descriptions ("the salesforce one") pick
  // from the last list the assistant gave.
  std::optional<OrdinalRef> ordinal = FindOrdinal(request.message);
  if (ordinal && context.last_list.empty()) ordinal.reset();  // "no, 45": a number, not a pick
  // "the first, we do birthdays in person now": the ordinal and the loose
  // name agree, so the ordinal rules still apply.
  if (ordinal && named_agent && !context.last_list.empty()) {
    const int size = static_cast<int>(context.last_list.size());
    const int index = ordinal->Resolve(size, -1);
    if (index >= 0 && context.last_list[index] == *named_agent) named_agent.reset();
  }
  if (!named_agent && !context.last_list.empty()) {
    const int size = static_cast<int>(context.last_list.size());
    int current = -1;
    for (int i = 0; i < size && context.last_agent; ++i) {
      if (context.last_list[i] == *context.last_agent) current = i;
    }
    std::optional<std::string> picked;
    std::string how;
    if (ordinal) {
      const int index = ordinal->Resolve(size, current);
      if (index >= 0) {
        picked = context.last_list[index];
        how = "\"" + ordinal->text + "\"";
        a.entities["ordinal"] = std::to_string(index + 1);
      }
    } else if (words.size() <= 8 && ContainsPhrase(words, "one")) {
      picked = PickByDescription(words, context.last_list, request.agents);
      how = "the description";
    }
    if (picked) {
      a.entities["agent_name"] = *picked;
      Action action;
      std::string why;
      if (has_agent_verb &&
          !(agent_verb == Action::kQueryInfo && !verb_is_explicit(request.message))) {
        action = agent_verb;
        why = how + " is " + *picked + " in the list the assistant gave; the verb asks to " +
              std::string(ActionPhrase(action)) + ".";
      } else {
        // A bare "the second one": what the list was offered for.
        std::optional<Action> wanted = context.list_action;
        if (!wanted && context.proposal) wanted = context.proposal;
        // A pick that says what it wants ("number 2, i need the report
        // before my 1:1"): the model reads the rest of the message.
        if (!wanted && content_words >= 5) {
          const std::vector<Prediction> ranked = classifier_.Predict(request.message);
          if (!ranked.empty() && ranked[0].probability >= 0.5f &&
              (ranked[0].action == Action::kExecuteTask ||
               ranked[0].action == Action::kUpdateAgent ||
               ranked[0].action == Action::kManagePlatform)) {
            wanted = ranked[0].action;
          }
        }
        if (!wanted) wanted = context.previous_action;
        action = wanted.value_or(Action::kQueryInfo);
        if (action == Action::kCreateAgent || action == Action::kCreateSkill ||
            action == Action::kConversation || action == Action::kUnknown) {
          action = Action::kQueryInfo;
        }
        why = how + " picks " + *picked + " from the assistant's list, for what was being done: " +
              std::string(ActionPhrase(action)) + ".";
      }
      return finish_rule(action, 0.9f, Reference::kOrdinal, std::move(why));
    }
  }

  // "the newsletter one", "not that one, the routing one" with no list to
  // pick from: the agent whose name or description fits, among all of the
  // user's agents (other than the one just talked about when the user says
  // "not that" or "the other"), for what the user was asking about.
  if (!named_agent && !ordinal && context.last_list.empty() && context.previous_action &&
      words.size() <= 8 && ContainsPhrase(words, "one")) {
    const bool another = ContainsAnyPhrase(words, {"not", "no", "other", "another"});
    std::vector<std::string> candidates;
    for (const CatalogItem& agent : request.agents) {
      if (another && context.last_agent && agent.name == *context.last_agent) continue;
      candidates.push_back(agent.name);
    }
    if (std::optional<std::string> picked = PickByDescription(words, candidates, request.agents)) {
      Action action = has_agent_verb && verb_is_explicit(request.message)
                          ? agent_verb
                          : *context.previous_action;
      if (action == Action::kCreateAgent || action == Action::kCreateSkill ||
          action == Action::kConversation || action == Action::kUnknown) {
        action = Action::kQueryInfo;
      }
      a.entities["agent_name"] = *picked;
      return finish_rule(action, 0.8f, Reference::kOrdinal,
                         "The description picks " + *picked + " among the user's agents, for " +
                             std::string(ActionPhrase(action)) + ".");
    }
  }

  // Corrections continue the draft in progress: "actually make it weekly",
  // "no, 45", "thursday at noon instead".
  // While a new agent or skill is drafted, a loose mention of an existing
  // one ("use hubspot" beside hubspot-deal-updater) is a detail of the
  // draft; only its exact name points elsewhere.
  const bool named_exactly =
      named_agent && absl::StrContains(Lowercase(request.message), Lowercase(*named_agent));
  const bool drafting_new =
      context.in_progress == Action::kCreateAgent || context.in_progress == Action::kCreateSkill;
  if (context.in_progress && words.size() <= 16 && !ordinal &&
      (!named_agent || (drafting_new && !named_exactly) ||
       (context.in_progress_entities.count("agent_name") > 0 &&
        context.in_progress_entities.at("agent_name") == *named_agent)) &&
      (!has_agent_verb || agent_verb == Action::kUpdateAgent ||
       (agent_verb == Action::kQueryInfo && HasCorrectionCue(words)))) {
    if (drafting_new && !named_exactly) a.entities.erase("agent_name");
    std::map<std::string, std::string> merged = context.in_progress_entities;
    Merge(merged, a.entities);
    a.entities = std::move(merged);
    return finish_rule(
        *context.in_progress, 0.85f, Reference::kCorrection,
        "The user adjusts the " +
            std::string(*context.in_progress == Action::kUpdateAgent ? "change" : "draft") +
            " in progress (" + std::string(ActionPhrase(*context.in_progress)) + ").");
  }

  // "same for X", "what about X": the previous request, for another agent.
  if (named_agent && context.previous_action && AsksForSameAgain(words) && words.size() <= 10 &&
      (!has_agent_verb || !verb_is_explicit(request.message))) {
    Merge(a.entities, {{"agent_name", *named_agent}});
    return finish_rule(*context.previous_action, 0.85f, Reference::kNone,
                       "A follow-up asking for the same as before (" +
                           std::string(ActionPhrase(*context.previous_action)) + ") for " +
                           *named_agent + ".");
  }

  // "do the same for march": the previous request again, on the agent the
  // conversation is about.
  if (!named_agent && context.previous_action && context.last_agent &&
      *context.previous_action != Action::kCreateAgent &&
      *context.previous_action != Action::kCreateSkill &&
      (ContainsPhrase(words, "do the same") || ContainsPhrase(words, "same thing") ||
       FindPhrase(words, "same for") == 0 || FindPhrase(words, "same with") == 0)) {
    a.entities["agent_name"] = *context.last_agent;
    return finish_rule(*context.previous_action, 0.85f, Reference::kPronoun,
                       "A follow-up asking for the same as before (" +
                           std::string(ActionPhrase(*context.previous_action)) + ") on " +
                           *context.last_agent + ".");
  }

  // "and last week?", "what about yesterday?": the previous question or
  // request again, with a new detail, about the agent the conversation is on.
  if (!named_agent && context.previous_action && context.last_agent && words.size() <= 6 &&
      (FindPhrase(words, "and") == 0 || FindPhrase(words, "what about") == 0 ||
       FindPhrase(words, "how about") == 0) &&
      !verb_is_explicit(request.message) &&
      (*context.previous_action == Action::kQueryInfo ||
       *context.previous_action == Action::kExecuteTask)) {
    a.entities["agent_name"] = *context.last_agent;
    return finish_rule(*context.previous_action, 0.8f, Reference::kPronoun,
                       "A follow-up asking for the same as before (" +
                           std::string(ActionPhrase(*context.previous_action)) + ") on " +
                           *context.last_agent + ", with a new detail.");
  }

  // Pronouns to the agent last talked about.
  const bool pronoun = !named_agent && (HasAgentPronoun(request.message) || VerbOnThat(words));
  const bool implicit_object = content_words <= 5 && verb_is_explicit(request.message);
  if ((pronoun || (implicit_object && !named_agent)) && context.last_agent && has_agent_verb) {
    a.entities["agent_name"] = *context.last_agent;
    return finish_rule(agent_verb, 0.88f, Reference::kPronoun,
                       "\"it\" is " + *context.last_agent +
                           ", the agent last talked about; the verb asks to " +
                           std::string(ActionPhrase(agent_verb)) + ".");
  }

  // An agent named with a leading verb: "run the sales digest anyway",
  // "ok, have the pager thing ignore outage tickets".
  if (named_agent && has_agent_verb && LeadingVerb(words)) {
    return finish_rule(agent_verb, 0.85f, Reference::kNone,
                       "The message names " + *named_agent + " and starts with a verb asking to " +
                           std::string(ActionPhrase(agent_verb)) + ".");
  }

  // 2. The model, on the message alone.
  std::vector<Prediction> ranked = classifier_.Predict(request.message);
  if (ranked.empty()) {
    a.action = Action::kUnknown;
    a.confidence = 0.3f;
    a.is_ambiguous = true;
    a.reasoning = "No word of the message is known to the model.";
    a.clarifying_question = ClarifyingQuestion(Action::kUnknown, std::nullopt, a.entities);
    result.needs_llm = true;
    result.llm_reason = "unknown words";
    return result;
  }
  Prediction top = ranked[0];
  std::optional<Prediction> second;
  if (ranked.size() > 1) second = ranked[1];

  // An existing agent named with a verb that only makes sense for existing
  // agents is not a request for a new one.
  if (named_agent && (top.action == Action::kCreateAgent || top.action == Action::kCreateSkill ||
                      top.action == Action::kUnknown || top.action == Action::kConversation)) {
    std::optional<Action> verb = VerbAction(request.message);
    if (verb && *verb != Action::kCreateAgent && *verb != Action::kCreateSkill) {
      second = top;
      top = Prediction{*verb, std::max(top.probability, 0.6f)};
    }
  }
  // An unsure model yields to a command that starts with an unmistakable
  // lifecycle or run verb ("halt the etl", "kick off the invoice run") and
  // to an explicit request for a new skill.
  if (top.probability < 0.7f) {
    std::optional<Action> cue = ImperativeCue(words);
    if (cue && *cue != top.action) {
      float cue_p = 0;
      for (const Prediction& p : ranked) {
        if (p.action == *cue) cue_p = p.probability;
      }
      second = top;
      top = Prediction{*cue, std::max(0.6f, cue_p)};
    }
  }
  a.action = top.action;
  a.confidence = top.probability;
  if (second && second->probability >= 0.05f && second->action != top.action) {
    a.alternative = second->action;
  }
  const float second_p = second ? second->probability : 0.0f;
  a.is_ambiguous = top.probability < options_.low_confidence ||
                   top.probability - second_p < options_.ambiguity_margin;
  a.reasoning =
      absl::StrCat("The local model reads this as ", std::string(ActionPhrase(top.action)), " (",
                   std::lround(top.probability * 100), "%)");
  if (a.alternative) {
    absl::StrAppend(&a.reasoning, "; runner-up: ", std::string(ActionPhrase(*a.alternative)), " (",
                    std::lround(second_p * 100), "%)");
  }
  absl::StrAppend(&a.reasoning, ".");
  if (a.is_ambiguous)
    a.clarifying_question = ClarifyingQuestion(top.action, a.alternative, a.entities);

  // A short follow-up about the agent just discussed ("why?", "how much did
  // that cost?") is about that agent.
  if (!a.entities.contains("agent_name") && context.last_agent && words.size() <= 6 &&
      (a.action == Action::kQueryInfo || a.action == Action::kExecuteTask ||
       a.action == Action::kManagePlatform || a.action == Action::kUpdateAgent)) {
    a.entities["agent_name"] = *context.last_agent;
  }

  if (pronoun && !context.last_agent && context.has_history) {
    result.needs_llm = true;
    result.llm_reason = "a pronoun with no agent to refer to";
  } else if (ordinal && context.last_list.empty() && context.has_history) {
    result.needs_llm = true;
    result.llm_reason = "an ordinal with no list to refer to";
  } else if (a.is_ambiguous || a.confidence < options_.llm_threshold) {
    result.needs_llm = true;
    result.llm_reason = "low local confidence";
  } else if (words.size() <= 3 && context.has_history) {
    result.needs_llm = true;
    result.llm_reason = "a short follow-up";
  }
  return result;
}

}  // namespace omniforge::intent
