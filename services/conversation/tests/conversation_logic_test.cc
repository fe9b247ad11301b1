#include "services/conversation/src/conversation_logic.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "services/conversation/src/memory_repository.h"

namespace omniforge::conversation {
namespace {

const core::Identity kAlice{"acme", "alice"};
const core::Identity kBob{"acme", "bob"};
const core::Identity kEve{"evil-corp", "alice"};

class ConversationLogicTest : public ::testing::Test {
 protected:
  ConversationLogicTest() : logic_(repository_, estimator_) {}

  Conversation NewChat(const core::Identity& who, const std::string& title = "chat") {
    auto c = logic_.Create(who, {title, 0, "", ""});
    EXPECT_TRUE(c.ok()) << c.status();
    return *c;
  }

  absl::StatusOr<AppendResult> Append(const core::Identity& who, const AppendMessageInput& input) {
    absl::StatusOr<AppendResult> out = absl::UnknownError("callback not called");
    logic_.Append(who, input, [&](absl::StatusOr<AppendResult> r) { out = std::move(r); });
    return out;
  }

  int64_t MessageCount(const core::Identity& who, const std::string& id) {
    auto c = logic_.Get(who, id);
    EXPECT_TRUE(c.ok());
    return c.ok() ? c->message_count : -1;
  }

  MemoryConversationRepository repository_;
  HeuristicTokenEstimator estimator_;
  ConversationLogic logic_;
};

TEST_F(ConversationLogicTest, AppendAssignsSeqAndCountsTokens) {
  Conversation c = NewChat(kAlice);
  auto first = Append(kAlice, {c.id, 1, "hello there", "", ""});
  auto second = Append(kAlice, {c.id, 2, "hi", R"({"route":"conversation"})", ""});
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_EQ(first->message.seq, 1);
  EXPECT_EQ(second->message.seq, 2);
  EXPECT_EQ(first->message.token_count, estimator_.CountMessage("hello there"));
  EXPECT_EQ(nlohmann::json::parse(second->message.metadata_json)["route"], "conversation");
  EXPECT_EQ(MessageCount(kAlice, c.id), 2);
}

TEST_F(ConversationLogicTest, BadInputIsRejectedAndWritesNothing) {
  Conversation c = NewChat(kAlice);
  const std::string big(size_t{64} * 1024 + 1, 'x');
  const std::string big_metadata = R"({"k":")" + std::string(size_t{16} * 1024, 'y') + R"("})";
  struct Case {
    const char* name;
    AppendMessageInput input;
    const char* message_part;
  } cases[] = {
      {"oversized content", {c.id, 1, big, "", ""}, "content exceeds 64 KiB"},
      {"invalid utf-8", {c.id, 1, "caf\xc3", "", ""}, "not valid UTF-8"},
      {"overlong utf-8", {c.id, 1, "\xc0\xaf", "", ""}, "not valid UTF-8"},
      {"unknown role", {c.id, 42, "hi", "", ""}, "role 42 is not a known role"},
      {"missing role", {c.id, 0, "hi", "", ""}, "role is required"},
      {"metadata not an object", {c.id, 1, "hi", "[1,2]", ""}, "metadata must be a JSON object"},
      {"oversized metadata", {c.id, 1, "hi", big_metadata, ""}, "metadata exceeds 16 KiB"},
      {"malformed id", {"not-a-uuid", 1, "hi", "", ""}, "conversation_id: must be a UUID"},
      {"missing id", {"", 1, "hi", "", ""}, "conversation_id: is required"},
      {"bad idempotency key", {c.id, 1, "hi", "", "has space"}, "idempotency_key"},
      {"NUL in metadata", {c.id, 1, "hi", R"({"a":"x\u0000y"})", ""}, "NUL"},
  };
  for (const Case& tc : cases) {
    auto result = Append(kAlice, tc.input);
    ASSERT_FALSE(result.ok()) << tc.name;
    EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument) << tc.name;
    EXPECT_NE(result.status().message().find(tc.message_part), std::string::npos)
        << tc.name << ": " << result.status().message();
  }
  EXPECT_EQ(MessageCount(kAlice, c.id), 0);
}

TEST_F(ConversationLogicTest, ErrorsNeverEchoContent) {
  Conversation c = NewChat(kAlice);
  auto result = Append(kAlice, {c.id, 99, "my password is hunter2", "", ""});
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().message().find("hunter2"), std::string::npos);
}

TEST_F(ConversationLogicTest, SecretsAreMaskedAndFlaggedAndTheFlagCannotBeForged) {
  Conversation c = NewChat(kAlice);
  auto flagged =
      Append(kAlice, {c.id, 1, "use key sk-abcdefghijklmnopqrstuvwxyz123456 please", "", ""});
  ASSERT_TRUE(flagged.ok());
  auto metadata = nlohmann::json::parse(flagged->message.metadata_json);
  ASSERT_TRUE(metadata.contains("secrets_detected"));
  EXPECT_EQ(metadata["secrets_detected"], nlohmann::json::array({"openai_api_key"}));
  EXPECT_EQ(flagged->message.content, "use key [REDACTED] please");
  // What is stored is what is read back.
  auto listed = logic_.ListMessages(kAlice, c.id, 0, 10);
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(listed->messages.size(), 1u);
  EXPECT_EQ(listed->messages[0].content, "use key [REDACTED] please");

  auto forged =
      Append(kAlice, {c.id, 1, "nothing secret here", R"({"secrets_detected":["x"]})", ""});
  ASSERT_TRUE(forged.ok());
  EXPECT_FALSE(nlohmann::json::parse(forged->message.metadata_json).contains("secrets_detected"));
}

