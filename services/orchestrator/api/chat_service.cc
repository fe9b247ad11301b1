#include "services/orchestrator/api/chat_service.h"

#include <grpcpp/support/proto_buffer_reader.h>

#include <deque>
#include <optional>
#include <utility>

#include "absl/algorithm/container.h"
#include "absl/strings/str_cat.h"
#include "libs/core/call.h"
#include "libs/core/call_deadline.h"
#include "libs/core/clock.h"
#include "libs/core/error_catalog.h"
#include "libs/core/error_reason.h"
#include "libs/core/grpc_status.h"
#include "libs/core/grpc_trace.h"
#include "libs/core/ids.h"
#include "libs/core/logging.h"
#include "libs/core/metrics.h"
#include "libs/core/server.h"
#include "libs/core/text.h"
#include "libs/trace/span.h"
#include "services/orchestrator/api/request_fields.h"

namespace omniforge::orchestrator {
namespace {

// Reads of history never wait longer than this, whatever the client's deadline.
constexpr int64_t kMaxReadMicros = 30'000'000;
// ListActions' limit: at most this many decisions; 0 asks for the default.
constexpr int kMaxListedActions = 500;
constexpr int kDefaultListedActions = 100;
// A turn's bound when the client set no deadline (turn.timeout_ms applies too).
constexpr int64_t kMaxTurnMicros = 3'600'000'000;
// How often the turns other replicas never said had ended are forgotten.
constexpr int64_t kPruneEveryMicros = 60'000'000;
// Events waiting to be written before the turn's thread waits for the client.
constexpr size_t kMaxQueuedEvents = 256;

// Turns other replicas announced and have not ended, as far as this one knows.
core::Gauge& RemoteTurnsGauge() {
  static core::Gauge& gauge = core::MetricsRegistry::Global().GetGauge(
      "omniforge_orchestrator_remote_turns",
      "Turns running on other replicas, as far as their signals have reached this one.");
  return gauge;
}

std::string_view MetadataValue(const grpc::CallbackServerContext& context, const char* key) {
  const auto& metadata = context.client_metadata();
  auto it = metadata.find(key);
  if (it == metadata.end()) return {};
  return std::string_view(it->second.data(), it->second.size());
}

// The identity a call acts for: a user key's own; a gateway key's tenant
// with the user the gateway names in `on_behalf_of`.
absl::StatusOr<core::Identity> OnBehalfOf(core::KeyGrant grant, std::string_view on_behalf_of) {
  if (grant.kind == core::KeyKind::kUser) {
    if (!on_behalf_of.empty()) {
      return absl::PermissionDeniedError(
          absl::StrCat("this API key acts for one user and may not send ", core::kOnBehalfOfHeader,
                       " (only a gateway key names the user)"));
    }
    return std::move(grant.identity);
  }
  if (on_behalf_of.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("a gateway key names the end user of each call in the ",
                     core::kOnBehalfOfHeader, " header"));
  }
  if (!core::IsSafeToken(on_behalf_of)) {
    return absl::InvalidArgumentError(absl::StrCat(
        core::kOnBehalfOfHeader, ": the user id must be 1..128 characters of [A-Za-z0-9._:@-]"));
  }
  grant.identity.user_id = std::string(on_behalf_of);
  return std::move(grant.identity);
}

}  // namespace

absl::StatusOr<core::Identity> Doorway::Admit(const grpc::CallbackServerContext& context) const {
  const std::string_view key = core::PresentedApiKey(MetadataValue(context, "authorization"),
                                                     MetadataValue(context, "x-api-key"));
  if (key.empty()) {
    return core::WithReason(
        absl::UnauthenticatedError(
            "missing API key: send `authorization: Bearer <key>` or `x-api-key: <key>`"),
        core::kReasonApiKeyMissing);
  }
  absl::StatusOr<core::KeyGrant> grant = keys.Grant(key);
  if (!grant.ok()) {
    if (!core::ReasonOf(grant.status()).empty()) return grant.status();
    return core::WithReason(grant.status(), core::kReasonApiKeyInvalid);
  }
  absl::StatusOr<core::Identity> who =
      OnBehalfOf(*std::move(grant), MetadataValue(context, core::kOnBehalfOfHeader));
  if (!who.ok() || limits == nullptr) return who;
  // An authenticated key is `ofk_<key id>_<secret>`.
  const std::string_view key_id = key.substr(std::size(core::kApiKeyPrefix) - 1, 12);
  if (absl::Status admitted = limits->AdmitCall(*who, key_id); !admitted.ok()) return admitted;
  return who;
}

