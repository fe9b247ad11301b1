#include "libs/trace/span.h"

#include <gtest/gtest.h>

#include <memory>
#include <mutex>
#include <vector>

namespace omniforge::trace {
namespace {

class RecordingExporter final : public SpanExporter {
 public:
  void Export(SpanRecord record) override {
    std::lock_guard lock(mu);
    spans.push_back(std::move(record));
  }
  std::mutex mu;
  std::vector<SpanRecord> spans;
};

class SpanTest : public ::testing::Test {
 protected:
  void SetUp() override { InstallExporter(exporter_); }
  void TearDown() override { InstallExporter(nullptr); }
  std::shared_ptr<RecordingExporter> exporter_ = std::make_shared<RecordingExporter>();
};

TEST_F(SpanTest, WithTracingOffNoSpanIsMadeAndTheContextStays) {
  InstallExporter(nullptr);
  {
    ScopedSpan span("work");
    EXPECT_FALSE(span.span().active());
    EXPECT_FALSE(core::CurrentAmbient().span.valid());
  }
  EXPECT_TRUE(exporter_->spans.empty());
}

TEST_F(SpanTest, ATurnUnderACallersTraceparentKeepsItsTraceAndParent) {
  auto caller = core::ParseTraceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
  ASSERT_TRUE(caller.has_value());
  {
    ScopedSpan turn("StreamChat", SpanKind::kServer, *caller, "vendor=1");
    EXPECT_EQ(core::CurrentAmbient().tracestate, "vendor=1");
    const ScopedSpan stage("stage.plan");
  }
  ASSERT_EQ(exporter_->spans.size(), 2u);
  const SpanRecord& stage = exporter_->spans[0];
  const SpanRecord& turn = exporter_->spans[1];
  EXPECT_EQ(core::TraceIdHex(turn.context), "4bf92f3577b34da6a3ce929d0e0e4736");
  EXPECT_EQ(turn.parent_span_id, caller->span_id);
  EXPECT_EQ(turn.kind, SpanKind::kServer);
  EXPECT_EQ(stage.context.trace_id, turn.context.trace_id);
  EXPECT_EQ(stage.parent_span_id, turn.context.span_id);
  EXPECT_NE(stage.context.span_id, turn.context.span_id);
  EXPECT_LE(turn.start_unix_nanos, stage.start_unix_nanos);
  EXPECT_GE(turn.end_unix_nanos, stage.end_unix_nanos);
  EXPECT_FALSE(core::CurrentAmbient().span.valid());  // restored
}

TEST_F(SpanTest, AnInvalidParentStartsANewTrace) {
  { const ScopedSpan span("StreamChat", SpanKind::kServer, core::SpanContext{}, ""); }
  ASSERT_EQ(exporter_->spans.size(), 1u);
  EXPECT_TRUE(exporter_->spans[0].context.valid());
  EXPECT_EQ(exporter_->spans[0].parent_span_id, (std::array<uint8_t, 8>{}));
}

TEST_F(SpanTest, WithTracingOffTheCallersContextIsStillPassedOn) {
  InstallExporter(nullptr);
  auto caller = core::ParseTraceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
  const ScopedSpan span("AnalyzeIntent", SpanKind::kServer, *caller, "");
  EXPECT_EQ(core::FormatTraceparent(core::CurrentAmbient().span),
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
}

TEST_F(SpanTest, ErrorsAndAttributesAreRecorded) {
  {
    ScopedSpan span("tool.call");
    span.span().SetAttribute("tool.name", "list_agents");
    span.span().SetError("NOT_FOUND: no such tool");
  }
  ASSERT_EQ(exporter_->spans.size(), 1u);
  EXPECT_TRUE(exporter_->spans[0].error);
  EXPECT_EQ(exporter_->spans[0].status_message, "NOT_FOUND: no such tool");
  ASSERT_EQ(exporter_->spans[0].attributes.size(), 1u);
  EXPECT_EQ(exporter_->spans[0].attributes[0].second, "list_agents");
}

}  // namespace
}  // namespace omniforge::trace
