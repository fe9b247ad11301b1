#include "services/conversation/src/conversation_logic.h"

#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "libs/core/error_catalog.h"
#include "libs/core/error_reason.h"
#include "libs/core/ids.h"
#include "libs/core/json_depth.h"
#include "libs/core/secrets.h"
#include "libs/core/text.h"

namespace omniforge::conversation {
namespace {

// The window reads the newest messages a page at a time. Every message read
// is decrypted and sent, so the first page is about what a default window
// holds (three exchanges and 2,000 tokens of chat); a larger window reads on
// in bigger pages.
constexpr int kFirstWindowPageSize = 32;
constexpr int kWindowPageSize = 64;

// A conversation id in canonical (lower-case) form: ids take part in the
// encryption's associated data and in idempotency, so one conversation must
// have exactly one spelling.
absl::StatusOr<std::string> CanonicalId(const std::string& id, const char* field) {
  if (id.empty()) return core::InvalidField(field, core::kReasonFieldRequired, "is required");
  if (!core::IsUuid(id))
    return core::InvalidField(field, core::kReasonFieldInvalid, "must be a UUID");
  return absl::AsciiStrToLower(id);
}

// PostgreSQL's jsonb cannot hold U+0000, so metadata must not either.
bool HasNul(const nlohmann::json& value) {
  if (value.is_string()) return value.get_ref<const std::string&>().find('\0') != std::string::npos;
  if (value.is_object()) {
    for (const auto& [key, child] : value.items()) {
      if (key.find('\0') != std::string::npos || HasNul(child)) return true;
    }
  }
  if (value.is_array()) {
    for (const auto& child : value) {
      if (HasNul(child)) return true;
    }
  }
  return false;
}

// Metadata nests at most this deep. Read back as a google.protobuf.Struct,
// each level of JSON is three levels of protobuf (Value, Struct, a map
// entry), and protobuf parsers refuse messages nested more than 100 deep:
// deeper metadata would make its conversation unreadable to every client.
constexpr size_t kMaxMetadataDepth = 24;

// Parses optional metadata into a JSON object within the size limit.
absl::StatusOr<nlohmann::json> ParseMetadata(const std::string& json, size_t max_bytes) {
  if (json.empty()) return nlohmann::json::object();
  if (json.size() > max_bytes) {
    return absl::InvalidArgumentError("metadata exceeds " + std::to_string(max_bytes / 1024) +
                                      " KiB");
  }
  if (absl::Status deep = core::CheckJsonDepth("metadata_json", json, kMaxMetadataDepth);
      !deep.ok()) {
    return deep;
  }
  nlohmann::json parsed = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded() || !parsed.is_object()) {
    return absl::InvalidArgumentError("metadata must be a JSON object");
  }
  if (HasNul(parsed)) return absl::InvalidArgumentError("metadata must not contain NUL characters");
  return parsed;
}

}  // namespace

ConversationLogic::ConversationLogic(ConversationRepository& repository,
                                     const TokenEstimator& estimator, Limits limits)
    : repository_(repository), estimator_(estimator), limits_(limits) {}

absl::StatusOr<Conversation> ConversationLogic::Create(const core::Identity& who,
                                                       const CreateConversationInput& input) {
  if (input.title.size() > limits_.max_title_bytes) {
    return absl::InvalidArgumentError("title exceeds " + std::to_string(limits_.max_title_bytes) +
                                      " bytes");
  }
  if (!core::IsValidUtf8(input.title))
    return absl::InvalidArgumentError("title is not valid UTF-8");
  NewConversation conversation;
  conversation.title = input.title;
  const int kind = input.kind == 0 ? static_cast<int>(ConversationKind::kChat) : input.kind;
  if (!IsKnownKind(kind)) {
    return absl::InvalidArgumentError("kind " + std::to_string(input.kind) +
                                      " is not a known kind");
  }
  conversation.kind = static_cast<ConversationKind>(kind);
  if (conversation.kind == ConversationKind::kAgentDialogue) {
    auto parent = CanonicalId(input.parent_id, "parent_conversation_id");
    if (!parent.ok()) {
      return absl::InvalidArgumentError(std::string(parent.status().message()) +
                                        " for an agent dialogue");
    }
    conversation.parent_id = *parent;
  } else if (!input.parent_id.empty()) {
    return absl::InvalidArgumentError("parent_conversation_id is only for agent dialogues");
  }
  auto metadata = ParseMetadata(input.metadata_json, limits_.max_metadata_bytes);
  if (!metadata.ok()) return metadata.status();
  conversation.metadata_json = metadata->dump();
  return repository_.CreateConversation(who, conversation);
}

