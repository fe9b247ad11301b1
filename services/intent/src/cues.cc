#include "services/intent/src/cues.h"

#include <algorithm>
#include <cctype>
#include <set>
#include <string>

#include "libs/words/lists.h"
#include "services/intent/src/lexicon.h"
#include "services/intent/src/text.h"

namespace omniforge::intent {
namespace {

bool OnlyWordsFrom(const std::vector<std::string_view>& words,
                   const std::set<std::string_view>& allowed, const words::WordSet& required) {
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

// Words that add nothing to a no (libs/words/data/filler_intent.txt).
const words::WordSet& Filler() { return words::List("filler_intent"); }

// A word that says yes (libs/words/data/confirm_intent.txt).
bool IsAffirmative(std::string_view w) {
  static const words::WordSet& yes = words::List("confirm_intent");
  return yes.contains(w);
}

}  // namespace

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
  // libs/words/data/confirm_stoppers.txt: "no", "wait", "cancel".
  static const words::WordSet& stoppers = words::List("confirm_stoppers");
  for (size_t i = 0; i < words.size() && i < 3; ++i) {
    const std::string_view w = words[i];
    if (stoppers.contains(w)) return false;
    if (!IsAffirmative(w)) continue;
    // "do" and "go" only count as "do it", "do that", "go ahead", "go for it".
    const std::string_view next = i + 1 < words.size() ? words[i + 1] : "";
    if (next == "not") return false;  // "absolutely not"
    if (w == "do" && next != "it" && next != "that" && next != "this") continue;
    if (w == "go" && next != "ahead" && next != "for") continue;
    if (w == "please" && next != "do" && !next.empty()) continue;
    if ((w == "sounds" || w == "love") && next.empty()) continue;
    return true;
  }
  return false;
}

bool IsDecline(const std::vector<std::string_view>& words) {
  static const words::WordSet& no = words::List("decline_intent");
  static const std::set<std::string_view> extra = {
      "yet",     "anymore", "about", "it",    "bother", "need", "needed",
      "changed", "my",      "mind",  "thats", "ok",     "okay", "actually"};
  static const std::set<std::string_view> allowed = [&] {
    std::set<std::string_view> set(Filler().begin(), Filler().end());
    set.erase("do");  // "no, do it" is not a decline
    set.insert(no.begin(), no.end());
    set.insert(extra.begin(), extra.end());
    return set;
  }();
  if (words.empty() || words.size() > 8) return false;
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

// libs/words/data/change_intent.txt: "actually", "instead", "make it", "also".
bool HasCorrectionCue(const std::vector<std::string_view>& words) {
  return words::ContainsAnyEntry(words, "change_intent");
}

bool AsksForSameAgain(const std::vector<std::string_view>& words) {
  for (std::string_view phrase : {"same for", "same with", "same thing for", "do the same",
                                  "and the other", "what about", "how about", "and for", "and"}) {
    if (FindPhrase(words, phrase) == 0) return true;
  }
  return false;
}

// "share the scorecards", "send Hollis the memo the partners approved":
// passing something on once runs it now. A send that changes what an agent
// does says so ("instead", "from now on", "should", a recurrence), and
// access, agents and invitations are shared on the platform.
bool IsOneOffSend(const std::vector<std::string_view>& words, std::string_view verb) {
  if (verb != "send" && verb != "share") return false;
  return !ContainsAnyPhrase(
             words,
             {"instead",  "from now on", "always",      "every",     "should",        "anymore",
              "only",     "also",        "whenever",    "each",      "going forward", "stop",
              "access",   "permission",  "permissions", "workspace", "agent",         "bot",
              "admin",    "invite",      "invitation",  "request",   "daily",         "weekly",
              "monthly",  "too",         "as well",     "rather",    "not",           "never",
              "template", "link to",     "can",         "could",     "does",          "do",
              "?",        "dont",        "though",      "tho",       "first"}) &&
         std::none_of(words.begin(), words.end(), [](std::string_view w) {
           return w.size() > 2 && std::isdigit(static_cast<unsigned char>(w.front())) != 0 &&
                  (w.ends_with("am") || w.ends_with("pm"));  // "send at 4pm": a time set
         });
}

namespace {

// "turn that one back on", "switch the digest off": a verb of switching
// at `i` and its particle around the object, the particle closing the
// clause ("off" in "switch off the alerts for anna" is not around one).
bool SwitchesAround(const std::vector<std::string_view>& words, size_t i) {
  if (words[i] != "turn" && words[i] != "switch" && words[i] != "flip") return false;
  for (size_t j = i + 2; j < words.size() && j <= i + 5; ++j) {
    if ((words[j] == "on" || words[j] == "off") &&
        (j + 1 == words.size() ||
         OneOf(words[j + 1], {"?", "again", "until", "till", "for", "pls", "please", "now", "then",
                              "too", "and", "from", "today", "tomorrow"}))) {
      return true;
    }
  }
  return false;
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
    if (SwitchesAround(words, i)) return Action::kManagePlatform;
    for (const auto& [verb, parts, action] : kSplitVerbs) {
      if (i + parts.size() > words.size()) continue;
      bool match = true;
      for (size_t j = 0; j < parts.size() && match; ++j) match = words[i + j] == parts[j];
      if (!match) continue;
      const std::string_view next = i + parts.size() < words.size() ? words[i + parts.size()] : "";
      const bool platform_object = next == "project" || next == "a" || next == "the";
      if (IsOneOffSend(words, verb)) return Action::kExecuteTask;
      // "restore the old version", "put it back to how it was": a past
      // configuration of the agent, not an archived agent.
      if ((verb == "restore" || verb == "revert" || verb == "undo") &&
          ContainsAnyPhrase(words, {"version", "how it was", "what we had", "settings", "setup",
                                    "before", "previous", "old", "last"})) {
        return Action::kUpdateAgent;
      }
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

bool AsksHowThingsStand(const std::vector<std::string_view>& words) {
  static const words::WordSet& lead_ins = words::List("question_lead_ins");
  static const words::WordSet& openers = words::List("question_state_openers");
  static const words::WordSet& non_subjects = words::List("question_non_subjects");
  if (words::ContainsAnyEntry(words, "question_directives")) return false;
  size_t end = words.size();
  while (end > 0 && words[end - 1] == "?") --end;
  if (end >= 2 && words[end - 2] == "or" && words[end - 1] == "not") return true;
  size_t i = 0;
  while (i < end && lead_ins.contains(words[i])) ++i;
  return i + 1 < end && openers.contains(words[i]) && !non_subjects.contains(words[i + 1]);
}

namespace {

// Whether `text` gives a name: a quoted span ("exec-weekly", “daily sync”)
// or a hyphenated word (lead-enricher-v2).
bool GivesName(std::string_view text) {
  const size_t quote = text.find('"');
  if (quote != std::string_view::npos && text.find('"', quote + 1) != std::string_view::npos) {
    return true;
  }
  if (text.find("\xE2\x80\x9C") != std::string_view::npos) return true;  // “
  auto alnum = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; };
  for (size_t i = 1; i + 1 < text.size(); ++i) {
    if (text[i] == '-' && alnum(text[i - 1]) && alnum(text[i + 1])) return true;
  }
  return false;
}

}  // namespace

std::optional<Action> NamingAction(const std::vector<std::string_view>& words,
                                   std::string_view message) {
  static const words::WordSet& filler = words::List("followup_task_filler");
  static const words::WordSet& verbs = words::List("naming_verbs");
  static const words::WordSet& not_objects = words::List("naming_not_objects");
  size_t i = 0;
  while (i < words.size() && filler.contains(words[i])) ++i;
  if (i + 1 >= words.size() || !verbs.contains(words[i]) || not_objects.contains(words[i + 1])) {
    return std::nullopt;
  }
  // The name comes after the verb: find the verb in the text as written
  // (lowercased in place, so that offsets hold).
  std::string lower(message);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  const size_t verb_at = lower.find(words[i]);
  if (verb_at == std::string::npos ||
      !GivesName(std::string_view(message).substr(verb_at + words[i].size()))) {
    return std::nullopt;
  }
  return words::ContainsAnyEntry(words, "platform_objects") ? Action::kManagePlatform
                                                            : Action::kUpdateAgent;
}

bool AsksStandingChange(const std::vector<std::string_view>& words) {
  return words::ContainsAnyEntry(words, "standing_change_markers") &&
         !words::ContainsAnyEntry(words, "one_off_markers");
}

bool RemovesFromAgentOutput(const std::vector<std::string_view>& words) {
  static const words::WordSet& removal = words::List("removal_verbs");
  static const words::WordSet& outputs = words::List("agent_output_nouns");
  constexpr size_t kWithin = 4;
  bool removing = false;
  for (size_t i = 0; i < words.size(); ++i) {
    if (removal.contains(words[i])) removing = true;
    if (!removing || words[i] != "from") continue;
    for (size_t j = i + 1; j < words.size() && j <= i + kWithin; ++j) {
      if (outputs.contains(words[j])) return true;
    }
  }
  return false;
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
bool VerbIsExplicit(std::string_view text) {
  const std::string normalized = NormalizeText(text);
  std::string without_question;
  for (std::string_view w : Words(normalized)) {
    if (w == "?") continue;
    without_question.append(w);
    without_question.push_back(' ');
  }
  return VerbAction(without_question).has_value();
}

}  // namespace omniforge::intent