namespace {

// The request in `raw`; INVALID_ARGUMENT when it does not parse: INVALID_UTF8
// naming the string field that is not valid UTF-8, else REQUEST_MALFORMED.
absl::Status Parse(const grpc::ByteBuffer& raw, google::protobuf::Message& message) {
  grpc::ByteBuffer copy(raw);
  grpc::ProtoBufferReader reader(&copy);
  if (message.ParseFromZeroCopyStream(&reader)) return absl::OkStatus();
  std::vector<grpc::Slice> slices;
  std::string bytes;
  if (raw.Dump(&slices).ok()) {
    for (const grpc::Slice& slice : slices) {
      bytes.append(reinterpret_cast<const char*>(slice.begin()), slice.size());
    }
  }
  const std::string field = InvalidUtf8Field(*message.GetDescriptor(), bytes);
  if (!field.empty()) {
    return core::InvalidField(field, core::kReasonInvalidUtf8, "must be valid UTF-8");
  }
  return core::WithFieldViolation(
      core::WithReason(absl::InvalidArgumentError(absl::StrCat(
                           "request is not a valid ", message.GetDescriptor()->full_name())),
                       core::kReasonRequestMalformed),
      "", "the request bytes are not a " + message.GetDescriptor()->full_name());
}

// A failure of the conversation service (or the approval audit store) as
// the public API names it: a missing conversation, or storage out of reach.
absl::Status StorageFailure(absl::Status status) {
  switch (status.code()) {
    case absl::StatusCode::kNotFound:
      return core::WithReason(std::move(status), core::kReasonConversationNotFound);
    case absl::StatusCode::kUnavailable:
      return core::WithReason(std::move(status), core::kReasonStorageUnavailable);
    default:
      return status;
  }
}

// The wire status of a public call: a documented reason and its details.
grpc::Status PublicStatus(const absl::Status& status) {
  return core::ToGrpcStatus(core::Classified(status));
}

absl::Status Busy(std::string_view what) {
  return core::WithReason(absl::ResourceExhaustedError(std::string(what) + "; retry shortly"),
                          core::kReasonServerBusy);
}

int64_t DeadlineMicros(const grpc::CallbackServerContext& context, int64_t cap_micros) {
  const int64_t cap = core::NowMicros() + cap_micros;
  const auto deadline = context.deadline();
  if (deadline == std::chrono::system_clock::time_point::max()) return cap;
  const int64_t micros =
      std::chrono::duration_cast<std::chrono::microseconds>(deadline.time_since_epoch()).count();
  return std::min(micros, cap);
}

// What a call's work runs under: the caller's trace context (a missing or
// malformed traceparent starts a new trace) and the call's log fields.
core::Ambient CallerAmbient(const grpc::ServerContextBase& context, core::LogContext log) {
  core::IncomingTrace incoming = core::TraceFromContext(context);
  core::Ambient ambient;
  ambient.span = incoming.parent;
  ambient.tracestate = std::move(incoming.tracestate);
  ambient.log = std::make_shared<const core::LogContext>(std::move(log));
  return ambient;
}

// A unary call: authenticated, parsed, then `body` on a worker thread.
template <typename Request, typename Response>
grpc::ServerUnaryReactor* ServeUnary(
    grpc::CallbackServerContext* context, const grpc::ByteBuffer* raw,
    grpc::ByteBuffer* raw_response, const char* method, const Doorway& door,
    core::ThreadPool& workers,
    std::function<absl::Status(const core::Call&, const Request&, Response*)> body) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  auto finish = [reactor](const absl::Status& status) { reactor->Finish(PublicStatus(status)); };
  auto who = door.Admit(*context);
  if (!who.ok()) {
    finish(who.status());
    return reactor;
  }
  auto request = std::make_shared<Request>();
  if (absl::Status parsed = Parse(*raw, *request); !parsed.ok()) {
    finish(parsed);
    return reactor;
  }
  const int64_t deadline = DeadlineMicros(*context, kMaxReadMicros);
  auto task = [finish, body, request, raw_response, who = *who, deadline, method] {
    trace::ScopedSpan span(method, trace::SpanKind::kServer);
    Response response;
    // Not cancelled: a read ends by its deadline.
    const core::Call call{who, core::TimePointFromMicros(deadline)};
    absl::Status status = body(call, *request, &response);
    if (status.ok()) {
      bool own = false;
      if (!grpc::SerializationTraits<Response>::Serialize(response, raw_response, &own).ok()) {
        status = absl::InternalError("cannot serialize the response");
      }
    }
    if (!status.ok()) span.span().SetError(status.ToString());
    finish(status);
  };
  const core::ScopedAmbient caller(CallerAmbient(*context, {"", "", who->tenant_id}));
  if (!workers.Submit(task)) finish(Busy("too many calls in progress"));
  return reactor;
}