absl::StatusOr<Conversation> ConversationLogic::Get(const core::Identity& who,
                                                    const std::string& id) {
  auto canonical = CanonicalId(id, "conversation_id");
  if (!canonical.ok()) return canonical.status();
  return repository_.GetConversation(who, *canonical);
}

absl::StatusOr<ConversationListing> ConversationLogic::List(const core::Identity& who,
                                                            const std::string& parent_id,
                                                            int page_size,
                                                            const std::string& page_token) {
  if (page_size < 0 || page_size > limits_.max_page_size) {
    return core::InvalidField("page_size", core::kReasonFieldInvalid,
                              "must be between 1 and " + std::to_string(limits_.max_page_size));
  }
  if (page_size == 0) page_size = limits_.default_page_size;
  std::string parent;
  if (!parent_id.empty()) {
    auto canonical = CanonicalId(parent_id, "parent_conversation_id");
    if (!canonical.ok()) return canonical.status();
    parent = *canonical;
  }
  std::optional<ConversationCursor> after;
  if (!page_token.empty()) {
    auto cursor = DecodePageToken(page_token);
    if (!cursor.ok()) return cursor.status();
    after = *cursor;
  }
  auto page = repository_.ListConversations(who, parent, after, page_size);
  if (!page.ok()) return page.status();
  ConversationListing listing;
  listing.conversations = std::move(page->conversations);
  if (page->next) listing.next_page_token = EncodePageToken(*page->next);
  return listing;
}

absl::StatusOr<NewMessage> ConversationLogic::PrepareMessage(
    const AppendMessageInput& input) const {
  auto conversation_id = CanonicalId(input.conversation_id, "conversation_id");
  if (!conversation_id.ok()) return conversation_id.status();
  if (!IsKnownRole(input.role)) {
    return absl::InvalidArgumentError(input.role == 0 ? std::string("role is required")
                                                      : "role " + std::to_string(input.role) +
                                                            " is not a known role");
  }
  if (input.content.size() > limits_.max_content_bytes) {
    return absl::InvalidArgumentError("content exceeds " +
                                      std::to_string(limits_.max_content_bytes / 1024) + " KiB");
  }
  if (!core::IsValidUtf8(input.content)) {
    return absl::InvalidArgumentError("content is not valid UTF-8");
  }
  if (!input.idempotency_key.empty() &&
      !core::IsSafeToken(input.idempotency_key, limits_.max_idempotency_key_bytes)) {
    return absl::InvalidArgumentError(
        "idempotency_key must be 1..128 characters of [A-Za-z0-9._:@-]");
  }
  auto metadata = ParseMetadata(input.metadata_json, limits_.max_metadata_bytes);
  if (!metadata.ok()) return metadata.status();
  // The server owns this annotation; a client cannot set or clear it. A
  // detected secret is never stored: the content keeps "[REDACTED]" in its
  // place, and the annotation says what kind it was.
  metadata->erase("secrets_detected");
  NewMessage message;
  message.content = input.content;
  if (auto kinds = core::DetectSecrets(input.content); !kinds.empty()) {
    (*metadata)["secrets_detected"] = kinds;
    message.content = core::RedactSecrets(input.content);
  }
  message.conversation_id = *conversation_id;
  message.role = static_cast<Role>(input.role);
  message.metadata_json = metadata->dump();
  message.token_count = estimator_.CountMessage(input.content);
  message.idempotency_key = input.idempotency_key;
  return message;
}

