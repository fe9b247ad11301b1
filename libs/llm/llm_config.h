// The `llm:` section of a service's configuration: which providers exist,
// which profile uses which fallback chain, and the retry, circuit-breaker and
// timeout settings of the client. Every key can be overridden from the
// environment as usual (core::ConfigReader); an empty section means local
// mode (no model calls).
//
//   llm:
//     default_timeout_ms: 120000        # a call's budget when its caller gives no deadline
//     retry:
//       max_attempts: 3                 # per target of a chain, first attempt included
//       initial_backoff_ms: 200
//       max_backoff_ms: 10000
//       multiplier: 2
//     breaker:
//       failure_threshold: 5            # consecutive retryable failures that open a circuit
//       open_ms: 30000                  # how long it stays open before one probe call
//     providers:                        # names: [a-z0-9_-]+
//       openai:
//         api: openai                   # openai (chat completions) | anthropic (messages)
//         base_url: https://api.openai.com/v1   # default per api; OpenAI's includes /v1,
//                                               # Anthropic's does not
//         api_key_env: OPENAI_API_KEY   # name of the variable holding the key
//         api_key_file: /run/secrets/openai     # read (trimmed) when the variable is unset
//         headers: {OpenAI-Organization: org-123}   # extra request headers
//         connect_timeout_ms: 10000
//         request_timeout_ms: 120000    # ceiling for one HTTP attempt
//         default_max_tokens: 4096      # when a request leaves max_tokens at 0
//         max_tokens_field: max_completion_tokens   # openai only: or max_tokens;
//                                       # default max_completion_tokens at
//                                       # api.openai.com (its reasoning models
//                                       # reject max_tokens), else max_tokens
//         anthropic_version: 2023-06-01 # anthropic only
//         prices:                       # model: "input cached_input output [cache_write_input]"
//           gpt-4.1: "2.00 0.50 8.00"   # USD per Mtok; cache_write_input (prompt tokens
//           gpt-4.1-mini: "0.40 0.10 1.60"  # written to the cache, reported by Anthropic)
//                                       # defaults to 1.25 x input, Anthropic's rule for
//                                       # its 5-minute cache: "3.00 0.30 15.00 3.75"
//       local:
//         api: openai
//         base_url: http://127.0.0.1:11434/v1   # no key: no Authorization header
//     profiles:                         # name -> fallback chain of provider/model
//       speed: [openai/gpt-4.1-mini, local/meta-llama/Llama-3.1-8B]
//       balanced: [openai/gpt-4.1]
//       quality: [openai/gpt-4.1]
//
// A chain entry splits at its first '/': "local/meta-llama/Llama-3.1-8B" is
// model "meta-llama/Llama-3.1-8B" of provider "local". The environment can
// override any key below a provider the file names (e.g.
// OMNIFORGE_LLM_PROVIDERS_OPENAI_BASE_URL) and set the speed, balanced and
// quality profiles (OMNIFORGE_LLM_PROFILES_SPEED="openai/gpt-4.1-mini,..."),
// but cannot add providers.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "libs/core/config.h"
#include "libs/llm/circuit_breaker.h"
#include "libs/llm/llm_client.h"
#include "libs/llm/openai_wire.h"
#include "libs/llm/pricing.h"
#include "libs/llm/retry.h"

namespace omniforge::llm {

enum class ProviderApi { kOpenAi, kAnthropic };

struct ProviderConfig {
  ProviderApi api = ProviderApi::kOpenAi;
  std::string base_url;  // no trailing '/'
  std::string api_key_env;
  std::string api_key_file;
  // The resolved key; empty when none is configured. A credential: never
  // log it or put it in an error message.
  std::string api_key;
  std::map<std::string, std::string> headers;
  int64_t connect_timeout_ms = 10'000;
  int64_t request_timeout_ms = 120'000;
  int32_t default_max_tokens = 4096;
  OpenAiTokenLimitField max_tokens_field = OpenAiTokenLimitField::kMaxTokens;  // openai only
  std::string anthropic_version = "2023-06-01";
  std::map<std::string, Price> prices;  // by model
};

struct LlmConfig {
  std::map<std::string, ProviderConfig> providers;
  std::map<std::string, std::vector<ModelTarget>> profiles;
  RetryPolicy retry;
  CircuitBreakerOptions breaker;
  int64_t default_timeout_ms = 120'000;

  // False in local mode (no providers configured): the service must not
  // make model calls.
  bool enabled() const { return !providers.empty(); }

  // Every provider's prices, keyed by provider+model.
  PriceTable Prices() const;
};

// Reads the `llm:` section through `reader`. Type and range errors and
// unknown keys are reported by reader.Finish() like every other section's;
// this returns INVALID_ARGUMENT naming the key for what only makes sense
// here: an unknown api, a base_url that is not http(s), an unknown
// max_tokens_field, a bad price, a profile naming an unknown provider or an
// empty model, a bad provider or profile name, a key variable that is unset
// with no file to fall back on, an unreadable key file. `env` looks up the
// api_key_env variables (default: getenv); pass the reader's lookup in tests.
absl::StatusOr<LlmConfig> ReadLlmConfig(core::ConfigReader& reader,
                                        const core::ConfigReader::EnvLookup& env = nullptr);

}  // namespace omniforge::llm
