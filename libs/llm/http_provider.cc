#include "libs/llm/http_provider.h"

#include <optional>
#include <string_view>
#include <variant>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "libs/core/clock.h"
#include "libs/llm/anthropic_wire.h"
#include "libs/llm/errors.h"
#include "libs/llm/openai_wire.h"
#include "libs/llm/provider_errors.h"
#include "libs/llm/sse.h"
#include "libs/trace/span.h"

namespace omniforge::llm {
namespace {

// The model call's span attributes, after OpenTelemetry's gen_ai
// conventions (no prompt text: it may hold personal data).
void AnnotateModelCall(trace::Span& span, const std::string& provider, const ChatRequest& request,
                       const CallContext& context, bool stream) {
  if (!span.active()) return;
  span.SetAttribute("gen_ai.operation.name", "chat");
  span.SetAttribute("gen_ai.system", provider);
  // The target's model, as BuildRequest sends it.
  span.SetAttribute("gen_ai.request.model", context.model.empty() ? request.model : context.model);
  if (!context.operation_type.empty()) {
    span.SetAttribute("omniforge.operation", context.operation_type);
  }
  span.SetAttribute("omniforge.stream", stream ? "true" : "false");
}

bool IsSuccess(int status) { return status >= 200 && status <= 299; }

bool IsCancelled(const CallContext& context) { return context.cancelled && context.cancelled(); }

// The kind of a status that came from outside this library (a transport);
// one that carries none is treated as a failed connection.
LlmErrorKind KindOf(const absl::Status& status) {
  LlmErrorKind kind = ErrorKindOf(status);
  return kind == LlmErrorKind::kNone ? LlmErrorKind::kConnection : kind;
}

// One stream decoder for whichever API the provider speaks.
class WireStreamDecoder final {
 public:
  WireStreamDecoder(ProviderOptions::Api api, std::string structured_tool)
      : decoder_(api == ProviderOptions::Api::kOpenAi
                     ? Decoder(OpenAiStreamDecoder())
                     : Decoder(AnthropicStreamDecoder(std::move(structured_tool)))) {}

  absl::Status Consume(const SseEvent& event, std::vector<StreamDelta>* deltas) {
    if (auto* openai = std::get_if<OpenAiStreamDecoder>(&decoder_)) {
      return openai->Consume(event.data, deltas);
    }
    return std::get<AnthropicStreamDecoder>(decoder_).Consume(event.type, event.data, deltas);
  }

  bool done() const {
    return std::visit([](const auto& decoder) { return decoder.done(); }, decoder_);
  }

  TokenUsage usage() const {
    return std::visit([](const auto& decoder) { return TokenUsage(decoder.usage()); }, decoder_);
  }

  ChatResponse TakeResponse() {
    return std::visit([](auto& decoder) { return decoder.TakeResponse(); }, decoder_);
  }

 private:
  using Decoder = std::variant<OpenAiStreamDecoder, AnthropicStreamDecoder>;
  Decoder decoder_;
};

class HttpProvider final : public ChatModel {
 public:
  HttpProvider(ProviderOptions options, std::shared_ptr<HttpTransport> transport)
      : options_(std::move(options)), transport_(std::move(transport)) {
    while (absl::EndsWith(options_.base_url, "/")) options_.base_url.pop_back();
  }

  absl::StatusOr<ChatResponse> Complete(const ChatRequest& request,
                                        const CallContext& context) override;
  absl::StatusOr<ChatResponse> Stream(const ChatRequest& request, const CallContext& context,
                                      const StreamCallback& on_delta) override;

 private:
  absl::StatusOr<HttpRequest> BuildRequest(const ChatRequest& request, const CallContext& context,
                                           bool stream) const;
  // `status` with the provider's name in front and the API key masked.
  absl::Status Failure(const absl::Status& status) const;
  absl::Status Failure(LlmErrorKind kind, absl::string_view message) const;
  absl::Status HttpFailure(const HttpResponseHead& head, std::string_view body) const;
  // What a stream that was read to its end (or stopped for `failure`) gives:
  // the answer, or the failure with the usage the provider reported.
  absl::StatusOr<ChatResponse> StreamOutcome(WireStreamDecoder& decoder,
                                             const absl::Status& failure, int64_t sent_at,
                                             int64_t first_delta_at) const;
  std::string Redacted(std::string text) const;
  // Complete and Stream once the request is built, inside the model call's span.
  absl::StatusOr<ChatResponse> Send(const HttpRequest& http, const ChatRequest& request,
                                    const CallContext& context);
  absl::StatusOr<ChatResponse> SendStreaming(const HttpRequest& http, const ChatRequest& request,
                                             const CallContext& context,
                                             const StreamCallback& on_delta);

