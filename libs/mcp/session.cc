#include "libs/mcp/session.h"

#include <algorithm>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "libs/core/call_cancellation.h"
#include "libs/core/logging.h"
#include "libs/mcp/json_rpc.h"

namespace omniforge::mcp {
namespace {

using nlohmann::json;

int64_t MillisUntil(Clock::time_point deadline) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
}

Clock::time_point EarlierOf(Clock::time_point deadline, std::chrono::milliseconds timeout) {
  const Clock::time_point now = Clock::now();
  if (deadline <= now) return deadline;
  return deadline - now < timeout ? deadline : now + timeout;
}

// Maps an MCP logging level onto ours.
core::LogLevel LevelOf(const json& level) {
  const std::string name = level.is_string() ? level.get<std::string>() : "info";
  if (name == "debug") return core::LogLevel::kDebug;
  if (name == "info" || name == "notice") return core::LogLevel::kInfo;
  if (name == "warning") return core::LogLevel::kWarn;
  return core::LogLevel::kError;
}

std::string DescribeId(const json& id) { return id.dump(); }

// The reason a request for cancelled work gives, to its caller and the server.
constexpr char kCancelledByCaller[] = "cancelled by the caller";

}  // namespace

// A request waiting for its answer. `done`, `cancelled`, `result` and `cv`
// belong to the session's mu_ (read and written with it held), which the
// annotations of a nested struct cannot name.
struct McpSession::Pending {
  std::string method;
  bool done = false;
  bool cancelled = false;  // the caller's work was cancelled (call_cancellation.h)
  absl::StatusOr<json> result = absl::UnknownError("no answer");
  absl::CondVar cv;
  // Held while the progress callback runs; `callbacks_closed` set under it
  // guarantees no callback runs after Request returned.
  absl::Mutex callback_mu;
  bool callbacks_closed ABSL_GUARDED_BY(callback_mu) = false;
  ProgressCallback on_progress;
};

namespace {

// Waits on `cv` (with `mu` held) until woken or `until`; true when `until`
// has passed.
bool WaitUntil(absl::CondVar& cv, absl::Mutex& mu, Clock::time_point until)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
  if (until == Clock::time_point::max()) {
    cv.Wait(&mu);
    return false;
  }
  return cv.WaitWithTimeout(&mu, absl::FromChrono(until - Clock::now()));
}

}  // namespace

absl::Status McpSession::CancelledByCaller(std::string_view method) const {
  return absl::CancelledError(absl::StrCat("MCP server '", options_.server_name, "' ", Sv(method),
                                           ": ", kCancelledByCaller));
}

McpSession::McpSession(std::unique_ptr<McpTransport> transport, SessionOptions options)
    : options_(std::move(options)), transport_(std::move(transport)) {
  outbox_thread_ = std::thread([this] { RunOutbox(); });
}

McpSession::~McpSession() { Shutdown(); }

absl::Status McpSession::Connect(Clock::time_point deadline) {
  return EnsureReady(EarlierOf(deadline, options_.initialize_timeout)).status();
}

absl::StatusOr<json> McpSession::Request(std::string_view method, const json& params,
                                         const RequestOptions& options) {
  const Clock::time_point deadline = EarlierOf(options.deadline, options_.request_timeout);
  const core::CancelSignal* const cancel = core::CallCancellation();
  for (int attempt = 0;; ++attempt) {
    // Work already cancelled sends nothing, nor starts the server.
    if (cancel != nullptr && cancel->cancelled()) return CancelledByCaller(method);
    absl::StatusOr<uint64_t> epoch = EnsureReady(deadline);
    if (!epoch.ok()) return epoch.status();
    absl::StatusOr<json> result = SendRequest(*epoch, method, params, deadline, options, false);
    if (result.ok()) {
      absl::MutexLock lock(&mu_);
      restarts_in_a_row_ = 0;
      return result;
    }
    if (!IsSessionExpired(result.status())) return result;
    if (attempt > 0) {
      return absl::UnavailableError(absl::StrCat("MCP server '", options_.server_name,
                                                 "' forgot the session again right after it was "
                                                 "re-initialized: ",
                                                 result.status().message()));
    }
    core::LogInfo("mcp session expired; initializing a new one",
                  {{"server", options_.server_name}, {"method", std::string(method)}});
    absl::MutexLock lock(&mu_);
    if (*epoch == epoch_ && state_ == State::kReady) {
      state_ = State::kIdle;
      reinitialize_now_ = true;
      server_info_.reset();
    }
  }
}

