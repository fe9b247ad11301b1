// Identifiers: UUIDv7 (time-ordered, random tail from libsodium).
#pragma once

#include <string>
#include <string_view>

namespace omniforge::core {

// A new UUIDv7 in canonical lower-case form. Thread-safe.
std::string NewUuid();

// True when `s` is a canonical UUID (8-4-4-4-12 hex digits, any case).
bool IsUuid(std::string_view s);

}  // namespace omniforge::core
