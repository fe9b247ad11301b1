// Temporary faults at each layer a turn crosses are recovered within the
// turn, over the real stack (PostgreSQL and the four binaries, driven through
// the public ChatService): the planner model on the fake provider answering
// 429 and 503, its stream cut before and during the answer or ending in an
// error event; an MCP server (tests/node/flaky_mcp_server.mjs, the official
// SDK on Streamable HTTP) answering HTTP 503 and 429 or its tool reporting
// rate_limited. A permanent failure is not tried again, and a stream that
// keeps breaking leaves what was shown with an error saying so. The
// scenario (tests/support/flaky_orders.h) is fault_bench's.
#include <gmock/gmock.h>
#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "libs/core/ids.h"
#include "libs/llm/testing/fake_provider.h"
#include "libs/mcp/testing/node_servers.h"
#include "omniforge/orchestrator/v1/chat_service.grpc.pb.h"
#include "tests/support/chat_turn.h"
#include "tests/support/flaky_orders.h"
#include "tests/support/service_stack.h"
#include "tests/support/test_database.h"

namespace omniforge::orchestrator {
namespace {

namespace pb = ::omniforge::orchestrator::v1;
using nlohmann::json;
using ::testing::HasSubstr;
using testing::OrderFault;

const core::Identity kUser{"acme", "ada"};

// A turn as the client saw it.
using Turn = testing::ChatTurn;

// The answer as a client shows it (restarts applied).
std::string Shown(const Turn& turn) { return testing::ShownAnswer(turn.events); }
// The text events that restart the answer.
int Restarts(const Turn& turn) {
  int n = 0;
  for (const pb::ChatEvent& e : turn.Of(pb::ChatEvent::kText)) n += e.text().restart() ? 1 : 0;
  return n;
}
// An agent_state event of `turn` says `state_words`.
bool Said(const Turn& turn, const std::string& state_words) {
  for (const pb::ChatEvent& e : turn.Of(pb::ChatEvent::kAgentState)) {
    if (e.agent_state().details().find(state_words) != std::string::npos) return true;
  }
  return false;
}

class FaultsEndToEndTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!mcp::testing::NodeAvailable()) GTEST_SKIP() << "node is not on PATH";
    ASSERT_TRUE(std::filesystem::exists(mcp::testing::NodeModules() / "@modelcontextprotocol" /
                                        "sdk" / "package.json"))
        << mcp::testing::MissingPackageMessage("sdk");
    dir_ = new std::filesystem::path(std::filesystem::temp_directory_path() /
                                     ("omniforge-faults-" + core::NewUuid()));
    std::filesystem::create_directories(*dir_);
    orders_ = new mcp::testing::NodeHttpServer(
        mcp::testing::NodeModules().parent_path() / "flaky_mcp_server.mjs", "");
    ASSERT_GT(orders_->port(), 0) << "flaky_mcp_server.mjs did not start";
    auto fake = llm::testing::FakeLlmServer::Start({}, {.api_key = "fake-key"});
    ASSERT_TRUE(fake.ok()) << fake.status();
    fake_ = fake->release();
    std::ofstream(*dir_ / "executor.yaml") << testing::FlakyOrdersExecutorConfig(
        "http://127.0.0.1:" + std::to_string(orders_->port()) + "/mcp");
    std::ofstream(*dir_ / "orchestrator.yaml")
        << "llm:\n  providers:\n    fake:\n      api: openai\n      base_url: "
        << fake_->openai_base_url()
        << "\n      api_key_env: FAKE_LLM_KEY\n  profiles:\n    balanced: [fake/planner]\n";
    db_ = new testing::TestDatabase();
    keys_ = new std::vector<std::string>(
        testing::WriteApiKeyFile(*dir_ / "api_keys", {kUser}, "faults e2e"));
    ASSERT_EQ(keys_->size(), 1u);
    stack_ = new testing::ServiceStack({OMNIFORGE_CONVERSATION_BIN, OMNIFORGE_INTENT_BIN,
                                        OMNIFORGE_EXECUTOR_BIN, OMNIFORGE_ORCHESTRATOR_BIN});
    testing::ServiceStack::ExtraEnv extra;
    extra.executor = {"OMNIFORGE_CONFIG=" + (*dir_ / "executor.yaml").string()};
    extra.orchestrator = testing::DatabaseEnv(
        *db_, "orchestrator",
        {"OMNIFORGE_CONFIG=" + (*dir_ / "orchestrator.yaml").string(), "FAKE_LLM_KEY=fake-key"});
    ASSERT_EQ(stack_->Start(*db_, (*dir_ / "api_keys").string(), extra), std::nullopt);
    stub_ = pb::ChatService::NewStub(grpc::CreateChannel(stack_->orchestrator().address(),
                                                         grpc::InsecureChannelCredentials()))
                .release();
  }
  static void TearDownTestSuite() {
    delete stack_;
    delete stub_;
    delete db_;
    delete fake_;
    delete orders_;
    if (dir_ != nullptr) std::filesystem::remove_all(*dir_);
    delete dir_;
    delete keys_;
  }
  void SetUp() override {
    // A stack that did not start fails every test, never skips it.
    if (stack_ == nullptr) FAIL() << "the stack did not start (see the suite's set-up)";
  }

  // The model's rules for `id` (with `fault`, the model's or the server's).
  static void Script(const std::string& id, OrderFault fault) {
    std::vector<llm::testing::FakeRule> rules = testing::OrderTurnRules(id, fault);
    rules.push_back(testing::OrderAnswerRule());
    ASSERT_TRUE(fake_->SetRules(std::move(rules)).ok());
    const std::string_view kind = testing::McpFaultKind(fault);
    if (!kind.empty()) SetServerFault(id, std::string(kind));
  }
  static void SetServerFault(const std::string& id, const std::string& kind) {
    httplib::Client server("127.0.0.1", orders_->port());
    auto posted = server.Post("/faults", json{{id, kind}}.dump(), "application/json");
    ASSERT_TRUE(posted && posted->status == 204);
  }
  // The server's count of calls and of the faults it injected.
  static json ServerStats() {
    httplib::Client server("127.0.0.1", orders_->port());
    auto page = server.Get("/stats");
    return page ? json::parse(page->body) : json::object();
  }

  static Turn Ask(const std::string& id) {
    pb::StreamChatRequest request;
    request.set_message(testing::OrderQuestion(id));
    return testing::StreamTurn(*stub_, request, keys_->front());
  }

  // Asks about `id` until the executor has the server's tools (it lists
  // them once connected), at most 30 s.
  static void WaitForTheTools() {
    Script("o9999", OrderFault::kNone);
    for (auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
         !testing::LookedUpOrder(Ask("o9999").events) &&
         std::chrono::steady_clock::now() < give_up;) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  }

  static inline std::filesystem::path* dir_ = nullptr;
  static inline mcp::testing::NodeHttpServer* orders_ = nullptr;
  static inline llm::testing::FakeLlmServer* fake_ = nullptr;
  static inline testing::TestDatabase* db_ = nullptr;
  static inline std::vector<std::string>* keys_ = nullptr;
  static inline testing::ServiceStack* stack_ = nullptr;
  static inline pb::ChatService::Stub* stub_ = nullptr;
};

