// Routing metadata: what the orchestrator stores with each assistant message
// so that later turns, in this process or another one after a restart, find
// the flow the reply belongs to and read the history (the intent service
// reads the same fields from the history it is given). It is a small
// projection of the flow's state (flow_state.h): the state itself is kept
// by the FlowStore, and a turn that goes on with the flow loads it from
// there. The conversation service keeps the routing as the message's
// metadata (a JSON object).
#pragma once

#include <array>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "omniforge/intent/v1/intent_service.pb.h"
#include "services/orchestrator/flow/flow_state.h"

namespace omniforge::orchestrator {

struct Routing {
  std::string turn_id;
  std::string flow_id;
  ::omniforge::intent::v1::ActionType action_type =
      ::omniforge::intent::v1::ACTION_TYPE_UNSPECIFIED;
  std::map<std::string, std::string> entities;
  std::vector<std::string> listed_agents;  // in the order shown to the user
  std::vector<std::string> tools_used;     // by the turn, for readers of the history
  // The reply previewed actions that wait for the user's approval.
  bool pending_action = false;
  // Where the flow stood after the turn: a later turn loads the state of a
  // flow that waits (kSuspended: the turn stopped early, set aside by a
  // newer message).
  FlowStatus status = FlowStatus::kDone;
  // The flow suspended by this turn's message or an earlier one, not yet
  // resumed; carried from reply to reply, also by flows that need no state.
  std::optional<SuspendedFlow> suspended_flow;
  // Metadata written by an older version carried the flow's whole state:
  // read from it, for when the flow store has no state for the flow.
  std::optional<FlowState> written_whole;
};

// The projection of `state` stored with the reply of its turn.
Routing RoutingOf(const FlowState& state);

// Without `written_whole`, which is never written.
nlohmann::json RoutingToJson(const Routing& routing);

// Lenient: missing or mistyped fields read as their defaults. Metadata
// without a `format` field, written by an older version, also reads as the
// whole state it carried (written_whole), so that conversations in flight
// when the orchestrator was upgraded still route.
Routing RoutingFromJson(const nlohmann::json& json);

// The routing of stored messages by message id, parsed once: a stored
// message never changes, and every turn reads the routings of its whole
// window. Holds about `max_entries` (the oldest go first). Thread-safe: the
// ids are spread over shards, each with its own lock, so concurrent turns
// reading their windows seldom wait for each other.
class RoutingMemo final {
 public:
  explicit RoutingMemo(size_t max_entries);

  // The routing of message `message_id`, from `parse` the first time.
  std::shared_ptr<const Routing> Of(const std::string& message_id,
                                    const std::function<Routing()>& parse);

  // Records the routing of a message just stored with it, so that the
  // turns reading it back need not parse it.
  void Remember(const std::string& message_id, Routing routing);

 private:
  static constexpr size_t kShards = 16;
  struct Shard {
    absl::Mutex mu;
    std::unordered_map<std::string, std::shared_ptr<const Routing>> by_id ABSL_GUARDED_BY(mu);
    std::deque<std::string> order ABSL_GUARDED_BY(mu);  // oldest first
  };

  Shard& ShardOf(const std::string& message_id);
  // Adds `routing` unless the id is known; returns the routing kept.
  std::shared_ptr<const Routing> Keep(Shard& shard, const std::string& message_id,
                                      std::shared_ptr<const Routing> routing);

  const size_t max_per_shard_;
  std::array<Shard, kShards> shards_;
};

}  // namespace omniforge::orchestrator