// Fails a StreamChat call without running a turn.
class Refusal final : public grpc::ServerWriteReactor<grpc::ByteBuffer> {
 public:
  explicit Refusal(const absl::Status& status) { Finish(PublicStatus(status)); }
  void OnDone() override { delete this; }
};

// One StreamChat call: the turn runs on a worker thread and hands its events
// here; they are written one at a time, in order. Text that arrives while a
// write is in flight joins the text event waiting behind it, so a model
// streaming faster than the client reads costs one write per wait rather
// than one per piece (events are numbered as they are written, so seq stays
// 1, 2, 3...). When the client reads slowly, the turn's thread waits
// (bounded queue). The call finishes once the turn has returned and every
// event is written, or at once when the client has gone.
class TurnStream final : public grpc::ServerWriteReactor<grpc::ByteBuffer>, public EventSink {
 public:
  TurnStream(RunningTurns& running, RunningTurns::Control control)
      : running_(running), control_(std::move(control)) {}

  // Starts the turn, bounded by `deadline` (the client's), suspending the
  // turn `interrupted` controls (if any); the reactor deletes itself when
  // the call is done. `claimed_key`: the conversation's key when the turn
  // was claimed under its turn_id already (RunningTurns::Claim), else empty.
  // `slot`: the turn's place under the tenant's caps, held until the turn
  // returns; `limits` (may be null) says whether it may call a model.
  void Start(const core::Identity& who, pb::StreamChatRequest request, core::TimePoint deadline,
             const TurnRunner& runner, core::ThreadPool& workers, RunningTurns::Control interrupted,
             std::string claimed_key, TurnSlot slot, TenantLimits* limits) {
    who_ = who;
    slot_ = std::move(slot);
    if (!claimed_key.empty()) {
      turn_key_ = std::move(claimed_key);
      turn_id_ = request.turn_id();
    }
    auto task = [this, request = std::move(request), deadline, &runner,
                 interrupted = std::move(interrupted), limits] {
      absl::Status status;
      try {
        // On the worker: the first look at a tenant's spend reads the database.
        absl::StatusOr<bool> model = limits != nullptr ? limits->ModelAllowed(who_) : true;
        if (!model.ok()) {
          TurnEnded(model.status());
          return;
        }
        if (!*model) control_->RunLocally();
        status = runner.Run(who_, request, *control_, *this, deadline, interrupted);
      } catch (const std::exception& e) {
        // A defect, not the client's fault: the turn ends, the service goes on.
        core::LogError("turn failed with an exception",
                       {{"component", "orchestrator"}, {"error", e.what()}});
        status = absl::InternalError("the turn failed unexpectedly; nothing more was done");
      }
      TurnEnded(status);
    };
    if (!workers.Submit(task)) {
      TurnEnded(Busy("too many turns in progress"));
    }
  }

