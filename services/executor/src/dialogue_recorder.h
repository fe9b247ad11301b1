// Where planner↔executor dialogues are kept: each Converse dialogue becomes
// an agent-dialogue conversation under the user's conversation, with the
// planner's and the executor's messages in order, active until it ends as
// completed, failed or cancelled. No gRPC here.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "libs/core/identity.h"

namespace omniforge::executor {

class DialogueRecorder {
 public:
  enum class Speaker { kPlanner, kExecutor };
  // How a dialogue ended.
  enum class Outcome { kCompleted, kFailed, kCancelled };

  virtual ~DialogueRecorder() = default;

  // Creates the dialogue under `parent_conversation_id` (one of `who`'s
  // conversations) and returns its id. `metadata_json` is a JSON object.
  virtual absl::StatusOr<std::string> Open(const core::Identity& who,
                                           const std::string& parent_conversation_id,
                                           const std::string& title,
                                           const std::string& metadata_json) = 0;

  // Appends one message; `idempotency_key` makes a retried append harmless.
  virtual absl::Status Append(const core::Identity& who, const std::string& dialogue_id,
                              Speaker speaker, const std::string& content,
                              const std::string& metadata_json,
                              const std::string& idempotency_key) = 0;

  // Marks the dialogue as ended with `outcome`. Harmless to repeat with the
  // same outcome; FAILED_PRECONDITION when it already ended otherwise.
  virtual absl::Status End(const core::Identity& who, const std::string& dialogue_id,
                           Outcome outcome) = 0;
};

}  // namespace omniforge::executor
