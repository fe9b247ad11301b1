// What model calls cost: per-model token prices and the cost of one call's
// token usage, recorded with every usage record and exported as a metric.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "libs/llm/chat.h"

namespace omniforge::llm {

// USD per million tokens.
inline constexpr double kDefaultCacheWriteFactor = 1.25;

struct Price {
  double input_per_mtok = 0;
  // Prompt tokens served from the provider's prompt cache.
  double cached_input_per_mtok = 0;
  double output_per_mtok = 0;
  // Prompt tokens written to the provider's cache (TokenUsage::
  // cache_write_tokens). Unset: kDefaultCacheWriteFactor x input_per_mtok,
  // Anthropic's published rule for its (default, 5-minute) cache.
  std::optional<double> cache_write_input_per_mtok;

  friend bool operator==(const Price&, const Price&) = default;
};

// Prices keyed by provider+model (the same model may cost differently at two
// providers). Fill it at start-up; Cost is then thread-safe. Move-only.
class PriceTable final {
 public:
  PriceTable();
  PriceTable(PriceTable&&) noexcept;
  PriceTable& operator=(PriceTable&&) noexcept;
  ~PriceTable();

  void Set(std::string_view provider, std::string_view model, Price price);
  std::optional<Price> Find(std::string_view provider, std::string_view model) const;

  // USD for `usage`: uncached prompt tokens at the input price, cached ones
  // at the cached price, cache writes at the cache-write price, completion
  // tokens at the output price. The same
  // tokens cost the same whether streamed or not. A model without a price
  // costs 0, with one warning log per provider+model.
  double Cost(std::string_view provider, std::string_view model, const TokenUsage& usage) const;

 private:
  struct Warned;
  std::map<std::pair<std::string, std::string>, Price> prices_;
  std::unique_ptr<Warned> warned_;
};

}  // namespace omniforge::llm
