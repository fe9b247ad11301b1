// The chat request as the turn reads it: validation, the words a structured
// decision is stored as, and what the client's context constrains.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "omniforge/orchestrator/v1/chat_service.pb.h"

namespace omniforge::orchestrator {

// INVALID_ARGUMENT naming the field: an empty (without a decision) or
// oversized message (over 64 KiB), invalid UTF-8, an unknown context type,
// a malformed conversation id, turn id or entity id, a decision with an
// unknown kind, without an action id, or with arguments that are not a JSON
// object or nest deeper than core::kMaxJsonDepth (or given with another kind
// than EDIT), a decision without a conversation. Each carries its reason (FIELD_REQUIRED,
// FIELD_INVALID, FIELD_TOO_LARGE, INVALID_UTF8) and the field's path as a field violation
// (core::InvalidField).
absl::Status ValidateStreamChatRequest(
    const ::omniforge::orchestrator::v1::StreamChatRequest& request);

// CancelTurn: INVALID_ARGUMENT naming the field without a conversation_id
// (FIELD_REQUIRED), with one that is not a UUID or with a malformed turn_id
// (FIELD_INVALID).
absl::Status ValidateCancelTurnRequest(
    const ::omniforge::orchestrator::v1::CancelTurnRequest& request);

// A reattach (resume_after_seq set): INVALID_ARGUMENT naming the field
// without a conversation_id (FIELD_REQUIRED) or with one that is not a UUID
// (FIELD_INVALID), without a turn_id or with a malformed one, or with a
// negative seq (FIELD_INVALID).
absl::Status ValidateReattachRequest(
    const ::omniforge::orchestrator::v1::StreamChatRequest& request);

// The words stored for a structured decision sent without a message.
std::string DecisionWords(const ::omniforge::orchestrator::v1::ApprovalDecision& decision);

// What the client's context constrains, for the context box; empty for the
// global context.
std::string ContextConstraint(const ::omniforge::orchestrator::v1::StreamChatRequest& request);

}  // namespace omniforge::orchestrator
