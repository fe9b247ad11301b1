#include "services/intent/src/conversation_context.h"

#include <cctype>
#include <set>

#include "absl/strings/match.h"
#include "services/intent/entities/entities.h"
#include "services/intent/src/action_details.h"
#include "services/intent/src/assistant_list.h"
#include "services/intent/src/cues.h"
#include "services/intent/src/followup_cues.h"
#include "services/intent/src/text.h"

namespace omniforge::intent {
namespace {

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
      const std::vector<std::string_view> offered = Words(rest);
      const auto offered_has = [&](std::initializer_list<std::string_view> any) {
        for (size_t i = 0; i < offered.size() && i < 4; ++i) {
          for (std::string_view w : any) {
            if (offered[i] == w) return true;
          }
        }
        return false;
      };
      // "I can duplicate it", "make a copy of X": a copy is lifecycle.
      if (offered_has({"copy", "duplicate", "clone"})) verb = Action::kManagePlatform;
      // "I can show you its details", "pull up its last runs": a look.
      if (verb == Action::kQueryInfo && !offered.empty() &&
          (offered[0] == "show" || offered[0] == "pull" || offered[0] == "open" ||
           offered[0] == "display" || offered[0] == "list" || offered[0] == "fetch")) {
        found = verb;
        break;
      }
      // "I could create a skill ... Want me to set it up?": still the skill.
      if (verb == Action::kCreateAgent && found == Action::kCreateSkill) verb = found;
      // "I can stop X until January 3 ... Should I set that?": an offer of
      // "that" points back at the offer made before it.
      const bool points_back = found && offered.size() >= 2 && offered.size() <= 3 &&
                               (offered[1] == "that" || offered[1] == "it" || offered[1] == "this");
      if (verb && *verb != Action::kQueryInfo && !points_back) found = verb;  // the latest counts
      break;
    }
  }
  if (!found && !sentences.empty()) {
    std::optional<Action> verb = VerbAction(sentences.back());
    if (verb && *verb != Action::kQueryInfo) found = verb;
  }
  // "Draft skill 'fuel-charge-calc': ... Save?": a skill's draft offered
  // for saving or creating is the skill.
  const size_t line_end = text.find_first_of(":\n");
  const std::string heading = NormalizeText(text.substr(0, line_end));
  const std::vector<std::string_view> heading_words = Words(heading);
  if (ContainsPhrase(heading_words, "skill") && heading_words.size() <= 6 &&
      (!found || found == Action::kCreateAgent)) {
    const std::string last = sentences.empty() ? "" : NormalizeText(sentences.back());
    const std::vector<std::string_view> last_words = Words(last);
    if (found || ContainsAnyPhrase(last_words, {"save", "create", "add", "set it up", "build"})) {
      found = Action::kCreateSkill;
    }
  }
  return found;
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

// The entities of `turn`'s action: the routing's, else those its words
// name. The details of an earlier analysis (action_details.h) read that
// message's words and are not carried over.
std::map<std::string, std::string> EntitiesOf(const HistoryTurn& turn) {
  std::map<std::string, std::string> entities;
  for (const auto& [key, value] : turn.entities) {
    if (!IsActionDetail(key)) entities.emplace(key, value);
  }
  return entities.empty() ? ExtractEntities(turn.content) : entities;
}

// The agents a turn lists: the routing metadata, else the entries of the
// list it wrote (ListedAgents), else every agent it names, in order.
std::vector<std::string> AgentsOf(const HistoryTurn& turn, const std::vector<CatalogItem>& agents) {
  if (!turn.listed_agents.empty()) return turn.listed_agents;
  std::vector<std::string> listed = ListedAgents(turn.content, agents);
  return listed.empty() ? CatalogItemsInOrder(turn.content, agents) : listed;
}