TEST_F(ConversationLogicTest, IdempotentRetryReturnsTheFirstMessage) {
  Conversation c = NewChat(kAlice);
  auto first = Append(kAlice, {c.id, 1, "book the flight", "", "turn-1"});
  auto retry = Append(kAlice, {c.id, 1, "book the flight", "", "turn-1"});
  ASSERT_TRUE(first.ok() && retry.ok());
  EXPECT_FALSE(first->deduplicated);
  EXPECT_TRUE(retry->deduplicated);
  EXPECT_EQ(retry->message.id, first->message.id);
  EXPECT_EQ(retry->message.seq, 1);
  EXPECT_EQ(MessageCount(kAlice, c.id), 1);
}

TEST_F(ConversationLogicTest, OtherTenantsAndUsersSeeNotFound) {
  Conversation c = NewChat(kAlice);
  for (const core::Identity& other : {kBob, kEve}) {
    EXPECT_EQ(logic_.Get(other, c.id).status().code(), absl::StatusCode::kNotFound);
    EXPECT_EQ(Append(other, {c.id, 1, "hi", "", ""}).status().code(), absl::StatusCode::kNotFound);
    EXPECT_EQ(logic_.ListMessages(other, c.id, 0, 10).status().code(), absl::StatusCode::kNotFound);
    EXPECT_EQ(logic_.GetContextWindow(other, c.id, 0, 0).status().code(),
              absl::StatusCode::kNotFound);
    EXPECT_EQ(logic_.Delete(other, c.id).code(), absl::StatusCode::kNotFound);
  }
  EXPECT_TRUE(logic_.Get(kAlice, c.id).ok());
}

