// The record of tool calls made with an idempotency key, so a retried call
// returns the first call's result instead of running the tool again.
//
// Protocol: Claim the key before running the tool; then Complete it with the
// result, or Release it when the call failed without a result (nothing to
// replay; a retry runs the tool). A claim has a lease (the call's
// deadline): a claim whose lease ran out without Complete belonged to a call
// that died, and the next Claim takes it over. Thread-safe.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "libs/core/identity.h"

namespace omniforge::executor {

struct RecordedResult {
  std::string json;
  bool is_error = false;
  bool truncated = false;
  int64_t duration_us = 0;
};

struct InvocationKey {
  core::Identity who;
  std::string idempotency_key;
  std::string tool_name;
  std::string arguments_hash;  // identifies the arguments (see HashArguments)
};

class InvocationLedger {
 public:
  virtual ~InvocationLedger() = default;

  // nullopt: the key is now claimed by this call, which must Complete or
  // Release it. A RecordedResult: an earlier call's result (do not run).
  // FAILED_PRECONDITION when the key was used for another tool or other
  // arguments; ABORTED while another call holds a live claim on the key.
  virtual absl::StatusOr<std::optional<RecordedResult>> Claim(
      const InvocationKey& key, std::chrono::system_clock::time_point lease_until) = 0;

  // Records the result of a claimed call.
  virtual absl::Status Complete(const InvocationKey& key, const RecordedResult& result) = 0;

  // Drops a claim whose call produced no result.
  virtual absl::Status Release(const InvocationKey& key) = 0;
};

// A stable digest of a tool's arguments (of their canonical JSON form, object
// keys sorted), as 32 hex digits.
std::string HashArguments(const std::string& canonical_json);

}  // namespace omniforge::executor