  void Emit(pb::ChatEvent event) override {
    if (event.has_session() && turn_key_.empty()) {
      turn_key_ = RunningTurns::Key(who_, event.session().conversation_id());
      turn_id_ = event.session().turn_id();
      running_.Add(turn_key_, turn_id_, control_);
    }
    std::optional<pb::ChatEvent> next;
    {
      absl::MutexLock lock(&mu_);
      while (!broken_ && queue_.size() >= kMaxQueuedEvents) drained_.Wait(&mu_);
      if (broken_) return;
      if (event.has_text() && !queue_.empty() && queue_.back().has_text()) {
        queue_.back().mutable_text()->mutable_delta()->append(event.text().delta());
        return;
      }
      queue_.push_back(std::move(event));
      if (writing_) return;
      writing_ = true;
      next = TakeNext();
    }
    Write(*std::move(next));
  }

  void OnWriteDone(bool ok) override {
    std::optional<pb::ChatEvent> next;
    std::optional<absl::Status> finish;
    {
      absl::MutexLock lock(&mu_);
      if (!ok) {
        // The client is gone: stop the turn and drop what is left.
        broken_ = true;
        control_->Cancel();
        queue_.clear();
        drained_.SignalAll();
      }
      if (!queue_.empty()) {
        next = TakeNext();
      } else {
        writing_ = false;
        finish = TakeFinish();
      }
    }
    if (next) {
      Write(*std::move(next));
    } else if (finish) {
      FinishCall(*finish);
    }
  }

  void OnCancel() override { control_->Cancel(); }

  void OnDone() override { delete this; }

 private:
  // On the turn's thread, once it returned: nothing can cancel or suspend it
  // any more, even while its last events are still being written.
  void TurnEnded(const absl::Status& status) {
    if (!turn_key_.empty()) running_.Remove(turn_key_, turn_id_);
    slot_.Release();
    std::optional<absl::Status> finish;
    {
      absl::MutexLock lock(&mu_);
      turn_done_ = true;
      status_ = status;
      if (!writing_) finish = TakeFinish();
    }
    if (finish) FinishCall(*finish);
  }

  // Takes the next event off the queue, numbered; the caller has set
  // writing_ and writes it once it has let go of the lock.
  pb::ChatEvent TakeNext() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    pb::ChatEvent event = std::move(queue_.front());
    queue_.pop_front();
    event.set_seq(++written_);
    drained_.SignalAll();
    return event;
  }

  // Starts writing an event taken off the queue.
  void Write(const pb::ChatEvent& event) ABSL_LOCKS_EXCLUDED(mu_) {
    bool own = false;
    in_flight_.Clear();  // the serializer writes into an empty buffer only
    if (grpc::SerializationTraits<pb::ChatEvent>::Serialize(event, &in_flight_, &own).ok()) {
      StartWrite(&in_flight_);
      return;
    }
    // Only a message beyond protobuf's 2 GiB limit fails to serialize, far
    // past anything a turn sends: stop as if the client had gone rather
    // than skip an event.
    core::LogError("chat event not serialized", {{"turn_id", turn_id_}});
    std::optional<absl::Status> finish;
    {
      absl::MutexLock lock(&mu_);
      broken_ = true;
      control_->Cancel();
      queue_.clear();
      drained_.SignalAll();
      writing_ = false;
      finish = TakeFinish();
    }
    if (finish) FinishCall(*finish);
  }

  // The call's status once the turn returned and nothing is left to write
  // (the caller finishes the call with it after letting go of the lock);
  // nullopt before that, and after it was taken once.
  std::optional<absl::Status> TakeFinish() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (!turn_done_ || finished_ || (!queue_.empty() && !broken_)) return std::nullopt;
    finished_ = true;
    return status_;
  }

  void FinishCall(const absl::Status& status) ABSL_LOCKS_EXCLUDED(mu_) {
    // What the turn returns is a refusal of its message by the conversation
    // service, or a failure before the turn began.
    Finish(PublicStatus(StorageFailure(status)));
  }

  RunningTurns& running_;
  core::Identity who_;
  const RunningTurns::Control control_;
  TurnSlot slot_;
  std::string turn_key_;  // set when claimed, else by the session event on the turn's thread
  std::string turn_id_;

  absl::Mutex mu_;
  absl::CondVar drained_;
  std::deque<pb::ChatEvent> queue_ ABSL_GUARDED_BY(mu_);  // waiting to be written
  grpc::ByteBuffer in_flight_;                            // the event being written
  int written_ ABSL_GUARDED_BY(mu_) = 0;                  // events taken to be written
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool broken_ ABSL_GUARDED_BY(mu_) = false;
  bool turn_done_ ABSL_GUARDED_BY(mu_) = false;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status status_ ABSL_GUARDED_BY(mu_);
};

}  // namespace

