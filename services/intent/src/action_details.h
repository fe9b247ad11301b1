// What an action acts on, read from the message's words, for a caller that
// acts without a model of its own (the orchestrator's local policy): the
// topic of a question, the lifecycle operation asked for, thanks or a
// greeting, what a new agent is for and a name for it, and the parts of a
// request of several (request_parts.h). The entity keys and their values
// are documented with IntentAnalysis.entities in intent_service.proto. The
// words are data: libs/words/data/{query_topics,query_lists,
// query_all_agents,lifecycle_operations,thanks,help_asks,name_skip}.txt.
// Pure functions, microseconds per message, thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "services/intent/entities/entities.h"  // the entity keys
#include "services/intent/src/model.h"

namespace omniforge::intent {

// Sets in `analysis` (whichever layer made it, once its action and
// agent_name are settled) the details its action or runner-up calls for:
// `topic` for a question, a lifecycle request or an unknown one;
// `operation` for a lifecycle request; `small_talk` for talk; `purpose`
// and `suggested_name` when a new agent or skill may be drafted (that
// action or runner-up, a task naming no agent, an analysis that asks
// first, a request of several parts); `parts` for a request of several.
// Details carried over from elsewhere are replaced.
void ApplyActionDetails(const IntentRequest& request, IntentAnalysis& analysis);

// Whether `key` is one of the details above: a reading of one message's
// words, not an entity of its action, so never read back from the routing
// of an earlier turn.
bool IsActionDetail(std::string_view key);

// `words` are the message's words as runs of ASCII letters and digits
// (words::Tokenizer::kAsciiAlnum).
//
// runs, agent, agents, skills, projects or templates: what a question asks
// for. `names_agent`: the analysis names one of the user's agents.
std::string QueryTopic(const std::vector<std::string>& words, bool names_agent);
// delete, resume, pause, or other when the words name none of them.
std::string LifecycleOperation(const std::vector<std::string>& words);
// thanks or greeting.
std::string SmallTalk(const std::vector<std::string>& words);

// What a new agent drafted from `message` is for: the message as written
// without a closing request for help ("... - can you help?") and closing
// punctuation or dashes.
std::string DraftPurpose(std::string_view message);
// A short name (lower-case words joined by '-') for what `message` asks:
// the first three distinct words of its parts (RequestParts, without the
// request's frame) that are not in name_skip.txt, have three letters or
// more and start with a letter; "-agent" appended with fewer than three,
// "assistant-agent" with none. Not made unique: that is the caller's.
std::string SuggestedName(std::string_view message);

}  // namespace omniforge::intent
