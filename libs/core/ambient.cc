#include "libs/core/ambient.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"

namespace omniforge::core {
namespace {

thread_local Ambient current;

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;  // upper case is invalid in traceparent
}

// Reads exactly 2 * out.size() lower-case hex digits.
template <size_t N>
bool ReadHex(std::string_view text, std::array<uint8_t, N>& out) {
  if (text.size() != 2 * N) return false;
  for (size_t i = 0; i < N; ++i) {
    const int high = HexValue(text[2 * i]);
    const int low = HexValue(text[2 * i + 1]);
    if (high < 0 || low < 0) return false;
    out[i] = static_cast<uint8_t>(high * 16 + low);
  }
  return true;
}

template <size_t N>
std::string Hex(const std::array<uint8_t, N>& bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out(2 * N, '0');
  for (size_t i = 0; i < N; ++i) {
    out[2 * i] = kDigits[bytes[i] >> 4];
    out[2 * i + 1] = kDigits[bytes[i] & 0x0f];
  }
  return out;
}

template <size_t N>
bool AllZero(const std::array<uint8_t, N>& bytes) {
  return std::all_of(bytes.begin(), bytes.end(), [](uint8_t b) { return b == 0; });
}

}  // namespace

bool SpanContext::valid() const { return !AllZero(trace_id) && !AllZero(span_id); }

std::optional<SpanContext> ParseTraceparent(std::string_view header) {
  // version(2) - trace id(32) - parent id(16) - flags(2) = 55 characters.
  constexpr size_t kLength = 55;
  if (header.size() < kLength || header[2] != '-' || header[35] != '-' || header[52] != '-') {
    return std::nullopt;
  }
  std::array<uint8_t, 1> version{};
  if (!ReadHex(header.substr(0, 2), version) || version[0] == 0xff) return std::nullopt;
  // Version 00 is exactly 55 characters; a later one may append "-...".
  if (header.size() > kLength && (version[0] == 0 || header[kLength] != '-')) return std::nullopt;
  SpanContext context;
  std::array<uint8_t, 1> flags{};
  if (!ReadHex(header.substr(3, 32), context.trace_id) ||
      !ReadHex(header.substr(36, 16), context.span_id) || !ReadHex(header.substr(53, 2), flags)) {
    return std::nullopt;
  }
  if (!context.valid()) return std::nullopt;
  context.flags = flags[0];
  return context;
}

std::string FormatTraceparent(const SpanContext& context) {
  return absl::StrCat("00-", Hex(context.trace_id), "-", Hex(context.span_id), "-",
                      Hex(std::array<uint8_t, 1>{context.flags}));
}

std::string TraceIdHex(const SpanContext& context) { return Hex(context.trace_id); }
std::string SpanIdHex(const SpanContext& context) { return Hex(context.span_id); }

const Ambient& CurrentAmbient() { return current; }

ScopedAmbient::ScopedAmbient(Ambient ambient)
    : previous_(std::exchange(current, std::move(ambient))) {}

ScopedAmbient::~ScopedAmbient() { current = std::move(previous_); }

namespace {
Ambient WithLog(LogContext log) {
  Ambient ambient = CurrentAmbient();
  ambient.log = std::make_shared<const LogContext>(std::move(log));
  return ambient;
}
}  // namespace

ScopedLogContext::ScopedLogContext(LogContext log) : scope_(WithLog(std::move(log))) {}

}  // namespace omniforge::core
