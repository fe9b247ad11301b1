// The approval audit trail: every decision on a pending action (who, when,
// which action digest, how it ended), stored per tenant and read back by
// the caller it belongs to (ChatService.ListActions).
//
// ApprovalAudit is the interface the turn records into;
// memory_approval_audit.h keeps decisions in memory (local mode without a
// database, and tests), pg_approval_audit.h in
// orchestration.approval_decisions. No gRPC here.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "libs/core/identity.h"
#include "omniforge/executor/v1/executor_service.pb.h"
#include "omniforge/orchestrator/v1/chat_service.pb.h"

namespace omniforge::orchestrator {

struct ActionDecisionRecord {
  std::string tenant_id, user_id, conversation_id, turn_id;
  std::string action_id, digest, tool, summary;
  ::omniforge::executor::v1::ToolRisk risk = ::omniforge::executor::v1::TOOL_RISK_UNSPECIFIED;
  ::omniforge::orchestrator::v1::ActionOutcome outcome =
      ::omniforge::orchestrator::v1::ACTION_OUTCOME_UNSPECIFIED;
  std::string decided_by;         // user id, or "policy"
  std::string via;                // "words", "api", "policy"
  int64_t decided_at_micros = 0;  // 0: now
};

class ApprovalAudit {  // thread-safe
 public:
  virtual ~ApprovalAudit() = default;
  // Stores one decision; OK once it is stored. INVALID_ARGUMENT (and
  // nothing stored) as ValidateActionDecision says; the summary is stored
  // as StoredDecisionSummary gives it. The PostgreSQL store also fails as
  // pg::WithTenantTransaction does (UNAVAILABLE, DEADLINE_EXCEEDED past the
  // thread's call deadline, ...).
  virtual absl::Status Record(const ActionDecisionRecord& record) = 0;
  // Newest first, at most `limit`, only `who`'s own (tenant and user).
  // INVALID_ARGUMENT when conversation_id is not a UUID or limit < 1. A
  // conversation with no decisions, or not `who`'s, gives an empty list:
  // callers check the conversation is the caller's first.
  virtual absl::StatusOr<std::vector<ActionDecisionRecord>> List(const core::Identity& who,
                                                                 const std::string& conversation_id,
                                                                 int limit) = 0;
};

// Keeps nothing: the trail of a turn runner given none. Record accepts every
// decision and stores none; List lists none.
class NoApprovalAudit final : public ApprovalAudit {
 public:
  absl::Status Record(const ActionDecisionRecord&) override { return absl::OkStatus(); }
  absl::StatusOr<std::vector<ActionDecisionRecord>> List(const core::Identity&, const std::string&,
                                                         int) override {
    return std::vector<ActionDecisionRecord>();
  }
};

// A summary longer than this many bytes is stored cut there (at a UTF-8
// boundary) with "…" after it.
inline constexpr size_t kMaxDecisionSummaryBytes = 2000;
std::string StoredDecisionSummary(const std::string& summary);

// INVALID_ARGUMENT naming the field: an empty tenant_id, user_id,
// action_id or decided_by; a conversation_id that is not a UUID; an
// unspecified or unknown outcome; an unknown risk; `via` other than words,
// api or policy; a negative decided_at_micros.
absl::Status ValidateActionDecision(const ActionDecisionRecord& record);

// INVALID_ARGUMENT for List's arguments, as ApprovalAudit::List says.
absl::Status ValidateDecisionQuery(const std::string& conversation_id, int limit);

// How outcomes and risks are stored as text ("approved", "auto_approved";
// "read", "unspecified"): the enum value's name without its prefix, in
// lower case. The parsers return false for text that names no value.
std::string ActionOutcomeText(::omniforge::orchestrator::v1::ActionOutcome outcome);
bool ParseActionOutcomeText(const std::string& text,
                            ::omniforge::orchestrator::v1::ActionOutcome* outcome);
std::string ToolRiskText(::omniforge::executor::v1::ToolRisk risk);
bool ParseToolRiskText(const std::string& text, ::omniforge::executor::v1::ToolRisk* risk);

// The record as the public API shows it (decided_at in milliseconds).
::omniforge::orchestrator::v1::ActionDecision ActionDecisionProto(
    const ActionDecisionRecord& record);

}  // namespace omniforge::orchestrator