absl::StatusOr<uint64_t> McpSession::EnsureReady(Clock::time_point deadline) {
  bool restart = false;
  uint64_t epoch = 0;
  std::string restart_attempt, restart_after;
  {
    absl::MutexLock lock(&mu_);
    for (;;) {
      switch (state_) {
        case State::kReady:
          return epoch_;
        case State::kShutdown:
          return ShutDownError();
        case State::kFailed:
          if (Clock::now() >= next_restart_at_) {
            // The cool-down is over: one more restart, given up again if it fails.
            state_ = State::kIdle;
            restarts_in_a_row_ = options_.max_restarts - 1;
            continue;
          }
          if (next_restart_at_ > deadline) return GivenUpErrorLocked();
          WaitUntil(state_cv_, mu_, next_restart_at_);
          continue;
        case State::kConnecting:
          if (WaitUntil(state_cv_, mu_, deadline) && state_ == State::kConnecting) {
            return absl::DeadlineExceededError(absl::StrCat("timed out waiting for MCP server '",
                                                            options_.server_name, "' to start"));
          }
          continue;
        case State::kIdle:
          break;
      }
      restart = opened_once_ && !reinitialize_now_;
      if (!restart) break;
      if (restarts_in_a_row_ >= options_.max_restarts) {
        GiveUpLocked();
        continue;
      }
      if (Clock::now() >= next_restart_at_) break;
      if (next_restart_at_ > deadline) {
        return absl::UnavailableError(absl::StrCat(
            "MCP server '", options_.server_name, "' is down (", last_failure_.message(),
            "); its restart waits ", MillisUntil(next_restart_at_),
            " ms of backoff, longer than the call's deadline"));
      }
      // Waits out the backoff; Shutdown wakes it.
      WaitUntil(state_cv_, mu_, next_restart_at_);
    }
    epoch = StartConnectLocked(restart);
    restart_attempt = std::to_string(restarts_in_a_row_);
    restart_after = std::string(last_failure_.message());
  }

  if (restart) {
    core::LogInfo(
        "mcp server restarting",
        {{"server", options_.server_name}, {"attempt", restart_attempt}, {"after", restart_after}});
  }
  absl::Status status;
  {
    // The session is everyone's: a caller's cancel does not cut its start.
    const core::ScopedCallCancellation shared(nullptr);
    status = Handshake(epoch, deadline);
  }
  absl::MutexLock lock(&mu_);
  return EndConnectLocked(epoch, status);
}

absl::Status McpSession::ShutDownError() const {
  return absl::UnavailableError(
      absl::StrCat("MCP client for '", options_.server_name, "' is shut down"));
}

absl::Status McpSession::GivenUpErrorLocked() const {
  return absl::UnavailableError(
      absl::StrCat("MCP server '", options_.server_name, "' is down: gave up after ",
                   options_.max_restarts, " restarts in a row",
                   next_restart_at_ == Clock::time_point::max()
                       ? std::string()
                       : absl::StrCat(" (next attempt in ", MillisUntil(next_restart_at_), " ms)"),
                   "; last error: ", last_failure_.message()));
}

void McpSession::GiveUpLocked() {
  state_ = State::kFailed;
  next_restart_at_ = options_.max_restarts > 0 ? Clock::now() + options_.restart_backoff_max
                                               : Clock::time_point::max();
  core::LogError("mcp server given up", {{"server", options_.server_name},
                                         {"restarts", std::to_string(restarts_in_a_row_)},
                                         {"error", std::string(last_failure_.message())}});
  state_cv_.SignalAll();
}

uint64_t McpSession::StartConnectLocked(bool restart) {
  state_ = State::kConnecting;
  connect_in_progress_ = true;
  reinitialize_now_ = false;
  if (restart) {
    ++restarts_in_a_row_;
    ++restarts_total_;
  }
  const uint64_t epoch = ++epoch_;
  server_info_.reset();
  return epoch;
}

