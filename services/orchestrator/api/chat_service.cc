#include "services/orchestrator/api/chat_service.h"

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
#include "services/orchestrator/api/raw_request.h"

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

// A failure of the conversation service (or the approval audit store) as
// the public API names it: a missing conversation, or storage out of reach.
absl::Status StorageFailure(absl::Status status) {
  if (!core::ReasonOf(status).empty()) return status;
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
  if (absl::Status parsed = ParseRawRequest(*raw, *request); !parsed.ok()) {
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

// ABORTED: a turn with this turn_id is still running (here or elsewhere).
absl::Status StillRunning(const std::string& turn_id) {
  return core::WithReason(
      absl::AbortedError(absl::StrCat(
          "turn ", turn_id,
          " is still running; reattach with resume_after_seq, or retry once it has ended "
          "and it is replayed")),
      core::kReasonTurnInProgress);
}

// Fails a StreamChat call without running a turn.
class Refusal final : public grpc::ServerWriteReactor<grpc::ByteBuffer> {
 public:
  explicit Refusal(const absl::Status& status) { Finish(PublicStatus(status)); }
  void OnDone() override { delete this; }
};

// One turn on a worker thread: its events go to the turn's log, which the
// streams read (LogReader). It outlives any stream: a client that detached
// on disconnect leaves it running.
class TurnFeed final : public EventSink {
 public:
  // `claimed_key`: the conversation's key when the turn was claimed under
  // its turn_id already (RunningTurns::Claim, its log registered), else
  // empty. `ticket` and `slot`: the turn's places under the fairness bounds
  // and the tenant's caps, held until the turn returns.
  // `feeds`: counted while the turn has not returned (the service waits
  // for that before it goes).
  TurnFeed(RunningTurns& running, TurnLogs& logs, FeedCount& feeds, std::shared_ptr<TurnLog> log,
           RunningTurns::Control control, const core::Identity& who, std::string claimed_key,
           std::string turn_id, AdmissionTicket ticket, TurnSlot slot)
      : running_(running),
        feeds_(feeds),
        logs_(logs),
        log_(std::move(log)),
        control_(std::move(control)),
        who_(who),
        turn_key_(std::move(claimed_key)),
        turn_id_(turn_key_.empty() ? std::string() : std::move(turn_id)),
        ticket_(std::move(ticket)),
        slot_(std::move(slot)) {
    feeds_.Add();
  }

  // Runs the turn, bounded by `deadline` (the client's), suspending the turn
  // `interrupted` controls (if any); `limits` (may be null) says whether it
  // may call a model.
  static void Start(const std::shared_ptr<TurnFeed>& feed, pb::StreamChatRequest request,
                    core::TimePoint deadline, const TurnRunner& runner, core::ThreadPool& workers,
                    RunningTurns::Control interrupted, TenantLimits* limits) {
    auto task = [feed, request = std::move(request), deadline, &runner,
                 interrupted = std::move(interrupted), limits] {
      absl::Status status;
      try {
        // On the worker: the first look at a tenant's spend reads the database.
        absl::StatusOr<bool> model = limits != nullptr ? limits->ModelAllowed(feed->who_) : true;
        if (!model.ok()) {
          feed->TurnEnded(model.status());
          return;
        }
        if (!*model) feed->control_->RunLocally();
        status = runner.Run(feed->who_, request, *feed->control_, *feed, deadline, interrupted);
      } catch (const std::exception& e) {
        // A defect, not the client's fault: the turn ends, the service goes on.
        core::LogError("turn failed with an exception",
                       {{"component", "orchestrator"}, {"error", e.what()}});
        status = absl::InternalError("the turn failed unexpectedly; nothing more was done");
      }
      feed->TurnEnded(status);
    };
    if (!workers.Submit(task)) {
      feed->TurnEnded(Busy("too many turns in progress"));
    }
  }

  void Emit(pb::ChatEvent event) override {
    if (event.has_session() && turn_key_.empty() && !event.session().conversation_id().empty()) {
      turn_key_ = RunningTurns::Key(who_, event.session().conversation_id());
      turn_id_ = event.session().turn_id();
      // Findable by a reattach as soon as the turn can be located.
      logs_.Register(turn_key_, turn_id_, log_);
      running_.Add(turn_key_, turn_id_, control_);
    }
    log_->Append(std::move(event));
  }

 private:
  // On the turn's thread, once it returned: nothing can cancel or suspend it
  // any more, even while its last events are still being written.
  void TurnEnded(const absl::Status& status) {
    if (!turn_key_.empty()) running_.Remove(turn_key_, turn_id_);
    ticket_.Release();
    slot_.Release();
    if (turn_key_.empty()) {
      log_->End(status);
    } else {
      logs_.End(turn_key_, turn_id_, log_, status);
    }
    feeds_.Done();  // last: the service may go once none is left
  }

  RunningTurns& running_;
  FeedCount& feeds_;
  TurnLogs& logs_;
  const std::shared_ptr<TurnLog> log_;
  const RunningTurns::Control control_;
  const core::Identity who_;
  std::string turn_key_;  // set when claimed, else by the session event
  std::string turn_id_;
  AdmissionTicket ticket_;
  TurnSlot slot_;
};

// A stored outcome replayed for a reattach, into a log of its own.
class LogSink final : public EventSink {
 public:
  explicit LogSink(TurnLog& log) : log_(log) {}
  void Emit(pb::ChatEvent event) override { log_.Append(std::move(event)); }

 private:
  TurnLog& log_;
};

// One StreamChat call: writes a turn's events from its log, one at a time,
// in order, from the seq the reader attached after; a heartbeat when the
// turn has been silent for the ticker's interval. The call finishes once
// the turn has ended and every event is written, or at once when the client
// has gone (which cancels the turn unless the client asked to detach).
class LogReader final : public grpc::ServerWriteReactor<grpc::ByteBuffer> {
 public:
  // Attached after `after_seq`, or the status that refuses the call. The
  // reactor deletes itself when the call is done. `control` (may be null)
  // is the turn's.
  static absl::StatusOr<LogReader*> Open(std::shared_ptr<TurnLog> log, int after_seq,
                                         RunningTurns::Control control, bool detach,
                                         HeartbeatTicker& heartbeats) {
    auto* reader = new LogReader(std::move(log), std::move(control), detach, after_seq, heartbeats);
    absl::StatusOr<TurnLog::ReaderId> id = reader->log_->Attach(after_seq, reader->tap_);
    if (!id.ok()) {
      delete reader;
      return id.status();
    }
    // Woken only from here on: the reader knows its id.
    reader->reader_ = *id;
    reader->tap_->Enable(reader);
    reader->ticks_ = heartbeats.Subscribe([reader] { reader->Beat(); });
    reader->tap_->Wake();
    return reader;
  }

  void OnWriteDone(bool ok) override {
    {
      absl::MutexLock lock(&mu_);
      writing_ = false;
    }
    if (!ok) ClientGone();
    Pump();
  }

  void OnCancel() override {
    ClientGone();
    Pump();
  }

  void OnDone() override {
    // Once these return, neither the log nor the ticker reaches this reader.
    tap_->Clear();
    ticks_.reset();
    log_->Detach(reader_);
    delete this;
  }

 private:
  // Wakes the reader for the log, until the reader is done.
  class Tap final : public TurnLog::Waker {
   public:
    void Enable(LogReader* reader) {
      absl::MutexLock lock(&mu_);
      reader_ = reader;
    }
    void Wake() override {
      absl::MutexLock lock(&mu_);
      if (reader_ != nullptr) reader_->Pump();
    }
    void Clear() {
      absl::MutexLock lock(&mu_);
      reader_ = nullptr;
    }

   private:
    absl::Mutex mu_;
    LogReader* reader_ ABSL_GUARDED_BY(mu_) = nullptr;
  };

  LogReader(std::shared_ptr<TurnLog> log, RunningTurns::Control control, bool detach, int after_seq,
            HeartbeatTicker& heartbeats)
      : log_(std::move(log)),
        control_(std::move(control)),
        detach_(detach),
        heartbeat_micros_(
            std::chrono::duration_cast<std::chrono::microseconds>(heartbeats.interval()).count()),
        tap_(std::make_shared<Tap>()),
        last_sent_seq_(after_seq),
        last_write_micros_(core::NowMicros()) {}

  // Writes the next event, or finishes the call once the turn has ended
  // and all is written (or the client is gone).
  void Pump() ABSL_LOCKS_EXCLUDED(mu_) {
    absl::Status finish;
    bool write = false;
    {
      absl::MutexLock lock(&mu_);
      if (writing_ || finished_) return;
      TurnLog::Next next = gone_ ? TurnLog::Next{} : log_->Take(reader_);
      if (next.event.has_value()) {
        last_sent_seq_ = next.event->seq();
        write = Prepare(*next.event);
      }
      if (!write) {
        if (!gone_ && !next.ended.has_value()) return;
        finish = gone_ ? absl::CancelledError("the client went away") : *next.ended;
        finished_ = true;
      }
    }
    if (write) {
      StartWrite(&in_flight_);
      return;
    }
    // What the turn returns is a refusal of its message by the conversation
    // service, or a failure before the turn began.
    Finish(PublicStatus(StorageFailure(finish)));
  }

  // From the ticker: a heartbeat when nothing was written for an interval
  // and the turn still runs. It carries the last seq sent and is not kept.
  void Beat() ABSL_LOCKS_EXCLUDED(mu_) {
    {
      absl::MutexLock lock(&mu_);
      const int64_t silent = core::NowMicros() - last_write_micros_;
      if (writing_ || finished_ || gone_ || silent < heartbeat_micros_ || log_->ended()) return;
      pb::ChatEvent heartbeat;
      heartbeat.set_seq(last_sent_seq_);
      heartbeat.mutable_heartbeat()->set_silent_ms(silent / 1000);
      if (!Prepare(heartbeat)) return;
    }
    StartWrite(&in_flight_);
  }

  // Serializes the event to be written (the caller starts the write once
  // it let go of the lock) and sets writing_; false when it cannot be.
  bool Prepare(const pb::ChatEvent& event) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    bool own = false;
    in_flight_.Clear();  // the serializer writes into an empty buffer only
    // Only a message beyond protobuf's 2 GiB limit fails to serialize, far
    // past anything a turn sends: stop as if the client had gone rather
    // than skip an event.
    if (!grpc::SerializationTraits<pb::ChatEvent>::Serialize(event, &in_flight_, &own).ok()) {
      core::LogError("chat event not serialized", {{"seq", std::to_string(event.seq())}});
      gone_ = true;
      if (control_ != nullptr) control_->Cancel();
      return false;
    }
    writing_ = true;
    last_write_micros_ = core::NowMicros();
    return true;
  }

  // The client is gone: its turn stops unless it asked to detach, and the
  // turn no longer waits for this reader.
  void ClientGone() ABSL_LOCKS_EXCLUDED(mu_) {
    {
      absl::MutexLock lock(&mu_);
      if (gone_) return;
      gone_ = true;
    }
    if (!detach_ && control_ != nullptr) control_->Cancel();
    log_->Detach(reader_);
  }

  const std::shared_ptr<TurnLog> log_;
  const RunningTurns::Control control_;
  const bool detach_;
  const int64_t heartbeat_micros_;
  const std::shared_ptr<Tap> tap_;
  std::unique_ptr<HeartbeatTicker::Subscription> ticks_;
  TurnLog::ReaderId reader_ = 0;

  absl::Mutex mu_;
  grpc::ByteBuffer in_flight_;  // the event being written (while writing_)
  int last_sent_seq_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t last_write_micros_ ABSL_GUARDED_BY(mu_);
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool gone_ ABSL_GUARDED_BY(mu_) = false;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
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
  return TurnConversationDigest(who.tenant_id, who.user_id, core::CanonicalId(conversation_id));
}

RunningTurns::Where RunningTurns::Locate(const std::string& key, const std::string& turn_id,
                                         Control* control) {
  absl::MutexLock lock(&mu_);
  auto [begin, end] = turns_.equal_range(key);
  for (auto it = begin; it != end; ++it) {
    if (it->second.first == turn_id) {
      *control = it->second.second;
      return Where::kHere;
    }
  }
  const int64_t now = core::NowMicros();
  auto [remote_begin, remote_end] = remote_.equal_range(key);
  for (auto it = remote_begin; it != remote_end; ++it) {
    if (it->second.turn_id == turn_id && now - it->second.started_micros <= kMaxTurnMicros) {
      return Where::kElsewhere;
    }
  }
  return Where::kNowhere;
}

void RunningTurns::CancelAll() {
  absl::MutexLock lock(&mu_);
  for (auto& [key, turn] : turns_) turn.second->Cancel();
}

grpc::ServerWriteReactor<grpc::ByteBuffer>* ChatGrpcService::StreamChat(
    grpc::CallbackServerContext* context, const grpc::ByteBuffer* raw) {
  pb::StreamChatRequest request;
  absl::StatusOr<core::Identity> who = door_.Admit(*context);
  if (who.ok()) {
    if (absl::Status parsed = ParseRawRequest(*raw, request); !parsed.ok()) who = parsed;
  }
  // One form of the id from here on (the spool, running turns, the stored
  // flow and what the client is told), whatever case the client used.
  request.set_conversation_id(core::CanonicalId(request.conversation_id()));
  if (who.ok() && request.has_resume_after_seq()) {
    if (absl::Status valid = ValidateReattachRequest(request); !valid.ok()) {
      return new Refusal(valid);
    }
    return Reattach(context, *who, request);
  }
  if (who.ok()) {
    if (absl::Status valid = ValidateStreamChatRequest(request); !valid.ok()) who = valid;
  }
  if (!who.ok()) return new Refusal(who.status());
  return StartTurn(context, *who, std::move(request));
}

absl::StatusOr<ChatGrpcService::Places> ChatGrpcService::Admit(
    const core::Identity& who, const pb::StreamChatRequest& request) {
  // Before anything changes: a refused message must not suspend the
  // conversation's running turn.
  if (door_.limits != nullptr) {
    if (absl::Status over = door_.limits->KnownBudgetRefusal(who); !over.ok()) return over;
  }
  std::string key;
  if (!request.conversation_id().empty()) {
    key = RunningTurns::Key(who, request.conversation_id());
    // A retry of a turn in flight is told so, and holds no second place.
    RunningTurns::Control ignored;
    if (!request.turn_id().empty() &&
        running_.Locate(key, request.turn_id(), &ignored) != RunningTurns::Where::kNowhere) {
      return StillRunning(request.turn_id());
    }
  }
  absl::StatusOr<AdmissionTicket> ticket = admission_.Admit(who, key);
  if (!ticket.ok()) return ticket.status();
  Places places{*std::move(ticket), TurnSlot()};
  if (door_.limits != nullptr) {
    absl::StatusOr<TurnSlot> slot = door_.limits->AdmitTurn(who);
    if (!slot.ok()) return slot.status();
    places.slot = *std::move(slot);
  }
  return places;
}

grpc::ServerWriteReactor<grpc::ByteBuffer>* ChatGrpcService::StartTurn(
    grpc::CallbackServerContext* context, const core::Identity& who,
    pb::StreamChatRequest request) {
  absl::StatusOr<Places> places = Admit(who, request);
  if (!places.ok()) return new Refusal(places.status());
  // The client's deadline bounds the turn (the turn's own timeout caps it).
  const int64_t deadline = DeadlineMicros(*context, kMaxTurnMicros);
  auto control = std::make_shared<TurnControl>();
  // A turn still running on this conversation is suspended for this one;
  // a retry of a turn that is still running waits for it instead. Valid
  // requests only: one that fails validation changes nothing.
  RunningTurns::Control interrupted;
  std::string claimed_key;
  std::shared_ptr<TurnLog> log = logs_.NewLog();
  if (!request.conversation_id().empty()) {
    const std::string key = RunningTurns::Key(who, request.conversation_id());
    if (!request.turn_id().empty()) {
      if (!running_.Claim(key, request.turn_id(), control)) {
        return new Refusal(StillRunning(request.turn_id()));
      }
      claimed_key = key;
      logs_.Register(key, request.turn_id(), log);
    }
    interrupted = running_.Suspend(key, request.turn_id());
  }
  // Attached before the turn starts, so it reads every event from the
  // first (attaching after seq 0 of an empty log cannot fail).
  LogReader* reader =
      *LogReader::Open(log, 0, control, request.detach_on_disconnect(), heartbeats_);
  auto feed = std::make_shared<TurnFeed>(
      running_, logs_, feeds_, std::move(log), std::move(control), who, std::move(claimed_key),
      request.turn_id(), std::move(places->ticket), std::move(places->slot));
  // The turn's thread starts under the caller's trace context and log fields.
  const core::ScopedAmbient caller(
      CallerAmbient(*context, {request.turn_id(), request.conversation_id(), who.tenant_id}));
  TurnFeed::Start(feed, std::move(request), core::TimePointFromMicros(deadline), runner_, workers_,
                  std::move(interrupted), door_.limits);
  return reader;
}

// The turn's kept events while it runs or within its window; after that
// (or from another replica) its stored outcome, whole.
grpc::ServerWriteReactor<grpc::ByteBuffer>* ChatGrpcService::Reattach(
    grpc::CallbackServerContext* context, const core::Identity& who,
    const pb::StreamChatRequest& request) {
  const std::string key = RunningTurns::Key(who, request.conversation_id());
  RunningTurns::Control control;
  const RunningTurns::Where where = running_.Locate(key, request.turn_id(), &control);
  std::shared_ptr<TurnLog> log = logs_.Find(key, request.turn_id());
  if (log != nullptr) {
    absl::StatusOr<LogReader*> reader = LogReader::Open(
        log, request.resume_after_seq(), control, request.detach_on_disconnect(), heartbeats_);
    if (reader.ok()) return *reader;
    // An ended turn whose events after the seq are gone: its stored outcome.
    if (reader.status().code() != absl::StatusCode::kFailedPrecondition || !log->ended()) {
      return new Refusal(reader.status());
    }
  }
  if (where == RunningTurns::Where::kElsewhere) {
    return new Refusal(core::WithReason(
        absl::AbortedError(absl::StrCat(
            "turn ", request.turn_id(),
            " is running on another replica; reattach there, or here once it has ended")),
        core::kReasonTurnInProgress));
  }
  // A log of its own for the stored outcome, read from its first event.
  log = logs_.NewLog();
  LogReader* reader = *LogReader::Open(log, 0, nullptr, true, heartbeats_);
  const core::TimePoint deadline =
      core::TimePointFromMicros(DeadlineMicros(*context, kMaxReadMicros));
  auto task = [&runner = runner_, log, who, request, deadline] {
    LogSink sink(*log);
    log->End(runner.ReplayStored(who, request, sink, deadline));
  };
  const core::ScopedAmbient caller(
      CallerAmbient(*context, {request.turn_id(), request.conversation_id(), who.tenant_id}));
  if (!workers_.Submit(task)) log->End(Busy("too many calls in progress"));
  return reader;
}

ChatGrpcService::~ChatGrpcService() {
  // Cancelled again each round: a turn that had not yet named its
  // conversation could not be reached the round before.
  do {
    running_.CancelAll();
  } while (!feeds_.AwaitNone(absl::Milliseconds(100)));
}

void FeedCount::Add() {
  absl::MutexLock lock(&mu_);
  ++count_;
}

void FeedCount::Done() {
  absl::MutexLock lock(&mu_);
  --count_;
}

bool FeedCount::AwaitNone(absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  auto none = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return count_ == 0; };
  return mu_.AwaitWithTimeout(absl::Condition(&none), timeout);
}

grpc::ServerUnaryReactor* ChatGrpcService::CancelTurn(grpc::CallbackServerContext* context,
                                                      const Raw* raw, Raw* raw_response) {
  return ServeUnary<pb::CancelTurnRequest, pb::CancelTurnResponse>(
      context, raw, raw_response, "CancelTurn", door_, workers_,
      [this](const core::Call& call, const pb::CancelTurnRequest& request,
             pb::CancelTurnResponse* response) {
        if (absl::Status valid = ValidateCancelTurnRequest(request); !valid.ok()) return valid;
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
        // What a reattach could still read of it goes too.
        logs_.Forget(key);
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
        auto decisions =
            audit_->List(call.who, core::CanonicalId(request.conversation_id()), limit);
        if (!decisions.ok()) return StorageFailure(decisions.status());
        for (const ActionDecisionRecord& decision : *decisions) {
          *response->add_decisions() = ActionDecisionProto(decision);
        }
        return absl::OkStatus();
      });
}

}  // namespace omniforge::orchestrator
