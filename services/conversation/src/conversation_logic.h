// The conversation service's rules, independent of gRPC and of storage:
// input validation and limits, secret flagging, token counting, page tokens
// and context-window assembly. The gRPC layer converts protos to these calls.
//
// Every method returns INVALID_ARGUMENT (naming the field, never echoing
// content) for bad input and then touches nothing. Thread-safe.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "libs/core/identity.h"
#include "services/conversation/src/context_window.h"
#include "services/conversation/src/repository.h"
#include "services/conversation/src/token_estimator.h"

namespace omniforge::conversation {

struct Limits {
  size_t max_content_bytes = size_t{64} * 1024;
  size_t max_metadata_bytes = size_t{16} * 1024;
  size_t max_title_bytes = 512;
  size_t max_idempotency_key_bytes = 128;
  int default_page_size = 20;
  int max_page_size = 100;
  int default_message_limit = 50;
  int max_message_limit = 500;
  int default_token_budget = 2000;
  int max_token_budget = 1'000'000;
  int default_recent_exchanges = 3;
  int max_recent_exchanges = 100;
  int max_window_messages = 500;    // hard cap, whatever the exchanges hold
  size_t max_batch_messages = 500;  // messages per AppendMany
};

struct CreateConversationInput {
  std::string title;
  int kind = 0;  // proto value; 0 means chat
  std::string parent_id;
  std::string metadata_json;  // empty or a JSON object
};

struct AppendMessageInput {
  std::string conversation_id;
  int role = 0;  // proto value
  std::string content;
  std::string metadata_json;  // empty or a JSON object
  std::string idempotency_key;
};

struct ConversationListing {
  std::vector<Conversation> conversations;
  std::string next_page_token;  // empty on the last page
};

class ConversationLogic final {
 public:
  ConversationLogic(ConversationRepository& repository, const TokenEstimator& estimator,
                    Limits limits = {});

  absl::StatusOr<Conversation> Create(const core::Identity& who,
                                      const CreateConversationInput& input);
  absl::StatusOr<Conversation> Get(const core::Identity& who, const std::string& id);
  absl::StatusOr<ConversationListing> List(const core::Identity& who, const std::string& parent_id,
                                           int page_size, const std::string& page_token);
  // `done` runs once the message is durable (or with the error).
  void Append(const core::Identity& who, const AppendMessageInput& input, AppendCallback done);
  using AppendManyCallback = std::function<void(std::vector<absl::StatusOr<AppendResult>>)>;
  // Appends `inputs` in their order, each as Append does, and runs `done`
  // once with every message's outcome (in the same order) when all are
  // durable or failed. A conversation's messages are stored one after the
  // other; after one fails, its later ones are not tried (UNAVAILABLE), so
  // none is stored ahead of an earlier one. INVALID_ARGUMENT, with nothing stored and `done` not
  // run, for more than max_batch_messages.
  absl::Status AppendMany(const core::Identity& who, const std::vector<AppendMessageInput>& inputs,
                          AppendManyCallback done);
  absl::StatusOr<MessagePage> ListMessages(const core::Identity& who, const std::string& id,
                                           int64_t before_seq, int limit);
  absl::StatusOr<ContextWindow> GetContextWindow(const core::Identity& who, const std::string& id,
                                                 int token_budget, int min_recent_exchanges);
  absl::Status Delete(const core::Identity& who, const std::string& id);
  // `status` is the proto value; UNSPECIFIED or an unknown value is
  // INVALID_ARGUMENT.
  absl::StatusOr<Conversation> SetDialogueStatus(const core::Identity& who, const std::string& id,
                                                 int status);

  const TokenEstimator& estimator() const { return estimator_; }

  // Page tokens are opaque to clients: base64url of "v1:<micros>:<uuid>".
  static std::string EncodePageToken(const ConversationCursor& cursor);
  static absl::StatusOr<ConversationCursor> DecodePageToken(const std::string& token);

 private:
  absl::StatusOr<NewMessage> PrepareMessage(const AppendMessageInput& input) const;

  ConversationRepository& repository_;
  const TokenEstimator& estimator_;
  Limits limits_;
};

}  // namespace omniforge::conversation
