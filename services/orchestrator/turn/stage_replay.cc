// Stage 2, Replay: a retried turn (its turn_id's user message was stored
// already) that finished is answered with its stored reply, not run again.
#include "absl/strings/str_cat.h"
#include "libs/core/error_catalog.h"
#include "libs/core/error_reason.h"
#include "services/orchestrator/turn/history.h"
#include "services/orchestrator/turn/turn_pass.h"

namespace omniforge::orchestrator {

bool TurnPass::Replay() {
  absl::StatusOr<bool> replayed = ReplayFromStorage();
  return replayed.ok() && *replayed;
}

absl::Status TurnPass::ReplayStored() {
  conversation_id_ = request_.conversation_id();
  turn_id_ = request_.turn_id();
  absl::StatusOr<bool> replayed = ReplayFromStorage();
  // A conversation that is not the caller's is, to the caller, no such turn.
  if (!replayed.ok() && replayed.status().code() != absl::StatusCode::kNotFound) {
    return replayed.status();
  }
  if (replayed.ok() && *replayed) return absl::OkStatus();
  return core::WithReason(
      absl::NotFoundError(absl::StrCat("turn ", turn_id_,
                                       ": no finished turn of this conversation with a stored "
                                       "reply (nor one running here)")),
      core::kReasonTurnNotFound);
}

absl::StatusOr<bool> TurnPass::ReplayFromStorage() {
  convpb::ListMessagesRequest after;
  after.set_conversation_id(conversation_id_);
  after.set_limit(500);
  after.set_metadata_as_json(true);
  absl::StatusOr<convpb::ListMessagesResponse> recent =
      runner_.memory_.ListMessages(DownstreamCall(), after);
  if (!recent.ok()) return recent.status();
  for (const convpb::Message& m : recent->messages()) {
    if (m.role() != convpb::ROLE_ASSISTANT || m.seq() <= stored_user_message_.message().seq()) {
      continue;
    }
    const Routing routing = RoutingFromJson(MetadataOf(m));
    if (routing.turn_id != turn_id_) continue;
    pb::SessionEvent* session = emit_.Next().mutable_session();
    session->set_conversation_id(conversation_id_);
    session->set_turn_id(turn_id_);
    session->set_flow_id(routing.flow_id);
    session->set_replayed(true);
    emit_.Send();
    emit_.Next().mutable_text()->set_delta(m.content());
    emit_.Send();
    pb::DoneEvent* done = emit_.Next().mutable_done();
    done->set_is_final(routing.status == FlowStatus::kDone);
    done->set_assistant_message_id(m.id());
    done->mutable_usage()->set_duration_ms(ctx_.ElapsedMs());
    emit_.Send();
    return true;
  }
  return false;
}

}  // namespace omniforge::orchestrator
