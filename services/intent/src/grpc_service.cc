#include "services/intent/src/grpc_service.h"

#include "absl/strings/str_cat.h"
#include "libs/core/clock.h"
#include "libs/core/grpc_unary.h"
#include "libs/llm/model_call_proto.h"
#include "services/intent/src/reply_proto.h"

namespace omniforge::intent {
namespace {

absl::StatusOr<std::optional<Action>> ActionFromProto(int value, const std::string& field) {
  if (value == pb::ACTION_TYPE_UNSPECIFIED) return std::optional<Action>();
  if (!pb::ActionType_IsValid(value)) {
    return absl::InvalidArgumentError(absl::StrCat(field, ": unknown ActionType ", value));
  }
  return std::optional<Action>(static_cast<Action>(value));
}

}  // namespace

absl::StatusOr<IntentRequest> FromProto(const pb::AnalyzeIntentRequest& request) {
  IntentRequest out;
  out.message = request.message();
  if (!pb::ContextType_IsValid(request.context_type())) {
    return absl::InvalidArgumentError(
        absl::StrCat("context_type: unknown ContextType ", request.context_type()));
  }
  out.context_type = request.context_type();
  out.local_only = request.local_only();
  out.history.reserve(request.history_size());
  for (int i = 0; i < request.history_size(); ++i) {
    const pb::Turn& turn = request.history(i);
    const std::string field = absl::StrCat("history[", i, "]");
    if (turn.role() == pb::TURN_ROLE_UNSPECIFIED || !pb::TurnRole_IsValid(turn.role())) {
      return absl::InvalidArgumentError(
          absl::StrCat(field,
                       ".role: expected TURN_ROLE_USER, TURN_ROLE_ASSISTANT, "
                       "TURN_ROLE_SYSTEM or TURN_ROLE_TOOL, got ",
                       turn.role()));
    }
    HistoryTurn t;
    t.role = static_cast<Role>(turn.role());
    t.content = turn.content();
    auto action = ActionFromProto(turn.action_type(), field + ".action_type");
    if (!action.ok()) return action.status();
    t.action = *action;
    t.entities.insert(turn.entities().begin(), turn.entities().end());
    t.listed_agents.assign(turn.listed_agents().begin(), turn.listed_agents().end());
    t.pending_action = turn.pending_action();
    out.history.push_back(std::move(t));
  }
  for (const auto& item : request.available_agents()) {
    out.agents.push_back({item.name(), item.description()});
  }
  for (const auto& item : request.available_skills()) {
    out.skills.push_back({item.name(), item.description()});
  }
  absl::StatusOr<PendingContext> pending = PendingFromProto(request.pending());
  if (!pending.ok()) return pending.status();
  out.pending = *std::move(pending);
  return out;
}

void ToProto(const IntentAnalysis& a, pb::AnalyzeIntentResponse* response) {
  for (const llm::UsageRecord& call : a.model_calls)
    llm::ToProto(call, response->add_model_calls());
  pb::IntentAnalysis* out = response->mutable_analysis();
  out->set_action_type(static_cast<pb::ActionType>(a.action));
  out->set_confidence(a.confidence);
  out->mutable_entities()->insert(a.entities.begin(), a.entities.end());
  out->set_reasoning(a.reasoning);
  out->set_is_ambiguous(a.is_ambiguous);
  out->set_alternative_action(a.alternative ? static_cast<pb::ActionType>(*a.alternative)
                                            : pb::ACTION_TYPE_UNSPECIFIED);
  out->set_clarifying_question(a.clarifying_question);
  out->set_source(static_cast<pb::IntentSource>(a.source));
  out->set_latency_ms(a.latency_ms);
  out->set_cost_usd(a.cost_usd);
  out->set_reference(static_cast<pb::ReferenceKind>(a.reference));
  out->set_summary_worthy(a.summary_worthy);
  pb::Clarification* clarification = out->mutable_clarification();
  clarification->set_needed(a.clarification.needed);
  for (MissingSlot slot : a.clarification.missing) {
    clarification->add_missing(static_cast<pb::MissingSlot>(slot));
  }
  for (const std::string& name : a.clarification.candidates) clarification->add_candidates(name);
  ReplyToProto(a.reply, out->mutable_reply());
  for (const RequestPart& part : a.parts) {
    pb::RequestPart* added = out->add_parts();
    added->set_text(part.text);
    added->set_agent_name(part.agent_name);
  }
}

grpc::ServerUnaryReactor* IntentGrpcService::AnalyzeIntent(grpc::CallbackServerContext* context,
                                                           const grpc::ByteBuffer* raw,
                                                           grpc::ByteBuffer* raw_response) {
  using Req = pb::AnalyzeIntentRequest;
  using Resp = pb::AnalyzeIntentResponse;
  const int64_t start = core::NowMicros();
  return core::ServeUnary<Req, Resp>(
      context, raw, raw_response, "AnalyzeIntent",
      [this, start](std::shared_ptr<core::UnaryCall<Req, Resp>> call,
                    std::function<void(absl::Status)> done) {
        auto request = std::make_shared<absl::StatusOr<IntentRequest>>(FromProto(call->request));
        if (!request->ok()) {
          done(request->status());
          return;
        }
        auto local = service_.AnalyzeLocally(**request);
        if (!local.ok()) {
          done(local.status());
          return;
        }
        if (!service_.WillCallLlm(*local)) {
          ToProto(service_.Finish(**request, *std::move(local), start), &call->response);
          done(absl::OkStatus());
          return;
        }
        // The LLM blocks: hand the call to a worker.
        auto pending = std::make_shared<LocalResult>(*std::move(local));
        auto on_worker = core::OnWorker<Req, Resp>(
            workers_, "intent service is overloaded; retry",
            [this, request, pending, start](const core::Identity&, const Req&, Resp* response) {
              ToProto(service_.Finish(**request, std::move(*pending), start), response);
              return absl::OkStatus();
            });
        on_worker(std::move(call), std::move(done));
      });
}

}  // namespace omniforge::intent