absl::StatusOr<uint64_t> McpSession::EndConnectLocked(uint64_t epoch, absl::Status status) {
  connect_in_progress_ = false;
  opened_once_ = true;
  if (state_ == State::kShutdown) {
    state_cv_.SignalAll();
    return ShutDownError();
  }
  if (status.ok() && epoch == epoch_) {
    state_ = State::kReady;
  } else {
    if (status.ok()) {
      status = absl::UnavailableError(
          absl::StrCat("MCP server '", options_.server_name, "' went away right after initialize"));
    }
    state_ = State::kIdle;
    last_failure_ = status;
    next_restart_at_ = Clock::now() + BackoffLocked();
  }
  state_cv_.SignalAll();
  if (!status.ok()) return status;
  return epoch;
}

absl::Status McpSession::Handshake(uint64_t epoch, Clock::time_point deadline) {
  TransportHandlers handlers;
  handlers.on_message = [this, epoch](std::string_view text) { OnMessage(epoch, text); };
  handlers.on_closed = [this, epoch](const absl::Status& reason) { OnClosed(epoch, reason); };
  if (absl::Status opened = transport_->Open(std::move(handlers), epoch); !opened.ok()) {
    return absl::UnavailableError(
        absl::StrCat("cannot start MCP server '", options_.server_name, "': ", opened.message()));
  }
  json params = {
      {"protocolVersion", kSupportedProtocolVersions[0]},
      {"capabilities", json::object()},
      {"clientInfo", {{"name", options_.client_name}, {"version", options_.client_version}}}};
  absl::StatusOr<json> result =
      SendRequest(epoch, "initialize", std::move(params), deadline, RequestOptions{}, true);
  if (!result.ok()) {
    transport_->Close();
    const absl::Status& error = result.status();
    return absl::Status(error.code(), absl::StrCat("initialize failed: ", error.message()));
  }
  ServerInfo info;
  if (result->is_object()) {
    const json& r = *result;
    if (auto v = r.find("protocolVersion"); v != r.end() && v->is_string()) {
      info.protocol_version = v->get<std::string>();
    }
    if (auto s = r.find("serverInfo"); s != r.end() && s->is_object()) {
      info.name = s->value("name", "");
      info.version = s->value("version", "");
    }
    if (auto i = r.find("instructions"); i != r.end() && i->is_string()) {
      info.instructions = i->get<std::string>();
    }
    if (auto c = r.find("capabilities"); c != r.end() && c->is_object()) {
      if (auto t = c->find("tools"); t != c->end() && t->is_object()) {
        info.has_tools = true;
        info.tools_list_changed = t->value("listChanged", false);
      }
    }
  }
  if (!IsSupportedProtocolVersion(info.protocol_version)) {
    transport_->Close();
    return absl::FailedPreconditionError(absl::StrCat(
        "MCP server '", options_.server_name, "' answered initialize with protocol version '",
        Excerpt(info.protocol_version, 40), "'; this client speaks ", kSupportedProtocolVersions[0],
        ", ", kSupportedProtocolVersions[1], " and ", kSupportedProtocolVersions[2]));
  }
  transport_->SetProtocolVersion(info.protocol_version);
  SendOptions send;
  send.deadline = deadline;
  send.epoch = epoch;
  if (absl::Status sent =
          transport_->Send(EncodeNotification("notifications/initialized", nullptr), send);
      !sent.ok()) {
    transport_->Close();
    return absl::Status(sent.code(),
                        absl::StrCat("sending notifications/initialized: ", sent.message()));
  }
  transport_->Listen(epoch);
  core::LogInfo("mcp server initialized", {{"server", options_.server_name},
                                           {"server_name", info.name},
                                           {"server_version", info.version},
                                           {"protocol_version", info.protocol_version}});
  absl::MutexLock lock(&mu_);
  if (epoch == epoch_) server_info_ = std::move(info);
  return absl::OkStatus();
}

