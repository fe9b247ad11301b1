// Routing metadata: what the orchestrator stores with each assistant message
// so that later turns, in this process or another one after a restart, can
// resolve "the first one", "yes, do that" and "make it weekly instead". The
// conversation service keeps it as the message's metadata (a JSON object);
// the intent service reads the same fields from the history it is given.
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
#include "omniforge/executor/v1/executor_service.pb.h"
#include "omniforge/intent/v1/intent_service.pb.h"
#include "services/orchestrator/flow/context_box.h"

namespace omniforge::orchestrator {

// A risky tool call that waits for the user's approval (approval_gate.h):
// exactly this call runs when the user approves it, and only before it
// expires.
struct PendingAction {
  std::string action_id;
  std::string tool;
  // With its targets resolved to ids at preview time (an agent's name is
  // replaced by its id; `targets` keeps what the name was).
  nlohmann::json arguments = nlohmann::json::object();
  ::omniforge::executor::v1::ToolRisk risk = ::omniforge::executor::v1::TOOL_RISK_WRITE;
  std::string summary;  // what would happen, in words
  // ActionDigest(tool, arguments): what the preview showed and an approval
  // runs. Empty for an action stored by an older version: it is previewed
  // again rather than run.
  std::string digest;
  // When the preview stops being approvable (microseconds since the epoch).
  int64_t expires_at_micros = 0;
  // The targets as resolved at preview time, by argument: {"agent": {"id":
  // ..., "name": ...}}. An approval checks they still are what they were.
  nlohmann::json targets = nlohmann::json::object();
};

// A plan of the flow that waits for the user: for their review
// (pending_review), for an answer to a step's question (waiting_on_user), or
// to be resumed after the turn running it stopped (running).
struct PlanRef {
  std::string plan_id;
  std::string status;  // the plan's status name (plan_model.h)
  std::string objective;
  // For a plan previewed for review: PlanDigest of the steps shown and when
  // the preview expires (approval_gate.h); empty and 0 otherwise.
  std::string digest;
  int64_t expires_at_micros = 0;
};

// A flow that a newer message suspended while it ran. Later turns carry it
// until the user resumes it ("continue what you were doing") or another
// flow is suspended in its place.
struct SuspendedFlow {
  std::string flow_id;
  std::string goal;
  ::omniforge::intent::v1::ActionType action_type =
      ::omniforge::intent::v1::ACTION_TYPE_UNSPECIFIED;
  std::map<std::string, std::string> entities;
  // Its context box, when no flow store keeps boxes (see Routing::box).
  std::optional<ContextBox> box;
  // The plan it was running, resumed with it.
  std::optional<PlanRef> plan;
};

struct Routing {
  std::string turn_id;
  std::string flow_id;
  // What the flow is about: the user's message that started it.
  std::string goal;
  ::omniforge::intent::v1::ActionType action_type =
      ::omniforge::intent::v1::ACTION_TYPE_UNSPECIFIED;
  std::map<std::string, std::string> entities;
  std::vector<std::string> listed_agents;  // in the order shown to the user
  // The actions this turn previewed, each waiting for the user's approval.
  std::vector<PendingAction> pending;
  int clarifications = 0;  // clarifying questions in a row, this turn's included
  // What this turn's clarifying question asked for (see ClarifyAbout in
  // local_policy.h); empty when it asked none.
  std::string asked;
  std::vector<std::string> tools_used;
  // The flow's context box, when the orchestrator runs without a database
  // (no flow store): the box then rides with the routing from turn to turn.
  std::optional<ContextBox> box;
  // This turn stopped early because a newer message suspended its flow.
  bool suspended = false;
  // The flow suspended by this turn's message or an earlier one, not yet
  // resumed.
  std::optional<SuspendedFlow> suspended_flow;
  // The plan this turn left waiting, if any.
  std::optional<PlanRef> plan;
};

nlohmann::json RoutingToJson(const Routing& routing);

// A suspended flow alone, as it rides in the routing (and between replicas).
nlohmann::json SuspendedFlowToJson(const SuspendedFlow& flow);
// nullopt for anything without a flow id.
std::optional<SuspendedFlow> SuspendedFlowFromJson(const nlohmann::json& json);

// Lenient: missing or mistyped fields read as their defaults, so metadata
// written by an older version still routes.
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
