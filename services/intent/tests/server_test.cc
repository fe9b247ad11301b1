// AnalyzeIntent over a real gRPC connection: the answer's fields, identity,
// and bad input (invalid UTF-8, unknown enums, oversized messages, too much
// history) rejected with a clear INVALID_ARGUMENT.
#include "libs/core/server.h"

#include <gmock/gmock.h>
#include <grpcpp/create_channel.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/security/credentials.h>
#include <gtest/gtest.h>

#include <future>
#include <thread>

#include "libs/core/grpc_identity.h"
#include "services/intent/src/grpc_service.h"
#include "services/intent/src/labeled_data.h"

namespace omniforge::intent {
namespace {

using ::testing::HasSubstr;

class IntentServerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    classifier_ = LocalClassifier::Train(TrainingSplit())->release();
    analyzer_ = new LocalAnalyzer(*classifier_);
    service_ = new IntentService(*analyzer_, nullptr);
    workers_ = new core::ThreadPool(2, 64);
    grpc_service_ = new IntentGrpcService(*service_, *workers_);
    core::ServerOptions options;
    options.host = "127.0.0.1";
    options.port = 0;
    server_ = new core::ServiceServer(options);
    server_->AddService(grpc_service_);
    ASSERT_TRUE(server_->Start().ok());
    channel_ = grpc::CreateChannel("127.0.0.1:" + std::to_string(server_->port()),
                                   grpc::InsecureChannelCredentials());
  }
  static void TearDownTestSuite() {
    server_->Shutdown();
    delete server_;
    delete grpc_service_;
    delete workers_;
    delete service_;
    delete analyzer_;
    delete classifier_;
    channel_.reset();
  }

  static std::unique_ptr<grpc::ClientContext> Context(bool with_identity = true) {
    auto context = std::make_unique<grpc::ClientContext>();
    if (with_identity)
      core::AttachIdentity(*context, {"tenant-a", "user-1"}, core::kIntentAudience);
    context->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    return context;
  }

  grpc::Status Analyze(const pb::AnalyzeIntentRequest& request, pb::AnalyzeIntentResponse* out,
                       bool with_identity = true) {
    auto stub = pb::IntentService::NewStub(channel_);
    return stub->AnalyzeIntent(Context(with_identity).get(), request, out);
  }

  static pb::AnalyzeIntentRequest Request(std::string message) {
    pb::AnalyzeIntentRequest request;
    request.set_message(std::move(message));
    auto* agent = request.add_available_agents();
    agent->set_name("invoice-chaser");
    agent->set_description("Reminds customers about overdue invoices");
    return request;
  }

  static inline LocalClassifier* classifier_ = nullptr;
  static inline LocalAnalyzer* analyzer_ = nullptr;
  static inline IntentService* service_ = nullptr;
  static inline core::ThreadPool* workers_ = nullptr;
  static inline IntentGrpcService* grpc_service_ = nullptr;
  static inline core::ServiceServer* server_ = nullptr;
  static inline std::shared_ptr<grpc::Channel> channel_;
};

TEST_F(IntentServerTest, AnswersWithEveryField) {
  pb::AnalyzeIntentResponse response;
  ASSERT_TRUE(Analyze(Request("@invoice-chaser pause it for the holidays"), &response).ok());
  const pb::IntentAnalysis& a = response.analysis();
  EXPECT_EQ(a.action_type(), pb::ACTION_TYPE_MANAGE_PLATFORM);
  EXPECT_EQ(a.source(), pb::INTENT_SOURCE_FAST_PATH);
  EXPECT_EQ(a.entities().at("agent_name"), "invoice-chaser");
  EXPECT_GT(a.confidence(), 0.9f);
  EXPECT_FALSE(a.reasoning().empty());
  EXPECT_GT(a.latency_ms(), 0);
  EXPECT_EQ(a.cost_usd(), 0);

  pb::AnalyzeIntentRequest followup = Request("yes please");
  auto* turn = followup.add_history();
  turn->set_role(pb::TURN_ROLE_ASSISTANT);
  turn->set_content("I can run invoice-chaser now for the March invoices. Want me to?");
  ASSERT_TRUE(Analyze(followup, &response).ok());
  EXPECT_EQ(response.analysis().action_type(), pb::ACTION_TYPE_EXECUTE_TASK);
  EXPECT_EQ(response.analysis().reference(), pb::REFERENCE_KIND_CONFIRMATION);
  EXPECT_EQ(response.analysis().source(), pb::INTENT_SOURCE_LOCAL_MODEL);

  ASSERT_TRUE(Analyze(Request("   "), &response).ok());
  EXPECT_TRUE(response.analysis().is_ambiguous());
  EXPECT_THAT(response.analysis().clarifying_question(), HasSubstr("invoice-chaser"));
}

