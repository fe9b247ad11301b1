// Entities in a user message: the agent or skill it names, the data sources
// and recipients, a schedule, and references into the conversation
// (ordinals like "the second one", pronouns like "it").
//
// The intent service's public library (target intent_entities): the
// orchestrator reads the answer to a clarifying question with it, without
// a call to the service. Pure functions, thread-safe.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace omniforge::intent {

// The keys of the entities that say what an action acts on
// (action_details.h; values documented with IntentAnalysis.entities in
// intent_service.proto), for the callers that read them.
inline constexpr char kTopicEntity[] = "topic";
inline constexpr char kOperationEntity[] = "operation";
inline constexpr char kSmallTalkEntity[] = "small_talk";
inline constexpr char kPurposeEntity[] = "purpose";
inline constexpr char kSuggestedNameEntity[] = "suggested_name";
// A meeting to book (meeting_request.h in the service): who, how long,
// which day, at what time or in which part of the day, what kind.
inline constexpr char kAttendeesEntity[] = "attendees";               // "Sarah, John Smith"
inline constexpr char kDurationMinutesEntity[] = "duration_minutes";  // "30"
inline constexpr char kDayEntity[] = "day";                           // "tomorrow", "friday"
inline constexpr char kTimeEntity[] = "time";                         // "14:00"
inline constexpr char kPartOfDayEntity[] = "part_of_day";             // "afternoon"
inline constexpr char kTitleEntity[] = "title";                       // "Call"

// An agent or skill of the user's, as a message may name it.
struct CatalogItem {
  std::string name;
  std::string description;
};

// The catalog item (agent or skill) `text` names, by its exact name
// ("weekly-sales-digest", any case) or loosely by its distinctive words
// ("the sales digest", "the invoice thing"). Nullopt when none does, or when
// two match equally well.
std::optional<std::string> MatchCatalogItem(std::string_view text,
                                            const std::vector<CatalogItem>& items);

// Every catalog item named in `text`, in the order they first appear (used
// to read the lists an assistant gave).
std::vector<std::string> CatalogItemsInOrder(std::string_view text,
                                             const std::vector<CatalogItem>& items);

// `text` with every whole, exact mention of an item's name of several
// parts (any case; not inside a longer name, a #channel or an address)
// replaced by `stand_in`, longest names first: what a reader of verbs,
// schedules or the model's words reads, so that the words of a name
// ("delete-old-files", "weekly-sales-report") are never taken for what
// the message asks. One-word names ("sync") and names shorter than three
// characters stay.
std::string MaskCatalogNames(std::string_view text, const std::vector<CatalogItem>& items,
                             std::string_view stand_in);

// What MaskCatalogNames puts for a name where the words read are the
// model's or a cue's: a word the model has never seen and no list holds.
inline constexpr std::string_view kNameStandIn = "agentname";

// schedule ("every monday at 9am", "weekly"), data_source ("notion,slack"),
// recipients ("maria@example.com", "#finance", "the finance team"),
// agent_kind (digest, monitor, report, triage: the kind of agent the words
// describe) and project (a project named as one: "the Website relaunch
// project").
std::map<std::string, std::string> ExtractEntities(std::string_view text);

// An ordinal reference into a list: "first", "2nd", "#3", "number 4",
// "option 2", a bare "2", "the last one", "the second to last", "the middle
// one", "the other one".
struct OrdinalRef {
  enum class Kind { kFromStart, kFromEnd, kMiddle, kOther };
  Kind kind = Kind::kFromStart;
  int index = 0;        // 0-based, counted from the start or (kFromEnd) the end
  std::string text;     // as written, for reasoning
  bool letter = false;  // "b", "option c": a letter, only of a lettered list

  // The 0-based position in a list of `size`, given the item talked about
  // last (for "the other one"); -1 when it does not resolve.
  int Resolve(int size, int current) const;
};
std::optional<OrdinalRef> FindOrdinal(std::string_view text);

// "it", "that one", "this agent", "the same one": a pronoun that stands for
// an agent.
bool HasAgentPronoun(std::string_view text);

}  // namespace omniforge::intent
