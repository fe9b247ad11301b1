// Builds the resilient client from the `llm:` configuration: one HTTP
// provider per configured provider, all sharing one libcurl transport (and
// its kept-alive connections).
#pragma once

#include <memory>

#include "absl/status/statusor.h"
#include "libs/llm/http_transport.h"
#include "libs/llm/llm_client.h"
#include "libs/llm/llm_config.h"

namespace omniforge::llm {

// LlmError(kNotConfigured) when `config` has no providers (local mode);
// INVALID_ARGUMENT when its profiles do not fit its providers. `transport`
// null: a CurlTransport. `usage_sink` may be null.
absl::StatusOr<std::unique_ptr<LlmClient>> MakeLlmClient(
    const LlmConfig& config, std::shared_ptr<UsageSink> usage_sink,
    std::shared_ptr<HttpTransport> transport = nullptr);

}  // namespace omniforge::llm
