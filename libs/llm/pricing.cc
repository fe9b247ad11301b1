#include "libs/llm/pricing.h"

#include <algorithm>
#include <mutex>
#include <set>

#include "libs/core/logging.h"

namespace omniforge::llm {

struct PriceTable::Warned {
  std::mutex mu;
  std::set<std::pair<std::string, std::string>> keys;
};

PriceTable::PriceTable() : warned_(std::make_unique<Warned>()) {}
PriceTable::PriceTable(PriceTable&&) noexcept = default;
PriceTable& PriceTable::operator=(PriceTable&&) noexcept = default;
PriceTable::~PriceTable() = default;

void PriceTable::Set(std::string_view provider, std::string_view model, Price price) {
  prices_[{std::string(provider), std::string(model)}] = price;
}

std::optional<Price> PriceTable::Find(std::string_view provider, std::string_view model) const {
  const auto it = prices_.find(std::pair<std::string, std::string>(provider, model));
  if (it == prices_.end()) return std::nullopt;
  return it->second;
}

double PriceTable::Cost(std::string_view provider, std::string_view model,
                        const TokenUsage& usage) const {
  const std::optional<Price> price = Find(provider, model);
  if (!price.has_value()) {
    std::lock_guard<std::mutex> lock(warned_->mu);
    if (warned_->keys.emplace(provider, model).second) {
      core::LogWarn("llm model has no price; its calls are recorded as costing 0",
                    {{"provider", std::string(provider)}, {"model", std::string(model)}});
    }
    return 0;
  }
  // Defensive: a provider reporting more cached (or written) than prompt
  // tokens must not produce a negative uncached count.
  const int64_t cached = std::max<int64_t>(0, std::min(usage.cached_tokens, usage.prompt_tokens));
  const int64_t written =
      std::max<int64_t>(0, std::min(usage.cache_write_tokens, usage.prompt_tokens - cached));
  const double write_price =
      price->cache_write_input_per_mtok.value_or(kDefaultCacheWriteFactor * price->input_per_mtok);
  const double micro_usd =
      static_cast<double>(usage.prompt_tokens - cached - written) * price->input_per_mtok +
      static_cast<double>(cached) * price->cached_input_per_mtok +
      static_cast<double>(written) * write_price +
      static_cast<double>(usage.completion_tokens) * price->output_per_mtok;
  return micro_usd / 1e6;
}

}  // namespace omniforge::llm
