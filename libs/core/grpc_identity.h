// Reading and attaching the caller identity in gRPC metadata.
//
// Between the services a call carries its identity twice: as metadata
// (kTenantMetadataKey, kUserMetadataKey in identity.h) and as a caller
// assertion signed by the calling service (kAssertionMetadataKey,
// assertion.h). A service that has been given trusted keys
// (SetCallerVerifier, from its `identity.trusted_keys`) believes only the
// assertion: a call without a valid one, or whose metadata names someone
// else, is UNAUTHENTICATED. Without trusted keys the metadata alone is
// believed (the services warn at start).
#pragma once

#include <grpcpp/client_context.h>
#include <grpcpp/server_context.h>

#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "libs/core/assertion.h"
#include "libs/core/identity.h"

namespace omniforge::core {

inline constexpr char kAssertionMetadataKey[] = "x-omniforge-assertion";

// The audiences: the services that verify assertions, by name.
inline constexpr char kConversationAudience[] = "conversation";
inline constexpr char kIntentAudience[] = "intent";
inline constexpr char kExecutorAudience[] = "executor";

// The process's verifier and signer, set at start before any call is
// served or made. Null clears. A replaced one is kept alive for calls
// still using it.
void SetCallerVerifier(std::unique_ptr<const AssertionVerifier> verifier);
void SetCallerSigner(std::unique_ptr<AssertionSigner> signer);
bool HasCallerVerifier();

// The validated identity of the call (see ValidateIdentity for errors; with
// a verifier, UNAUTHENTICATED as described above).
absl::StatusOr<Identity> IdentityFromContext(const grpc::ServerContextBase& context);

// Adds the identity to an outgoing call to `audience` (a service name
// above), with an assertion for it when the process has a signer.
void AttachIdentity(grpc::ClientContext& context, const Identity& identity,
                    std::string_view audience);

// The assertion AttachIdentity adds (empty without a signer).
std::string CallerAssertion(const Identity& identity, std::string_view audience);

}  // namespace omniforge::core