TEST_F(IntentServerTest, ACallWithoutIdentityIsUnauthenticated) {
  pb::AnalyzeIntentResponse response;
  EXPECT_EQ(Analyze(Request("hi"), &response, false).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
}

TEST_F(IntentServerTest, OversizedInputIsInvalidArgument) {
  pb::AnalyzeIntentResponse response;
  pb::AnalyzeIntentRequest largest = Request(std::string(size_t{64} * 1024, 'a'));
  EXPECT_TRUE(Analyze(largest, &response).ok());
  grpc::Status too_big = Analyze(Request(std::string(64 * 1024 + 1, 'a')), &response);
  EXPECT_EQ(too_big.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(too_big.error_message(), HasSubstr("message is 65537 bytes; the limit is 65536"));

  pb::AnalyzeIntentRequest long_history = Request("run it");
  for (int i = 0; i < 500; ++i) {
    auto* turn = long_history.add_history();
    turn->set_role(i % 2 ? pb::TURN_ROLE_ASSISTANT : pb::TURN_ROLE_USER);
    turn->set_content("turn " + std::to_string(i));
  }
  grpc::Status history = Analyze(long_history, &response);
  EXPECT_EQ(history.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(history.error_message(), HasSubstr("history has 500 turns; the limit is 200"));
  // 200 turns are fine; only the recent ones are read.
  long_history.mutable_history()->DeleteSubrange(0, 300);
  EXPECT_TRUE(Analyze(long_history, &response).ok());

  pb::AnalyzeIntentRequest unnamed = Request("hi");
  unnamed.add_available_agents()->set_description("no name");
  EXPECT_THAT(Analyze(unnamed, &response).error_message(),
              HasSubstr("available_agents[1].name is empty"));
}

TEST_F(IntentServerTest, UnknownEnumValuesAreInvalidArgument) {
  pb::AnalyzeIntentResponse response;
  pb::AnalyzeIntentRequest bad_role = Request("hi");
  auto* turn = bad_role.add_history();
  turn->set_role(static_cast<pb::TurnRole>(42));
  grpc::Status role = Analyze(bad_role, &response);
  EXPECT_EQ(role.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(role.error_message(), HasSubstr("history[0].role"));

  turn->set_role(pb::TURN_ROLE_UNSPECIFIED);
  EXPECT_EQ(Analyze(bad_role, &response).error_code(), grpc::StatusCode::INVALID_ARGUMENT);

  pb::AnalyzeIntentRequest bad_action = Request("hi");
  turn = bad_action.add_history();
  turn->set_role(pb::TURN_ROLE_ASSISTANT);
  turn->set_action_type(static_cast<pb::ActionType>(99));
  EXPECT_THAT(Analyze(bad_action, &response).error_message(),
              HasSubstr("history[0].action_type: unknown ActionType 99"));

  pb::AnalyzeIntentRequest bad_context = Request("hi");
  bad_context.set_context_type(static_cast<pb::ContextType>(7));
  EXPECT_EQ(Analyze(bad_context, &response).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
}

TEST_F(IntentServerTest, InvalidUtf8IsInvalidArgument) {
  // Written by hand: the C++ client would refuse to serialize it. Field 1
  // (message), wire type 2.
  const std::string invalid = "caf\xc3 \xff\xfe";
  std::string wire;
  wire += static_cast<char>((1 << 3) | 2);
  wire += static_cast<char>(invalid.size());
  wire += invalid;
  grpc::Slice slice(wire);
  grpc::ByteBuffer request(&slice, 1);
  grpc::ByteBuffer response;
  grpc::GenericStub generic(channel_);
  auto context = Context();
  std::promise<grpc::Status> done;
  generic.UnaryCall(context.get(), "/omniforge.intent.v1.IntentService/AnalyzeIntent",
                    grpc::StubOptions(), &request, &response,
                    [&done](grpc::Status s) { done.set_value(std::move(s)); });
  const grpc::Status status = done.get_future().get();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("valid UTF-8"));
}

TEST_F(IntentServerTest, ServesConcurrentCallersTheSameAnswers) {
  const auto dev = DevSplit();
  std::vector<int> expected;
  for (size_t i = 0; i < 50 && i < dev.size(); ++i) {
    pb::AnalyzeIntentResponse response;
    ASSERT_TRUE(Analyze(Request(dev[i].text), &response).ok());
    expected.push_back(response.analysis().action_type());
  }
  std::atomic<int> mismatches{0};
  constexpr int kThreads = 8;
  std::vector<std::thread> threads;
  threads.reserve(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (size_t i = 0; i < expected.size(); ++i) {
        pb::AnalyzeIntentResponse response;
        if (!Analyze(Request(dev[i].text), &response).ok() ||
            response.analysis().action_type() != expected[i]) {
          ++mismatches;
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(mismatches.load(), 0);
}

}  // namespace
}  // namespace omniforge::intent