  ProviderOptions options_;
  std::shared_ptr<HttpTransport> transport_;
};

absl::StatusOr<HttpRequest> HttpProvider::BuildRequest(const ChatRequest& request,
                                                       const CallContext& context,
                                                       bool stream) const {
  // The target's model and the default token limit go straight into the
  // body: the request (the whole history) is not copied to carry them.
  const std::string_view model = context.model.empty() ? request.model : context.model;
  const int32_t max_tokens =
      request.max_tokens > 0 ? request.max_tokens : options_.default_max_tokens;
  const bool openai = options_.api == ProviderOptions::Api::kOpenAi;
  absl::StatusOr<std::string> body =
      openai ? EncodeOpenAiRequest(request, stream, options_.openai_token_limit_field, model,
                                   max_tokens)
             : EncodeAnthropicRequest(request, stream, model, max_tokens);
  if (!body.ok()) return Failure(body.status());

  HttpRequest http;
  http.url = absl::StrCat(options_.base_url, openai ? "/chat/completions" : "/v1/messages");
  http.body = *std::move(body);
  http.headers.emplace_back("content-type", "application/json");
  http.headers.emplace_back("accept", stream ? "text/event-stream" : "application/json");
  if (!options_.api_key.empty()) {
    if (openai) {
      http.headers.emplace_back("authorization", absl::StrCat("Bearer ", options_.api_key));
    } else {
      http.headers.emplace_back("x-api-key", options_.api_key);
    }
  }
  if (!openai) http.headers.emplace_back("anthropic-version", options_.anthropic_version);
  if (!context.operation_type.empty()) {
    http.headers.emplace_back("x-omniforge-operation", context.operation_type);
  }
  for (const auto& header : options_.extra_headers) http.headers.push_back(header);
  http.deadline_micros = core::NowMicros() + options_.request_timeout_micros;
  if (context.deadline_micros != 0 && context.deadline_micros < http.deadline_micros) {
    http.deadline_micros = context.deadline_micros;
  }
  http.connect_timeout_micros = options_.connect_timeout_micros;
  http.cancelled = context.cancelled;
  return http;
}

absl::Status HttpProvider::Failure(const absl::Status& status) const {
  return Failure(KindOf(status), status.message());
}

absl::Status HttpProvider::Failure(LlmErrorKind kind, absl::string_view message) const {
  return LlmError(kind, Redacted(absl::StrCat(options_.name, ": ", message)));
}

std::string HttpProvider::Redacted(std::string text) const {
  // A provider may echo the key back ("Incorrect API key provided: sk-...").
  if (!options_.api_key.empty()) absl::StrReplaceAll({{options_.api_key, "[redacted]"}}, &text);
  return text;
}

absl::Status HttpProvider::HttpFailure(const HttpResponseHead& head, std::string_view body) const {
  absl::Status status = HttpErrorStatus(options_.name, head, body, core::NowMicros());
  return LlmError(ErrorKindOf(status), Redacted(std::string(status.message())),
                  RetryAfterMicrosOf(status));
}

absl::StatusOr<ChatResponse> HttpProvider::Complete(const ChatRequest& request,
                                                    const CallContext& context) {
  absl::StatusOr<HttpRequest> http = BuildRequest(request, context, /*stream=*/false);
  if (!http.ok()) return http.status();
  if (IsCancelled(context)) return Failure(LlmErrorKind::kCancelled, "cancelled before sending");
  trace::ScopedSpan span("model.call", trace::SpanKind::kClient);
  AnnotateModelCall(span.span(), options_.name, request, context, /*stream=*/false);
  absl::StatusOr<ChatResponse> response = Send(*http, request, context);
  if (!response.ok()) span.span().SetError(response.status().ToString());
  return response;
}

absl::StatusOr<ChatResponse> HttpProvider::Send(const HttpRequest& http, const ChatRequest& request,
                                                const CallContext& context) {
  HttpResponseHead head;
  std::string body;
  absl::Status stopped;  // why reading stopped early
  absl::Status sent = transport_->Post(
      http, [&](const HttpResponseHead& received) { head = received; },
      [&](std::string_view piece) {
        if (IsCancelled(context)) {
          stopped = LlmError(LlmErrorKind::kCancelled, "cancelled while receiving");
          return false;
        }
        if (body.size() + piece.size() > kMaxProviderResponseBytes) {
          stopped = LlmError(LlmErrorKind::kBadResponse, "answer larger than 8 MiB");
          return false;
        }
        body.append(piece);
        return true;
      });
  if (!stopped.ok()) return Failure(stopped);
  // An error answer cut short still says what went wrong.
  if (!sent.ok() && (head.status == 0 || IsSuccess(head.status))) return Failure(sent);
  if (!IsSuccess(head.status)) return HttpFailure(head, body);
  absl::StatusOr<ChatResponse> response =
      options_.api == ProviderOptions::Api::kOpenAi
          ? DecodeOpenAiResponse(body)
          : DecodeAnthropicResponse(body, AnthropicStructuredToolName(request));
  if (!response.ok()) return Failure(response.status());
  return response;
}

absl::StatusOr<ChatResponse> HttpProvider::Stream(const ChatRequest& request,
                                                  const CallContext& context,
                                                  const StreamCallback& on_delta) {
  absl::StatusOr<HttpRequest> http = BuildRequest(request, context, /*stream=*/true);
  if (!http.ok()) return http.status();
  if (IsCancelled(context)) return Failure(LlmErrorKind::kCancelled, "cancelled before sending");
  trace::ScopedSpan span("model.call", trace::SpanKind::kClient);
  AnnotateModelCall(span.span(), options_.name, request, context, /*stream=*/true);
  absl::StatusOr<ChatResponse> response = SendStreaming(*http, request, context, on_delta);
  if (!response.ok()) span.span().SetError(response.status().ToString());
  return response;
}

absl::StatusOr<ChatResponse> HttpProvider::SendStreaming(const HttpRequest& http,
                                                         const ChatRequest& request,
                                                         const CallContext& context,
                                                         const StreamCallback& on_delta) {
  WireStreamDecoder decoder(options_.api, AnthropicStructuredToolName(request));
  std::vector<StreamDelta> deltas;
  const int64_t sent_at = core::NowMicros();
  int64_t first_delta_at = -1;  // also: whether output began
  absl::Status stopped;         // why reading stopped early
  size_t answer_bytes = 0;      // of the deltas, bounding the assembled answer
  SseParser parser([&](const SseEvent& event) {
    deltas.clear();
    if (absl::Status consumed = decoder.Consume(event, &deltas); !consumed.ok()) {
      stopped = consumed;
      return false;
    }
    for (const StreamDelta& delta : deltas) {
      answer_bytes += delta.text.size() + delta.tool_call_id.size() + delta.tool_name.size() +
                      delta.arguments_fragment.size();
      if (answer_bytes > kMaxProviderResponseBytes) {
        stopped = LlmError(LlmErrorKind::kBadResponse, "answer larger than 8 MiB");
        return false;
      }
      if (first_delta_at < 0) first_delta_at = core::NowMicros();
      if (!on_delta(delta)) {
        stopped = LlmError(LlmErrorKind::kCancelled, "stream cancelled by the receiver");
        return false;
      }
    }
    return true;
  });

  HttpResponseHead head;
  std::string error_body;
  absl::Status sent = transport_->Post(
      http, [&](const HttpResponseHead& answer) { head = answer; },
      [&](std::string_view piece) {
        if (IsCancelled(context)) {
          stopped = LlmError(LlmErrorKind::kCancelled, "cancelled while streaming");
          return false;
        }
        if (!IsSuccess(head.status)) {
          if (error_body.size() + piece.size() > kMaxProviderResponseBytes) {
            stopped = LlmError(LlmErrorKind::kBadResponse, "error answer larger than 8 MiB");
            return false;
          }
          error_body.append(piece);
          return true;
        }
        if (!parser.Feed(piece)) return false;
        if (parser.buffered_bytes() > kMaxProviderResponseBytes) {
          stopped = LlmError(LlmErrorKind::kBadResponse, "stream event larger than 8 MiB");
          return false;
        }
        return true;
      });

  if (stopped.ok() && head.status != 0 && !IsSuccess(head.status)) {
    return HttpFailure(head, error_body);  // even when cut short, it says what went wrong
  }
  return StreamOutcome(decoder, !stopped.ok() ? stopped : sent, sent_at, first_delta_at);
}

absl::StatusOr<ChatResponse> HttpProvider::StreamOutcome(WireStreamDecoder& decoder,
                                                         const absl::Status& failure,
                                                         int64_t sent_at,
                                                         int64_t first_delta_at) const {
  const bool output_began = first_delta_at >= 0;
  // The provider bills what it reported, answer or not.
  const auto billed = [&decoder](absl::Status status) {
    const TokenUsage usage = decoder.usage();
    return usage == TokenUsage() ? status : WithBilledUsage(std::move(status), usage);
  };
  if (!failure.ok()) {
    // Once output began, a retry would repeat it: the stream is broken.
    if (!output_began || KindOf(failure) == LlmErrorKind::kCancelled) {
      return billed(Failure(failure));
    }
    return billed(Failure(LlmErrorKind::kStreamBroken,
                          absl::StrCat("stream broken after output began: ", failure.message())));
  }
  if (!decoder.done()) {
    if (output_began) {
      return billed(Failure(LlmErrorKind::kStreamBroken, "stream ended before its end marker"));
    }
    return billed(Failure(LlmErrorKind::kConnection, "stream ended before any output"));
  }
  ChatResponse response = decoder.TakeResponse();
  response.time_to_first_token_us = output_began ? first_delta_at - sent_at : -1;
  return response;
}

}  // namespace

std::unique_ptr<ChatModel> MakeHttpProvider(ProviderOptions options,
                                            std::shared_ptr<HttpTransport> transport) {
  return std::make_unique<HttpProvider>(std::move(options), std::move(transport));
}

}  // namespace omniforge::llm
