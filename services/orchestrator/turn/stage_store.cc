// Stage 1, StoreMessage: the user's message is stored once per turn_id (in
// a new conversation when the request names none), while the user's agents
// are listed and the history is read on side threads. A fresh request on a
// conversation whose window is kept is analysed early, beside the store.
#include <future>
#include <utility>

#include "libs/core/ids.h"
#include "libs/core/secrets.h"
#include "libs/core/text.h"
#include "services/orchestrator/planner/local_policy.h"
#include "services/orchestrator/turn/error_kinds.h"
#include "services/orchestrator/turn/history.h"
#include "services/orchestrator/turn/request.h"
#include "services/orchestrator/turn/turn_pass.h"

namespace omniforge::orchestrator {
namespace {

using nlohmann::json;

// The request as the turn reads it, when it differs from the one asked: a
// decision sent without words gets words that say it (and is stored so); a
// message holding a credential has it masked, so that neither the model,
// the intent service nor anything the orchestrator keeps sees it (the
// conversation service masks and flags the stored message itself).
pb::StreamChatRequest Worded(const pb::StreamChatRequest& asked) {
  pb::StreamChatRequest worded;
  if (asked.message().empty()) {
    worded = asked;
    worded.set_message(DecisionWords(asked.decision()));
  } else if (!core::DetectSecrets(asked.message()).empty()) {
    worded = asked;
    worded.set_message(core::RedactSecrets(asked.message()));
  }
  return worded;
}

}  // namespace

TurnPass::TurnPass(const TurnRunner& runner, const core::Identity& who,
                   const pb::StreamChatRequest& request, TurnControl& control, EventSink& sink,
                   core::TimePoint client_deadline, std::shared_ptr<TurnControl> interrupted)
    : runner_(runner),
      asked_(request),
      worded_(Worded(request)),
      request_(worded_.message().empty() ? request : worded_),
      decides_(request_.decision().kind() != pb::DECISION_KIND_UNSPECIFIED),
      control_(control),
      interrupted_(std::move(interrupted)),
      model_calls_({}, runner.options_.usage_writer, &model_usage_),
      ctx_(who, runner.clock(), runner.options_.turn_timeout, client_deadline, control,
           control.cancel_signal(), model_usage_),
      started_(ctx_.NowMicros()),
      emit_(sink, [this](pb::ChatErrorCode code,
                         const std::string& message) { RecordError(ErrorKind(code), message); }),
      plan_events_(emit_) {
  list_agents_.set_tool_name("list_agents");
  emit_.SetContextType(request_.context_type() == pb::CONTEXT_TYPE_UNSPECIFIED
                           ? pb::CONTEXT_TYPE_GLOBAL
                           : request_.context_type());
  // Polled by the plan engine, possibly off this thread: atomics and the
  // clock only.
  plan_stopped_ = [this] {
    return control_.cancelled() || control_.suspend_requested() || ctx_.Expired();
  };
}

absl::Status TurnPass::StoreMessage() {
  const core::Identity& who = ctx_.who();
  // A fresh request on a conversation whose window is kept: its analysis
  // runs while the message is stored, from the kept window and the agents,
  // on a side thread of its own (which also lists them). The turn uses it
  // only if that window is the one it takes once the message is stored (so
  // its own request would be the same); otherwise it asks again.
  window_kept_ =
      !request_.conversation_id().empty() && runner_.windows_.Has(who, request_.conversation_id());
  analyze_early_ = window_kept_ && interrupted_ == nullptr;
  if (!analyze_early_) {
    agents_listed_ = runner_.side_calls_.Async(
        [this, call = DownstreamCall()] { return runner_.tools_.InvokeTool(call, list_agents_); });
  }
  if (absl::Status started = StartConversation(); !started.ok()) return started;
  // The history so far, read while the message is stored (the window then
  // holds the turns before it; a new conversation has none), unless the
  // window kept after the conversation's last turn still holds.
  if (!created_ && !unstored_ && !window_kept_) {
    window_read_ =
        runner_.side_calls_.Async([this, call = DownstreamCall()] { return ReadWindow(call); });
  }
  if (analyze_early_) early_ = runner_.side_calls_.Async([this] { return AnalyzeEarly(); });

  turn_id_ = request_.turn_id().empty() ? core::NewUuid() : request_.turn_id();
  convpb::AppendMessageRequest user_message;
  user_message.set_conversation_id(conversation_id_);
  user_message.set_role(convpb::ROLE_USER);
  // As asked: the conversation service flags what it masks.
  user_message.set_content(asked_.message().empty() ? request_.message() : asked_.message());
  user_message.set_idempotency_key("turn:" + turn_id_ + ":user");
  user_message.set_metadata_json(json{
      {"turn_id", turn_id_},
      {"context_type", pb::ContextType_Name(request_.context_type())},
      {"entity_id",
       request_.entity_id()}}.dump());
  absl::StatusOr<std::optional<convpb::AppendMessageResponse>> stored =
      unstored_ ? std::optional<convpb::AppendMessageResponse>()
                : Store(user_message, DownstreamCall().Uncancelled());
  if (!stored.ok()) return stored.status();
  user_spooled_ = !unstored_ && !stored->has_value();
  stored_user_message_ = stored->value_or(convpb::AppendMessageResponse());
  // The turn's messages are stored in order, each once: the window kept for
  // the next turn can follow them.
  user_stored_now_ = !unstored_ && !user_spooled_ && !stored_user_message_.deduplicated();
  if (stored_user_message_.deduplicated()) kind_ = TurnKind::kRetry;
  return absl::OkStatus();
}

// The conversation: the caller's own (checked by the append: memory answers
// NOT_FOUND for one that is not the caller's, and stores nothing), or a new
// one. When storage cannot start it the turn answers without storing
// anything. The spool does not start it later: the service picks a
// conversation's id and CreateConversation has no idempotency key, so the
// client would hold no id for it, and a retried create that had landed
// would start a second one. The client sends the message again later.
absl::Status TurnPass::StartConversation() {
  conversation_id_ = request_.conversation_id();
  if (!conversation_id_.empty()) return absl::OkStatus();
  convpb::CreateConversationRequest create;
  create.set_title(core::Shortened(request_.message(), 80));
  absl::StatusOr<convpb::CreateConversationResponse> made =
      runner_.memory_.CreateConversation(DownstreamCall(), create);
  if (made.ok()) {
    conversation_id_ = made->conversation().id();
    created_ = true;
    return absl::OkStatus();
  }
  if (runner_.spool_ != nullptr && IsStorageUnreachable(made.status())) {
    unstored_ = true;
    return absl::OkStatus();
  }
  return made.status();
}

absl::StatusOr<convpb::GetContextWindowResponse> TurnPass::ReadWindow(const core::Call& call) {
  convpb::GetContextWindowRequest window_request;
  window_request.set_conversation_id(conversation_id_);
  window_request.set_token_budget(runner_.options_.context_token_budget);
  window_request.set_metadata_as_json(true);
  return runner_.memory_.GetContextWindow(call, window_request);
}

// The agents are listed while the history is built and, when this user's
// agents at their last turn are known, while the intent service reads the
// message with those: that analysis stands if the list is the same (what the
// service was given is then exactly what it would be given now), else it is
// asked again.
TurnPass::EarlyAnalysis TurnPass::AnalyzeEarly() {
  const core::Identity& who = ctx_.who();
  std::promise<absl::StatusOr<execpb::InvokeToolResponse>> listing;
  std::future<absl::StatusOr<execpb::InvokeToolResponse>> listed = listing.get_future();
  runner_.tools_.InvokeToolThen(DownstreamCall(), list_agents_,
                                [&listing](absl::StatusOr<execpb::InvokeToolResponse> result) {
                                  listing.set_value(std::move(result));
                                });
  // Shared with the cache, and let go of before anything waits, so that the
  // turn's Take can move it out instead of copying it.
  std::optional<WindowCache::Kept> kept = runner_.windows_.Read(who, conversation_id_);
  const bool fresh = kept.has_value() && StartsAFreshFlow(runner_.routings_, *kept->window);
  intentpb::AnalyzeIntentRequest analyze;
  if (fresh) AddHistory(runner_.routings_, *kept->window, analyze);
  const uint64_t version = fresh ? kept->version : 0;
  kept.reset();
  analyze.set_message(request_.message());
  analyze.set_context_type(InternalContextType(request_.context_type()));
  analyze.set_local_only(control_.local_only());
  const std::shared_ptr<const std::vector<AgentInfo>> seen =
      fresh ? runner_.AgentsSeen(who) : nullptr;
  absl::StatusOr<intentpb::AnalyzeIntentResponse> guessed = absl::UnknownError("not asked");
  if (seen) {
    AddAgents(*seen, analyze);
    guessed = runner_.understanding_.AnalyzeIntent(DownstreamCall(), analyze);
  }
  EarlyAnalysis out{listed.get()};
  if (out.listed.ok() && !out.listed->is_error()) {
    out.listing = ListingFromResult(ParseObject(out.listed->result_json()));
  }
  if (!fresh) return out;
  out.window = version;
  if (seen && SameForAnalysis(*seen, out.listing.agents)) {
    out.response = std::move(guessed);
    return out;
  }
  if (guessed.ok()) {
    out.discarded_calls.assign(guessed->model_calls().begin(), guessed->model_calls().end());
  }
  analyze.clear_available_agents();
  AddAgents(out.listing.agents, analyze);
  out.response = runner_.understanding_.AnalyzeIntent(DownstreamCall(), analyze);
  return out;
}

// Through the spool, a message storage cannot take now waits there
// (nullopt) and the turn goes on. The callers pass an uncancelled call: a
// message is stored once taken, also when the turn is cancelled.
absl::StatusOr<std::optional<convpb::AppendMessageResponse>> TurnPass::Store(
    const convpb::AppendMessageRequest& message, const core::Call& call) {
  if (runner_.spool_ != nullptr) return runner_.spool_->Append(call, message);
  absl::StatusOr<convpb::AppendMessageResponse> stored =
      runner_.memory_.AppendMessage(call, message);
  if (!stored.ok()) return stored.status();
  return std::optional<convpb::AppendMessageResponse>(*std::move(stored));
}

// Failures of the orchestration go to the error log as well as to the
// user, with the step of the turn they happened in (and the tool called).
// A cancelled turn's calls fail because it was cancelled: the user's
// choice, not a failure of the orchestration.
void TurnPass::RecordError(const std::string& kind, const std::string& message) {
  if (kind.empty() || control_.cancelled()) return;
  runner_.errors_->Record({ctx_.who().tenant_id, ctx_.who().user_id, conversation_id_, turn_id_,
                           kind, message, ErrorComponent(kind, stage_), stage_, stage_tool_});
}

}  // namespace omniforge::orchestrator
