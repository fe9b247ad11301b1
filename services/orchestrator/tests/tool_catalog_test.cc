// The tool list turns share: a slow or unreachable executor is asked by one
// turn at a time, with no lock held, and the others go on with the list
// they had.
#include "services/orchestrator/turn/tool_catalog.h"

#include <atomic>
#include <chrono>
#include <future>
#include <string>

#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"
#include "services/orchestrator/testing/fakes.h"

namespace omniforge::orchestrator {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

// An executor whose ListTools answers a tool named `next_name`, fails while
// `fail` is set, and waits for `release` while `hold` is set.
class SlowExecutor final : public Tools {
 public:
  absl::StatusOr<execpb::ListToolsResponse> ListTools(const core::Call&,
                                                      const execpb::ListToolsRequest&) override {
    ++calls;
    if (hold) {
      entered.Notify();
      release.WaitForNotification();
    }
    if (fail) return absl::UnavailableError("executor unreachable");
    execpb::ListToolsResponse response;
    execpb::ToolDescriptor* tool = response.add_tools();
    tool->set_name(next_name);
    tool->set_risk(execpb::TOOL_RISK_WRITE);
    return response;
  }
  absl::StatusOr<execpb::InvokeToolResponse> InvokeTool(const core::Call&,
                                                        const execpb::InvokeToolRequest&) override {
    return absl::UnimplementedError("not in this test");
  }

  std::atomic<int> calls{0};
  std::atomic<bool> hold{false};
  std::atomic<bool> fail{false};
  std::string next_name = "first";
  absl::Notification entered;
  absl::Notification release;
};

class ToolCatalogTest : public ::testing::Test {
 protected:
  core::Call CallWithin(milliseconds timeout) const {
    return core::Call{who_, core::SystemClock().Now() + timeout, nullptr};
  }
  static std::string FirstName(const std::shared_ptr<const ToolCatalog>& catalog) {
    return catalog->tools.empty() ? std::string() : catalog->tools.front().name();
  }

  core::Identity who_{.tenant_id = "t1", .user_id = "u1"};
  testing::FakeClock clock_;
  SlowExecutor executor_;
  ToolCatalogCache cache_{executor_, clock_};
};

TEST_F(ToolCatalogTest, ListsOnceAMinuteAndKnowsEachToolsRisk) {
  EXPECT_EQ(FirstName(cache_.Get(CallWithin(seconds(5)))), "first");
  EXPECT_EQ(cache_.Get(CallWithin(seconds(5)))->risk_by_name.at("first"), execpb::TOOL_RISK_WRITE);
  EXPECT_EQ(executor_.calls, 1);
  executor_.next_name = "second";
  clock_.Advance(seconds(61));
  EXPECT_EQ(FirstName(cache_.Get(CallWithin(seconds(5)))), "second");
  EXPECT_EQ(executor_.calls, 2);
}

TEST_F(ToolCatalogTest, TurnsWithAListDoNotWaitWhileAnotherTurnAsksASlowExecutor) {
  ASSERT_EQ(FirstName(cache_.Get(CallWithin(seconds(5)))), "first");
  clock_.Advance(seconds(61));
  executor_.hold = true;
  executor_.next_name = "second";
  auto lister = std::async(std::launch::async, [&] { return cache_.Get(CallWithin(seconds(30))); });
  executor_.entered.WaitForNotification();

  // The listing is under way and stuck: another turn still gets the last list at once.
  auto other = std::async(std::launch::async, [&] { return cache_.Get(CallWithin(seconds(30))); });
  ASSERT_EQ(other.wait_for(seconds(2)), std::future_status::ready)
      << "a turn waited for another turn's ListTools";
  EXPECT_EQ(FirstName(other.get()), "first");
  EXPECT_EQ(executor_.calls, 2);

  executor_.release.Notify();
  EXPECT_EQ(FirstName(lister.get()), "second");
  EXPECT_EQ(FirstName(cache_.Get(CallWithin(seconds(5)))), "second");
}

TEST_F(ToolCatalogTest, AFailedListingKeepsTheLastListAndIsTriedAgainOnlyAfterAPause) {
  ASSERT_EQ(FirstName(cache_.Get(CallWithin(seconds(5)))), "first");
  clock_.Advance(seconds(61));
  executor_.fail = true;
  EXPECT_EQ(FirstName(cache_.Get(CallWithin(seconds(5)))), "first");
  EXPECT_EQ(executor_.calls, 2);
  // Every turn of the next seconds is served the last list without a call.
  for (int turn = 0; turn < 20; ++turn) {
    EXPECT_EQ(FirstName(cache_.Get(CallWithin(seconds(5)))), "first");
  }
  EXPECT_EQ(executor_.calls, 2);

  clock_.Advance(seconds(6));
  executor_.fail = false;
  executor_.next_name = "second";
  EXPECT_EQ(FirstName(cache_.Get(CallWithin(seconds(5)))), "second");
  EXPECT_EQ(executor_.calls, 3);
}

TEST_F(ToolCatalogTest, ATurnWithNoListYetWaitsForTheListingUnderWayNotBeyondItsDeadline) {
  executor_.hold = true;
  auto lister = std::async(std::launch::async, [&] { return cache_.Get(CallWithin(seconds(30))); });
  executor_.entered.WaitForNotification();

  const auto started = std::chrono::steady_clock::now();
  EXPECT_TRUE(cache_.Get(CallWithin(milliseconds(200)))->tools.empty());
  EXPECT_LT(std::chrono::steady_clock::now() - started, seconds(5));

  // One that may wait gets the listing's outcome, without a call of its own.
  auto waiter = std::async(std::launch::async, [&] { return cache_.Get(CallWithin(seconds(30))); });
  ASSERT_EQ(waiter.wait_for(milliseconds(100)), std::future_status::timeout);
  executor_.release.Notify();
  EXPECT_EQ(FirstName(waiter.get()), "first");
  EXPECT_EQ(FirstName(lister.get()), "first");
  EXPECT_EQ(executor_.calls, 1);
}

}  // namespace
}  // namespace omniforge::orchestrator
