// The in-memory flow store: the store contract (flow_store_contract.h) and
// its bound.
#include "services/orchestrator/flow/memory_flow_store.h"

#include <gtest/gtest.h>

#include "services/orchestrator/tests/flow_store_contract.h"

namespace omniforge::orchestrator {
namespace {

struct MemoryBackend {
  static void SetUpTestSuite() {}
  static void TearDownTestSuite() {}
  static std::unique_ptr<FlowStore> Make() { return std::make_unique<MemoryFlowStore>(); }
};

INSTANTIATE_TYPED_TEST_SUITE_P(Memory, FlowStoreContractTest, MemoryBackend);

TEST(MemoryFlowStoreTest, PastItsBoundTheLeastRecentlySavedFlowIsForgotten) {
  MemoryFlowStore store(/*max_flows=*/2);
  const core::Identity alice{"acme", "alice"};
  const core::Call call{alice, core::SystemClock().Now() + std::chrono::seconds(10)};
  FlowState a, b, c;
  a.flow_id = "a";
  b.flow_id = "b";
  c.flow_id = "c";
  ASSERT_TRUE(store.Save(call, a, 0).ok());
  ASSERT_TRUE(store.Save(call, b, 0).ok());
  ASSERT_TRUE(store.Save(call, a, 1).ok());  // "a" is now the most recent
  ASSERT_TRUE(store.Save(call, c, 0).ok());
  EXPECT_TRUE(store.Load(call, "a").ok());
  EXPECT_TRUE(absl::IsNotFound(store.Load(call, "b").status()));
  EXPECT_TRUE(store.Load(call, "c").ok());
}

}  // namespace
}  // namespace omniforge::orchestrator
