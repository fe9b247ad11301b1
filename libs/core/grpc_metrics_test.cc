// The metrics a dashboard reads from every service, scraped over HTTP from a
// real ServiceServer: the conventional gRPC server and client series (by
// type, service, method and code), the process metrics and the build info.
#include "libs/core/grpc_metrics.h"

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <unistd.h>

#include <chrono>
#include <ctime>
#include <optional>
#include <sstream>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "libs/core/client_tls.h"
#include "libs/core/logging.h"
#include "libs/core/process_metrics.h"
#include "libs/core/server.h"
#include "libs/core/version.h"
#include "tests/support/metrics_text.h"

namespace omniforge::core {
namespace {

namespace healthpb = ::grpc::health::v1;
using ::omniforge::testing::Sample;

constexpr const char* kCheck =
    R"(grpc_method="Check",grpc_service="grpc.health.v1.Health",grpc_type="unary")";

class GrpcMetricsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    InitLogging("metrics-test", "warn");
    ServerOptions options;
    options.host = "127.0.0.1";
    options.port = 0;
    options.metrics_host = "127.0.0.1";
    options.metrics_port = 0;
    options.drain_timeout = std::chrono::seconds(1);
    server_ = std::make_unique<ServiceServer>(options);
    ASSERT_TRUE(server_->Start().ok());
    grpc::ChannelArguments args;
    channel_ = CreateServiceChannel("127.0.0.1:" + std::to_string(server_->port()),
                                    ChannelSecurity{}, args);
    stub_ = healthpb::Health::NewStub(channel_);
  }
  void TearDown() override { server_->Shutdown(); }

  grpc::Status Check(const std::string& service) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
    healthpb::HealthCheckRequest request;
    request.set_service(service);
    healthpb::HealthCheckResponse response;
    return stub_->Check(&context, request, &response);
  }

  std::string Scrape() {
    httplib::Client http("127.0.0.1", server_->metrics_port());
    auto result = http.Get("/metrics");
    EXPECT_TRUE(result && result->status == 200);
    return result ? result->body : "";
  }

  // Scrapes until `series` reaches `want` (the server counts a call when it
  // sends its status, which may be just after the client has it).
  std::string ScrapeUntil(const std::string& series, double want) {
    std::string text;
    for (int i = 0; i < 500; ++i) {
      text = Scrape();
      if (Sample(text, series).value_or(0) >= want) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return text;
  }

  std::unique_ptr<ServiceServer> server_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<healthpb::Health::Stub> stub_;
};

TEST_F(GrpcMetricsTest, CountsEveryCallOnBothSidesByMethodAndCode) {
  ASSERT_TRUE(Check("").ok());
  ASSERT_TRUE(Check("").ok());
  ASSERT_EQ(Check("no.such.Service").error_code(), grpc::StatusCode::NOT_FOUND);

  const std::string handled_ok =
      absl::StrCat("grpc_server_handled_total{grpc_code=\"OK\",", kCheck, "}");
  const std::string text = ScrapeUntil(handled_ok, 2);
  const std::string labels = absl::StrCat("{", kCheck, "}");
  for (const std::string side : {"server", "client"}) {
    SCOPED_TRACE(side);
    // grpc_<side>_<what><labels>
    auto series = [&side](absl::string_view what, absl::string_view labels) {
      return absl::StrCat("grpc_", side, "_", what, labels);
    };
    EXPECT_EQ(Sample(text, series("started_total", labels)), 3);
    EXPECT_EQ(
        Sample(text, series("handled_total", absl::StrCat("{grpc_code=\"OK\",", kCheck, "}"))), 2);
    EXPECT_EQ(Sample(text, series("handled_total",
                                  absl::StrCat("{grpc_code=\"NotFound\",", kCheck, "}"))),
              1);
    EXPECT_EQ(Sample(text, series("msg_received_total", labels)), 3);
    EXPECT_EQ(Sample(text, series("msg_sent_total", labels)).value_or(-1),
              side == "server" ? 2 : 3);  // a failed Check sends no response
    EXPECT_EQ(Sample(text, series("handling_seconds_count", labels)), 3);
    // The buckets reach past the longest chat turn (90 s).
    EXPECT_EQ(
        Sample(text, series("handling_seconds_bucket", absl::StrCat("{", kCheck, ",le=\"120\"}"))),
        3);
  }
}

