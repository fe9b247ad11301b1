// What the intent service reasons about, free of protos and gRPC.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "libs/llm/usage.h"
#include "services/intent/entities/entities.h"
#include "services/intent/src/action.h"

namespace omniforge::intent {

// Values match omniforge.intent.v1.TurnRole.
enum class Role { kUser = 1, kAssistant = 2, kSystem = 3, kTool = 4 };

struct HistoryTurn {
  Role role = Role::kUser;
  std::string content;
  // Routing metadata the orchestrator stored with the turn, when known.
  std::optional<Action> action;
  std::map<std::string, std::string> entities;
  std::vector<std::string> listed_agents;
  bool pending_action = false;
};

// One action previewed and waiting for approval (omniforge.intent.v1.PendingAction).
struct PendingActionRef {
  std::string id;
  std::string tool;
  std::string summary;
  std::vector<std::string> targets;  // exact names of what it acts on
  std::map<std::string, std::string> settings;
};

// Values match omniforge.intent.v1.PlanStage.
enum class PlanStage { kNone = 0, kReview = 1, kWaitingOnUser = 2, kRunning = 3 };

// Values match omniforge.intent.v1.QuestionKind.
enum class QuestionKind { kNone = 0, kAgent = 1, kOption = 2, kOpen = 3 };

// What the assistant waits on when the user writes (omniforge.intent.v1.Pending).
struct PendingContext {
  std::vector<PendingActionRef> actions;
  std::string plan_id;
  PlanStage plan = PlanStage::kNone;
  QuestionKind question = QuestionKind::kNone;
  std::vector<std::string> options;  // in the order shown
  std::string resumable_goal;
};

struct IntentRequest {
  std::string message;
  std::vector<HistoryTurn> history;  // oldest first
  std::vector<CatalogItem> agents;
  std::vector<CatalogItem> skills;
  int context_type = 0;  // omniforge.intent.v1.ContextType
  PendingContext pending;
  // No model calls for this request (AnalyzeIntentRequest.local_only).
  bool local_only = false;
};

// Values match omniforge.intent.v1.IntentSource.
enum class Source { kFastPath = 1, kLocalModel = 2, kLlm = 3, kKeywordFallback = 4 };

// Values match omniforge.intent.v1.ReferenceKind.
enum class Reference {
  kNone = 0,
  kOrdinal = 1,
  kPronoun = 2,
  kConfirmation = 3,
  kDecline = 4,
  kCorrection = 5,
  kRecap = 6,
};

// Values match omniforge.intent.v1.MissingSlot.
enum class MissingSlot {
  kReferent = 1,   // "that", "the usual setup": nothing binds it
  kPurpose = 2,    // what a new agent or skill should do
  kObject = 3,     // which report, file, booking
  kRecipient = 4,  // who should get it
  kAgent = 5,      // which of the user's agents
  kChange = 6,     // what should change about the agent
};

// Values match omniforge.intent.v1.ReplyKind.
enum class ReplyKind {
  kNone = 0,
  kApprove = 1,
  kReject = 2,
  kEdit = 3,
  kAnswer = 4,
  kNewRequest = 5,
  kResume = 6,
  kRecap = 7,
};

// What the message does to what is pending (reply.h).
struct ReplyDecision {
  ReplyKind kind = ReplyKind::kNone;
  std::vector<std::string> action_ids;        // the pending actions it is about; all when empty
  std::map<std::string, std::string> fields;  // what an edit changes, what an answer gives
  int option = 0;                             // an answer's option, from 1
  std::string reasoning;
};

// Whether to ask before acting, and what the question has to settle.
struct Clarification {
  bool needed = false;
  std::vector<MissingSlot> missing;     // most important first
  std::vector<std::string> candidates;  // the user's agents worth offering, best first
};

// One part of a request of several (request_parts.h).
struct RequestPart {
  std::string text;        // as written, without the request's frame and joints
  std::string agent_name;  // the user's agent the part names; empty when none
};

struct IntentAnalysis {
  Action action = Action::kUnknown;
  float confidence = 0;
  std::map<std::string, std::string> entities;
  std::string reasoning;
  bool is_ambiguous = false;
  std::optional<Action> alternative;
  std::string clarifying_question;
  Source source = Source::kLocalModel;
  double latency_ms = 0;
  double cost_usd = 0;
  Reference reference = Reference::kNone;
  bool summary_worthy = false;
  // The clarify-or-proceed decision (clarify.h); when needed, is_ambiguous
  // is set and clarifying_question names what is missing.
  Clarification clarification;
  // What the message does to what is pending (always set by the service).
  ReplyDecision reply;
  // The parts of a request of several, in order (request_parts.h); empty
  // for a request of one part.
  std::vector<RequestPart> parts;
  // The model calls the analysis made, in order, answered or not (given
  // with each call as its llm::CallContext::usage; none when the local
  // model was sure).
  std::vector<llm::UsageRecord> model_calls;
};

}  // namespace omniforge::intent
