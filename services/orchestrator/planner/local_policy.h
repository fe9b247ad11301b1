// The planner of local mode (no LLM configured): a deterministic policy that
// turns the intent analysis and the flow so far into the turn's moves.
//
// The risk rules hold as for the LLM planner: READ tools run at once; WRITE
// calls are drafted and wait for the user's "yes"; HIGH calls get a detailed
// preview (who is affected, why it is risky) and wait. The approval gate
// (approval_gate.h) reads the next message: it approves exactly the pending
// action, drops it, or asks the policy to revise it (ReviseLocally). At most `max_clarifications`
// clarifying questions in a row; after that the policy proceeds with the best interpretation.
//
// The policy reads no words of the user's itself: what a question asks for,
// the lifecycle operation, thanks or a greeting, what a draft is for and
// its name, and the parts of a request of several are the intent service's
// reading (the `topic`, `operation`, `small_talk`, `purpose` and
// `suggested_name` entities and `parts` of the analysis).
//
// Pure functions: no I/O, deterministic, thread-safe.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "omniforge/intent/v1/intent_service.pb.h"
#include "services/orchestrator/flow/flow_state.h"
#include "services/orchestrator/flow/move.h"

namespace omniforge::orchestrator {

// The policy reads no word of the user's: it acts on what the intent
// service read (topic, operation, small_talk, purpose, suggested_name,
// parts, and the reply decision for answers).

// One earlier message of the conversation as the policy reads it: its
// words, and for an assistant message what the routing stored with it says
// (nothing for a message stored without routing, e.g. by another client).
struct HistoryTurn {
  bool from_user = false;
  std::string content;
  bool routed = false;  // an assistant message with routing
  ::omniforge::intent::v1::ActionType action_type =
      ::omniforge::intent::v1::ACTION_TYPE_UNSPECIFIED;
  std::map<std::string, std::string> entities;
  std::vector<std::string> tools_used;
  bool pending_action = false;
};

struct PolicyInput {
  ::omniforge::intent::v1::IntentAnalysis intent;
  std::string message;
  // The flow the last assistant turn of the conversation belongs to, if any.
  std::optional<FlowState> last;
  std::vector<AgentInfo> agents;
  int max_clarifications = 2;
  // The message that started the flow this turn continues (after a
  // clarifying question, what a draft is named and described after); empty:
  // this message.
  std::string goal;
  // Where the user is in the client, and whether plans can be made (the
  // orchestrator keeps plans in its database).
  ::omniforge::intent::v1::ContextType context_type = ::omniforge::intent::v1::CONTEXT_TYPE_GLOBAL;
  bool plans = false;
  // The conversation before this message, oldest first (the context window
  // the turn read): what a recap is made of.
  std::vector<HistoryTurn> history;
  // The user's time zone (list_agents): a draft's schedule that names none
  // is read in it. Empty when unknown (the executor then uses the user's).
  std::string time_zone;
};

// The turn's moves. A draft of a new agent is named and described after the
// flow's goal: the purpose and suggested_name of the goal's own analysis,
// kept in the flow's entities while the flow goes on.
Move DecideLocally(const PolicyInput& input);

// What a clarifying question asks for (Move::asked, FlowState::asked).
inline constexpr char kAskedAgent[] = "agent";    // which of the user's agents
inline constexpr char kAskedChange[] = "change";  // what to change about an agent
inline constexpr char kAskedIntent[] = "intent";  // what the user wants at all
inline constexpr char kAskedModel[] = "model";    // the planner model's own question
inline constexpr char kAskedOption[] = "option";  // which of the options offered (partial_fit.h)
// what to do about work that failed for good (flow/recovery.h)
inline constexpr char kAskedRecovery[] = "recovery";

// True when the last turn asked a question whose answer continues its flow
// as it is (which agent, what to change, which option, the model's
// question, what to do about a failure): the intent service reads the
// message as the answer to it (PendingQuestionOf). An answer to "what would you like me to do?" is
// a request of its own.
bool AnswerSkipsAnalysis(const FlowState& last);

// What the intent service is told the last turn asked (its question, for
// a flow where AnswerSkipsAnalysis): which agent (with the agents the
// question listed), which option (a failure's options too), or an open
// question.
::omniforge::intent::v1::PendingQuestion PendingQuestionOf(const FlowState& last);

// The analysis of the user's answer to the flow's own clarifying question:
// the flow's action and entities, plus what the intent service read the
// answer to give (`reply`: an agent picked by position in the list the
// question gave or by name, a schedule, a data source, recipients; or the
// option picked by its number: a run of the agent, a new agent, a change
// of the agent). An answer that settles nothing (answer_settles false) may
// be a request of its own. Never ambiguous: the answer settles the
// question, or the flow asks again within the clarification cap and then
// proceeds on its best reading.
::omniforge::intent::v1::IntentAnalysis AnalysisOfAnswer(
    const FlowState& last, const ::omniforge::intent::v1::ReplyDecision& reply,
    bool* answer_settles = nullptr);

// The change the user asked to the last turn's pending action, once the
// approval gate read the reply as an edit: the same action on `other_agent`
// (when the reply named another agent), or a draft with the schedule,
// recipients or data source the reply gave, previewed anew. nullopt when the
// reply changes nothing the policy can apply: it is then a new request.
// Approving and dropping are the gate's (approval_gate.h), never the
// policy's.
std::optional<Move> ReviseLocally(const PolicyInput& input, const std::string& other_agent);

// The words that end a preview: what the user can answer, and for a HIGH
// action what in its arguments made it so (its risk_reasons).
std::string ApprovalQuestion(const PendingAction& action);
// The same for the previews of one turn (one, or several approved together
// or one by one).
std::string ApprovalQuestion(const std::vector<PendingAction>& actions);

// The words that follow `move.reply` once `step` ran and produced
// `result` (a tool result object; is_error when the tool failed). May set
// the names the reply listed, in order, in `listed_agents`.
std::string DescribeResult(const ToolStep& step, const nlohmann::json& result, bool is_error,
                           std::vector<std::string>* listed_agents);

// `suggested` (the intent service's suggested_name for a draft;
// "assistant-agent" when empty) made unique among `taken`, any case:
// "-2", "-3", ... appended.
std::string UniqueAgentName(const std::string& suggested, const std::vector<AgentInfo>& taken);

}  // namespace omniforge::orchestrator