RunningTurns::RunningTurns(TurnBus* bus) : bus_(bus) {
  if (bus_ != nullptr) bus_->Subscribe([this](const TurnSignal& signal) { OnSignal(signal); });
}

RunningTurns::~RunningTurns() {
  if (bus_ != nullptr) bus_->Subscribe(nullptr);
}

void RunningTurns::Add(const std::string& key, const std::string& turn_id, Control control) {
  {
    absl::MutexLock lock(&mu_);
    turns_.emplace(key, std::make_pair(turn_id, std::move(control)));
  }
  if (bus_ != nullptr) bus_->Publish({TurnSignal::Kind::kStarted, key, turn_id});
}

bool RunningTurns::Claim(const std::string& key, const std::string& turn_id, Control control) {
  {
    absl::MutexLock lock(&mu_);
    auto [begin, end] = turns_.equal_range(key);
    for (auto it = begin; it != end; ++it) {
      if (it->second.first == turn_id) return false;
    }
    const int64_t now = core::NowMicros();
    auto [remote_begin, remote_end] = remote_.equal_range(key);
    for (auto it = remote_begin; it != remote_end; ++it) {
      if (it->second.turn_id == turn_id && now - it->second.started_micros <= kMaxTurnMicros) {
        return false;
      }
    }
    turns_.emplace(key, std::make_pair(turn_id, std::move(control)));
  }
  if (bus_ != nullptr) bus_->Publish({TurnSignal::Kind::kStarted, key, turn_id});
  return true;
}

void RunningTurns::Remove(const std::string& key, const std::string& turn_id) {
  Control ended;
  {
    absl::MutexLock lock(&mu_);
    auto [begin, end] = turns_.equal_range(key);
    for (auto it = begin; it != end; ++it) {
      if (it->second.first == turn_id) {
        ended = std::move(it->second.second);
        turns_.erase(it);
        break;
      }
    }
  }
  if (bus_ != nullptr && ended != nullptr) {
    // The flow it set aside is named only: the turn saved it in the flow
    // store before it returned, and the turn that goes on reads it there.
    const std::optional<SuspendedFlow> set_aside = ended->SuspendedState();
    bus_->Publish({TurnSignal::Kind::kEnded, key, turn_id,
                   set_aside.has_value() ? set_aside->flow_id : std::string()});
  }
}

bool RunningTurns::Cancel(const std::string& key, const std::string& turn_id) {
  bool any = false;
  bool elsewhere = false;
  {
    absl::MutexLock lock(&mu_);
    auto [begin, end] = turns_.equal_range(key);
    for (auto it = begin; it != end; ++it) {
      if (turn_id.empty() || it->second.first == turn_id) {
        it->second.second->Cancel();
        any = true;
      }
    }
    auto [remote_begin, remote_end] = remote_.equal_range(key);
    for (auto it = remote_begin; it != remote_end; ++it) {
      elsewhere |= turn_id.empty() || it->second.turn_id == turn_id;
    }
  }
  if (elsewhere) bus_->Publish({TurnSignal::Kind::kCancel, key, turn_id});
  return any || elsewhere;
}

bool RunningTurns::AwaitNone(const std::string& key, absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  auto none = [this, &key]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return turns_.count(key) == 0 && remote_.count(key) == 0;
  };
  return mu_.AwaitWithTimeout(absl::Condition(&none), timeout);
}