TEST_F(GrpcMetricsTest, AStreamCutByItsClientIsCountedAsCanceled) {
  {
    grpc::ClientContext context;
    healthpb::HealthCheckRequest request;
    auto reader = stub_->Watch(&context, request);
    healthpb::HealthCheckResponse response;
    ASSERT_TRUE(reader->Read(&response));
    EXPECT_EQ(response.status(), healthpb::HealthCheckResponse::SERVING);
    context.TryCancel();
    while (reader->Read(&response)) {
    }
    EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::CANCELLED);
  }
  const std::string watch =
      R"(grpc_method="Watch",grpc_service="grpc.health.v1.Health",grpc_type="server_stream")";
  const std::string client_canceled =
      absl::StrCat("grpc_client_handled_total{grpc_code=\"Canceled\",", watch, "}");
  const std::string text = ScrapeUntil(client_canceled, 1);
  EXPECT_EQ(Sample(text, client_canceled), 1);
  EXPECT_EQ(Sample(text, absl::StrCat("grpc_server_started_total{", watch, "}")), 1);
  EXPECT_GE(Sample(text, absl::StrCat("grpc_server_msg_sent_total{", watch, "}")).value_or(0), 1);
}

TEST_F(GrpcMetricsTest, ExposesTheProcessAndTheBuild) {
  const std::string text = Scrape();
  EXPECT_EQ(Sample(text, absl::StrCat(R"(omniforge_build_info{service="metrics-test",version=")",
                                      Version(), "\"}")),
            1);
  EXPECT_GT(Sample(text, "process_resident_memory_bytes").value_or(0), 1 << 20);
  EXPECT_GE(Sample(text, "process_virtual_memory_bytes").value_or(0),
            Sample(text, "process_resident_memory_bytes").value_or(0));
  // stdin, stdout, stderr and the server's sockets at least.
  EXPECT_GE(Sample(text, "process_open_fds").value_or(0), 4);
  EXPECT_GT(Sample(text, "process_max_fds").value_or(0), 0);
  // gRPC's and the metrics endpoint's threads besides this one.
  EXPECT_GE(Sample(text, "process_threads").value_or(0), 3);
  const double now = static_cast<double>(std::time(nullptr));
  const double started = Sample(text, "process_start_time_seconds").value_or(0);
  EXPECT_LE(started, now + 1);
  EXPECT_GT(started, now - 3600);
  const double cpu = Sample(text, "process_cpu_seconds_total").value_or(-1);
  EXPECT_GE(cpu, 0);
  // Spend some CPU: the next scrape reads the kernel's new total.
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(300);
  volatile double sink = 0;
  while (std::chrono::steady_clock::now() < until) sink = sink + 1;
  EXPECT_GT(Sample(Scrape(), "process_cpu_seconds_total").value_or(-1), cpu);
}

TEST(ProcStatTest, ReadsTheFieldsAfterAnOddCommandName) {
  // pid (comm) state ppid ... utime=14 stime=15 ... threads=20 ... start=22
  // vsize=23 rss=24
  const std::string line =
      "4242 (a (b) c) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 7 0 1000 "
      "52428800 2560 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0";
  const auto stat = ParseProcStat(line, /*boot_time_seconds=*/1'700'000'000,
                                  /*ticks_per_second=*/100, /*page_bytes=*/4096);
  ASSERT_TRUE(stat.has_value());
  EXPECT_DOUBLE_EQ(stat->cpu_seconds, 3.0);
  EXPECT_DOUBLE_EQ(stat->threads, 7);
  EXPECT_DOUBLE_EQ(stat->start_time_seconds, 1'700'000'010);
  EXPECT_DOUBLE_EQ(stat->virtual_bytes, 52428800);
  EXPECT_DOUBLE_EQ(stat->resident_bytes, 2560.0 * 4096);
}

TEST(ProcStatTest, RefusesATruncatedLine) {
  EXPECT_FALSE(ParseProcStat("4242 (x) S 1 2 3", 0, 100, 4096).has_value());
  EXPECT_FALSE(ParseProcStat("no parenthesis at all", 0, 100, 4096).has_value());
}

TEST(GrpcCodeLabelTest, SpellsCodesAsDashboardsExpect) {
  EXPECT_STREQ(GrpcCodeLabel(grpc::StatusCode::OK), "OK");
  EXPECT_STREQ(GrpcCodeLabel(grpc::StatusCode::RESOURCE_EXHAUSTED), "ResourceExhausted");
  EXPECT_STREQ(GrpcCodeLabel(grpc::StatusCode::UNAUTHENTICATED), "Unauthenticated");
  EXPECT_STREQ(GrpcCodeLabel(grpc::StatusCode::CANCELLED), "Canceled");
}

}  // namespace
}  // namespace omniforge::core
