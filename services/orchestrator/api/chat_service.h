// The gRPC face of the orchestrator: the public ChatService. It
// authenticates each call by its API key, holds it to the tenant's limits
// (rates, turns at once, LLM budget), parses requests itself (so invalid
// UTF-8 is a clear INVALID_ARGUMENT), runs each turn on a worker thread and
// streams its events with backpressure, reads conversations through to
// the conversation service with the caller's identity, and reads the
// approval audit trail of the caller's conversations. Every error status
// it returns carries a documented reason (core::Classified) and its
// google.rpc details (core::ToGrpcStatus). A stream reads its turn's events
// from the turn's log (turn_log.h), so a client whose stream broke can
// reattach and read on; a silent turn's stream gets heartbeats.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "libs/core/api_keys.h"
#include "libs/core/thread_pool.h"
#include "omniforge/orchestrator/v1/chat_service.grpc.pb.h"
#include "services/orchestrator/api/heartbeat_ticker.h"
#include "services/orchestrator/approvals/approval_audit.h"
#include "services/orchestrator/limits/tenant_limits.h"
#include "services/orchestrator/limits/turn_admission.h"
#include "services/orchestrator/turn/turn_bus.h"
#include "services/orchestrator/turn/turn_log.h"
#include "services/orchestrator/turn/turn_runner.h"

namespace omniforge::orchestrator {

using RawChatService = pb::ChatService::WithRawCallbackMethod_StreamChat<
    pb::ChatService::WithRawCallbackMethod_CancelTurn<
        pb::ChatService::WithRawCallbackMethod_ListConversations<
            pb::ChatService::WithRawCallbackMethod_GetConversation<
                pb::ChatService::WithRawCallbackMethod_ListMessages<
                    pb::ChatService::WithRawCallbackMethod_ListActions<
                        pb::ChatService::WithRawCallbackMethod_DeleteConversation<
                            pb::ChatService::Service>>>>>>>;

// The turns running now, so that CancelTurn and a newer message on the same
// conversation can reach them: this process's own, and, with a bus, those
// other replicas announced. A turn running elsewhere is reached through the
// bus; its suspension comes back as the id of the flow it set aside when it
// ends (the flow's state is in the flow store).
// Thread-safe.
class RunningTurns final {
 public:
  using Control = std::shared_ptr<TurnControl>;
  // `bus` (may be null: one replica) must outlive this.
  explicit RunningTurns(TurnBus* bus = nullptr);
  ~RunningTurns();
  RunningTurns(const RunningTurns&) = delete;
  RunningTurns& operator=(const RunningTurns&) = delete;

  void Add(const std::string& key, const std::string& turn_id, Control control);
  // Adds the turn unless one with the same turn_id runs on the
  // conversation, here or (as far as its signals tell) on another replica:
  // false then, and nothing is added. A retry of a running turn must wait
  // for it to end (it is then replayed), not run it a second time.
  bool Claim(const std::string& key, const std::string& turn_id, Control control);
  void Remove(const std::string& key, const std::string& turn_id);
  // Cancels the turn (any turn of the conversation when `turn_id` is
  // empty), here or on another replica; false when none runs.
  bool Cancel(const std::string& key, const std::string& turn_id);
  // Asks every turn of the conversation but `turn_id` (a retry of itself) to
  // suspend; returns the newest one's control, null when none runs. For a
  // turn on another replica the control stands in for it: it ends
  // (EndedElsewhere) with the id of the flow that turn set aside.
  Control Suspend(const std::string& key, const std::string& turn_id);
  // Waits up to `timeout` until no turn of the conversation runs, here or
  // (as far as its signals tell) elsewhere; false when one still does.
  bool AwaitNone(const std::string& key, absl::Duration timeout);

  static std::string Key(const core::Identity& who, const std::string& conversation_id);

  // Where the turn runs: here (`control` then set to its control), on
  // another replica as far as its signals tell, or nowhere.
  enum class Where { kNowhere, kHere, kElsewhere };
  Where Locate(const std::string& key, const std::string& turn_id, Control* control);
  // Cancels every turn running here (the service is going away).
  void CancelAll();

 private:
  void OnSignal(const TurnSignal& signal);

  // A turn another replica runs, as far as its signals tell.
  struct Remote {
    std::string turn_id;
    int64_t started_micros = 0;
  };
  // Stands in for the remote turns asked to suspend, until one of them ends
  // (the end of a turn that had ended before the asking says nothing of
  // what was set aside, however late its signal comes).
  struct Waiting {
    Control control;
    int64_t since_micros = 0;
    std::vector<std::string> turn_ids;  // the turns asked
  };

  TurnBus* const bus_;
  absl::Mutex mu_;
  std::multimap<std::string, std::pair<std::string, Control>> turns_ ABSL_GUARDED_BY(mu_);
  std::multimap<std::string, Remote> remote_ ABSL_GUARDED_BY(mu_);
  std::multimap<std::string, Waiting> waiting_ ABSL_GUARDED_BY(mu_);
  int64_t pruned_micros_ ABSL_GUARDED_BY(mu_) = 0;
};

// How a public call gets in: its API key says who calls, then the
// per-tenant rates (limits may be null: none) let it through or not.
struct Doorway {
  const core::ApiKeys& keys;
  TenantLimits* limits = nullptr;