void ConversationLogic::Append(const core::Identity& who, const AppendMessageInput& input,
                               AppendCallback done) {
  auto message = PrepareMessage(input);
  if (!message.ok()) {
    done(message.status());
    return;
  }
  repository_.AppendMessage(who, *std::move(message), std::move(done));
}

namespace {

// The messages of one AppendMany call and their outcomes so far.
struct AppendBatch {
  std::mutex mu;
  std::vector<AppendMessageInput> inputs;
  // The positions of each conversation's messages, in the call's order.
  std::vector<std::vector<size_t>> chains;
  std::vector<absl::StatusOr<AppendResult>> results;
  size_t left = 0;
  ConversationLogic::AppendManyCallback done;
};

// Keeps message `i`'s outcome; the last one runs the batch's callback.
void Settle(const std::shared_ptr<AppendBatch>& batch, size_t i,
            absl::StatusOr<AppendResult> result) {
  bool last = false;
  {
    std::lock_guard lock(batch->mu);
    batch->results[i] = std::move(result);
    last = --batch->left == 0;
  }
  if (last) batch->done(std::move(batch->results));
}

// Appends message `pos` of conversation chain `chain`, and the next once
// it is stored: a conversation's messages are stored one after the other,
// so that none is ever stored ahead of an earlier one that failed (those
// after a failure are not tried, and fail UNAVAILABLE, to be sent again).
void AppendChain(ConversationLogic& logic, const core::Identity& who,
                 const std::shared_ptr<AppendBatch>& batch, size_t chain, size_t pos) {
  const size_t i = batch->chains[chain][pos];
  logic.Append(who, batch->inputs[i],
               [&logic, who, batch, chain, pos, i](absl::StatusOr<AppendResult> result) {
                 const std::vector<size_t>& order = batch->chains[chain];
                 const bool stored = result.ok();
                 if (!stored) {
                   for (size_t later = pos + 1; later < order.size(); ++later) {
                     Settle(batch, order[later],
                            absl::UnavailableError("not stored: an earlier message of its "
                                                   "conversation in this call was not"));
                   }
                 }
                 const bool more = stored && pos + 1 < order.size();
                 Settle(batch, i, std::move(result));
                 if (more) AppendChain(logic, who, batch, chain, pos + 1);
               });
}

}  // namespace

absl::Status ConversationLogic::AppendMany(const core::Identity& who,
                                           const std::vector<AppendMessageInput>& inputs,
                                           AppendManyCallback done) {
  if (inputs.size() > limits_.max_batch_messages) {
    return absl::InvalidArgumentError("messages: at most " +
                                      std::to_string(limits_.max_batch_messages) + " per call");
  }
  if (inputs.empty()) {
    done({});
    return absl::OkStatus();
  }
  auto batch = std::make_shared<AppendBatch>();
  batch->inputs = inputs;
  batch->results.assign(inputs.size(), absl::InternalError("append not attempted"));
  batch->left = inputs.size();
  batch->done = std::move(done);
  // One chain per conversation, however its id is spelled; conversations
  // go side by side.
  std::map<std::string, size_t> chain_of;
  for (size_t i = 0; i < inputs.size(); ++i) {
    auto [it, added] =
        chain_of.emplace(absl::AsciiStrToLower(inputs[i].conversation_id), batch->chains.size());
    if (added) batch->chains.emplace_back();
    batch->chains[it->second].push_back(i);
  }
  for (size_t chain = 0; chain < batch->chains.size(); ++chain) {
    AppendChain(*this, who, batch, chain, 0);
  }
  return absl::OkStatus();
}

absl::StatusOr<MessagePage> ConversationLogic::ListMessages(const core::Identity& who,
                                                            const std::string& id,
                                                            int64_t before_seq, int limit) {
  auto canonical = CanonicalId(id, "conversation_id");
  if (!canonical.ok()) return canonical.status();
  if (before_seq < 0) {
    return core::InvalidField("before_seq", core::kReasonFieldInvalid, "must not be negative");
  }
  if (limit < 0 || limit > limits_.max_message_limit) {
    return core::InvalidField("limit", core::kReasonFieldInvalid,
                              "must be between 1 and " + std::to_string(limits_.max_message_limit));
  }
  if (limit == 0) limit = limits_.default_message_limit;
  return repository_.ListMessages(who, *canonical, before_seq, limit);
}

