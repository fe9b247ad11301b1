// Fairness between callers over the real stack (the four binaries in local
// mode): a burst of turns on one conversation, each with a turn_id of its
// own, is held to the conversation's bound (turn.max_queued_per_conversation,
// by default 8 waiting behind the one running) and the rest is refused at
// once with RESOURCE_EXHAUSTED; the turns let in all finish and are stored
// once each; another user's turn meanwhile takes its usual time, not the
// time the burst would take to drain.
#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <latch>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "libs/core/ids.h"
#include "omniforge/orchestrator/v1/chat_service.grpc.pb.h"
#include "tests/support/chat_turn.h"
#include "tests/support/metrics_text.h"
#include "tests/support/refusal.h"
#include "tests/support/service_stack.h"
#include "tests/support/test_database.h"

namespace omniforge::orchestrator {
namespace {

namespace pb = ::omniforge::orchestrator::v1;

using Turn = testing::ChatTurn;
using SteadyClock = std::chrono::steady_clock;

constexpr int kBurst = 200;
// What a turn alone takes is milliseconds; the stall this guards against
// was 9 to 30 seconds.
constexpr auto kUnrelatedTurnBound = std::chrono::seconds(2);

class FairnessEndToEndTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("omniforge-fairness-" + core::NewUuid());
    std::filesystem::create_directories(dir_);
    keys_ = testing::WriteApiKeyFile(dir_ / "api_keys", {{"acme", "alice"}, {"acme", "bob"}},
                                     "fairness e2e");
    ASSERT_EQ(keys_.size(), 2u);
    testing::ServiceStack::ExtraEnv extra;
    // Flows, plans and usage in the orchestrator's database, as deployed.
    extra.orchestrator = testing::DatabaseEnv(db_, "orchestrator");
    ASSERT_EQ(stack_.Start(db_, (dir_ / "api_keys").string(), extra), std::nullopt);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // A client of its own (its own connection), as each user's would be.
  std::unique_ptr<pb::ChatService::Stub> Client() {
    return pb::ChatService::NewStub(
        grpc::CreateChannel(stack_.orchestrator().address(), grpc::InsecureChannelCredentials()));
  }

  static pb::StreamChatRequest Request(const std::string& message,
                                       const std::string& conversation_id = "",
                                       const std::string& turn_id = "") {
    pb::StreamChatRequest request;
    request.set_message(message);
    request.set_conversation_id(conversation_id);
    request.set_turn_id(turn_id);
    return request;
  }

  // Every message of the conversation, oldest first.
  std::vector<pb::Message> Messages(pb::ChatService::Stub& stub, const std::string& conversation,
                                    const std::string& key) const {
    grpc::ClientContext context;
    testing::PrepareChatContext(context, key);
    pb::ListMessagesRequest request;
    request.set_conversation_id(conversation);
    request.set_limit(500);
    pb::ListMessagesResponse page;
    EXPECT_TRUE(stub.ListMessages(&context, request, &page).ok());
    EXPECT_FALSE(page.has_more());
    return {page.messages().begin(), page.messages().end()};
  }

  std::string Scrape() {
    httplib::Client http("127.0.0.1", stack_.orchestrator().metrics_port());
    http.set_read_timeout(5);
    auto result = http.Get("/metrics");
    EXPECT_TRUE(result && result->status == 200);
    return result ? result->body : "";
  }