  // UNAUTHENTICATED without a valid key (reason API_KEY_MISSING,
  // API_KEY_INVALID or API_KEY_EXPIRED); RESOURCE_EXHAUSTED (RATE_LIMITED,
  // with a retry hint) over the key's or the tenant's rate.
  absl::StatusOr<core::Identity> Admit(const grpc::CallbackServerContext& context) const;
};

// The turns started here that have not returned. Thread-safe.
class FeedCount final {
 public:
  void Add();
  void Done();
  // Waits up to `timeout` until none is left; false when some are.
  bool AwaitNone(absl::Duration timeout);

 private:
  absl::Mutex mu_;
  int count_ ABSL_GUARDED_BY(mu_) = 0;
};

// How StreamChat keeps turns' events for a reattach, how often a silent
// turn's stream gets a heartbeat (0: never), and how many turns it lets in
// per conversation and per user (turn_admission.h).
struct StreamOptions {
  TurnLogOptions resume;
  std::chrono::milliseconds heartbeat{15000};
  TurnAdmissionBounds admission;
};

class ChatGrpcService final : public RawChatService {
 public:
  // Everything must outlive the service.
  // Without a bus, a turn is reached only on the replica running it.
  // Without an audit store, ListActions answers an empty trail.
  // Without limits, no rate, cap or budget applies.
  ChatGrpcService(const core::ApiKeys& keys, const TurnRunner& runner, Memory& memory,
                  core::ThreadPool& workers, TurnBus* bus = nullptr, ApprovalAudit* audit = nullptr,
                  TenantLimits* limits = nullptr, const StreamOptions& stream = {})
      : door_{keys, limits},
        runner_(runner),
        memory_(memory),
        workers_(workers),
        audit_(audit),
        running_(bus),
        logs_(stream.resume, core::SystemClock()),
        heartbeats_(stream.heartbeat),
        admission_(stream.admission) {}
  // Cancels the turns still running (a client that detached leaves its
  // turn running without a call) and waits until they have returned.
  ~ChatGrpcService() override;
  ChatGrpcService(const ChatGrpcService&) = delete;
  ChatGrpcService& operator=(const ChatGrpcService&) = delete;

  using Raw = grpc::ByteBuffer;
  grpc::ServerWriteReactor<Raw>* StreamChat(grpc::CallbackServerContext* context,
                                            const Raw* request) override;
  grpc::ServerUnaryReactor* CancelTurn(grpc::CallbackServerContext* context, const Raw* request,
                                       Raw* response) override;
  grpc::ServerUnaryReactor* ListConversations(grpc::CallbackServerContext* context,
                                              const Raw* request, Raw* response) override;
  grpc::ServerUnaryReactor* GetConversation(grpc::CallbackServerContext* context,
                                            const Raw* request, Raw* response) override;
  grpc::ServerUnaryReactor* ListMessages(grpc::CallbackServerContext* context, const Raw* request,
                                         Raw* response) override;
  // The approval decisions of one of the caller's conversations, newest
  // first. INVALID_ARGUMENT for a conversation_id that is not a UUID or a
  // limit outside 0..500 (0: 100); NOT_FOUND, as GetConversation, for a
  // conversation that is missing or not the caller's.
  grpc::ServerUnaryReactor* ListActions(grpc::CallbackServerContext* context, const Raw* request,
                                        Raw* response) override;
  // Deletes one of the caller's conversations (TurnRunner::DeleteConversation)
  // after cancelling a turn running on it and waiting, up to 5 seconds, for
  // it to end (ABORTED when it has not: nothing was deleted).
  // INVALID_ARGUMENT for a conversation_id that is not a UUID.
  grpc::ServerUnaryReactor* DeleteConversation(grpc::CallbackServerContext* context,
                                               const Raw* request, Raw* response) override;

 private:
  const Doorway door_;
  const TurnRunner& runner_;
  Memory& memory_;
  core::ThreadPool& workers_;
  // A StreamChat that names resume_after_seq: the turn's events after it.
  // A StreamChat with a message or decision (validated): runs the turn.
  grpc::ServerWriteReactor<Raw>* StartTurn(grpc::CallbackServerContext* context,
                                           const core::Identity& who,
                                           pb::StreamChatRequest request);
  grpc::ServerWriteReactor<Raw>* Reattach(grpc::CallbackServerContext* context,
                                          const core::Identity& who,
                                          const pb::StreamChatRequest& request);
  // The places a new turn takes before it runs (the fairness bounds, the
  // tenant's caps), or the refusal; a retry of a turn still in flight is
  // refused as TURN_IN_PROGRESS first and takes no place.
  struct Places {
    AdmissionTicket ticket;
    TurnSlot slot;
  };
  absl::StatusOr<Places> Admit(const core::Identity& who, const pb::StreamChatRequest& request);

  ApprovalAudit* const audit_;
  RunningTurns running_;
  TurnLogs logs_;
  HeartbeatTicker heartbeats_;
  TurnAdmission admission_;
  FeedCount feeds_;
};

}  // namespace omniforge::orchestrator
