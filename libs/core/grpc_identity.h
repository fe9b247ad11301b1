// Reading and attaching the caller identity in gRPC metadata.
#pragma once

#include <grpcpp/client_context.h>
#include <grpcpp/server_context.h>

#include "absl/status/statusor.h"
#include "libs/core/identity.h"

namespace omniforge::core {

// The validated identity of the call (see ValidateIdentity for errors).
absl::StatusOr<Identity> IdentityFromContext(const grpc::ServerContextBase& context);

// Adds the identity to an outgoing call.
void AttachIdentity(grpc::ClientContext& context, const Identity& identity);

}  // namespace omniforge::core
