// Identifiers: UUIDv7 (time-ordered, random tail from libsodium).
#pragma once

#include <string>
#include <string_view>

namespace omniforge::core {

// A new UUIDv7 in canonical lower-case form. Thread-safe.
std::string NewUuid();

// True when `s` is a canonical UUID (8-4-4-4-12 hex digits, any case).
bool IsUuid(std::string_view s);

// The one form an id is kept and compared in: a UUID in lower case (the
// API accepts any case), anything else as it is. Two spellings of one
// conversation must never be two queues, two running turns or two keys.
std::string CanonicalId(std::string_view id);

}  // namespace omniforge::core