std::optional<std::string> SingleAgentOf(const HistoryTurn& turn,
                                         const std::vector<CatalogItem>& agents) {
  if (auto it = turn.entities.find("agent_name"); it != turn.entities.end()) return it->second;
  std::vector<std::string> named = CatalogItemsInOrder(turn.content, agents);
  if (named.size() == 1) return named[0];
  if (named.empty() && turn.role == Role::kUser) return MatchCatalogItem(turn.content, agents);
  return std::nullopt;
}

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
    // "I can soften the tone of invoice-chaser's reminders": an offer to do
    // something the verb lexicon does not know to one of the user's agents
    // changes that agent, whatever the model makes of the words.
    if ((!offered || offered == Action::kUnknown || offered == Action::kConversation) &&
        !CatalogItemsInOrder(turn.content, request.agents).empty()) {
      offered = Action::kUpdateAgent;
    }
  }
  // A draft of something new is the kind its words name ("Draft agent:
  // ..."); when they name neither, the kind the user asked for.
  if (offered == Action::kCreateAgent || offered == Action::kCreateSkill) {
    const std::string normalized = NormalizeText(turn.content);
    const std::vector<std::string_view> words = Words(normalized);
    const bool agent = ContainsAnyPhrase(words, {"agent", "bot"});
    const bool skill = ContainsAnyPhrase(words, {"skill"});
    if (agent != skill) {
      offered = agent ? Action::kCreateAgent : Action::kCreateSkill;
    } else if (!agent && asked &&
               (*asked == Action::kCreateAgent || *asked == Action::kCreateSkill)) {
      offered = asked;
    }
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

// What an assistant list was offered for: the routing metadata, else the
// verb after "which" ("Which one should I run?", "Which one do you want to
// delete?"), the last such sentence winning.
std::optional<Action> ListAction(const HistoryTurn& turn) {
  if (turn.action) return turn.action;
  std::optional<Action> action;
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
    action = VerbAction(rest);
  }
  return action;
}

// The last list and the agent last talked about, newest turn first.
void ReadLastListAndAgent(const IntentRequest& request, size_t begin, Context& c) {
  const auto& history = request.history;
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
        c.list_action = ListAction(turn);
      }
    }
    if (!agent_done) {
      if (auto single = SingleAgentOf(turn, request.agents)) {
        c.last_agent = single;
        agent_done = true;
      }
    }
  }
}

// What the user asked for in `turn`: the routing metadata, else, as for a
// message, a leading verb on one of the user's agents ("change
// promo-code-mailer to ..."), else the model's best guess.
std::optional<Action> AskedFor(const HistoryTurn& turn, const IntentRequest& request,
                               const LocalClassifier& classifier) {
  if (turn.action) return turn.action;
  // The words of an agent's own name ("weekly-sales-digest",
  // "delete-old-files") say nothing of what the turn asked.
  const std::string masked = WithoutCatalogNames(turn.content, request);
  const std::string normalized = NormalizeText(masked);
  const std::vector<std::string_view> words = Words(normalized);
  if (LeadingVerb(words) && MatchCatalogItem(turn.content, request.agents)) {
    const std::optional<Action> verb = VerbAction(masked);
    // "run cert-watch at 6am every day", "post its messages to #general
    // from now on": a standing change to the agent, not a run.
    if (verb == Action::kExecuteTask && (HasRecurrence(words) || AsksStandingChange(words))) {
      return Action::kUpdateAgent;
    }
    if (verb && *verb != Action::kCreateAgent && *verb != Action::kCreateSkill) return verb;
  }
  std::vector<Prediction> ranked = classifier.PredictEarlier(turn.content);
  if (ranked.empty()) return std::nullopt;
  return ranked[0].action;
}

// "Done — X now posts to #incidents", "Updated: X will text 48 hours
// before", "from now on X ...": an answer that says an agent was changed.
bool SaysItChangedAnAgent(std::string_view answer) {
  // Sentence by sentence: "It ran just now. Reminders were sent" is no
  // "now <verb>s".
  for (std::string_view sentence : SplitAny(answer, ".!?\n")) {
    const std::string normalized = NormalizeText(sentence);
    const std::vector<std::string_view> words = Words(normalized);
    if (ContainsAnyPhrase(words, {"will now", "from now on", "is now set", "now set to",
                                  "going forward", "i changed", "ive changed"})) {
      return true;
    }
    // "now posts", "now runs": "now" before a verb of the present.
    for (size_t i = 0; i + 1 < words.size(); ++i) {
      if (words[i] == "now" && words[i + 1].size() > 3 && words[i + 1].ends_with("s") &&
          !words[i + 1].ends_with("ss") && (i == 0 || !OneOf(words[i - 1], {"just", "right"}))) {
        return true;
      }
    }
  }
  return false;
}

