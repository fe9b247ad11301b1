// Running a tool on a caller's behalf: find it in the catalog, check the
// arguments against its schema before anything runs, replay a recorded
// result for a repeated idempotency key, bound the call by the caller's
// deadline and cap the size of what comes back. No gRPC here.
#pragma once

#include <chrono>
#include <string>

#include "absl/status/statusor.h"
#include "services/executor/src/invocation_ledger.h"
#include "services/executor/src/tool_catalog.h"

namespace omniforge::executor {

struct ToolRuntimeOptions {
  size_t max_argument_bytes = size_t{256} * 1024;
  // Larger results are replaced by {"truncated": true, "original_bytes": N,
  // "text": "<the first bytes>"}.
  size_t max_result_bytes = size_t{64} * 1024;
  size_t max_idempotency_key_bytes = 128;
};

struct InvokeRequest {
  std::string tool_name;
  std::string arguments_json;   // empty means {}
  std::string idempotency_key;  // empty: no deduplication
};

struct InvokeOutcome {
  std::string result_json;
  bool is_error = false;
  ToolRisk risk = ToolRisk::kRead;
  int64_t duration_us = 0;
  bool deduplicated = false;
  bool truncated = false;
};

class ToolRuntime final {
 public:
  // `ledger` may be null (idempotency keys are then refused with
  // FAILED_PRECONDITION). Both must outlive the runtime.
  ToolRuntime(const ToolCatalog& catalog, InvocationLedger* ledger, ToolRuntimeOptions options = {})
      : catalog_(catalog), ledger_(ledger), options_(options) {}

  // Runs one tool for `who`, bounded by `deadline`. Errors, having run and
  // written nothing: INVALID_ARGUMENT (no tool_name); NOT_FOUND (unknown
  // tool); FAILED_PRECONDITION with the
  // reason for a tool whose service is not configured or down (e.g. a domain
  // tool, ToolCatalog::WhyAbsent); INVALID_ARGUMENT (arguments
  // not a JSON object, not matching the schema, too large; key too long),
  // naming each bad field by JSON path; FAILED_PRECONDITION (key reused for
  // another call); ABORTED (same key still running); DEADLINE_EXCEEDED.
  // Thread-safe. Runs in a "tool.call" span.
  absl::StatusOr<InvokeOutcome> Invoke(const core::Identity& who, const InvokeRequest& request,
                                       std::chrono::system_clock::time_point deadline) const;

  const ToolCatalog& catalog() const { return catalog_; }

 private:
  absl::StatusOr<InvokeOutcome> InvokeInSpan(const core::Identity& who,
                                             const InvokeRequest& request,
                                             std::chrono::system_clock::time_point deadline) const;
  InvokeOutcome Capped(std::string json, bool is_error) const;
  // Runs the tool and, with an idempotency key, records its result (or
  // releases the key when the tool failed, so that a retry runs it).
  absl::StatusOr<InvokeOutcome> RunAndRecord(const ToolCatalog::Entry& entry, const ToolCall& call,
                                             const std::optional<InvocationKey>& key) const;

  const ToolCatalog& catalog_;
  InvocationLedger* ledger_;
  ToolRuntimeOptions options_;
};

}  // namespace omniforge::executor
