#include "libs/llm/pricing.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "libs/core/logging.h"

namespace omniforge::llm {
namespace {

std::vector<std::string>& LogLines() {
  static std::vector<std::string> lines;
  return lines;
}

TEST(PricingTest, CostSplitsCachedPromptTokens) {
  PriceTable prices;
  prices.Set("openai", "gpt-4.1", Price{2.0, 0.5, 8.0});
  const TokenUsage usage{.prompt_tokens = 1000, .completion_tokens = 500, .cached_tokens = 200};
  // 800 * 2 + 200 * 0.5 + 500 * 8 = 5700 micro-USD.
  EXPECT_DOUBLE_EQ(prices.Cost("openai", "gpt-4.1", usage), 0.0057);
}

TEST(PricingTest, CacheWritesCostTheirOwnPriceOrOneAndAQuarterInput) {
  PriceTable prices;
  prices.Set("claude", "sonnet", Price{3.0, 0.3, 15.0, 6.0});  // e.g. the 1-hour cache rate
  prices.Set("claude", "haiku", Price{1.0, 0.1, 5.0});
  const TokenUsage usage{.prompt_tokens = 1000,
                         .completion_tokens = 100,
                         .cached_tokens = 600,
                         .cache_write_tokens = 300};
  // 100 * 3 + 600 * 0.3 + 300 * 6 + 100 * 15 = 3780 micro-USD.
  EXPECT_DOUBLE_EQ(prices.Cost("claude", "sonnet", usage), 0.00378);
  // No cache-write price: 1.25 x input. 100 * 1 + 600 * 0.1 + 300 * 1.25 + 100 * 5 = 1035.
  EXPECT_DOUBLE_EQ(prices.Cost("claude", "haiku", usage), 0.001035);
  // More written than the uncached prompt holds is capped there.
  const TokenUsage odd{.prompt_tokens = 100, .cached_tokens = 80, .cache_write_tokens = 50};
  EXPECT_DOUBLE_EQ(prices.Cost("claude", "sonnet", odd), (80 * 0.3 + 20 * 6.0) / 1e6);
}

TEST(PricingTest, PricesAreKeyedByProviderAndModel) {
  PriceTable prices;
  prices.Set("openai", "llama", Price{1, 1, 1});
  prices.Set("local", "llama", Price{0, 0, 0});
  const TokenUsage usage{.prompt_tokens = 1'000'000, .completion_tokens = 0, .cached_tokens = 0};
  EXPECT_DOUBLE_EQ(prices.Cost("openai", "llama", usage), 1.0);
  EXPECT_DOUBLE_EQ(prices.Cost("local", "llama", usage), 0.0);
  EXPECT_EQ(prices.Find("local", "llama"), (Price{0, 0, 0}));
  EXPECT_FALSE(prices.Find("other", "llama").has_value());
}

TEST(PricingTest, CachedTokensBeyondPromptNeverGoNegative) {
  PriceTable prices;
  prices.Set("p", "m", Price{10, 1, 0});
  const TokenUsage usage{.prompt_tokens = 100, .completion_tokens = 0, .cached_tokens = 500};
  EXPECT_DOUBLE_EQ(prices.Cost("p", "m", usage), 100 * 1 / 1e6);
}

TEST(PricingTest, UnknownModelCostsZeroAndWarnsOnce) {
  LogLines().clear();
  core::SetLogSinkForTesting([](const std::string& line) { LogLines().push_back(line); });
  PriceTable prices;
  const TokenUsage usage{.prompt_tokens = 10, .completion_tokens = 10, .cached_tokens = 0};
  EXPECT_EQ(prices.Cost("p", "unknown-model", usage), 0);
  EXPECT_EQ(prices.Cost("p", "unknown-model", usage), 0);
  EXPECT_EQ(prices.Cost("p", "other-model", usage), 0);
  core::SetLogSinkForTesting(nullptr);
  ASSERT_EQ(LogLines().size(), 2u);
  EXPECT_THAT(LogLines()[0], ::testing::HasSubstr("unknown-model"));
  EXPECT_THAT(LogLines()[1], ::testing::HasSubstr("other-model"));
}

}  // namespace
}  // namespace omniforge::llm
