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

struct IntentRequest {
  std::string message;
  std::vector<HistoryTurn> history;  // oldest first
  std::vector<CatalogItem> agents;
  std::vector<CatalogItem> skills;
  int context_type = 0;  // omniforge.intent.v1.ContextType
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
  // The model calls the analysis made, in order, answered or not (given
  // with each call as its llm::CallContext::usage; none when the local
  // model was sure).
  std::vector<llm::UsageRecord> model_calls;
};

}  // namespace omniforge::intent