RunningTurns::Control RunningTurns::Suspend(const std::string& key, const std::string& turn_id) {
  absl::MutexLock lock(&mu_);
  Control newest;
  auto [begin, end] = turns_.equal_range(key);
  for (auto it = begin; it != end; ++it) {
    if (!turn_id.empty() && it->second.first == turn_id) continue;
    it->second.second->RequestSuspend();
    newest = it->second.second;  // equal keys keep their insertion order
  }
  if (newest != nullptr || bus_ == nullptr) return newest;
  // None here: one on another replica is asked, and stood in for until its
  // end says what it set aside. Turns whose end never came (their replica
  // died) are forgotten after the longest a turn can take.
  const int64_t now = core::NowMicros();
  if (now - pruned_micros_ > kPruneEveryMicros) {
    pruned_micros_ = now;
    std::erase_if(remote_, [now](const auto& entry) {
      return now - entry.second.started_micros > kMaxTurnMicros;
    });
    RemoteTurnsGauge().Set(static_cast<double>(remote_.size()));
    std::erase_if(waiting_, [now](const auto& entry) {
      return now - entry.second.since_micros > kMaxTurnMicros;
    });
  }
  std::vector<std::string> elsewhere;
  auto [remote_begin, remote_end] = remote_.equal_range(key);
  for (auto it = remote_begin; it != remote_end; ++it) {
    if (it->second.turn_id != turn_id && now - it->second.started_micros <= kMaxTurnMicros) {
      elsewhere.push_back(it->second.turn_id);
    }
  }
  // Asked even when no turn is known elsewhere: one that began a moment ago
  // may not have been announced yet. Only a known one is waited for.
  bus_->Publish({TurnSignal::Kind::kSuspend, key, turn_id});
  if (elsewhere.empty()) return nullptr;
  Control stand_in = std::make_shared<TurnControl>();
  waiting_.emplace(key, Waiting{stand_in, now, std::move(elsewhere)});
  return stand_in;
}

void RunningTurns::OnSignal(const TurnSignal& signal) {
  absl::MutexLock lock(&mu_);
  const std::string& key = signal.conversation;
  switch (signal.kind) {
    case TurnSignal::Kind::kStarted:
      remote_.emplace(key, Remote{signal.turn_id, core::NowMicros()});
      RemoteTurnsGauge().Set(static_cast<double>(remote_.size()));
      return;
    case TurnSignal::Kind::kEnded: {
      auto [begin, end] = remote_.equal_range(key);
      for (auto it = begin; it != end; ++it) {
        if (it->second.turn_id == signal.turn_id) {
          remote_.erase(it);
          break;
        }
      }
      RemoteTurnsGauge().Set(static_cast<double>(remote_.size()));
      // The turns here waiting for it learn which flow it set aside.
      auto [wait_begin, wait_end] = waiting_.equal_range(key);
      for (auto it = wait_begin; it != wait_end;) {
        if (absl::c_linear_search(it->second.turn_ids, signal.turn_id)) {
          it->second.control->EndedElsewhere(signal.set_aside_flow_id);
          it = waiting_.erase(it);
        } else {
          ++it;
        }
      }
      return;
    }
    case TurnSignal::Kind::kSuspend: {
      auto [begin, end] = turns_.equal_range(key);
      for (auto it = begin; it != end; ++it) {
        if (it->second.first != signal.turn_id) it->second.second->RequestSuspend();
      }
      return;
    }
    case TurnSignal::Kind::kCancel: {
      auto [begin, end] = turns_.equal_range(key);
      for (auto it = begin; it != end; ++it) {
        if (signal.turn_id.empty() || it->second.first == signal.turn_id) {
          it->second.second->Cancel();
        }
      }
      return;
    }
  }
}

std::string RunningTurns::Key(const core::Identity& who, const std::string& conversation_id) {
  return TurnConversationDigest(who.tenant_id, who.user_id, conversation_id);
}

