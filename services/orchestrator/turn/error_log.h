// The orchestration-level failures of turns: guardrails reached, downstream
// services unavailable, the model failing after its fallbacks. The turn
// reports each one as it emits its error event; pg_error_log.h stores them
// in orchestration.error_log in background batches.
#pragma once

#include <string>

namespace omniforge::orchestrator {

struct TurnError {
  std::string tenant_id;
  std::string user_id;
  std::string conversation_id;
  std::string turn_id;
  // tool_call_limit, time_limit, iteration_limit, model_failed,
  // downstream_unavailable, tool_failed.
  std::string kind;
  // What happened, for operators (the downstream's own status message when
  // there is one; never the user's content).
  std::string message;
  // Where: the part that failed (conversation, executor, intent, llm, plans,
  // orchestration, or turn for a guardrail), the turn's step (e.g.
  // planner_stream, tool_call, store_reply) and the tool being called, if
  // any (migration 0005_error_log_where.sql).
  std::string component;
  std::string stage;
  std::string tool;
};

class TurnErrorLog {
 public:
  virtual ~TurnErrorLog() = default;
  // Never blocks the turn; thread-safe.
  virtual void Record(TurnError error) = 0;
};

// Keeps nothing: the error log of a runner given none (failures then reach
// only the user, in the turn's error events).
class NoTurnErrorLog final : public TurnErrorLog {
 public:
  void Record(TurnError) override {}
};

}  // namespace omniforge::orchestrator
