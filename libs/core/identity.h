// Who is calling: the tenant and user every read and write is scoped to.
//
// The orchestrator authenticates clients and forwards the identity to the
// internal services in gRPC metadata (kTenantMetadataKey, kUserMetadataKey).
#pragma once

#include <string>

#include "absl/status/status.h"

namespace omniforge::core {

inline constexpr char kTenantMetadataKey[] = "x-omniforge-tenant";
inline constexpr char kUserMetadataKey[] = "x-omniforge-user";

struct Identity {
  std::string tenant_id;
  std::string user_id;
};

// UNAUTHENTICATED when either part is missing, INVALID_ARGUMENT when a part
// is not 1..128 bytes of [A-Za-z0-9._:@-].
absl::Status ValidateIdentity(const Identity& identity);

}  // namespace omniforge::core