grpc::ServerWriteReactor<grpc::ByteBuffer>* ChatGrpcService::StreamChat(
    grpc::CallbackServerContext* context, const grpc::ByteBuffer* raw) {
  pb::StreamChatRequest request;
  absl::StatusOr<core::Identity> who = door_.Admit(*context);
  if (who.ok()) {
    if (absl::Status parsed = Parse(*raw, request); !parsed.ok()) who = parsed;
  }
  if (who.ok()) {
    if (absl::Status valid = ValidateStreamChatRequest(request); !valid.ok()) who = valid;
  }
  if (!who.ok()) return new Refusal(who.status());
  TurnSlot slot;
  if (door_.limits != nullptr) {
    // Before anything changes: a refused message must not suspend the
    // conversation's running turn.
    if (absl::Status over = door_.limits->KnownBudgetRefusal(*who); !over.ok()) {
      return new Refusal(over);
    }
    absl::StatusOr<TurnSlot> admitted = door_.limits->AdmitTurn(*who);
    if (!admitted.ok()) return new Refusal(admitted.status());
    slot = *std::move(admitted);
  }
  // The client's deadline bounds the turn (the turn's own timeout caps it).
  const int64_t deadline = DeadlineMicros(*context, kMaxTurnMicros);
  auto control = std::make_shared<TurnControl>();
  // A turn still running on this conversation is suspended for this one;
  // a retry of a turn that is still running waits for it instead. Valid
  // requests only: one that fails validation changes nothing.
  RunningTurns::Control interrupted;
  std::string claimed_key;
  if (!request.conversation_id().empty()) {
    const std::string key = RunningTurns::Key(*who, request.conversation_id());
    if (!request.turn_id().empty()) {
      if (!running_.Claim(key, request.turn_id(), control)) {
        return new Refusal(core::WithReason(
            absl::AbortedError("turn " + request.turn_id() +
                               " is still running; retry once it has ended, and it is replayed"),
            core::kReasonTurnInProgress));
      }
      claimed_key = key;
    }
    interrupted = running_.Suspend(key, request.turn_id());
  }
  auto* stream = new TurnStream(running_, std::move(control));
  // The turn's thread starts under the caller's trace context and log fields.
  const core::ScopedAmbient caller(
      CallerAmbient(*context, {request.turn_id(), request.conversation_id(), who->tenant_id}));
  stream->Start(*who, std::move(request), core::TimePointFromMicros(deadline), runner_, workers_,
                std::move(interrupted), std::move(claimed_key), std::move(slot), door_.limits);
  return stream;
}

grpc::ServerUnaryReactor* ChatGrpcService::CancelTurn(grpc::CallbackServerContext* context,
                                                      const Raw* raw, Raw* raw_response) {
  return ServeUnary<pb::CancelTurnRequest, pb::CancelTurnResponse>(
      context, raw, raw_response, "CancelTurn", door_, workers_,
      [this](const core::Call& call, const pb::CancelTurnRequest& request,
             pb::CancelTurnResponse* response) {
        if (request.conversation_id().empty()) {
          return core::InvalidField("conversation_id", core::kReasonFieldRequired, "required");
        }
        response->set_cancelled(running_.Cancel(
            RunningTurns::Key(call.who, request.conversation_id()), request.turn_id()));
        return absl::OkStatus();
      });
}

grpc::ServerUnaryReactor* ChatGrpcService::DeleteConversation(grpc::CallbackServerContext* context,
                                                              const Raw* raw, Raw* raw_response) {
  return ServeUnary<pb::DeleteConversationRequest, pb::DeleteConversationResponse>(
      context, raw, raw_response, "DeleteConversation", door_, workers_,
      [this](const core::Call& call, const pb::DeleteConversationRequest& request,
             pb::DeleteConversationResponse* response) {
        if (!core::IsUuid(request.conversation_id())) {
          return core::InvalidField("conversation_id", core::kReasonFieldInvalid, "must be a UUID");
        }
        const std::string key = RunningTurns::Key(call.who, request.conversation_id());
        response->set_turn_cancelled(running_.Cancel(key, ""));
        if (!running_.AwaitNone(key, absl::Seconds(5))) {
          return core::WithReason(
              absl::AbortedError(
                  "a turn of the conversation is still ending; nothing was deleted, retry"),
              core::kReasonTurnInProgress);
        }
        return StorageFailure(runner_.DeleteConversation(call, request.conversation_id()));
      });
}

