#include "services/intent/src/reply_proto.h"

#include "absl/strings/str_cat.h"

namespace omniforge::intent {

absl::StatusOr<PendingContext> PendingFromProto(const v1::Pending& pending) {
  PendingContext out;
  if (!v1::PlanStage_IsValid(pending.plan().stage())) {
    return absl::InvalidArgumentError(
        absl::StrCat("pending.plan.stage: unknown PlanStage ", pending.plan().stage()));
  }
  if (!v1::QuestionKind_IsValid(pending.question().kind())) {
    return absl::InvalidArgumentError(
        absl::StrCat("pending.question.kind: unknown QuestionKind ", pending.question().kind()));
  }
  out.plan_id = pending.plan().id();
  out.plan = static_cast<PlanStage>(pending.plan().stage());
  out.question = static_cast<QuestionKind>(pending.question().kind());
  out.options.assign(pending.question().options().begin(), pending.question().options().end());
  out.resumable_goal = pending.resumable_goal();
  out.actions.reserve(static_cast<size_t>(pending.actions_size()));
  for (const v1::PendingAction& action : pending.actions()) {
    PendingActionRef ref{action.id(), action.tool(), action.summary(), {}, {}};
    ref.targets.assign(action.targets().begin(), action.targets().end());
    ref.settings.insert(action.settings().begin(), action.settings().end());
    out.actions.push_back(std::move(ref));
  }
  return out;
}

void ReplyToProto(const ReplyDecision& reply, v1::ReplyDecision* out) {
  out->set_kind(static_cast<v1::ReplyKind>(reply.kind));
  for (const std::string& id : reply.action_ids) out->add_action_ids(id);
  out->mutable_fields()->insert(reply.fields.begin(), reply.fields.end());
  out->set_option(reply.option);
  out->set_reasoning(reply.reasoning);
}

}  // namespace omniforge::intent
