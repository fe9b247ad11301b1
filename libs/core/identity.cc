#include "libs/core/identity.h"

#include <string>

#include "libs/core/text.h"

namespace omniforge::core {

absl::Status ValidateIdentity(const Identity& identity) {
  if (identity.tenant_id.empty() || identity.user_id.empty()) {
    return absl::UnauthenticatedError(std::string("missing caller identity: set the ") +
                                      kTenantMetadataKey + " and " + kUserMetadataKey +
                                      " metadata");
  }
  if (!IsSafeToken(identity.tenant_id) || !IsSafeToken(identity.user_id)) {
    return absl::InvalidArgumentError(
        "caller identity must be 1..128 characters of [A-Za-z0-9._:@-]");
  }
  return absl::OkStatus();
}

}  // namespace omniforge::core
