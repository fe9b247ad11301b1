#include "services/orchestrator/downstream/recovery.h"

#include <gtest/gtest.h>

namespace omniforge::orchestrator {
namespace {

using nlohmann::json;
using std::chrono::microseconds;
using std::chrono::milliseconds;

TEST(RecoveryTest, AServiceDownBusyOrSlowIsTemporaryAndAWrongCallPermanent) {
  for (absl::StatusCode code :
       {absl::StatusCode::kUnavailable, absl::StatusCode::kResourceExhausted,
        absl::StatusCode::kAborted, absl::StatusCode::kDeadlineExceeded}) {
    EXPECT_EQ(ClassifyStatus(code), Failure::kTemporary) << absl::StatusCodeToString(code);
  }
  for (absl::StatusCode code :
       {absl::StatusCode::kNotFound, absl::StatusCode::kPermissionDenied,
        absl::StatusCode::kInvalidArgument, absl::StatusCode::kFailedPrecondition,
        absl::StatusCode::kUnauthenticated, absl::StatusCode::kUnimplemented,
        absl::StatusCode::kAlreadyExists, absl::StatusCode::kOutOfRange,
        absl::StatusCode::kInternal, absl::StatusCode::kUnknown, absl::StatusCode::kOk}) {
    EXPECT_EQ(ClassifyStatus(code), Failure::kPermanent) << absl::StatusCodeToString(code);
  }
}

TEST(RecoveryTest, RateLimitsTimeoutsAndServerErrorsAreTheTemporaryHttpStatuses) {
  for (int status : {408, 425, 429, 500, 502, 503, 504, 599}) {
    EXPECT_EQ(ClassifyHttpStatus(status), Failure::kTemporary) << status;
  }
  for (int status : {200, 400, 401, 403, 404, 409, 410, 422, 600}) {
    EXPECT_EQ(ClassifyHttpStatus(status), Failure::kPermanent) << status;
  }
}

TEST(RecoveryTest, AToolsOwnErrorIsTemporaryOnlyWhenItsCodeSaysSo) {
  EXPECT_EQ(ClassifyToolError({{"error", {{"code", "unavailable"}, {"message", "down"}}}}),
            Failure::kTemporary);
  EXPECT_EQ(ClassifyToolError({{"error", {{"code", "RATE_LIMITED"}}}}), Failure::kTemporary);
  EXPECT_EQ(ClassifyToolError({{"error", {{"code", "deadline_exceeded"}}}}), Failure::kTemporary);
  EXPECT_EQ(ClassifyToolError({{"error", {{"code", 503}}}}), Failure::kTemporary);
  EXPECT_EQ(ClassifyToolError({{"error", {{"code", "429"}}}}), Failure::kTemporary);
  EXPECT_EQ(ClassifyToolError({{"error", {{"code", "not_found"}}}}), Failure::kPermanent);
  EXPECT_EQ(ClassifyToolError({{"error", {{"code", 404}}}}), Failure::kPermanent);
  EXPECT_EQ(ClassifyToolError({{"error", {{"code", "invalid_argument"}}}}), Failure::kPermanent);
  // Not shaped as an error result: nothing says trying again helps.
  EXPECT_EQ(ClassifyToolError({{"error", "unavailable"}}), Failure::kPermanent);
  EXPECT_EQ(ClassifyToolError({{"error", {{"message", "unavailable"}}}}), Failure::kPermanent);
  EXPECT_EQ(ClassifyToolError(json::array()), Failure::kPermanent);
  EXPECT_EQ(ClassifyToolError({{"ok", true}}), Failure::kPermanent);
}

// An MCP tool's error travels in its structuredContent: as the executor
// passes an MCP result on, and inside a domain tool's result.
TEST(RecoveryTest, AnMcpToolsErrorInItsStructuredContentIsClassifiedToo) {
  const json mcp = {{"text", "Too many lookups"},
                    {"structured_content", {{"error", {{"code", "rate_limited"}}}}}};
  EXPECT_EQ(ClassifyToolError(mcp), Failure::kTemporary);
  const json domain = {
      {"domain", "calendar"}, {"status", "error"}, {"data", {{"error", {{"code", 503}}}}}};
  EXPECT_EQ(ClassifyToolError(domain), Failure::kTemporary);
  const json missing = {{"structured_content", {{"error", {{"code", "not_found"}}}}}};
  EXPECT_EQ(ClassifyToolError(missing), Failure::kPermanent);
  // A result's own error decides, whatever its structured content says.
  const json own = {{"error", {{"code", "not_found"}}},
                    {"structured_content", {{"error", {{"code", "unavailable"}}}}}};
  EXPECT_EQ(ClassifyToolError(own), Failure::kPermanent);
  EXPECT_EQ(ClassifyToolError({{"structured_content", {{"status", "ok"}}}}), Failure::kPermanent);
}

TEST(RecoveryTest, ATemporaryFailureIsRetriedWhileAttemptsAndTimeRemain) {
  const llm::RetryPolicy policy{.max_attempts = 3};
  const microseconds wait = milliseconds(200);
  const microseconds room = milliseconds(1000);
  EXPECT_TRUE(ShouldRetry(policy, Failure::kTemporary, 1, wait, milliseconds(5000), room));
  EXPECT_TRUE(ShouldRetry(policy, Failure::kTemporary, 2, wait, milliseconds(5000), room));
  // Every attempt made.
  EXPECT_FALSE(ShouldRetry(policy, Failure::kTemporary, 3, wait, milliseconds(5000), room));
  // The wait and the attempt would end after the turn's deadline.
  EXPECT_FALSE(ShouldRetry(policy, Failure::kTemporary, 1, wait, milliseconds(1200), room));
  EXPECT_TRUE(ShouldRetry(policy, Failure::kTemporary, 1, wait, milliseconds(1201), room));
  // Trying again cannot help.
  EXPECT_FALSE(ShouldRetry(policy, Failure::kPermanent, 1, wait, milliseconds(5000), room));
}

}  // namespace
}  // namespace omniforge::orchestrator
