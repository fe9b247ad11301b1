// One chat turn, start to end: store the user's message (idempotently),
// read the context window, ask the intent service what the message wants,
// let the planner decide, run what may run, preview what needs approval,
// store the reply with its routing metadata, and stream every step.
//
// No gRPC here: the downstream services are interfaces (downstream.h) and
// the events go to an EventSink, so the logic is tested on fakes.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "libs/core/identity.h"
#include "libs/llm/chat_model.h"
#include "omniforge/orchestrator/v1/chat_service.pb.h"
#include "services/orchestrator/src/downstream.h"

namespace omniforge::orchestrator {

namespace pb = ::omniforge::orchestrator::v1;

struct TurnOptions {
  // Guardrails: a turn ends with an error event naming the cap it reached.
  std::chrono::milliseconds turn_timeout{90000};
  int max_tool_calls = 8;
  // At most this many clarifying questions in a row; then proceed.
  int max_clarifications = 2;
  // Model calls of the planner per turn.
  int max_iterations = 10;
  // The context window's token budget beyond the recent exchanges.
  int context_token_budget = 2000;
  // Upper bound of each downstream call (within the turn's own deadline).
  std::chrono::milliseconds call_timeout{10000};
};

// Receives a turn's events in order. Emit may block (backpressure); it is
// called from the thread that runs the turn.
class EventSink {
 public:
  virtual ~EventSink() = default;
  virtual void Emit(pb::ChatEvent event) = 0;
};

// INVALID_ARGUMENT naming the field: an empty or oversized message (over
// 64 KiB), invalid UTF-8, an unknown context type, a malformed conversation
// id, turn id or entity id.
absl::Status ValidateStreamChatRequest(const pb::StreamChatRequest& request);

class TurnRunner final {
 public:
  // The services (and `planner`) must outlive the runner. Without a
  // planner model, turns are planned by the local policy. Thread-safe:
  // turns run concurrently.
  TurnRunner(Memory& memory, Understanding& understanding, Tools& tools, TurnOptions options,
             llm::ChatModel* planner = nullptr);

  // Runs one turn for `who`. Returns an error, having emitted nothing and
  // stored nothing, for a request that fails validation, a conversation that
  // is not the caller's (NOT_FOUND) or conversation storage that cannot take
  // the user's message (UNAVAILABLE: nothing was acknowledged, safe to
  // retry with the same turn_id). Everything later is an event; the last is
  // `done`. `cancelled` is polled between steps. `client_deadline`
  // (microseconds since the epoch; 0: none) bounds the turn and every
  // downstream call together with the turn's own timeout.
  absl::Status Run(const core::Identity& who, const pb::StreamChatRequest& request,
                   const std::function<bool()>& cancelled, EventSink& sink,
                   int64_t client_deadline = 0) const;

 private:
  // The executor's tools, refreshed from ListTools at most once a minute
  // (kept from the last listing while the executor cannot be reached).
  struct ToolCatalog {
    std::vector<execpb::ToolDescriptor> tools;
    std::map<std::string, execpb::ToolRisk> risk_by_name;
  };
  // Shared, not copied: a turn reads it on every tool call.
  std::shared_ptr<const ToolCatalog> Catalog(const core::Identity& who, int64_t deadline) const;
  execpb::ToolRisk RiskOf(const core::Identity& who, const std::string& tool,
                          int64_t deadline) const;

  Memory& memory_;
  Understanding& understanding_;
  Tools& tools_;
  const TurnOptions options_;
  llm::ChatModel* const planner_;

  mutable std::mutex catalog_mu_;
  mutable std::shared_ptr<const ToolCatalog> catalog_;  // Guarded by catalog_mu_.
  mutable int64_t catalog_fetched_at_ = 0;              // Guarded by catalog_mu_.
};

}  // namespace omniforge::orchestrator