// The last user turn: what the user asked for, with its entities.
void ReadPreviousRequest(const IntentRequest& request, const HistoryTurn& last_user,
                         const LocalClassifier& classifier, Context& c) {
  c.previous_action = AskedFor(last_user, request, classifier);
  c.previous_entities = EntitiesOf(last_user);
  if (auto agent = SingleAgentOf(last_user, request.agents)) {
    c.previous_entities["agent_name"] = *agent;
  }
}

struct OpenOffer {
  std::optional<Action> action;
  const HistoryTurn* turn = nullptr;
};

// The offer still open: that of the assistant's last turn, else one the
// user has not answered yet because they only asked about it or
// acknowledged it ("how many alerts would that give?", "nice"), up to two
// exchanges back.
OpenOffer FindOpenOffer(const IntentRequest& request, const LocalClassifier& classifier,
                        size_t begin, const HistoryTurn& last_assistant, size_t last_user_index,
                        std::optional<Action> previous_action) {
  const auto& history = request.history;
  OpenOffer offer{OfferOf(last_assistant, previous_action, request, classifier), &last_assistant};
  for (size_t i = last_user_index, exchanges = 0; !offer.action && exchanges < 2 && i > begin;) {
    if (!IsSideTalk(history[i].content)) break;
    size_t assistant = i;
    while (assistant-- > begin && history[assistant].role != Role::kAssistant) {
    }
    if (assistant < begin || assistant >= i) break;
    size_t user = assistant;
    while (user-- > begin && history[user].role != Role::kUser) {
    }
    std::optional<Action> asked;
    if (user >= begin && user < assistant) asked = AskedFor(history[user], request, classifier);
    offer.action = OfferOf(history[assistant], asked, request, classifier);
    if (offer.action) offer.turn = &history[assistant];
    if (user < begin || user >= assistant) break;
    i = user;
    ++exchanges;
  }
  return offer;
}

