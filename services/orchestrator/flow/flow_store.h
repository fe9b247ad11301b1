// Where flows keep their context box between turns, when the orchestrator
// has a database (pg_flow_store.h: orchestration.flows). Without one, the
// box rides in the routing metadata of each assistant message instead
// (Routing::box), and no FlowStore exists.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "libs/core/identity.h"
#include "services/orchestrator/flow/context_box.h"

namespace omniforge::orchestrator {

// Where a flow stands after a turn.
enum class FlowStatus {
  kDone,       // the turn answered; nothing waits
  kWaiting,    // waits for the user: an approval or an answer
  kSuspended,  // a newer message set it aside; it can be resumed
};

// As stored: "done", "waiting", "suspended".
inline const char* FlowStatusName(FlowStatus status) {
  switch (status) {
    case FlowStatus::kWaiting:
      return "waiting";
    case FlowStatus::kSuspended:
      return "suspended";
    case FlowStatus::kDone:
      break;
  }
  return "done";
}

struct FlowRecord {
  std::string flow_id;
  std::string conversation_id;
  std::string turn_id;  // the turn that wrote it last
  FlowStatus status = FlowStatus::kDone;
  ContextBox box;
};

// Implementations are thread-safe and bound every call by `deadline`
// (microseconds since the epoch).
class FlowStore {
 public:
  virtual ~FlowStore() = default;
  // The box of the caller's flow; NOT_FOUND when the flow has none (or is
  // another user's), UNAVAILABLE / DEADLINE_EXCEEDED when it cannot be read.
  virtual absl::StatusOr<ContextBox> Load(const core::Identity& who, const std::string& flow_id,
                                          int64_t deadline) = 0;
  // Creates or replaces the flow's record: one statement.
  virtual absl::Status Save(const core::Identity& who, const FlowRecord& record,
                            int64_t deadline) = 0;
};

}  // namespace omniforge::orchestrator
