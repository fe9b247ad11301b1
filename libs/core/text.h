// Small text checks shared by every input validator.
#pragma once

#include <string_view>

namespace omniforge::core {

// True when `s` is well-formed UTF-8 (no overlongs, no surrogates, <= U+10FFFF).
bool IsValidUtf8(std::string_view s);

// True for an identity or key token: 1..max_len bytes of [A-Za-z0-9._:@-].
bool IsSafeToken(std::string_view s, size_t max_len = 128);

}  // namespace omniforge::core