  testing::TestDatabase db_;
  std::filesystem::path dir_;
  std::vector<std::string> keys_;  // alice's, bob's
  testing::ServiceStack stack_{{OMNIFORGE_CONVERSATION_BIN, OMNIFORGE_INTENT_BIN,
                                OMNIFORGE_EXECUTOR_BIN, OMNIFORGE_ORCHESTRATOR_BIN}};
};

TEST_F(FairnessEndToEndTest, AConversationsBurstIsBoundedAndDoesNotHoldUpAnotherUser) {
  auto alice = Client();
  auto bob = Client();
  const Turn opened = testing::StreamTurn(*alice, Request("hi"), keys_[0]);
  ASSERT_TRUE(opened.status.ok()) << opened.status.error_message();
  const std::string conversation = opened.session().conversation_id();

  // The burst: every call on one connection, let go at once.
  std::vector<Turn> burst(kBurst);
  std::latch go(1);
  std::atomic<int> sent{0};
  std::vector<std::thread> callers;
  callers.reserve(kBurst);
  for (int i = 0; i < kBurst; ++i) {
    callers.emplace_back([&, i] {
      go.wait();
      ++sent;
      burst[i] = testing::StreamTurn(
          *alice, Request("show my agents", conversation, absl::StrCat("burst-", i)), keys_[0]);
    });
  }
  go.count_down();
  while (sent.load() < kBurst) std::this_thread::yield();

  // Bob's ordinary turn on a conversation of his own, during the burst.
  const SteadyClock::time_point started = SteadyClock::now();
  const Turn unrelated = testing::StreamTurn(*bob, Request("hi"), keys_[1]);
  const auto took = SteadyClock::now() - started;
  for (std::thread& caller : callers) caller.join();

  ASSERT_TRUE(unrelated.status.ok()) << unrelated.status.error_message();
  EXPECT_TRUE(unrelated.final());
  EXPECT_LT(took, kUnrelatedTurnBound)
      << "bob's turn took " << std::chrono::duration_cast<std::chrono::milliseconds>(took).count()
      << " ms";

  // Each burst call either ran to its done or was refused at once, naming
  // the bound.
  std::vector<std::string> admitted;
  std::vector<std::string> refused;
  for (int i = 0; i < kBurst; ++i) {
    const Turn& turn = burst[i];
    const std::string turn_id = absl::StrCat("burst-", i);
    if (turn.status.ok()) {
      ASSERT_FALSE(turn.events.empty()) << turn_id;
      EXPECT_TRUE(turn.events.back().has_done()) << turn_id;
      admitted.push_back(turn_id);
      continue;
    }
    EXPECT_EQ(turn.status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED)
        << turn_id << ": " << turn.status.error_message();
    EXPECT_TRUE(turn.events.empty()) << turn_id << ": a refused call streams nothing";
    testing::Refusal info = testing::Decode(turn.status);
    EXPECT_EQ(info.reason, "TOO_MANY_TURNS") << turn_id;
    EXPECT_EQ(info.metadata["limit"], "conversation_queue") << turn_id;
    EXPECT_TRUE(info.retry.has_value()) << turn_id;
    EXPECT_NE(turn.status.error_message().find("turn.max_queued_per_conversation"),
              std::string::npos)
        << turn.status.error_message();
    refused.push_back(turn_id);
  }
  ASSERT_GE(admitted.size(), 1u);
  ASSERT_GE(refused.size(), 1u);
  EXPECT_GT(refused.size(), static_cast<size_t>(kBurst / 2))
      << "at most 9 turns of the conversation at once";

  // The turns let in are stored once each, every reply after its message;
  // nothing of a refused one is stored.
  const std::vector<pb::Message> messages = Messages(*alice, conversation, keys_[0]);
  std::map<std::string, std::vector<const pb::Message*>> by_turn;
  for (const pb::Message& message : messages) by_turn[message.turn_id()].push_back(&message);
  for (const std::string& turn_id : admitted) {
    int users = 0;
    int64_t user_seq = -1;
    for (const pb::Message* message : by_turn[turn_id]) {
      if (message->role() == pb::ROLE_USER) {
        ++users;
        user_seq = message->seq();
      } else {
        EXPECT_GT(message->seq(), user_seq) << turn_id << ": the reply before its message";
      }
    }
    EXPECT_EQ(users, 1) << turn_id;
  }
  for (const std::string& turn_id : refused) EXPECT_EQ(by_turn.count(turn_id), 0u) << turn_id;

  // Refusals are counted.
  EXPECT_EQ(
      testing::Sample(
          Scrape(),
          R"(omniforge_orchestrator_limit_refusals_total{limit="conversation_queue",tenant="acme"})"),
      static_cast<double>(refused.size()));

  // Once the burst is over, a refused turn_id sent again runs, and an
  // admitted one sent again is replayed, not run or stored a second time.
  const Turn again = testing::StreamTurn(
      *alice, Request("show my agents", conversation, refused.front()), keys_[0]);
  ASSERT_TRUE(again.status.ok()) << again.status.error_message();
  EXPECT_FALSE(again.session().replayed());
  const Turn replay = testing::StreamTurn(
      *alice, Request("show my agents", conversation, admitted.front()), keys_[0]);
  ASSERT_TRUE(replay.status.ok()) << replay.status.error_message();
  EXPECT_TRUE(replay.session().replayed());
  int stored = 0;
  for (const pb::Message& message : Messages(*alice, conversation, keys_[0])) {
    stored += message.turn_id() == admitted.front() && message.role() == pb::ROLE_USER ? 1 : 0;
  }
  EXPECT_EQ(stored, 1);
}

}  // namespace
}  // namespace omniforge::orchestrator
