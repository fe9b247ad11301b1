#include "libs/llm/llm_factory.h"

#include <utility>

#include "libs/llm/curl_transport.h"
#include "libs/llm/errors.h"
#include "libs/llm/http_provider.h"

namespace omniforge::llm {

absl::StatusOr<std::unique_ptr<LlmClient>> MakeLlmClient(const LlmConfig& config,
                                                         std::shared_ptr<UsageSink> usage_sink,
                                                         std::shared_ptr<HttpTransport> transport) {
  if (!config.enabled()) {
    return LlmError(LlmErrorKind::kNotConfigured, "no LLM provider is configured (local mode)");
  }
  if (transport == nullptr) transport = std::make_shared<CurlTransport>();
  LlmClientOptions options;
  for (const auto& [name, provider] : config.providers) {
    ProviderOptions p;
    p.name = name;
    p.api = provider.api == ProviderApi::kAnthropic ? ProviderOptions::Api::kAnthropic
                                                    : ProviderOptions::Api::kOpenAi;
    p.base_url = provider.base_url;
    p.api_key = provider.api_key;
    p.extra_headers.assign(provider.headers.begin(), provider.headers.end());
    p.connect_timeout_micros = provider.connect_timeout_ms * 1000;
    p.request_timeout_micros = provider.request_timeout_ms * 1000;
    p.default_max_tokens = provider.default_max_tokens;
    p.openai_token_limit_field = provider.max_tokens_field;
    p.anthropic_version = provider.anthropic_version;
    options.providers[name] = MakeHttpProvider(std::move(p), transport);
  }
  options.profiles = config.profiles;
  options.retry = config.retry;
  options.breaker = config.breaker;
  options.prices = config.Prices();
  options.usage_sink = std::move(usage_sink);
  options.default_timeout_micros = config.default_timeout_ms * 1000;
  return LlmClient::Create(std::move(options));
}

}  // namespace omniforge::llm
