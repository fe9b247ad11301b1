// The turn's log that streams read from: numbering, text joined only while
// no reader has it, where a reattach may start, and what is kept how long.
#include "services/orchestrator/turn/turn_log.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "services/orchestrator/testing/fakes.h"

namespace omniforge::orchestrator {
namespace {

class CountingWaker final : public TurnLog::Waker {
 public:
  void Wake() override { ++wakes; }
  int wakes = 0;
};

pb::ChatEvent Text(const std::string& delta) {
  pb::ChatEvent event;
  event.mutable_text()->set_delta(delta);
  return event;
}

pb::ChatEvent Session() {
  pb::ChatEvent event;
  event.mutable_session()->set_turn_id("t1");
  return event;
}

TEST(TurnLogTest, TextJoinsTheLastEventOnlyUntilAReaderHasTakenIt) {
  TurnLog log({});
  auto waker = std::make_shared<CountingWaker>();
  const TurnLog::ReaderId reader = *log.Attach(0, waker);
  log.Append(Session());
  log.Append(Text("Hel"));
  log.Append(Text("lo"));  // no reader took "Hel" yet: joined
  EXPECT_EQ(log.last_seq(), 2);
  EXPECT_EQ(log.Take(reader).event->seq(), 1);
  const pb::ChatEvent hello = *log.Take(reader).event;
  EXPECT_EQ(hello.text().delta(), "Hello");
  log.Append(Text(", you"));  // "Hello" was taken: a new event
  EXPECT_EQ(log.last_seq(), 3);
  EXPECT_GE(waker->wakes, 3);
  // A second reader from the start sees the same events, numbered the same.
  const TurnLog::ReaderId second = *log.Attach(0, std::make_shared<CountingWaker>());
  log.Take(second);
  EXPECT_EQ(log.Take(second).event->text().delta(), "Hello");
  EXPECT_EQ(log.Take(second).event->text().delta(), ", you");
  EXPECT_FALSE(log.Take(second).event.has_value());
  EXPECT_FALSE(log.Take(second).ended.has_value()) << "the turn still runs";
  log.End(absl::OkStatus());
  const TurnLog::Next last = log.Take(second);
  EXPECT_FALSE(last.event.has_value());
  ASSERT_TRUE(last.ended.has_value());
  EXPECT_TRUE(last.ended->ok());
}

// A restart (the answer asked for again) replaces the text no reader has
// taken yet and still says it is a restart, since earlier text was taken;
// text after it joins it.
TEST(TurnLogTest, ARestartReplacesUntakenTextAndKeepsItsFlag) {
  TurnLog log({});
  const TurnLog::ReaderId reader = *log.Attach(0, std::make_shared<CountingWaker>());
  log.Append(Text("Your"));
  EXPECT_EQ(log.Take(reader).event->text().delta(), "Your");
  log.Append(Text(" order h"));
  pb::ChatEvent restart = Text("");
  restart.mutable_text()->set_restart(true);
  log.Append(restart);
  log.Append(Text("Your order has shipped."));
  EXPECT_EQ(log.last_seq(), 2);
  const pb::ChatEvent again = *log.Take(reader).event;
  EXPECT_TRUE(again.text().restart());
  EXPECT_EQ(again.text().delta(), "Your order has shipped.");
  // Once taken, a restart is an event of its own.
  log.Append(restart);
  EXPECT_EQ(log.last_seq(), 3);
  EXPECT_TRUE(log.Take(reader).event->text().restart());
}

TEST(TurnLogTest, AReattachStartsOnlyWhereEventsAreKept) {
  TurnLog log({.max_turn_bytes = 64});
  const TurnLog::ReaderId reader = *log.Attach(0, std::make_shared<CountingWaker>());
  log.Append(Session());
  log.Take(reader);
  for (int i = 0; i < 5; ++i) {
    log.Append(Text(std::string(20, static_cast<char>('a' + i))));
    log.Take(reader);
  }
  EXPECT_EQ(log.last_seq(), 6);
  EXPECT_EQ(log.Attach(7, nullptr).status().code(), absl::StatusCode::kOutOfRange);
  // Over 64 bytes, the oldest taken events went.
  EXPECT_EQ(log.Attach(0, nullptr).status().code(), absl::StatusCode::kFailedPrecondition);
  // An attached reader's unread events stay, over the bound too.
  const TurnLog::ReaderId late = *log.Attach(6, std::make_shared<CountingWaker>());
  log.Detach(reader);
  for (int i = 0; i < 4; ++i) log.Append(Text(std::string(20, 'z')));
  const TurnLog::Next next = log.Take(late);
  ASSERT_TRUE(next.event.has_value());
  EXPECT_EQ(next.event->seq(), 7);
  EXPECT_EQ(next.event->text().delta(), std::string(80, 'z'));
}

TEST(TurnLogsTest, AnEndedTurnIsFoundWithinItsWindowAndUnderItsOwnKeyOnly) {
  testing::FakeClock clock;
  TurnLogs logs({.keep_after_end = std::chrono::seconds(60)}, clock);
  std::shared_ptr<TurnLog> log = logs.NewLog();
  logs.Register("tenant-a/conv", "t1", log);
  EXPECT_EQ(logs.Find("tenant-b/conv", "t1"), nullptr);
  EXPECT_EQ(logs.Find("tenant-a/conv", "t2"), nullptr);
  logs.End("tenant-a/conv", "t1", log, absl::OkStatus());
  clock.Advance(std::chrono::seconds(59));
  EXPECT_EQ(logs.Find("tenant-a/conv", "t1"), log);
  clock.Advance(std::chrono::seconds(1));
  EXPECT_EQ(logs.Find("tenant-a/conv", "t1"), nullptr);
}

TEST(TurnLogsTest, ADeletedConversationsTurnsAreForgottenAndNoOtherOnes) {
  testing::FakeClock clock;
  TurnLogs logs({}, clock);
  std::shared_ptr<TurnLog> deleted = logs.NewLog();
  std::shared_ptr<TurnLog> kept = logs.NewLog();
  logs.Register("conv-a", "t1", deleted);
  logs.Register("conv-ab", "t1", kept);
  logs.End("conv-a", "t1", deleted, absl::OkStatus());
  logs.Forget("conv-a");
  EXPECT_EQ(logs.Find("conv-a", "t1"), nullptr);
  EXPECT_EQ(logs.Find("conv-ab", "t1"), kept);
}

TEST(TurnLogsTest, OverTheTotalTheOldestEndedTurnsGoFirstAndRunningOnesStay) {
  testing::FakeClock clock;
  // Room for two turns of 100 KB and their logs' bookkeeping, not three.
  TurnLogs logs({.max_total_bytes = 250000}, clock);
  auto fill = [&](const std::string& turn_id) {
    std::shared_ptr<TurnLog> log = logs.NewLog();
    logs.Register("k", turn_id, log);
    log.get()->Append(Text(std::string(100000, 'x')));
    return log;
  };
  std::shared_ptr<TurnLog> running = fill("running");
  std::shared_ptr<TurnLog> first = fill("first");
  logs.End("k", "first", first, absl::OkStatus());
  clock.Advance(std::chrono::seconds(1));
  std::shared_ptr<TurnLog> second = fill("second");
  logs.End("k", "second", second, absl::OkStatus());
  clock.Advance(std::chrono::seconds(1));
  std::shared_ptr<TurnLog> third = fill("third");
  logs.End("k", "third", third, absl::OkStatus());
  EXPECT_EQ(logs.Find("k", "first"), nullptr);
  EXPECT_EQ(logs.Find("k", "second"), second);
  EXPECT_EQ(logs.Find("k", "third"), third);
  EXPECT_EQ(logs.Find("k", "running"), running);
}

TEST(TurnLogsTest, AForgottenTurnNoLongerCountsTowardsTheTotal) {
  testing::FakeClock clock;
  TurnLogs logs({.max_total_bytes = 250000}, clock);
  auto ended = [&](const std::string& key, const std::string& turn_id) {
    std::shared_ptr<TurnLog> log = logs.NewLog();
    logs.Register(key, turn_id, log);
    log->Append(Text(std::string(100000, 'x')));
    logs.End(key, turn_id, log, absl::OkStatus());
    return log;
  };
  ended("deleted", "t1");
  ended("deleted", "t2");
  logs.Forget("deleted");
  std::shared_ptr<TurnLog> first = ended("kept", "t1");
  std::shared_ptr<TurnLog> second = ended("kept", "t2");
  EXPECT_EQ(logs.Find("kept", "t1"), first);
  EXPECT_EQ(logs.Find("kept", "t2"), second);
}

TEST(TurnLogsTest, ALaterTurnUnderTheSameNameOutlivesTheWindowOfTheEarlierOne) {
  testing::FakeClock clock;
  TurnLogs logs({.keep_after_end = std::chrono::seconds(60)}, clock);
  std::shared_ptr<TurnLog> earlier = logs.NewLog();
  logs.Register("k", "t", earlier);
  logs.End("k", "t", earlier, absl::OkStatus());
  clock.Advance(std::chrono::seconds(30));
  std::shared_ptr<TurnLog> later = logs.NewLog();
  logs.Register("k", "t", later);
  logs.End("k", "t", later, absl::OkStatus());
  clock.Advance(std::chrono::seconds(40));
  EXPECT_EQ(logs.Find("k", "t"), later);
  clock.Advance(std::chrono::seconds(20));
  EXPECT_EQ(logs.Find("k", "t"), nullptr);
}

TEST(TurnLogsTest, ManyEndedTurnsAllAgeOutOfTheirWindow) {
  testing::FakeClock clock;
  TurnLogs logs({.keep_after_end = std::chrono::seconds(60)}, clock);
  for (int i = 0; i < 5000; ++i) {
    std::shared_ptr<TurnLog> log = logs.NewLog();
    logs.Register("k", std::to_string(i), log);
    logs.End("k", std::to_string(i), log, absl::OkStatus());
    if (i % 1000 == 999) clock.Advance(std::chrono::seconds(20));
  }
  // Ended 100, 80, 60, 40 and 20 s ago, in blocks of a thousand.
  EXPECT_EQ(logs.Find("k", "0"), nullptr);
  EXPECT_EQ(logs.Find("k", "2999"), nullptr);
  EXPECT_NE(logs.Find("k", "3000"), nullptr);
  EXPECT_NE(logs.Find("k", "4999"), nullptr);
}

TEST(TurnLogsTest, TheTotalCountsTheLogsOfTurnsThatKeptNoEvents) {
  testing::FakeClock clock;
  TurnLogs logs({.max_total_bytes = 100000}, clock);
  for (int i = 0; i < 1000; ++i) {
    std::shared_ptr<TurnLog> log = logs.NewLog();
    logs.Register("k", std::to_string(i), log);
    logs.End("k", std::to_string(i), log, absl::OkStatus());
  }
  // Each costs more than a hundred bytes to keep: the oldest went.
  EXPECT_EQ(logs.Find("k", "0"), nullptr);
  EXPECT_NE(logs.Find("k", "999"), nullptr);
}

}  // namespace
}  // namespace omniforge::orchestrator
