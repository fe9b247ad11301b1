#include "libs/core/grpc_status.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

#include "google/rpc/error_details.pb.h"
#include "google/rpc/status.pb.h"
#include "libs/core/error_catalog.h"
#include "libs/core/error_reason.h"
#include "libs/core/retry_hint.h"

namespace omniforge::core {
namespace {

// Every code keeps its meaning and its message across the wire, both ways.
TEST(GrpcStatusTest, EveryCodeAndItsMessageCrossBothWays) {
  for (int code = 1; code <= 16; ++code) {
    SCOPED_TRACE(code);
    const absl::Status inside(static_cast<absl::StatusCode>(code), "conversation c1 not found");
    const grpc::Status wire = ToGrpcStatus(inside);
    EXPECT_EQ(static_cast<int>(wire.error_code()), code);
    EXPECT_EQ(wire.error_message(), "conversation c1 not found");
    const absl::Status back = FromGrpcStatus(wire);
    EXPECT_EQ(back, inside);
  }
  EXPECT_EQ(ToGrpcStatus(absl::NotFoundError("x")).error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(ToGrpcStatus(absl::UnauthenticatedError("x")).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(FromGrpcStatus(grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED, "busy")).code(),
            absl::StatusCode::kResourceExhausted);
}

TEST(GrpcStatusTest, OkIsOkAndCarriesNoMessage) {
  EXPECT_TRUE(ToGrpcStatus(absl::OkStatus()).ok());
  EXPECT_TRUE(FromGrpcStatus(grpc::Status::OK).ok());
  EXPECT_TRUE(ToGrpcStatus(absl::OkStatus()).error_message().empty());
}

// The details a gateway decodes from grpc-status-details-bin.
struct Decoded {
  google::rpc::ErrorInfo info;
  bool has_info = false;
  google::rpc::RetryInfo retry;
  bool has_retry = false;
  google::rpc::BadRequest bad_request;
  bool has_bad_request = false;
};

Decoded Decode(const grpc::Status& status) {
  Decoded out;
  google::rpc::Status details;
  EXPECT_TRUE(details.ParseFromString(status.error_details()));
  EXPECT_EQ(details.code(), static_cast<int>(status.error_code()));
  EXPECT_EQ(details.message(), status.error_message());
  for (const google::protobuf::Any& any : details.details()) {
    out.has_info |= any.UnpackTo(&out.info);
    out.has_retry |= any.UnpackTo(&out.retry);
    out.has_bad_request |= any.UnpackTo(&out.bad_request);
  }
  return out;
}

// A message quoting what a caller sent is capped, so no input can overflow
// the response's metadata and turn the error into RESOURCE_EXHAUSTED.
TEST(GrpcStatusTest, ALongMessageIsShortenedOnTheWire) {
  const std::string quoted = "no tool named '" + std::string(9000, 'q') + "'";
  const grpc::Status out = ToGrpcStatus(absl::NotFoundError(quoted));
  EXPECT_EQ(out.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_LE(out.error_message().size(), 1024u + 3) << "1 KiB and an ellipsis";
  EXPECT_TRUE(out.error_message().starts_with("no tool named 'qqq"));
  EXPECT_TRUE(out.error_message().ends_with("\xE2\x80\xA6"));
  const std::string fits(1024, 'x');
  EXPECT_EQ(ToGrpcStatus(absl::InternalError(fits)).error_message(), fits);
}

TEST(GrpcStatusTest, ReasonMetadataRetryAndFieldViolationsGoOutAsGoogleRpcDetails) {
  const absl::Status refused =
      WithRetryAfter(WithReason(absl::ResourceExhaustedError("rate limit reached"),
                                kReasonRateLimited, {{"limit", "key_rate"}}),
                     std::chrono::milliseconds(1500));
  const Decoded decoded = Decode(ToGrpcStatus(refused));
  ASSERT_TRUE(decoded.has_info);
  EXPECT_EQ(decoded.info.reason(), "RATE_LIMITED");
  EXPECT_EQ(decoded.info.domain(), "omniforge.dev");
  EXPECT_EQ(decoded.info.metadata().at("limit"), "key_rate");
  ASSERT_TRUE(decoded.has_retry);
  EXPECT_EQ(decoded.retry.retry_delay().seconds(), 1);
  EXPECT_EQ(decoded.retry.retry_delay().nanos(), 500000000);
  EXPECT_FALSE(decoded.has_bad_request);

  const Decoded invalid = Decode(ToGrpcStatus(
      InvalidField("decision.arguments_json", kReasonFieldInvalid, "must be a JSON object")));
  EXPECT_EQ(invalid.info.reason(), "FIELD_INVALID");
  ASSERT_TRUE(invalid.has_bad_request);
  ASSERT_EQ(invalid.bad_request.field_violations_size(), 1);
  EXPECT_EQ(invalid.bad_request.field_violations(0).field(), "decision.arguments_json");
  EXPECT_EQ(invalid.bad_request.field_violations(0).description(), "must be a JSON object");
  EXPECT_FALSE(invalid.has_retry);
}

// What a downstream service sends reaches the caller's absl::Status intact,
// so that the public API can pass it on.
TEST(GrpcStatusTest, DetailsComeBackAsTheSamePayloads) {
  const absl::Status sent =
      WithRetryAfter(WithFieldViolation(WithReason(absl::InvalidArgumentError("limit: too big"),
                                                   kReasonFieldInvalid, {{"a", "1"}, {"b", "x=y"}}),
                                        "limit", "too big"),
                     std::chrono::milliseconds(250));
  const absl::Status back = FromGrpcStatus(ToGrpcStatus(sent));
  EXPECT_EQ(back.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(back.message(), "limit: too big");
  EXPECT_EQ(ReasonOf(back), "FIELD_INVALID");
  EXPECT_EQ(ReasonMetadataOf(back), (std::map<std::string, std::string>{{"a", "1"}, {"b", "x=y"}}));
  EXPECT_THAT(FieldViolationsOf(back), ::testing::ElementsAre(FieldViolation{"limit", "too big"}));
  EXPECT_EQ(RetryAfter(back), std::chrono::milliseconds(250));
}

TEST(ErrorCatalogTest, ClassifiedGivesEveryCodeADocumentedReasonOfThatCode) {
  for (int code = 1; code <= 16; ++code) {
    SCOPED_TRACE(code);
    const absl::Status classified =
        Classified(absl::Status(static_cast<absl::StatusCode>(code), "from elsewhere"));
    const ErrorReasonEntry* entry = FindErrorReason(ReasonOf(classified));
    ASSERT_NE(entry, nullptr) << ReasonOf(classified);
    EXPECT_EQ(entry->code, classified.code());
    const bool hinted = code == static_cast<int>(absl::StatusCode::kResourceExhausted) ||
                        code == static_cast<int>(absl::StatusCode::kUnavailable) ||
                        code == static_cast<int>(absl::StatusCode::kAborted);
    EXPECT_EQ(RetryAfter(classified).has_value(), hinted);
  }
  // A specific reason and its own hint stay; a reason of another code does not.
  const absl::Status rate = Classified(WithRetryAfter(
      WithReason(absl::ResourceExhaustedError("x"), kReasonRateLimited), std::chrono::seconds(7)));
  EXPECT_EQ(ReasonOf(rate), "RATE_LIMITED");
  EXPECT_EQ(RetryAfter(rate), std::chrono::seconds(7));
  EXPECT_EQ(ReasonOf(Classified(WithReason(absl::NotFoundError("x"), kReasonRateLimited))),
            "NOT_FOUND");
  EXPECT_EQ(ReasonOf(Classified(WithReason(absl::UnknownError("x"), "NOT_IN_THE_LIST"))),
            "UNKNOWN_ERROR");
  EXPECT_TRUE(Classified(absl::OkStatus()).ok());
}

TEST(ErrorCatalogTest, ReasonsAreUniqueUpperSnakeCase) {
  std::set<std::string_view> seen;
  for (const ErrorReasonEntry& entry : ErrorReasons()) {
    EXPECT_TRUE(seen.insert(entry.reason).second) << entry.reason;
    EXPECT_THAT(std::string(entry.reason), ::testing::MatchesRegex("[A-Z][A-Z0-9_]*[A-Z0-9]"));
    EXPECT_NE(entry.code, absl::StatusCode::kOk);
  }
}

}  // namespace
}  // namespace omniforge::core
