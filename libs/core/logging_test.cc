#include "libs/core/logging.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

namespace omniforge::core {
namespace {

using ::testing::HasSubstr;
using ::testing::MatchesRegex;
using ::testing::Not;

std::mutex captured_mu;
std::vector<std::string>& Captured() {
  static auto* const lines = new std::vector<std::string>();
  return *lines;
}

void CaptureLine(const std::string& line) {
  std::lock_guard<std::mutex> lock(captured_mu);
  Captured().push_back(line);
}

class LoggingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Captured().clear();
    SetLogSinkForTesting(&CaptureLine);
  }
  void TearDown() override {
    SetLogSinkForTesting(nullptr);
    InitLogging("", "info");
  }
};

TEST(FormatLogLineTest, ProducesOrderedJson) {
  const std::string line = FormatLogLine(LogLevel::kWarn, "conversation", "slow query",
                                         {{"table", "messages"}, {"ms", "1200"}});
  const nlohmann::ordered_json j = nlohmann::ordered_json::parse(line);
  std::vector<std::string> keys;
  for (const auto& item : j.items()) keys.push_back(item.key());
  EXPECT_THAT(keys, ::testing::ElementsAre("ts", "level", "service", "msg", "table", "ms"));
  EXPECT_EQ(j["level"], "warn");
  EXPECT_EQ(j["service"], "conversation");
  EXPECT_EQ(j["msg"], "slow query");
  EXPECT_EQ(j["table"], "messages");
  EXPECT_EQ(j["ms"], "1200");
  EXPECT_THAT(j["ts"].get<std::string>(),
              MatchesRegex(R"([0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z)"));
  EXPECT_EQ(line.find('\n'), std::string::npos);
}

TEST(FormatLogLineTest, EscapesQuotesAndControlCharacters) {
  const std::string line =
      FormatLogLine(LogLevel::kInfo, "svc", "say \"hi\"\nbye\t\\", {{"k", "\x01"}});
  const nlohmann::json j = nlohmann::json::parse(line);
  EXPECT_EQ(j["msg"], "say \"hi\"\nbye\t\\");
  EXPECT_EQ(j["k"], "\x01");
  EXPECT_EQ(line.find('\n'), std::string::npos);
}

TEST(FormatLogLineTest, RedactsSecretsInMessageAndFields) {
  const std::string key = "sk-proj-abcdefghijklmnopqrstuvwxyz012345";
  const std::string line = FormatLogLine(
      LogLevel::kError, "svc", "upstream rejected " + key,
      {{"auth", "Bearer abcdefghijklmnopqrstuvwx"}, {"dsn", "host=db password=hunter2"}});
  EXPECT_THAT(line, Not(HasSubstr(key)));
  EXPECT_THAT(line, Not(HasSubstr("abcdefghijklmnopqrstuvwx")));
  EXPECT_THAT(line, Not(HasSubstr("hunter2")));
  const nlohmann::json j = nlohmann::json::parse(line);
  EXPECT_EQ(j["msg"], "upstream rejected [REDACTED]");
  EXPECT_EQ(j["dsn"], "host=db password=[REDACTED]");
}

TEST(FormatLogLineTest, InvalidUtf8IsReplacedNotThrown) {
  std::string line;
  ASSERT_NO_THROW(line = FormatLogLine(LogLevel::kInfo, "svc", "bad \xff\xfe", {{"v", "x\xc3"}}));
  const nlohmann::json j = nlohmann::json::parse(line);
  EXPECT_EQ(j["msg"], "bad \xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_EQ(j["v"], "x\xEF\xBF\xBD");
}

TEST(FormatLogLineTest, FieldCannotOverwriteEnvelope) {
  const nlohmann::json j =
      nlohmann::json::parse(FormatLogLine(LogLevel::kInfo, "svc", "real", {{"msg", "fake"}}));
  EXPECT_EQ(j["msg"], "real");
  EXPECT_EQ(j["_msg"], "fake");
}

TEST_F(LoggingTest, SinkReceivesLinesAtOrAboveLevel) {
  InitLogging("gateway", "warn");
  LogInfo("dropped");
  LogWarn("kept", {{"k", "v"}});
  LogError("kept too");
  ASSERT_EQ(Captured().size(), 2u);
  const nlohmann::json j = nlohmann::json::parse(Captured()[0]);
  EXPECT_EQ(j["service"], "gateway");
  EXPECT_EQ(j["level"], "warn");
  EXPECT_EQ(j["msg"], "kept");
  EXPECT_EQ(j["k"], "v");
  EXPECT_EQ(nlohmann::json::parse(Captured()[1])["level"], "error");
}

TEST_F(LoggingTest, DebugLevelAndUnknownLevelName) {
  InitLogging("svc", "debug");
  LogDebug("seen");
  InitLogging("svc", "verbose");  // Unknown: info.
  LogDebug("hidden");
  LogInfo("seen too");
  ASSERT_EQ(Captured().size(), 2u);
  EXPECT_EQ(nlohmann::json::parse(Captured()[0])["level"], "debug");
}

TEST_F(LoggingTest, ConcurrentLoggingKeepsLinesWhole) {
  InitLogging("svc", "info");
  constexpr int kThreads = 4;
  std::vector<std::thread> threads;
  threads.reserve(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([t] {
      for (int i = 0; i < 200; ++i) {
        LogInfo("tick", {{"thread", std::to_string(t)}});
      }
    });
  }
  for (auto& thread : threads) thread.join();
  ASSERT_EQ(Captured().size(), 800u);
  for (const std::string& line : Captured()) {
    EXPECT_TRUE(nlohmann::json::accept(line)) << line;
  }
}

}  // namespace
}  // namespace omniforge::core
