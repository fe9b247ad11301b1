#include "libs/llm/provider_errors.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

namespace omniforge::llm {
namespace {

using ::testing::HasSubstr;
using ::testing::Optional;

// Sun, 06 Nov 1994 08:49:37 GMT.
constexpr int64_t kDateMicros = int64_t{784111777} * 1'000'000;

TEST(ProviderErrorsTest, StatusMapping) {
  EXPECT_EQ(ErrorKindForHttpStatus(429), LlmErrorKind::kRateLimited);
  // 409 is a lock timeout at both providers (their SDKs retry it); 408 the
  // server timing the request out: both worth another attempt.
  for (int status : {409, 500, 502, 503, 504, 529, 599}) {
    EXPECT_EQ(ErrorKindForHttpStatus(status), LlmErrorKind::kServerError) << status;
  }
  EXPECT_EQ(ErrorKindForHttpStatus(408), LlmErrorKind::kTimeout);
  EXPECT_EQ(ErrorKindForHttpStatus(401), LlmErrorKind::kAuth);
  EXPECT_EQ(ErrorKindForHttpStatus(403), LlmErrorKind::kAuth);
  for (int status : {400, 404, 413, 422, 418}) {
    EXPECT_EQ(ErrorKindForHttpStatus(status), LlmErrorKind::kInvalidRequest) << status;
  }
}

TEST(ProviderErrorsTest, RetryAfterDeltaSeconds) {
  EXPECT_THAT(ParseRetryAfterMicros("2", 0), Optional(2'000'000));
  EXPECT_THAT(ParseRetryAfterMicros(" 0 ", 0), Optional(0));
  EXPECT_THAT(ParseRetryAfterMicros("1.5", 0), Optional(1'500'000));
  EXPECT_THAT(ParseRetryAfterMicros("999999999", 0), Optional(int64_t{86'400} * 1'000'000));
}

TEST(ProviderErrorsTest, RetryAfterHttpDateInEveryForm) {
  const int64_t now = kDateMicros - 3'000'000;
  EXPECT_THAT(ParseRetryAfterMicros("Sun, 06 Nov 1994 08:49:37 GMT", now), Optional(3'000'000));
  EXPECT_THAT(ParseRetryAfterMicros("Sunday, 06-Nov-94 08:49:37 GMT", now), Optional(3'000'000));
  EXPECT_THAT(ParseRetryAfterMicros("Sun Nov  6 08:49:37 1994", now), Optional(3'000'000));
  // Already past: retry now.
  EXPECT_THAT(ParseRetryAfterMicros("Sun, 06 Nov 1994 08:49:37 GMT", kDateMicros + 5'000'000),
              Optional(0));
}

TEST(ProviderErrorsTest, RetryAfterGarbageIsIgnored) {
  for (const char* value : {"", "soon", "-1", "2s", "Sun, 06 Nov 1994", "1e400"}) {
    EXPECT_EQ(ParseRetryAfterMicros(value, 0), std::nullopt) << value;
  }
}

TEST(ProviderErrorsTest, ErrorMessageFromEveryBodyShape) {
  EXPECT_EQ(
      ProviderErrorMessage(
          R"({"error":{"message":"Rate limit reached","type":"requests","param":null,"code":"rate_limit_exceeded"}})"),
      "Rate limit reached");
  EXPECT_EQ(ProviderErrorMessage(
                R"({"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}})"),
            "Overloaded");
  EXPECT_EQ(ProviderErrorMessage(R"({"error":"model 'x' not found"})"), "model 'x' not found");
  EXPECT_EQ(ProviderErrorMessage(R"({"message":"bad gateway"})"), "bad gateway");
  EXPECT_EQ(ProviderErrorMessage("<html>\n<h1>502 Bad Gateway</h1>\n</html>\n"),
            "<html> <h1>502 Bad Gateway</h1> </html>");
  EXPECT_EQ(ProviderErrorMessage(""), "");
}

TEST(ProviderErrorsTest, ErrorMessageIsBounded) {
  std::string long_message(5000, 'x');
  EXPECT_LE(ProviderErrorMessage(R"({"error":{"message":")" + long_message + "\"}}").size(), 503u);
  EXPECT_LE(ProviderErrorMessage(long_message).size(), 500u);
}

TEST(ProviderErrorsTest, HttpErrorStatusCarriesKindMessageAndRetryAfter) {
  HttpResponseHead head{.status = 429, .headers = {{"retry-after", "7"}}};
  absl::Status status =
      HttpErrorStatus("openai", head, R"({"error":{"message":"slow down"}})", /*now_micros=*/0);
  EXPECT_EQ(ErrorKindOf(status), LlmErrorKind::kRateLimited);
  EXPECT_EQ(status.message(), "openai: HTTP 429: slow down");
  EXPECT_THAT(RetryAfterMicrosOf(status), Optional(7'000'000));

  absl::Status overloaded = HttpErrorStatus(
      "anthropic", {.status = 529},
      R"({"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}})", 0);
  EXPECT_EQ(ErrorKindOf(overloaded), LlmErrorKind::kServerError);
  EXPECT_THAT(overloaded.message(), HasSubstr("Overloaded"));
  EXPECT_EQ(RetryAfterMicrosOf(overloaded), std::nullopt);
}

TEST(ProviderErrorsTest, RetryAfterMsIsPreferredOverRetryAfter) {
  EXPECT_THAT(ParseRetryAfterMsMicros("1500"), Optional(1'500'000));
  EXPECT_THAT(ParseRetryAfterMsMicros(" 20.5 "), Optional(20'500));
  EXPECT_THAT(ParseRetryAfterMsMicros("999999999999"), Optional(int64_t{86'400} * 1'000'000));
  for (const char* value : {"", "-5", "soon", "nan", "1e999"}) {
    EXPECT_EQ(ParseRetryAfterMsMicros(value), std::nullopt) << value;
  }

  // OpenAI sends both; the milliseconds are the precise one.
  HttpResponseHead both{.status = 429,
                        .headers = {{"retry-after", "1"}, {"retry-after-ms", "250"}}};
  EXPECT_THAT(RetryAfterMicrosOf(HttpErrorStatus("openai", both, "", 0)), Optional(250'000));
  HttpResponseHead only_ms{.status = 503, .headers = {{"retry-after-ms", "40"}}};
  EXPECT_THAT(RetryAfterMicrosOf(HttpErrorStatus("openai", only_ms, "", 0)), Optional(40'000));
  // An unusable retry-after-ms leaves Retry-After in charge.
  HttpResponseHead bad_ms{.status = 429,
                          .headers = {{"retry-after", "2"}, {"retry-after-ms", "x"}}};
  EXPECT_THAT(RetryAfterMicrosOf(HttpErrorStatus("openai", bad_ms, "", 0)), Optional(2'000'000));
}

}  // namespace
}  // namespace omniforge::llm
