#include "libs/trace/otlp_exporter.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <nlohmann/json.hpp>

#include "libs/core/config.h"
#include "libs/core/metrics.h"
#include "libs/trace/testing/fake_collector.h"
#include "libs/trace/tracing.h"

namespace omniforge::trace {
namespace {

using std::chrono::milliseconds;

SpanRecord Sample(const std::string& name) {
  SpanRecord record;
  record.context =
      *core::ParseTraceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
  record.parent_span_id = {1, 2, 3, 4, 5, 6, 7, 8};
  record.name = name;
  record.kind = SpanKind::kClient;
  record.start_unix_nanos = 1'700'000'000'000'000'001;
  record.end_unix_nanos = 1'700'000'000'500'000'000;
  record.attributes = {{"rpc.method", "AnalyzeIntent"}};
  return record;
}

// A loopback port nothing listens on (bound, then closed).
int ClosedPort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address));
  socklen_t length = sizeof(address);
  getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
  close(fd);
  return ntohs(address.sin_port);
}

double Dropped(const char* reason) {
  return core::MetricsRegistry::Global()
      .GetCounter("omniforge_trace_spans_dropped_total", "", {{"reason", reason}})
      .Value();
}

TEST(OtlpJsonTest, FollowsTheOtlpHttpJsonEncoding) {
  auto body = nlohmann::json::parse(OtlpJson({Sample("AnalyzeIntent")}, "intent"));
  const auto& resource = body["resourceSpans"][0];
  EXPECT_EQ(resource["resource"]["attributes"][0]["key"], "service.name");
  EXPECT_EQ(resource["resource"]["attributes"][0]["value"]["stringValue"], "intent");
  const auto& span = resource["scopeSpans"][0]["spans"][0];
  EXPECT_EQ(span["traceId"], "4bf92f3577b34da6a3ce929d0e0e4736");
  EXPECT_EQ(span["spanId"], "00f067aa0ba902b7");
  EXPECT_EQ(span["parentSpanId"], "0102030405060708");
  EXPECT_EQ(span["kind"], 3);
  EXPECT_EQ(span["startTimeUnixNano"], "1700000000000000001");  // a string: int64 in JSON
  EXPECT_EQ(span["endTimeUnixNano"], "1700000000500000000");
  EXPECT_EQ(span["attributes"][0]["value"]["stringValue"], "AnalyzeIntent");
}

TEST(OtlpHttpExporterTest, SendsBatchesToTheCollector) {
  testing::FakeCollector collector;
  OtlpHttpExporter exporter(
      {collector.endpoint(), "intent", 100, 2, milliseconds(50), milliseconds(2000)});
  for (int i = 0; i < 5; ++i) exporter.Export(Sample("span-" + std::to_string(i)));
  ASSERT_TRUE(exporter.Flush(milliseconds(5000)));
  auto spans = collector.spans();
  ASSERT_EQ(spans.size(), 5u);
  EXPECT_EQ(spans[0].service, "intent");
  EXPECT_EQ(spans[4].name, "span-4");
  EXPECT_EQ(exporter.exported(), 5u);
  EXPECT_EQ(exporter.dropped(), 0u);
}

TEST(OtlpHttpExporterTest, AFullQueueDropsAndCountsSpans) {
  const double before = Dropped("queue_full");
  // A long flush interval and a batch larger than the queue: nothing is
  // sent before the queue fills.
  OtlpHttpExporter exporter({"http://127.0.0.1:" + std::to_string(ClosedPort()), "intent", 3, 3,
                             milliseconds(60'000), milliseconds(200)});
  for (int i = 0; i < 10; ++i) exporter.Export(Sample("s"));
  EXPECT_GE(exporter.dropped(), 7u);
  EXPECT_GE(Dropped("queue_full") - before, 7.0);
}

TEST(OtlpHttpExporterTest, ACollectorThatIsDownCostsDroppedSpansNotAHang) {
  const double before = Dropped("export_failed");
  const auto start = std::chrono::steady_clock::now();
  {
    OtlpHttpExporter exporter({"http://127.0.0.1:" + std::to_string(ClosedPort()), "intent", 100,
                               10, milliseconds(20), milliseconds(300)});
    for (int i = 0; i < 4; ++i) exporter.Export(Sample("s"));
    ASSERT_TRUE(exporter.Flush(milliseconds(5000)));
    EXPECT_EQ(exporter.dropped(), 4u);
    EXPECT_EQ(exporter.exported(), 0u);
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(3));
  EXPECT_EQ(Dropped("export_failed") - before, 4.0);
}

TEST(TracingOptionsTest, RejectsAnEndpointThatIsNotHttp) {
  auto config = core::ConfigReader::FromString("tracing:\n  otlp_endpoint: collector:4318\n");
  ASSERT_TRUE(config.ok());
  auto options = ReadTracingOptions(*config, "intent");
  EXPECT_EQ(options.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(options.status().message().find("http://"), std::string::npos);
}

TEST(TracingOptionsTest, WithoutAnEndpointTracingStaysOff) {
  auto config = core::ConfigReader::FromString("");
  ASSERT_TRUE(config.ok());
  auto options = ReadTracingOptions(*config, "intent");
  ASSERT_TRUE(options.ok());
  EXPECT_EQ(options->service_name, "intent");
  const ProcessTracing tracing(*options);
  EXPECT_FALSE(tracing.enabled());
  EXPECT_FALSE(Enabled());
}

}  // namespace
}  // namespace omniforge::trace