absl::StatusOr<ContextWindow> ConversationLogic::GetContextWindow(const core::Identity& who,
                                                                  const std::string& id,
                                                                  int token_budget,
                                                                  int min_recent_exchanges) {
  auto canonical = CanonicalId(id, "conversation_id");
  if (!canonical.ok()) return canonical.status();
  if (token_budget < 0 || token_budget > limits_.max_token_budget) {
    return absl::InvalidArgumentError("token_budget must be between 1 and " +
                                      std::to_string(limits_.max_token_budget));
  }
  if (min_recent_exchanges < 0 || min_recent_exchanges > limits_.max_recent_exchanges) {
    return absl::InvalidArgumentError("min_recent_exchanges must be between 1 and " +
                                      std::to_string(limits_.max_recent_exchanges));
  }
  ContextWindowOptions options{
      token_budget == 0 ? limits_.default_token_budget : token_budget,
      min_recent_exchanges == 0 ? limits_.default_recent_exchanges : min_recent_exchanges,
      Role::kUser, limits_.max_window_messages};
  std::optional<ContextWindowAssembler> assembler;
  int64_t before_seq = 0;
  for (;;) {
    auto page = repository_.ListMessages(who, *canonical, before_seq,
                                         assembler ? kWindowPageSize : kFirstWindowPageSize);
    if (!page.ok()) return page.status();
    if (!assembler) {
      // In a planner and executor dialogue, the planner opens each exchange.
      if (page->kind == ConversationKind::kAgentDialogue) options.exchange_opener = Role::kPlanner;
      assembler.emplace(options);
    }
    if (page->messages.empty()) return std::move(*assembler).Finish(false);
    before_seq = page->messages.front().seq;
    // NOLINTNEXTLINE(modernize-loop-convert): clang 14 cannot compile libstdc++ 12's views::reverse
    for (auto it = page->messages.rbegin(); it != page->messages.rend(); ++it) {
      if (!assembler->Offer(std::move(*it))) return std::move(*assembler).Finish(true);
    }
    if (!page->has_more) return std::move(*assembler).Finish(false);
  }
}

absl::Status ConversationLogic::Delete(const core::Identity& who, const std::string& id) {
  auto canonical = CanonicalId(id, "conversation_id");
  if (!canonical.ok()) return canonical.status();
  return repository_.DeleteConversation(who, *canonical);
}

absl::StatusOr<Conversation> ConversationLogic::SetDialogueStatus(const core::Identity& who,
                                                                  const std::string& id,
                                                                  int status) {
  auto canonical = CanonicalId(id, "conversation_id");
  if (!canonical.ok()) return canonical.status();
  if (!IsKnownDialogueStatus(status)) {
    return absl::InvalidArgumentError(status == 0 ? std::string("status is required")
                                                  : "status " + std::to_string(status) +
                                                        " is not a known dialogue status");
  }
  return repository_.SetDialogueStatus(who, *canonical, static_cast<DialogueStatus>(status));
}

std::string ConversationLogic::EncodePageToken(const ConversationCursor& cursor) {
  return absl::WebSafeBase64Escape("v1:" + std::to_string(cursor.listed_at) + ":" + cursor.id);
}

absl::StatusOr<ConversationCursor> ConversationLogic::DecodePageToken(const std::string& token) {
  const absl::Status invalid = core::InvalidField("page_token", core::kReasonFieldInvalid,
                                                  "is not a token this service issued");
  std::string raw;
  if (token.size() > 256 || !absl::WebSafeBase64Unescape(token, &raw)) return invalid;
  std::vector<std::string> parts = absl::StrSplit(raw, ':');
  ConversationCursor cursor;
  if (parts.size() != 3 || parts[0] != "v1" || !absl::SimpleAtoi(parts[1], &cursor.listed_at) ||
      !core::IsUuid(parts[2])) {
    return invalid;
  }
  cursor.id = parts[2];
  return cursor;
}

}  // namespace omniforge::conversation
