// The HTTP providers: a ChatModel that speaks the OpenAI chat-completions or
// the Anthropic Messages API over an HttpTransport. One call is one HTTP
// attempt; retries, fallback and usage records belong to the client layer
// above, which simply calls again.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "libs/llm/chat_model.h"
#include "libs/llm/http_transport.h"
#include "libs/llm/openai_wire.h"

namespace omniforge::llm {

struct ProviderOptions {
  enum class Api { kOpenAi, kAnthropic };

  // Names the provider in error messages ("openai", "local-ollama").
  std::string name;
  Api api = Api::kOpenAi;
  // OpenAI: with the version prefix ("https://api.openai.com/v1"); the
  // provider POSTs <base_url>/chat/completions. Anthropic: without it
  // ("https://api.anthropic.com"); the provider POSTs <base_url>/v1/messages.
  std::string base_url;
  // Sent as "Authorization: Bearer" (OpenAI) or "x-api-key" (Anthropic);
  // omitted when empty. Never logged nor put in an error message.
  std::string api_key;
  std::vector<std::pair<std::string, std::string>> extra_headers;
  int64_t connect_timeout_micros = 5'000'000;
  // Per attempt; a call's own deadline, when sooner, wins.
  int64_t request_timeout_micros = 60'000'000;
  // Used when a request leaves max_tokens at 0.
  int32_t default_max_tokens = 1024;
  // OpenAI only: the field max_tokens travels in.
  OpenAiTokenLimitField openai_token_limit_field = OpenAiTokenLimitField::kMaxTokens;
  std::string anthropic_version = "2023-06-01";
};

// Answers larger than this are refused as kBadResponse: a provider never
// legitimately sends so much, and the client must not buffer without bound.
// A stream is held to it per event and for the answer it assembles, not for
// its total bytes: its framing repeats a few hundred bytes per token, so a
// long answer streams many times its own size.
inline constexpr size_t kMaxProviderResponseBytes = size_t{8} << 20;

// The provider for `options` on `transport`. Errors (errors.h kinds):
//  - non-2xx: by status as ErrorKindForHttpStatus gives (429 kRateLimited
//    with the Retry-After wait, 5xx kServerError, 401/403 kAuth, most other
//    4xx kInvalidRequest), with the provider's error message;
//  - transport failures as the transport reports them (kConnection,
//    kTimeout); the attempt ends at min(context deadline, now + timeout);
//  - a 2xx answer that cannot be decoded, or over the size limit:
//    kBadResponse;
//  - Stream: a stream that ends early (cut, no [DONE] / message_stop, a
//    malformed chunk, an error event) is kConnection, kBadResponse or
//    kServerError (kRateLimited for a rate-limit error event) while nothing
//    was delivered, and kStreamBroken once a delta was;
//  - a failed stream carries the usage the provider had reported by then
//    (WithBilledUsage), as the provider bills it;
//  - context.cancelled() turning true (checked before sending, as bytes
//    arrive, and by the transport while it waits: HttpRequest::cancelled)
//    or on_delta returning false: kCancelled.
// Every request carries "x-omniforge-operation: <operation_type>" when the
// operation is set. Thread-safe when the transport is.
std::unique_ptr<ChatModel> MakeHttpProvider(ProviderOptions options,
                                            std::shared_ptr<HttpTransport> transport);

}  // namespace omniforge::llm
