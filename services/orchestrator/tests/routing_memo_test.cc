#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "services/orchestrator/flow/routing.h"

namespace omniforge::orchestrator {
namespace {

Routing RoutingFor(const std::string& flow_id) {
  Routing routing;
  routing.flow_id = flow_id;
  routing.listed_agents = {"weekly-report", "inbox-triage"};
  return routing;
}

TEST(RoutingMemoTest, AMessagesRoutingIsParsedOnceAndThenServedAsIs) {
  RoutingMemo memo(4096);
  int parses = 0;
  auto parse = [&] {
    ++parses;
    return RoutingFor("flow-1");
  };
  const std::shared_ptr<const Routing> first = memo.Of("m1", parse);
  const std::shared_ptr<const Routing> again = memo.Of("m1", parse);
  EXPECT_EQ(parses, 1);
  EXPECT_EQ(first.get(), again.get());
  EXPECT_EQ(again->flow_id, "flow-1");
  EXPECT_EQ(again->listed_agents, (std::vector<std::string>{"weekly-report", "inbox-triage"}));
}

TEST(RoutingMemoTest, ARememberedRoutingIsReadWithoutParsing) {
  RoutingMemo memo(4096);
  memo.Remember("reply-1", RoutingFor("flow-7"));
  const std::shared_ptr<const Routing> read = memo.Of("reply-1", []() -> Routing {
    ADD_FAILURE() << "a remembered routing was parsed again";
    return {};
  });
  EXPECT_EQ(read->flow_id, "flow-7");
  // The first routing known for a message stays: a message never changes.
  memo.Remember("reply-1", RoutingFor("flow-8"));
  EXPECT_EQ(memo.Of("reply-1", [] { return RoutingFor("parsed"); })->flow_id, "flow-7");
}

TEST(RoutingMemoTest, TheOldestGoFirstSoTheMemoStaysBounded) {
  RoutingMemo memo(64);
  int parses = 0;
  auto parse = [&] {
    ++parses;
    return RoutingFor("flow");
  };
  memo.Of("m0", parse);
  // Far more messages than the memo holds, in every shard.
  for (int i = 1; i <= 2000; ++i) memo.Of("m" + std::to_string(i), parse);
  ASSERT_EQ(parses, 2001);
  memo.Of("m0", parse);  // long gone: parsed again
  EXPECT_EQ(parses, 2002);
  memo.Of("m2000", parse);  // the newest is still there
  EXPECT_EQ(parses, 2002);
}

TEST(RoutingMemoTest, ConcurrentTurnsReadingTheSameWindowsAgreeOnEachRouting) {
  RoutingMemo memo(4096);
  std::atomic<int> parses{0};
  std::atomic<int> wrong{0};
  std::vector<std::thread> turns;
  turns.reserve(8);
  for (int t = 0; t < 8; ++t) {
    turns.emplace_back([&] {
      for (int round = 0; round < 200; ++round) {
        for (int i = 0; i < 50; ++i) {
          const std::string id = "m" + std::to_string(i);
          auto routing = memo.Of(id, [&] {
            ++parses;
            return RoutingFor("flow-" + id);
          });
          if (routing->flow_id != "flow-" + id) ++wrong;
        }
      }
    });
  }
  for (auto& t : turns) t.join();
  EXPECT_EQ(wrong.load(), 0);
  // Two turns may parse the same new message at once; never more than that
  // per turn, and never again once it is kept.
  EXPECT_GE(parses.load(), 50);
  EXPECT_LE(parses.load(), 50 * 8);
}

}  // namespace
}  // namespace omniforge::orchestrator
