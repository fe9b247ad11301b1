// A tenant's starting state, so the sandbox servers can be tried at once:
// five contacts (two called John, to show a name that needs a question),
// their busy time and the tenant's own events around tomorrow afternoon (so
// a booking can conflict), and a few messages. Everything is placed
// relative to the day of `now` in `zone`, so the same day gives the same
// seed.
#pragma once

#include "absl/time/time.h"
#include "services/sandbox/src/model.h"

namespace omniforge::sandbox {

// The address the sandbox mailbox sends from.
inline constexpr char kSandboxUserEmail[] = "you@sandbox.example";

SeedData MakeSeed(core::TimePoint now, const absl::TimeZone& zone);

}  // namespace omniforge::sandbox