// The offer and the draft in progress, from the turn that made the offer
// (the assistant's last turn when nothing is offered).
void ReadOfferAndDraft(const IntentRequest& request, const OpenOffer& offer, Context& c) {
  const HistoryTurn& turn = *offer.turn;
  if (offer.action) {
    c.proposal = offer.action;
    c.proposal_entities = EntitiesOf(turn);
    std::vector<std::string> named =
        CatalogItemsInOrder(ProposalText(turn.content), request.agents);
    if (named.empty()) named = CatalogItemsInOrder(turn.content, request.agents);
    if (!c.proposal_entities.contains("agent_name") && named.size() == 1 &&
        *offer.action != Action::kCreateAgent && *offer.action != Action::kCreateSkill) {
      c.proposal_entities["agent_name"] = named[0];
    }
  }
  // A draft headed by one of the user's agents ("Update to pick-rate-board:",
  // "Preview of interview-scheduler changes:") changes that agent; only a
  // draft under a name the user has no agent by creates one.
  if (c.proposal == Action::kCreateAgent) {
    const std::string_view content = turn.content;
    const size_t line_end = content.find('\n');
    const std::string_view first = TrimWhitespace(content.substr(0, line_end));
    const std::vector<std::string> heading =
        line_end != std::string_view::npos && first.ends_with(':')
            ? CatalogItemsInOrder(first, request.agents)
            : std::vector<std::string>{};
    if (heading.size() == 1) {
      c.proposal = Action::kUpdateAgent;
      c.proposal_entities["agent_name"] = heading[0];
    }
  }
  auto drafting = [](std::optional<Action> a) {
    return a &&
           (*a == Action::kCreateAgent || *a == Action::kUpdateAgent || *a == Action::kCreateSkill);
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

// Text of its own in `text`: at least `min_words` words between quote
// marks or after a colon.
bool CarriesText(std::string_view text, size_t min_words) {
  const size_t colon = text.find(':');
  if (colon != std::string_view::npos &&
      Words(NormalizeText(text.substr(colon + 1))).size() >= min_words) {
    return true;
  }
  const size_t curly = text.find("“");
  if (curly != std::string_view::npos && text.find("”", curly) != std::string_view::npos) {
    return true;
  }
  // A quote mark, not an apostrophe inside a word ("I've", "Hale's").
  const auto quote_at = [text](size_t from) {
    const auto letter = [](char c) { return std::isalpha(static_cast<unsigned char>(c)) != 0; };
    for (size_t at = text.find_first_of("\"'", from); at != std::string_view::npos;
         at = text.find_first_of("\"'", at + 1)) {
      if (text[at] == '"' || at == 0 || at + 1 >= text.size() || !letter(text[at - 1]) ||
          !letter(text[at + 1])) {
        return at;
      }
    }
    return std::string_view::npos;
  };
  const size_t open = quote_at(0);
  const size_t close = open == std::string_view::npos ? open : quote_at(open + 1);
  return close != std::string_view::npos &&
         Words(NormalizeText(text.substr(open, close - open))).size() >= 2;
}

int CountFigures(std::string_view text) {
  int figures = 0;
  bool in_number = false;
  for (char ch : text) {
    const bool digit = ch >= '0' && ch <= '9';
    if (digit && !in_number) ++figures;
    in_number = digit || (in_number && (ch == '.' || ch == ','));
  }
  return figures;
}

// What the last turn, an assistant's, gave the user to work on.
void ReadLastOutput(const IntentRequest& request, Context& c) {
  if (request.history.empty() || request.history.back().role != Role::kAssistant) return;
  const std::string& text = request.history.back().content;
  constexpr size_t kTextWords = 10;
  constexpr int kFigures = 2;
  if (CarriesText(text, kTextWords)) {
    c.last_output = Output::kText;
  } else if (CountFigures(text) >= kFigures) {
    c.last_output = Output::kFigures;
  }
  const std::vector<HistoryTurn>& history = request.history;
  const bool asked_of_agent =
      history.size() >= 2 && history[history.size() - 2].role == Role::kUser &&
      !CatalogItemsInOrder(history[history.size() - 2].content, request.agents).empty();
  c.last_output_names_agent = asked_of_agent || !CatalogItemsInOrder(text, request.agents).empty();
}

}  // namespace

std::string WithoutCatalogNames(std::string_view text, const IntentRequest& request) {
  return MaskCatalogNames(MaskCatalogNames(text, request.agents, kNameStandIn), request.skills,
                          kNameStandIn);
}

Context ReadContext(const IntentRequest& request, const LocalClassifier& classifier,
                    int max_turns) {
  Context c;
  const auto& history = request.history;
  const size_t begin =
      history.size() > static_cast<size_t>(max_turns) ? history.size() - max_turns : 0;
  c.has_history = begin < history.size();
  ReadLastListAndAgent(request, begin, c);
  ReadLastOutput(request, c);

  // The last user turn, and the assistant's turns after it.
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
    ReadPreviousRequest(request, *last_user, classifier, c);
    for (size_t i = last_user_index; i < history.size(); ++i) {
      c.previous_text += history[i].content + "\n";
    }
    // "Done — error-spike-alerter now posts to #incidents": the assistant
    // says the request changed what an agent does from now on.
    if (c.previous_action == Action::kExecuteTask && last_assistant != nullptr &&
        c.previous_entities.contains("agent_name") &&
        SaysItChangedAnAgent(last_assistant->content)) {
      c.previous_action = Action::kUpdateAgent;
    }
  }
  if (last_assistant != nullptr) {
    const OpenOffer offer = FindOpenOffer(request, classifier, begin, *last_assistant,
                                          last_user_index, c.previous_action);
    ReadOfferAndDraft(request, offer, c);
  }
  return c;
}

}  // namespace omniforge::intent