// Each temporary fault, one turn each: the turn completes as if nothing had
// happened (no error event, the lookup's result, the model's whole answer),
// and the fault did happen (the model was asked once more, or the server
// counted it and the turn said it tried the tool again).
TEST_F(FaultsEndToEndTest, EveryTemporaryFaultIsRecoveredWithinTheTurn) {
  WaitForTheTools();
  int n = 100;
  for (const OrderFault fault : testing::kOrderFaults) {
    const std::string id = testing::OrderId(++n);
    const std::string name(testing::OrderFaultName(fault));
    Script(id, fault);
    const size_t model_calls = fake_->RequestCount();
    const json before = ServerStats();
    const Turn turn = Ask(id);
    ASSERT_TRUE(turn.status.ok()) << name << ": " << turn.status.error_message();
    EXPECT_TRUE(turn.errors().empty()) << name << ": " << turn.errors().front().message();
    EXPECT_TRUE(testing::LookedUpOrder(turn.events)) << name;
    EXPECT_EQ(Shown(turn), testing::kOrderAnswer) << name;
    const std::string kind(testing::McpFaultKind(fault));
    if (kind.empty()) {
      EXPECT_EQ(fake_->RequestCount() - model_calls, 3u) << name << ": two calls and one again";
    } else {
      EXPECT_EQ(ServerStats()["injected"].value(kind, 0), before["injected"].value(kind, 0) + 1)
          << name;
      EXPECT_EQ(ServerStats()["calls"].get<int>(), before["calls"].get<int>() + 2) << name;
      EXPECT_TRUE(Said(turn, "Trying orders__lookup_order again")) << name;
    }
    EXPECT_EQ(Restarts(turn), fault == OrderFault::kModelCutMid ? 1 : 0) << name;
  }
}

// A lookup that fails for good (no such order) is not tried again: the
// server sees one call, and the turn does not say it tries again.
TEST_F(FaultsEndToEndTest, APermanentToolFailureIsNotTriedAgain) {
  WaitForTheTools();
  Script("o0201", OrderFault::kNone);
  SetServerFault("o0201", "not_found");
  const json before = ServerStats();
  const Turn turn = Ask("o0201");
  ASSERT_TRUE(turn.status.ok()) << turn.status.error_message();
  EXPECT_FALSE(testing::LookedUpOrder(turn.events));
  EXPECT_EQ(ServerStats()["calls"].get<int>(), before["calls"].get<int>() + 1);
  EXPECT_FALSE(Said(turn, "again"));
}

// An answer whose stream breaks off every time is asked for three times in
// all; what was shown of it stays, and an error event says it broke off.
TEST_F(FaultsEndToEndTest, AnAnswerThatKeepsBreakingOffStaysAsShownWithAnError) {
  WaitForTheTools();
  std::vector<llm::testing::FakeRule> rules = testing::OrderTurnRules("o0202", OrderFault::kNone);
  llm::testing::FakeRule breaking = testing::OrderAnswerRule();
  breaking.fault = {.kind = llm::testing::FakeFault::Kind::kCutStream, .after_deltas = 3};
  rules.push_back(breaking);
  ASSERT_TRUE(fake_->SetRules(std::move(rules)).ok());
  const size_t model_calls = fake_->RequestCount();
  const Turn turn = Ask("o0202");
  ASSERT_TRUE(turn.status.ok()) << turn.status.error_message();
  EXPECT_EQ(fake_->RequestCount() - model_calls, 4u) << "the lookup, then the answer three times";
  EXPECT_EQ(Restarts(turn), 2);
  EXPECT_EQ(Shown(turn), "Your order h") << "three pieces of four characters";
  ASSERT_EQ(turn.errors().size(), 1u);
  EXPECT_EQ(turn.errors()[0].code(), pb::CHAT_ERROR_CODE_MODEL_FAILED);
  EXPECT_FALSE(turn.errors()[0].fatal());
  EXPECT_THAT(turn.errors()[0].message(), HasSubstr("before finishing its answer"));
}

}  // namespace
}  // namespace omniforge::orchestrator
