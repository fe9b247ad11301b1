// What is pending and the reply decision, between their protos
// (omniforge.intent.v1.Pending, ReplyDecision) and the reply reader's
// types (model.h): read by the gRPC layer and by the orchestrator's turn
// fakes, which read replies with the service's own rules.
#pragma once

#include "absl/status/statusor.h"
#include "omniforge/intent/v1/intent_service.pb.h"
#include "services/intent/src/model.h"

namespace omniforge::intent {

// INVALID_ARGUMENT for an unknown PlanStage or QuestionKind.
absl::StatusOr<PendingContext> PendingFromProto(const v1::Pending& pending);

void ReplyToProto(const ReplyDecision& reply, v1::ReplyDecision* out);

}  // namespace omniforge::intent