absl::StatusOr<json> McpSession::SendRequest(uint64_t epoch, std::string_view method, json params,
                                             Clock::time_point deadline,
                                             const RequestOptions& options, bool is_initialize) {
  const ProgressCallback& on_progress = options.on_progress;
  core::CancelSignal* const cancel = core::CallCancellation();
  auto pending = std::make_shared<Pending>();
  pending->method = std::string(method);
  pending->on_progress = on_progress;
  int64_t id = 0;
  {
    absl::MutexLock lock(&mu_);
    if (epoch != epoch_ || state_ == State::kShutdown) {
      return absl::UnavailableError(absl::StrCat("MCP server '", options_.server_name,
                                                 "' connection was reset before ", Sv(method),
                                                 " was sent"));
    }
    id = next_id_++;
    pending_[id] = pending;
  }
  // Progress tokens are the request ids: unique among active requests.
  if (on_progress) {
    if (!params.is_object()) params = json::object();
    params["_meta"]["progressToken"] = id;
  }
  // A request made for work that is cancelled (the gRPC call it serves) is
  // given up at once, and the server is told, as at its deadline. The hook
  // is forgotten when this returns, with mu_ let go (the hook takes mu_).
  const uint64_t hook = cancel == nullptr ? 0 : cancel->OnCancel([this, pending] {
    absl::MutexLock lock(&mu_);
    pending->cancelled = true;
    pending->cv.SignalAll();
  });
  const absl::Cleanup forget_hook = [cancel, hook] {
    if (cancel != nullptr) cancel->Forget(hook);
  };

  SendOptions send;
  send.deadline = deadline;
  send.is_initialize = is_initialize;
  send.epoch = epoch;
  send.headers = options.headers;
  send.answered = [this, pending] {
    absl::MutexLock lock(&mu_);
    return pending->done || pending->cancelled;
  };
  const absl::Status sent = transport_->Send(EncodeRequest(id, method, params), send);

  Ending ending = Ending::kAnswered;
  absl::StatusOr<json> result;
  {
    absl::MutexLock lock(&mu_);
    ending = AwaitAnswerLocked(*pending, sent, deadline);
    if (ending == Ending::kAnswered) {
      result = std::move(pending->result);
    } else {
      pending_.erase(id);
    }
  }
  {
    absl::MutexLock lock(&pending->callback_mu);
    pending->callbacks_closed = true;
  }
  switch (ending) {
    case Ending::kAnswered:
      return result;
    case Ending::kCancelled:
      if (!is_initialize) PostCancelled(epoch, id, kCancelledByCaller);
      return CancelledByCaller(method);
    case Ending::kTimedOut:
      if (!is_initialize) PostCancelled(epoch, id, "deadline exceeded");
      return absl::DeadlineExceededError(absl::StrCat("MCP server '", options_.server_name,
                                                      "' did not answer ", Sv(method),
                                                      " before the deadline"));
    case Ending::kNotAnswered:
      break;
  }
  return NotAnsweredError(epoch, id, method, sent, is_initialize);
}

void McpSession::PostCancelled(uint64_t epoch, int64_t id, const char* reason) {
  Post(epoch,
       EncodeNotification("notifications/cancelled", {{"requestId", id}, {"reason", reason}}));
}

absl::Status McpSession::NotAnsweredError(uint64_t epoch, int64_t id, std::string_view method,
                                          const absl::Status& sent, bool is_initialize) {
  if (sent.ok()) {
    return absl::UnavailableError(absl::StrCat("MCP server '", options_.server_name,
                                               "' ended its answer stream for ", Sv(method),
                                               " without a result"));
  }
  if (absl::IsDeadlineExceeded(sent) && !is_initialize) {
    PostCancelled(epoch, id, "deadline exceeded");
  }
  if (IsSessionExpired(sent)) return sent;
  return absl::Status(sent.code(), absl::StrCat("MCP server '", options_.server_name, "' ",
                                                Sv(method), ": ", sent.message()));
}

McpSession::Ending McpSession::AwaitAnswerLocked(Pending& pending, const absl::Status& sent,
                                                 Clock::time_point deadline) {
  if (!pending.done && pending.cancelled) return Ending::kCancelled;
  if (!pending.done && (!sent.ok() || transport_->AnswersWithinSend())) {
    return Ending::kNotAnswered;
  }
  while (!pending.done && !pending.cancelled) {
    if (WaitUntil(pending.cv, mu_, deadline)) break;
  }
  if (pending.done) return Ending::kAnswered;
  return pending.cancelled ? Ending::kCancelled : Ending::kTimedOut;
}