grpc::ServerUnaryReactor* ChatGrpcService::ListConversations(grpc::CallbackServerContext* context,
                                                             const Raw* raw, Raw* raw_response) {
  return ServeUnary<pb::ListConversationsRequest, pb::ListConversationsResponse>(
      context, raw, raw_response, "ListConversations", door_, workers_,
      [this](const core::Call& call, const pb::ListConversationsRequest& request,
             pb::ListConversationsResponse* response) {
        convpb::ListConversationsRequest down;
        down.set_page_size(request.page_size());
        down.set_page_token(request.page_token());
        auto answer = memory_.ListConversations(call, down);
        if (!answer.ok()) return StorageFailure(answer.status());
        for (const auto& conversation : answer->conversations()) {
          *response->add_conversations() = PublicConversation(conversation);
        }
        response->set_next_page_token(answer->next_page_token());
        return absl::OkStatus();
      });
}

grpc::ServerUnaryReactor* ChatGrpcService::GetConversation(grpc::CallbackServerContext* context,
                                                           const Raw* raw, Raw* raw_response) {
  return ServeUnary<pb::GetConversationRequest, pb::GetConversationResponse>(
      context, raw, raw_response, "GetConversation", door_, workers_,
      [this](const core::Call& call, const pb::GetConversationRequest& request,
             pb::GetConversationResponse* response) {
        convpb::GetConversationRequest down;
        down.set_conversation_id(request.conversation_id());
        auto answer = memory_.GetConversation(call, down);
        if (!answer.ok()) return StorageFailure(answer.status());
        *response->mutable_conversation() = PublicConversation(answer->conversation());
        return absl::OkStatus();
      });
}

grpc::ServerUnaryReactor* ChatGrpcService::ListMessages(grpc::CallbackServerContext* context,
                                                        const Raw* raw, Raw* raw_response) {
  return ServeUnary<pb::ListMessagesRequest, pb::ListMessagesResponse>(
      context, raw, raw_response, "ListMessages", door_, workers_,
      [this](const core::Call& call, const pb::ListMessagesRequest& request,
             pb::ListMessagesResponse* response) {
        convpb::ListMessagesRequest down;
        down.set_conversation_id(request.conversation_id());
        down.set_before_seq(request.before_seq());
        down.set_limit(request.limit());
        auto answer = memory_.ListMessages(call, down);
        if (!answer.ok()) return StorageFailure(answer.status());
        for (const auto& message : answer->messages()) {
          *response->add_messages() = PublicMessage(message);
        }
        response->set_has_more(answer->has_more());
        return absl::OkStatus();
      });
}

grpc::ServerUnaryReactor* ChatGrpcService::ListActions(grpc::CallbackServerContext* context,
                                                       const Raw* raw, Raw* raw_response) {
  return ServeUnary<pb::ListActionsRequest, pb::ListActionsResponse>(
      context, raw, raw_response, "ListActions", door_, workers_,
      [this](const core::Call& call, const pb::ListActionsRequest& request,
             pb::ListActionsResponse* response) {
        if (!core::IsUuid(request.conversation_id())) {
          return core::InvalidField("conversation_id", core::kReasonFieldInvalid, "must be a UUID");
        }
        if (request.limit() < 0 || request.limit() > kMaxListedActions) {
          return core::InvalidField("limit", core::kReasonFieldInvalid,
                                    "must be 0 to 500 (0: 100)");
        }
        const int limit = request.limit() == 0 ? kDefaultListedActions : request.limit();
        // The trail of a conversation that is missing or another's is
        // NOT_FOUND, the same answer GetConversation gives.
        convpb::GetConversationRequest get;
        get.set_conversation_id(request.conversation_id());
        auto conversation = memory_.GetConversation(call, get);
        if (!conversation.ok()) return StorageFailure(conversation.status());
        if (audit_ == nullptr) return absl::OkStatus();
        const core::ScopedCallDeadline bounded(call.deadline);
        auto decisions = audit_->List(call.who, request.conversation_id(), limit);
        if (!decisions.ok()) return StorageFailure(decisions.status());
        for (const ActionDecisionRecord& decision : *decisions) {
          *response->add_decisions() = ActionDecisionProto(decision);
        }
        return absl::OkStatus();
      });
}

}  // namespace omniforge::orchestrator
