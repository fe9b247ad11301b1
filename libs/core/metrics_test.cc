#include "libs/core/metrics.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include <thread>

namespace omniforge::core {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(MetricsTest, CounterRendersExactly) {
  MetricsRegistry registry;
  Counter& c =
      registry.GetCounter("omniforge_requests_total", "Requests handled.", {{"method", "Chat"}});
  c.Inc();
  c.Inc(2);
  EXPECT_EQ(registry.Render(),
            "# HELP omniforge_requests_total Requests handled.\n"
            "# TYPE omniforge_requests_total counter\n"
            "omniforge_requests_total{method=\"Chat\"} 3\n");
}

TEST(MetricsTest, CounterIgnoresNegativeIncrements) {
  Counter c;
  c.Inc(5);
  c.Inc(-2);
  EXPECT_DOUBLE_EQ(c.Value(), 5);
}

TEST(MetricsTest, SameNameAndLabelsIsTheSameSeries) {
  MetricsRegistry registry;
  Counter& a = registry.GetCounter("x_total", "h", {{"a", "1"}, {"b", "2"}});
  Counter& b = registry.GetCounter("x_total", "h", {{"b", "2"}, {"a", "1"}});
  Counter& other = registry.GetCounter("x_total", "h", {{"a", "9"}, {"b", "2"}});
  EXPECT_EQ(&a, &b);
  EXPECT_NE(&a, &other);
}

TEST(MetricsTest, GaugeSetAndAdd) {
  MetricsRegistry registry;
  Gauge& g = registry.GetGauge("omniforge_in_flight", "In-flight calls.");
  g.Set(4);
  g.Add(-1.5);
  EXPECT_DOUBLE_EQ(g.Value(), 2.5);
  EXPECT_EQ(registry.Render(),
            "# HELP omniforge_in_flight In-flight calls.\n"
            "# TYPE omniforge_in_flight gauge\n"
            "omniforge_in_flight 2.5\n");
}

TEST(MetricsTest, HistogramRendersCumulativeBuckets) {
  MetricsRegistry registry;
  Histogram& h = registry.GetHistogram("omniforge_latency_seconds", "Latency.", {{"method", "Get"}},
                                       {0.25, 1});
  h.Observe(0.125);
  h.Observe(0.25);  // Upper bounds are inclusive.
  h.Observe(0.5);
  h.Observe(3);
  EXPECT_THAT(h.BucketCounts(), ElementsAre(2, 3, 4));
  EXPECT_EQ(h.Count(), 4u);
  EXPECT_DOUBLE_EQ(h.Sum(), 3.875);
  EXPECT_EQ(registry.Render(),
            "# HELP omniforge_latency_seconds Latency.\n"
            "# TYPE omniforge_latency_seconds histogram\n"
            "omniforge_latency_seconds_bucket{method=\"Get\",le=\"0.25\"} 2\n"
            "omniforge_latency_seconds_bucket{method=\"Get\",le=\"1\"} 3\n"
            "omniforge_latency_seconds_bucket{method=\"Get\",le=\"+Inf\"} 4\n"
            "omniforge_latency_seconds_sum{method=\"Get\"} 3.875\n"
            "omniforge_latency_seconds_count{method=\"Get\"} 4\n");
}

TEST(MetricsTest, HistogramDefaultBuckets) {
  MetricsRegistry registry;
  Histogram& h = registry.GetHistogram("d_seconds", "d");
  EXPECT_THAT(h.UpperBounds(), ElementsAre(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                           0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 90, 120));
  h.Observe(0.003);
  h.Observe(95);  // a turn near its 90 s limit has a bucket of its own
  const std::string text = registry.Render();
  EXPECT_THAT(text, HasSubstr("d_seconds_bucket{le=\"0.0025\"} 0\n"));
  EXPECT_THAT(text, HasSubstr("d_seconds_bucket{le=\"0.005\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("d_seconds_bucket{le=\"90\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("d_seconds_bucket{le=\"120\"} 2\n"));
  EXPECT_THAT(text, HasSubstr("d_seconds_bucket{le=\"+Inf\"} 2\n"));
  EXPECT_DOUBLE_EQ(h.Sum(), 0.003 + 95);
  EXPECT_THAT(text, HasSubstr("d_seconds_count 2\n"));
}

TEST(MetricsTest, EscapesLabelValuesAndHelp) {
  MetricsRegistry registry;
  registry.GetCounter("e_total", "line one\nback\\slash", {{"path", "a\"b\\c\nd"}}).Inc();
  EXPECT_EQ(registry.Render(),
            "# HELP e_total line one\\nback\\\\slash\n"
            "# TYPE e_total counter\n"
            "e_total{path=\"a\\\"b\\\\c\\nd\"} 1\n");
}

TEST(MetricsTest, FamiliesRenderSortedByName) {
  MetricsRegistry registry;
  registry.GetGauge("b_gauge", "b").Set(1);
  registry.GetCounter("a_total", "a").Inc();
  const std::string text = registry.Render();
  EXPECT_LT(text.find("a_total"), text.find("b_gauge"));
}

TEST(MetricsTest, ConcurrentUpdatesAreNotLost) {
  MetricsRegistry registry;
  Counter& c = registry.GetCounter("c_total", "c");
  Histogram& h = registry.GetHistogram("h_seconds", "h", {}, {1});
  constexpr int kThreads = 4;
  std::vector<std::thread> threads;
  threads.reserve(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 10000; ++i) {
        c.Inc();
        h.Observe(0.5);
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_DOUBLE_EQ(c.Value(), 40000);
  EXPECT_EQ(h.Count(), 40000u);
  EXPECT_DOUBLE_EQ(h.Sum(), 20000);
}

TEST(MetricsDeathTest, SameNameWithAnotherTypeAborts) {
  MetricsRegistry registry;
  registry.GetCounter("dup", "d");
  EXPECT_DEATH(registry.GetGauge("dup", "d"), "requested as a gauge");
}

TEST(MetricsHttpServerTest, ServesMetricsAndHealthOnAnyPort) {
  MetricsRegistry registry;
  registry.GetCounter("served_total", "s").Inc(7);
  MetricsHttpServer server(registry);
  const int port = server.Start("127.0.0.1", 0);
  ASSERT_GT(port, 0);

  httplib::Client client("127.0.0.1", port);
  auto metrics = client.Get("/metrics");
  ASSERT_TRUE(metrics) << httplib::to_string(metrics.error());
  EXPECT_EQ(metrics->status, 200);
  EXPECT_EQ(metrics->get_header_value("Content-Type"), "text/plain; version=0.0.4");
  EXPECT_THAT(metrics->body, HasSubstr("served_total 7\n"));

  auto health = client.Get("/healthz");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  EXPECT_EQ(health->body, "ok");

  EXPECT_EQ(client.Get("/nope")->status, 404);
  server.Stop();
  server.Stop();  // Idempotent.
}

TEST(MetricsHttpServerTest, StopRightAfterStartReturns) {
  MetricsRegistry registry;
  for (int i = 0; i < 5; ++i) {
    MetricsHttpServer server(registry);
    ASSERT_GT(server.Start("127.0.0.1", 0), 0);
  }  // The destructor stops and joins.
}

TEST(MetricsHttpServerTest, BindFailureReturnsMinusOne) {
  MetricsRegistry registry;
  MetricsHttpServer first(registry);
  const int port = first.Start("127.0.0.1", 0);
  ASSERT_GT(port, 0);
  MetricsHttpServer second(registry);
  EXPECT_EQ(second.Start("127.0.0.1", port), -1);
}

}  // namespace
}  // namespace omniforge::core