void McpSession::OnMessage(uint64_t epoch, std::string_view text) {
  {
    absl::MutexLock lock(&mu_);
    if (epoch != epoch_ || state_ == State::kShutdown) return;
  }
  absl::StatusOr<std::vector<IncomingMessage>> messages = ParseIncoming(text);
  if (!messages.ok()) {
    core::LogWarn(
        "mcp server sent an unreadable message",
        {{"server", options_.server_name}, {"error", std::string(messages.status().message())}});
    return;
  }
  for (IncomingMessage& message : *messages) {
    switch (message.kind) {
      case IncomingMessage::Kind::kResult:
      case IncomingMessage::Kind::kError: {
        if (!message.id.is_number_integer()) {
          core::LogWarn("mcp server reported an error",
                        {{"server", options_.server_name},
                         {"id", DescribeId(message.id)},
                         {"code", std::to_string(message.error_code)},
                         {"error", Excerpt(message.error_message)}});
          break;
        }
        absl::MutexLock lock(&mu_);
        auto it = pending_.find(message.id.get<int64_t>());
        if (it == pending_.end()) {
          core::LogDebug("mcp answer to no pending request (cancelled or timed out)",
                         {{"server", options_.server_name}, {"id", DescribeId(message.id)}});
          break;
        }
        Pending& pending = *it->second;
        if (message.kind == IncomingMessage::Kind::kResult) {
          pending.result = std::move(message.result);
        } else {
          pending.result = StatusFromJsonRpcError(options_.server_name, pending.method,
                                                  message.error_code, message.error_message);
        }
        pending.done = true;
        pending.cv.SignalAll();
        pending_.erase(it);
        break;
      }
      case IncomingMessage::Kind::kRequest: {
        std::string answer;
        if (message.method == "ping") {
          answer = EncodeResult(message.id, json::object());
        } else {
          core::LogDebug("mcp server request not supported",
                         {{"server", options_.server_name}, {"method", message.method}});
          answer = EncodeError(message.id, kMethodNotFound,
                               absl::StrCat("Method not found: ", message.method,
                                            " (this client offers no roots, sampling or "
                                            "elicitation)"));
        }
        Post(epoch, std::move(answer));
        break;
      }
      case IncomingMessage::Kind::kNotification:
        HandleNotification(message.method, message.params);
        break;
    }
  }
}

void McpSession::HandleNotification(const std::string& method, const json& params) {
  if (method == "notifications/progress") {
    if (!params.is_object()) return;
    const auto token = params.find("progressToken");
    const auto value = params.find("progress");
    if (token == params.end() || !token->is_number_integer() || value == params.end() ||
        !value->is_number()) {
      return;
    }
    std::shared_ptr<Pending> pending;
    {
      absl::MutexLock lock(&mu_);
      auto it = pending_.find(token->get<int64_t>());
      if (it == pending_.end()) return;
      pending = it->second;
    }
    Progress progress;
    progress.progress = value->get<double>();
    if (auto total = params.find("total"); total != params.end() && total->is_number()) {
      progress.total = total->get<double>();
    }
    if (auto text = params.find("message"); text != params.end() && text->is_string()) {
      progress.message = text->get<std::string>();
    }
    absl::MutexLock callback_lock(&pending->callback_mu);
    if (!pending->callbacks_closed && pending->on_progress) pending->on_progress(progress);
    return;
  }
  if (method == "notifications/message") {
    if (!params.is_object()) return;
    core::LogFields fields = {{"server", options_.server_name}};
    if (auto logger = params.find("logger"); logger != params.end() && logger->is_string()) {
      fields.emplace_back("logger", logger->get<std::string>());
    }
    const auto data = params.find("data");
    if (data != params.end()) {
      fields.emplace_back(
          "data", Excerpt(data->is_string() ? data->get<std::string>() : data->dump(), 2000));
    }
    core::Log(LevelOf(params.value("level", json())), "mcp server log", fields);
    return;
  }
  if (method == "notifications/tools/list_changed") {
    std::function<void()> listener;
    {
      absl::MutexLock lock(&mu_);
      listener = tools_changed_;
    }
    if (listener) listener();
    return;
  }
  core::LogDebug("mcp notification ignored",
                 {{"server", options_.server_name}, {"method", method}});
}

