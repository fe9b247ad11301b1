#include "libs/llm/provider_errors.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "libs/core/text.h"

namespace omniforge::llm {
namespace {

constexpr size_t kMaxMessageBytes = 500;
constexpr int64_t kMaxRetryAfterMicros = int64_t{86'400} * 1'000'000;

// IMF-fixdate, then the obsolete RFC 850 and asctime forms HTTP still
// requires recipients to accept.
constexpr const char* kHttpDateFormats[] = {
    "%a, %d %b %Y %H:%M:%S GMT",
    "%A, %d-%b-%y %H:%M:%S GMT",
    "%a %b %e %H:%M:%S %Y",
};

// Cuts at a UTF-8 boundary so the message stays valid text.
std::string Truncate(std::string text) {
  if (text.size() <= kMaxMessageBytes) return text;
  return std::string(core::Utf8Prefix(text, kMaxMessageBytes)) + "...";
}

std::string PrintablePrefix(std::string_view body) {
  std::string out;
  for (char c : body.substr(0, kMaxMessageBytes)) {
    out.push_back(absl::ascii_isprint(static_cast<unsigned char>(c)) ? c : ' ');
  }
  return std::string(absl::StripAsciiWhitespace(out));
}

}  // namespace

LlmErrorKind ErrorKindForHttpStatus(int status) {
  if (status == 429) return LlmErrorKind::kRateLimited;
  if (status == 408) return LlmErrorKind::kTimeout;
  if (status == 409 || (status >= 500 && status <= 599)) return LlmErrorKind::kServerError;
  if (status == 401 || status == 403) return LlmErrorKind::kAuth;
  return LlmErrorKind::kInvalidRequest;
}

std::optional<int64_t> ParseRetryAfterMicros(std::string_view value, int64_t now_micros) {
  std::string text(absl::StripAsciiWhitespace(absl::string_view(value.data(), value.size())));
  if (text.empty()) return std::nullopt;
  if (absl::ascii_isdigit(static_cast<unsigned char>(text[0]))) {
    double seconds = 0;
    if (!absl::SimpleAtod(text, &seconds) || !std::isfinite(seconds)) return std::nullopt;
    return static_cast<int64_t>(std::min(seconds * 1e6, static_cast<double>(kMaxRetryAfterMicros)));
  }
  for (const char* format : kHttpDateFormats) {
    absl::Time when;
    if (absl::ParseTime(format, text, absl::UTCTimeZone(), &when, nullptr)) {
      int64_t wait = absl::ToUnixMicros(when) - now_micros;
      return std::clamp<int64_t>(wait, 0, kMaxRetryAfterMicros);
    }
  }
  return std::nullopt;
}

std::optional<int64_t> ParseRetryAfterMsMicros(std::string_view value) {
  const absl::string_view text =
      absl::StripAsciiWhitespace(absl::string_view(value.data(), value.size()));
  double millis = 0;
  if (text.empty() || !absl::ascii_isdigit(static_cast<unsigned char>(text[0])) ||
      !absl::SimpleAtod(text, &millis) || !std::isfinite(millis)) {
    return std::nullopt;
  }
  return static_cast<int64_t>(std::min(millis * 1e3, static_cast<double>(kMaxRetryAfterMicros)));
}

std::string ProviderErrorMessage(std::string_view body) {
  nlohmann::json parsed = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_object()) {
    auto error = parsed.find("error");
    if (error != parsed.end()) {
      if (error->is_string()) return Truncate(error->get<std::string>());
      if (error->is_object()) {
        auto message = error->find("message");
        if (message != error->end() && message->is_string()) {
          return Truncate(message->get<std::string>());
        }
      }
    }
    auto message = parsed.find("message");
    if (message != parsed.end() && message->is_string()) {
      return Truncate(message->get<std::string>());
    }
  }
  return PrintablePrefix(body);
}

absl::Status HttpErrorStatus(std::string_view provider, const HttpResponseHead& head,
                             std::string_view body, int64_t now_micros) {
  std::optional<int64_t> retry_after;
  if (auto it = head.headers.find("retry-after-ms"); it != head.headers.end()) {
    retry_after = ParseRetryAfterMsMicros(it->second);
  }
  if (auto it = head.headers.find("retry-after"); !retry_after && it != head.headers.end()) {
    retry_after = ParseRetryAfterMicros(it->second, now_micros);
  }
  std::string message =
      absl::StrCat(absl::string_view(provider.data(), provider.size()), ": HTTP ", head.status);
  if (std::string detail = ProviderErrorMessage(body); !detail.empty()) {
    absl::StrAppend(&message, ": ", detail);
  }
  return LlmError(ErrorKindForHttpStatus(head.status), message, retry_after);
}

}  // namespace omniforge::llm
