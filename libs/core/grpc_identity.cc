#include "libs/core/grpc_identity.h"

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

absl::StatusOr<Identity> IdentityFromContext(const grpc::ServerContextBase& context) {
  Identity identity;
  const auto& metadata = context.client_metadata();
  if (auto it = metadata.find(kTenantMetadataKey); it != metadata.end()) {
    identity.tenant_id.assign(it->second.data(), it->second.size());
  }
  if (auto it = metadata.find(kUserMetadataKey); it != metadata.end()) {
    identity.user_id.assign(it->second.data(), it->second.size());
  }
  if (absl::Status status = ValidateIdentity(identity); !status.ok()) {
    return status;
  }
  return identity;
}

void AttachIdentity(grpc::ClientContext& context, const Identity& identity) {
  context.AddMetadata(kTenantMetadataKey, identity.tenant_id);
  context.AddMetadata(kUserMetadataKey, identity.user_id);
}

}  // namespace omniforge::core
