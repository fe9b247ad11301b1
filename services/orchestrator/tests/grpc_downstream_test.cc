// The downstream clients against a real gRPC server on loopback: a call's
// cancel signal (the turn's) cancels it in flight, a call made after the
// cancel is not made, and an uncancelled call (a closing write) goes through.
#include "services/orchestrator/downstream/grpc_downstream.h"

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <thread>

#include "libs/core/call.h"
#include "libs/core/call_cancellation.h"
#include "libs/core/clock.h"
#include "omniforge/executor/v1/executor_service.grpc.pb.h"

namespace omniforge::orchestrator {
namespace {

namespace execpb = ::omniforge::executor::v1;
using Clock = std::chrono::steady_clock;

// An executor whose one tool takes as long as its name says ("wait_ms:300"),
// unless the call is cancelled first.
class SlowExecutor final : public execpb::ExecutorService::Service {
 public:
  grpc::Status InvokeTool(grpc::ServerContext* context, const execpb::InvokeToolRequest* request,
                          execpb::InvokeToolResponse* response) override {
    ++started;
    const std::string& name = request->tool_name();
    const auto until =
        Clock::now() + std::chrono::milliseconds(std::stoi(name.substr(name.find(':') + 1)));
    while (!context->IsCancelled() && Clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    if (context->IsCancelled()) saw_cancel = true;
    response->set_result_json("{}");
    return grpc::Status::OK;
  }

  std::atomic<int> started{0};
  std::atomic<bool> saw_cancel{false};
};

class GrpcDownstreamTest : public ::testing::Test {
 protected:
  void SetUp() override {
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(&executor_);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    tools_ = MakeGrpcTools("127.0.0.1:" + std::to_string(port));
  }
  void TearDown() override {
    server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
  }

  // A call for alice, ending in 20 s, cancelled by `cancel`.
  core::Call CallFor(core::CancelSignal* cancel) const {
    return core::Call{who_, core::TimePointFromMicros(core::NowMicros() + 20'000'000), cancel};
  }

  absl::StatusOr<execpb::InvokeToolResponse> Invoke(int wait_ms, const core::Call& call) {
    execpb::InvokeToolRequest request;
    request.set_tool_name("wait_ms:" + std::to_string(wait_ms));
    return tools_->InvokeTool(call, request);
  }

  const core::Identity who_{"acme", "alice"};

  SlowExecutor executor_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<Tools> tools_;
};

TEST_F(GrpcDownstreamTest, ACancelledTurnCancelsItsCallInFlight) {
  core::CancelSignal turn;
  absl::StatusOr<execpb::InvokeToolResponse> result = absl::UnknownError("not run");
  const auto start = Clock::now();
  std::thread call([&] { result = Invoke(10'000, CallFor(&turn)); });
  while (executor_.started.load() == 0 && Clock::now() - start < std::chrono::seconds(5)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_EQ(executor_.started.load(), 1);
  turn.Cancel();
  call.join();
  EXPECT_EQ(result.status().code(), absl::StatusCode::kCancelled) << result.status();
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(3)) << "not left to run to its deadline";
  for (int i = 0; i < 200 && !executor_.saw_cancel.load(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(executor_.saw_cancel.load()) << "the executor learns the call was cancelled";
}

TEST_F(GrpcDownstreamTest, ACallAfterTheCancelIsNotMade) {
  core::CancelSignal turn;
  turn.Cancel();
  EXPECT_EQ(Invoke(10, CallFor(&turn)).status().code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(executor_.started.load(), 0);
}

TEST_F(GrpcDownstreamTest, AnUncancelledCallGoesThroughACancel) {
  core::CancelSignal turn;
  absl::StatusOr<execpb::InvokeToolResponse> kept = absl::UnknownError("not run");
  std::thread call([&] {
    kept = Invoke(300, CallFor(&turn).Uncancelled());  // as a turn's closing writes
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  turn.Cancel();
  call.join();
  EXPECT_TRUE(kept.ok()) << kept.status();
  EXPECT_FALSE(executor_.saw_cancel.load());
}

// The answered-later form (the early agent listing of a turn) is cancelled
// the same way, whether the cancel comes while it runs or before it starts.
TEST_F(GrpcDownstreamTest, ACallAnsweredLaterIsCancelledWithTheTurn) {
  core::CancelSignal turn;
  std::promise<absl::Status> answered;
  const auto start = Clock::now();
  execpb::InvokeToolRequest request;
  request.set_tool_name("wait_ms:10000");
  tools_->InvokeToolThen(CallFor(&turn), request,
                         [&answered](const absl::StatusOr<execpb::InvokeToolResponse>& result) {
                           answered.set_value(result.status());
                         });
  while (executor_.started.load() == 0 && Clock::now() - start < std::chrono::seconds(5)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_EQ(executor_.started.load(), 1);
  turn.Cancel();
  // No early return while the call may still use `answered` and `turn`.
  std::future<absl::Status> result = answered.get_future();
  EXPECT_EQ(result.wait_for(std::chrono::seconds(3)), std::future_status::ready)
      << "not left to run to its deadline";
  EXPECT_EQ(result.get().code(), absl::StatusCode::kCancelled);
  for (int i = 0; i < 200 && !executor_.saw_cancel.load(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(executor_.saw_cancel.load()) << "the executor learns the call was cancelled";

  // After the cancel, such a call is not made.
  std::promise<absl::Status> refused;
  tools_->InvokeToolThen(CallFor(&turn), request,
                         [&refused](const absl::StatusOr<execpb::InvokeToolResponse>& result) {
                           refused.set_value(result.status());
                         });
  EXPECT_EQ(refused.get_future().get().code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(executor_.started.load(), 1);
}

}  // namespace
}  // namespace omniforge::orchestrator