TEST_F(ConversationLogicTest, ListingPagesNewestFirstWithOpaqueTokens) {
  constexpr int kChats = 5;
  std::vector<std::string> ids;
  ids.reserve(kChats);
  for (int i = 0; i < kChats; ++i) ids.push_back(NewChat(kAlice, "c" + std::to_string(i)).id);
  NewChat(kBob);
  std::vector<std::string> seen;
  std::string token;
  do {
    auto page = logic_.List(kAlice, "", 2, token);
    ASSERT_TRUE(page.ok()) << page.status();
    for (const auto& c : page->conversations) seen.push_back(c.id);
    token = page->next_page_token;
  } while (!token.empty());
  EXPECT_EQ(seen, (std::vector<std::string>{ids[4], ids[3], ids[2], ids[1], ids[0]}));

  EXPECT_EQ(logic_.List(kAlice, "", 2, "garbage!").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(logic_.List(kAlice, "", 101, "").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(ConversationLogicTest, PageTokensRoundTrip) {
  ConversationCursor cursor{1700000000123456, "0190a7e4-0000-7000-8000-000000000001"};
  auto decoded = ConversationLogic::DecodePageToken(ConversationLogic::EncodePageToken(cursor));
  ASSERT_TRUE(decoded.ok());
  EXPECT_EQ(decoded->listed_at, cursor.listed_at);
  EXPECT_EQ(decoded->id, cursor.id);
}

TEST_F(ConversationLogicTest, AgentDialoguesNeedTheCallersParent) {
  Conversation parent = NewChat(kAlice);
  auto dialogue = logic_.Create(kAlice, {"step 1", 2, parent.id, ""});
  ASSERT_TRUE(dialogue.ok()) << dialogue.status();
  EXPECT_EQ(dialogue->parent_id, parent.id);
  EXPECT_EQ(logic_.Create(kBob, {"x", 2, parent.id, ""}).status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(logic_.Create(kAlice, {"x", 2, "", ""}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(logic_.Create(kAlice, {"x", 1, parent.id, ""}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(logic_.Create(kAlice, {"x", 7, "", ""}).status().code(),
            absl::StatusCode::kInvalidArgument);

  auto dialogues = logic_.List(kAlice, parent.id, 10, "");
  ASSERT_TRUE(dialogues.ok());
  ASSERT_EQ(dialogues->conversations.size(), 1u);
  EXPECT_EQ(dialogues->conversations[0].id, dialogue->id);

  ASSERT_TRUE(logic_.Delete(kAlice, parent.id).ok());
  EXPECT_EQ(logic_.Get(kAlice, dialogue->id).status().code(), absl::StatusCode::kNotFound);
}

TEST_F(ConversationLogicTest, ContextWindowSpansPages) {
  Conversation c = NewChat(kAlice);
  // 200 short exchanges: the window needs several pages (32, then 64 each).
  for (int i = 0; i < 200; ++i) {
    ASSERT_TRUE(Append(kAlice, {c.id, 1, "question " + std::to_string(i), "", ""}).ok());
    ASSERT_TRUE(Append(kAlice, {c.id, 2, "answer " + std::to_string(i), "", ""}).ok());
  }
  auto window = logic_.GetContextWindow(kAlice, c.id, 2000, 3);
  ASSERT_TRUE(window.ok()) << window.status();
  EXPECT_GT(window->messages.size(), 64u);
  EXPECT_LE(window->total_tokens, 2000);
  EXPECT_TRUE(window->truncated);
  EXPECT_EQ(window->messages.back().seq, 400);
  for (size_t i = 1; i < window->messages.size(); ++i) {
    EXPECT_EQ(window->messages[i].seq, window->messages[i - 1].seq + 1);
  }
  EXPECT_EQ(logic_.GetContextWindow(kAlice, c.id, -1, 0).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(ConversationLogicTest, ListMessagesPagesBackwards) {
  Conversation c = NewChat(kAlice);
  for (int i = 0; i < 7; ++i) ASSERT_TRUE(Append(kAlice, {c.id, 1, "m", "", ""}).ok());
  auto newest = logic_.ListMessages(kAlice, c.id, 0, 3);
  ASSERT_TRUE(newest.ok());
  ASSERT_EQ(newest->messages.size(), 3u);
  EXPECT_EQ(newest->messages.front().seq, 5);
  EXPECT_EQ(newest->messages.back().seq, 7);
  EXPECT_TRUE(newest->has_more);
  auto oldest = logic_.ListMessages(kAlice, c.id, 3, 3);
  ASSERT_TRUE(oldest.ok());
  ASSERT_EQ(oldest->messages.size(), 2u);
  EXPECT_EQ(oldest->messages.front().seq, 1);
  EXPECT_FALSE(oldest->has_more);
}

TEST_F(ConversationLogicTest, DeletingAConversationDeletesDialoguesOfDialogues) {
  Conversation parent = NewChat(kAlice);
  Conversation child = *logic_.Create(kAlice, {"child", 2, parent.id, ""});
  Conversation grandchild = *logic_.Create(kAlice, {"grandchild", 2, child.id, ""});
  ASSERT_TRUE(logic_.Delete(kAlice, parent.id).ok());
  EXPECT_EQ(logic_.Get(kAlice, child.id).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(logic_.Get(kAlice, grandchild.id).status().code(), absl::StatusCode::kNotFound);
}

TEST_F(ConversationLogicTest, WindowIsCappedEvenInsideRecentExchanges) {
  Conversation c = NewChat(kAlice);
  ASSERT_TRUE(Append(kAlice, {c.id, 1, "run the import", "", ""}).ok());
  for (int i = 0; i < 700; ++i) ASSERT_TRUE(Append(kAlice, {c.id, 4, "row", "", ""}).ok());
  auto window = logic_.GetContextWindow(kAlice, c.id, 0, 0);
  ASSERT_TRUE(window.ok());
  EXPECT_EQ(window->messages.size(), 500u);
  EXPECT_TRUE(window->truncated);
}

TEST_F(ConversationLogicTest, AgentDialoguesEndOnceWithAKnownStatus) {
  Conversation chat = NewChat(kAlice);
  EXPECT_EQ(chat.status, DialogueStatus::kNone);
  auto dialogue = logic_.Create(kAlice, {"step 1", 2, chat.id, ""});
  ASSERT_TRUE(dialogue.ok()) << dialogue.status();
  EXPECT_EQ(dialogue->status, DialogueStatus::kActive);

  EXPECT_EQ(logic_.SetDialogueStatus(kAlice, dialogue->id, 0).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(logic_.SetDialogueStatus(kAlice, dialogue->id, 99).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(logic_.SetDialogueStatus(kAlice, "not-a-uuid", 2).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(logic_.SetDialogueStatus(kAlice, chat.id, 2).status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(logic_.Get(kAlice, chat.id)->status, DialogueStatus::kNone);
  for (const core::Identity& other : {kBob, kEve}) {
    EXPECT_EQ(logic_.SetDialogueStatus(other, dialogue->id, 3).status().code(),
              absl::StatusCode::kNotFound);
  }
  EXPECT_EQ(logic_.Get(kAlice, dialogue->id)->status, DialogueStatus::kActive);

  auto completed = logic_.SetDialogueStatus(kAlice, dialogue->id, 2);
  ASSERT_TRUE(completed.ok()) << completed.status();
  EXPECT_EQ(completed->status, DialogueStatus::kCompleted);
  EXPECT_TRUE(logic_.SetDialogueStatus(kAlice, dialogue->id, 2).ok());  // a retry
  EXPECT_EQ(logic_.SetDialogueStatus(kAlice, dialogue->id, 3).status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(logic_.SetDialogueStatus(kAlice, dialogue->id, 1).status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(logic_.Get(kAlice, dialogue->id)->status, DialogueStatus::kCompleted);
}

}  // namespace
}  // namespace omniforge::conversation
