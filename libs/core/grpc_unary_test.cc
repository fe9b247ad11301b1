// ServeUnary over a real gRPC server on loopback: a call its client cancels,
// or whose deadline passes, cancels the work it runs (and so the calls that
// work makes further down).
#include "libs/core/grpc_unary.h"

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <thread>

#include "grpc/health/v1/health.grpc.pb.h"

namespace omniforge::core {
namespace {

namespace healthpb = ::grpc::health::v1;
using Clock = std::chrono::steady_clock;

// Check waits up to 5 s for its call to be cancelled, then answers.
class WaitingService final
    : public healthpb::Health::WithRawCallbackMethod_Check<healthpb::Health::Service> {
 public:
  explicit WaitingService(ThreadPool& workers) : workers_(workers) {}

  grpc::ServerUnaryReactor* Check(grpc::CallbackServerContext* context,
                                  const grpc::ByteBuffer* request,
                                  grpc::ByteBuffer* response) override {
    using Req = healthpb::HealthCheckRequest;
    using Resp = healthpb::HealthCheckResponse;
    return ServeUnary<Req, Resp>(
        context, request, response, "Check",
        OnWorker<Req, Resp>(workers_, "busy", [this](const Identity&, const Req&, Resp*) {
          ++started;
          const CancelSignal* cancel = CallCancellation();
          const auto until = Clock::now() + std::chrono::seconds(5);
          while (cancel != nullptr && !cancel->cancelled() && Clock::now() < until) {
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
          }
          saw_cancel = cancel != nullptr && cancel->cancelled();
          ended = true;
          return absl::OkStatus();
        }));
  }

  std::atomic<int> started{0};
  std::atomic<bool> saw_cancel{false};
  std::atomic<bool> ended{false};

 private:
  ThreadPool& workers_;
};

class GrpcUnaryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(&service_);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    stub_ = healthpb::Health::NewStub(grpc::CreateChannel("127.0.0.1:" + std::to_string(port),
                                                          grpc::InsecureChannelCredentials()));
  }
  void TearDown() override {
    server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
  }

  // Waits up to 5 s for `flag`.
  static bool Eventually(const std::atomic<bool>& flag) {
    for (auto until = Clock::now() + std::chrono::seconds(5); !flag.load() && Clock::now() < until;
         std::this_thread::sleep_for(std::chrono::milliseconds(5))) {
    }
    return flag.load();
  }

  ThreadPool workers_{2, 16};
  WaitingService service_{workers_};
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<healthpb::Health::Stub> stub_;
};

TEST_F(GrpcUnaryTest, AClientsCancelCancelsTheWorkOfItsCall) {
  grpc::ClientContext context;
  AttachIdentity(context, {"acme", "alice"}, kConversationAudience);
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
  healthpb::HealthCheckRequest request;
  healthpb::HealthCheckResponse response;
  std::promise<void> answered;
  stub_->async()->Check(&context, &request, &response,
                        [&answered](const grpc::Status&) { answered.set_value(); });
  for (auto until = Clock::now() + std::chrono::seconds(5);
       service_.started.load() == 0 && Clock::now() < until;
       std::this_thread::sleep_for(std::chrono::milliseconds(5))) {
  }
  EXPECT_EQ(service_.started.load(), 1);
  const auto cancelled_at = Clock::now();
  context.TryCancel();
  EXPECT_TRUE(Eventually(service_.ended));
  EXPECT_TRUE(service_.saw_cancel.load()) << "the work learns its call was cancelled";
  EXPECT_LT(Clock::now() - cancelled_at, std::chrono::seconds(2));
  // Waited for whatever happened above: the call uses `context` and
  // `answered` until it ends.
  answered.get_future().wait();
}

// The client gives up at its deadline: the work stops then too, instead of
// running on for nobody.
TEST_F(GrpcUnaryTest, APassedDeadlineStopsTheWorkOfItsCall) {
  grpc::ClientContext context;
  AttachIdentity(context, {"acme", "alice"}, kConversationAudience);
  // Long enough for a worker to take the call on a busy machine (a call
  // whose deadline passed before that is not started at all).
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(1000));
  healthpb::HealthCheckRequest request;
  healthpb::HealthCheckResponse response;
  const grpc::Status status = stub_->Check(&context, request, &response);
  const auto answered_at = Clock::now();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  EXPECT_TRUE(Eventually(service_.ended));
  EXPECT_EQ(service_.started.load(), 1);
  EXPECT_TRUE(service_.saw_cancel.load());
  EXPECT_LT(Clock::now() - answered_at, std::chrono::seconds(1));
}

}  // namespace
}  // namespace omniforge::core
