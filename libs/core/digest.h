// Content digests: the hex SHA-256 of a text (libsodium), for values that
// must name exactly one content (an API key's hash, an action a user
// approves).
#pragma once

#include <string>
#include <string_view>

namespace omniforge::core {

// 64 lower-case hex digits. Thread-safe.
std::string Sha256Hex(std::string_view text);

}  // namespace omniforge::core