void McpSession::OnClosed(uint64_t epoch, const absl::Status& reason) {
  std::function<void()> listener;
  {
    absl::MutexLock lock(&mu_);
    if (epoch != epoch_ || state_ == State::kShutdown) return;
    if (!IsSessionExpired(reason)) {
      ServerWentAwayLocked(reason);
      return;
    }
    // An HTTP server that forgot the session was most likely restarted: the
    // next request starts a new session at once (not a restart of ours),
    // and requests under way learn of it from their own answers. Its tools
    // may have changed, and only a new session reopens the stream it sends
    // notifications on: the listener hears of it as of a changed list.
    core::LogInfo("mcp session expired; the next request initializes a new one",
                  {{"server", options_.server_name}, {"reason", std::string(reason.message())}});
    if (state_ == State::kReady) {
      state_ = State::kIdle;
      reinitialize_now_ = true;
      server_info_.reset();
    }
    listener = tools_changed_;
  }
  if (listener) listener();
}

void McpSession::ServerWentAwayLocked(const absl::Status& reason) {
  const absl::Status status = absl::UnavailableError(
      absl::StrCat("MCP server '", options_.server_name, "' went away: ", reason.message()));
  core::LogWarn("mcp server went away", {{"server", options_.server_name},
                                         {"reason", std::string(reason.message())},
                                         {"pending_requests", std::to_string(pending_.size())}});
  FailPendingLocked(status);
  last_failure_ = status;
  // A connecting thread sees its handshake fail and moves to idle itself.
  if (state_ == State::kReady) {
    state_ = State::kIdle;
    next_restart_at_ = Clock::now() + BackoffLocked();
    server_info_.reset();
  }
  state_cv_.SignalAll();
}

void McpSession::FailPendingLocked(const absl::Status& status) {
  for (auto& [id, pending] : pending_) {
    pending->result = status;
    pending->done = true;
    pending->cv.SignalAll();
  }
  pending_.clear();
}

Clock::duration McpSession::BackoffLocked() const {
  if (restarts_in_a_row_ == 0) return Clock::duration::zero();
  auto backoff = options_.restart_backoff;
  for (int i = 1; i < restarts_in_a_row_ && backoff < options_.restart_backoff_max; ++i) {
    backoff *= 2;
  }
  return std::min<Clock::duration>(backoff, options_.restart_backoff_max);
}

void McpSession::Post(uint64_t epoch, std::string message) {
  absl::MutexLock lock(&mu_);
  if (outbox_stop_) return;
  outbox_.emplace_back(epoch, std::move(message));
  outbox_cv_.Signal();
}

void McpSession::RunOutbox() {
  for (;;) {
    uint64_t epoch = 0;
    std::string message;
    {
      absl::MutexLock lock(&mu_);
      for (;;) {
        while (!outbox_stop_ && outbox_.empty()) outbox_cv_.Wait(&mu_);
        if (outbox_stop_) return;
        std::tie(epoch, message) = std::move(outbox_.front());
        outbox_.pop_front();
        if (epoch == epoch_) break;
      }
    }
    SendOptions send;
    send.deadline = Clock::now() + options_.notification_timeout;
    send.epoch = epoch;
    const absl::Status sent = transport_->Send(message, send);
    if (!sent.ok()) {
      core::LogDebug("mcp message not delivered",
                     {{"server", options_.server_name}, {"error", std::string(sent.message())}});
    }
  }
}

void McpSession::Shutdown() {
  {
    absl::MutexLock lock(&mu_);
    if (state_ == State::kShutdown) return;
    state_ = State::kShutdown;
    FailPendingLocked(absl::UnavailableError(
        absl::StrCat("MCP client for '", options_.server_name, "' is shutting down")));
    state_cv_.SignalAll();
    while (connect_in_progress_) state_cv_.Wait(&mu_);
    outbox_stop_ = true;
    outbox_cv_.SignalAll();
  }
  if (outbox_thread_.joinable()) outbox_thread_.join();
  transport_->Close();
}

std::optional<ServerInfo> McpSession::server_info() const {
  absl::MutexLock lock(&mu_);
  return server_info_;
}

void McpSession::SetToolsChangedListener(std::function<void()> listener) {
  absl::MutexLock lock(&mu_);
  tools_changed_ = std::move(listener);
}

int McpSession::restarts() const {
  absl::MutexLock lock(&mu_);
  return restarts_total_;
}

}  // namespace omniforge::mcp
