#include "libs/core/ids.h"

#include <sodium.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <mutex>

namespace omniforge::core {
namespace {

void EnsureSodium() {
  // sodium_init is itself idempotent, but a magic static makes the first call
  // race-free and costs nothing afterwards.
  static const bool ok = sodium_init() >= 0;
  if (!ok) {
    std::fputs("omniforge: sodium_init failed; no secure randomness\n", stderr);
    std::abort();
  }
}

uint64_t RandomU64() {
  uint64_t v = 0;
  randombytes_buf(&v, sizeof(v));
  return v;
}

// The 74 bits after the timestamp (12-bit rand_a, 62-bit rand_b) act as a
// randomly seeded counter within one millisecond (RFC 9562 section 6.2,
// method 2), so that ids from one process sort in creation order even when
// many are made in the same millisecond or the wall clock steps back.
struct UuidV7State {
  std::mutex mu;
  uint64_t ms = 0;
  uint16_t rand_a = 0;  // 12 bits used.
  uint64_t rand_b = 0;  // 62 bits used.
};

constexpr uint64_t kRandBMask = (uint64_t{1} << 62) - 1;

// Advances the tail by a random step, keeping most of the tail unguessable.
// Returns false when the 74-bit tail would wrap.
bool Increment(UuidV7State& s) {
  const uint64_t step = (RandomU64() & 0xFFFFFFFF) + 1;
  s.rand_b += step;
  if (s.rand_b <= kRandBMask) return true;
  s.rand_b &= kRandBMask;
  return ++s.rand_a < 0x1000;
}

void Reseed(UuidV7State& s, uint64_t ms) {
  s.ms = ms;
  // The top bit of rand_a starts clear so a millisecond has room for at
  // least 2^73 increments before it has to borrow the next one.
  s.rand_a = static_cast<uint16_t>(RandomU64() & 0x7FF);
  s.rand_b = RandomU64() & kRandBMask;
}

}  // namespace

std::string NewUuid() {
  EnsureSodium();
  static UuidV7State state;
  const auto now_ms = static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                                std::chrono::system_clock::now().time_since_epoch())
                                                .count());

  uint64_t ms = 0;
  uint16_t rand_a = 0;
  uint64_t rand_b = 0;
  {
    std::lock_guard<std::mutex> lock(state.mu);
    if (now_ms > state.ms) {
      Reseed(state, now_ms);
    } else if (!Increment(state)) {
      Reseed(state, state.ms + 1);
    }
    ms = state.ms;
    rand_a = state.rand_a;
    rand_b = state.rand_b;
  }

  std::array<uint8_t, 16> b{};
  for (int i = 0; i < 6; ++i) {
    b[i] = static_cast<uint8_t>(ms >> (8 * (5 - i)));
  }
  b[6] = static_cast<uint8_t>(0x70 | (rand_a >> 8));  // Version 7.
  b[7] = static_cast<uint8_t>(rand_a);
  b[8] = static_cast<uint8_t>(0x80 | (rand_b >> 56));  // Variant 10.
  for (int i = 9; i < 16; ++i) {
    b[i] = static_cast<uint8_t>(rand_b >> (8 * (15 - i)));
  }

  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(36);
  for (size_t i = 0; i < b.size(); ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out.push_back('-');
    out.push_back(kHex[b[i] >> 4]);
    out.push_back(kHex[b[i] & 0xF]);
  }
  return out;
}

std::string CanonicalId(std::string_view id) {
  std::string canonical(id);
  if (!IsUuid(canonical)) return canonical;
  for (char& c : canonical) {
    if (c >= 'A' && c <= 'F') c = static_cast<char>(c - 'A' + 'a');
  }
  return canonical;
}

bool IsUuid(std::string_view s) {
  if (s.size() != 36) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (i == 8 || i == 13 || i == 18 || i == 23) {
      if (c != '-') return false;
    } else if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'))) {
      return false;
    }
  }
  return true;
}

}  // namespace omniforge::core
