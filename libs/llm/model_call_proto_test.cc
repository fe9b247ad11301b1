#include "libs/llm/model_call_proto.h"

#include <gtest/gtest.h>

namespace omniforge::llm {
namespace {

TEST(ModelCallProtoTest, ARecordCrossesAndComesBackWhole) {
  UsageRecord record;
  record.operation_type = "executor_turn";
  record.profile = "balanced";
  record.provider = "backup";
  record.model = "small";
  record.tokens = {1200, 80, 300, 0};
  record.cost_usd = 0.0015;
  record.latency_us = 5400;
  record.attempts = 2;
  record.fallback_used = true;
  record.ok = true;
  ::omniforge::llm::v1::ModelCall call;
  ToProto(record, &call);
  EXPECT_TRUE(call.error_kind().empty());
  const UsageRecord back = FromProto(call);
  EXPECT_EQ(back.operation_type, "executor_turn");
  EXPECT_EQ(back.profile, "balanced");
  EXPECT_EQ(back.provider, "backup");
  EXPECT_EQ(back.model, "small");
  EXPECT_EQ(back.tokens.prompt_tokens, 1200);
  EXPECT_EQ(back.tokens.completion_tokens, 80);
  EXPECT_EQ(back.tokens.cached_tokens, 300);
  EXPECT_EQ(back.cost_usd, 0.0015);
  EXPECT_EQ(back.latency_us, 5400);
  EXPECT_EQ(back.attempts, 2);
  EXPECT_TRUE(back.fallback_used);
  EXPECT_TRUE(back.ok);
}

TEST(ModelCallProtoTest, AFailureKeepsItsKindAndAnUnknownKindIsStillAFailure) {
  UsageRecord failed;
  failed.ok = false;
  failed.error_kind = LlmErrorKind::kRateLimited;
  ::omniforge::llm::v1::ModelCall call;
  ToProto(failed, &call);
  EXPECT_EQ(call.error_kind(), "rate_limited");
  EXPECT_EQ(FromProto(call).error_kind, LlmErrorKind::kRateLimited);
  call.set_error_kind("a_kind_of_a_later_release");
  const UsageRecord unknown = FromProto(call);
  EXPECT_FALSE(unknown.ok);
  EXPECT_EQ(unknown.error_kind, LlmErrorKind::kBadResponse);
}

}  // namespace
}  // namespace omniforge::llm
