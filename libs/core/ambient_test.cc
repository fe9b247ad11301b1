#include "libs/core/ambient.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>

#include "libs/core/logging.h"
#include "libs/core/side_threads.h"
#include "libs/core/thread_pool.h"

namespace omniforge::core {
namespace {

constexpr char kValid[] = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

TEST(TraceparentTest, ParsesAValidHeaderAndFormatsItBack) {
  auto parsed = ParseTraceparent(kValid);
  ASSERT_TRUE(parsed.has_value());
  EXPECT_EQ(TraceIdHex(*parsed), "4bf92f3577b34da6a3ce929d0e0e4736");
  EXPECT_EQ(SpanIdHex(*parsed), "00f067aa0ba902b7");
  EXPECT_EQ(parsed->flags, 1);
  EXPECT_EQ(FormatTraceparent(*parsed), kValid);
}

TEST(TraceparentTest, RejectsMalformedHeaders) {
  for (const char* bad : {
           "",
           "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",       // no flags
           "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",    // upper case
           "00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01",    // not hex
           "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",    // separator
           "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x",  // 00 with more
           "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",    // version ff
           "00-00000000000000000000000000000000-00f067aa0ba902b7-01",    // zero trace id
           "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",    // zero span id
       }) {
    EXPECT_FALSE(ParseTraceparent(bad).has_value()) << bad;
  }
}

TEST(TraceparentTest, ReadsALaterVersionByItsFirstFields) {
  auto parsed =
      ParseTraceparent("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-future-stuff");
  ASSERT_TRUE(parsed.has_value());
  EXPECT_EQ(SpanIdHex(*parsed), "00f067aa0ba902b7");
  EXPECT_FALSE(
      ParseTraceparent("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x").has_value());
}

std::string last_line;
void Capture(const std::string& line) { last_line = line; }

TEST(AmbientTest, LogLinesCarryTheTraceAndTurnFields) {
  SetLogSinkForTesting(&Capture);
  LogInfo("outside");
  EXPECT_EQ(last_line.find("trace_id"), std::string::npos);
  {
    Ambient ambient;
    ambient.span = *ParseTraceparent(kValid);
    const ScopedAmbient scope(std::move(ambient));
    const ScopedLogContext log({"turn-1", "conv-1", "acme"});
    LogInfo("inside", {{"tenant", "explicit"}});
  }
  EXPECT_NE(last_line.find(R"("trace_id":"4bf92f3577b34da6a3ce929d0e0e4736")"), std::string::npos);
  EXPECT_NE(last_line.find(R"("turn_id":"turn-1")"), std::string::npos);
  EXPECT_NE(last_line.find(R"("conversation_id":"conv-1")"), std::string::npos);
  // A field the call sets itself wins over the ambient one.
  EXPECT_NE(last_line.find(R"("tenant":"explicit")"), std::string::npos);
  EXPECT_EQ(last_line.find("acme"), std::string::npos);
  LogInfo("after");
  EXPECT_EQ(last_line.find("turn_id"), std::string::npos);
  SetLogSinkForTesting(nullptr);
}

TEST(AmbientTest, ThreadPoolAndSideThreadsCarryTheSubmittersAmbient) {
  const ScopedLogContext log({"turn-7", "conv-7", "acme"});
  std::string seen_in_pool;
  {
    ThreadPool pool(1, 4);
    ASSERT_TRUE(pool.Submit([&] { seen_in_pool = CurrentAmbient().log->turn_id; }));
  }
  EXPECT_EQ(seen_in_pool, "turn-7");
  SideThreads side;
  auto seen = side.Async([]() -> std::string {
    return CurrentAmbient().log != nullptr ? CurrentAmbient().log->conversation_id : "";
  });
  EXPECT_EQ(seen.get(), "conv-7");
}

}  // namespace
}  // namespace omniforge::core
