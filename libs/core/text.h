// Small text checks shared by every input validator.
#pragma once

#include <string>
#include <string_view>

namespace omniforge::core {

// True when `s` is well-formed UTF-8 (no overlongs, no surrogates, <= U+10FFFF).
bool IsValidUtf8(std::string_view s);

// The longest start of `s` of at most `max_bytes` bytes that does not cut a
// UTF-8 sequence (for excerpts and size caps).
std::string_view Utf8Prefix(std::string_view s, size_t max_bytes);

// `s` itself when it fits in `max_bytes`, else its Utf8Prefix followed by
// "…".
std::string Shortened(std::string_view s, size_t max_bytes);

// True for an identity or key token: 1..max_len bytes of [A-Za-z0-9._:@-].
bool IsSafeToken(std::string_view s, size_t max_len = 128);

}  // namespace omniforge::core
