#include "libs/core/grpc_identity.h"

#include <atomic>
#include <string>
#include <utility>

namespace omniforge::core {
namespace {

// Owned here; read without a lock by every call once set at start.
std::unique_ptr<const AssertionVerifier> verifier_owner;
std::atomic<const AssertionVerifier*> verifier{nullptr};
std::unique_ptr<AssertionSigner> signer_owner;
std::atomic<AssertionSigner*> signer{nullptr};

std::string Metadata(const grpc::ServerContextBase& context, const char* key) {
  const auto& metadata = context.client_metadata();
  auto it = metadata.find(key);
  return it == metadata.end() ? std::string() : std::string(it->second.data(), it->second.size());
}

}  // namespace

void SetCallerVerifier(std::unique_ptr<const AssertionVerifier> v) {
  verifier.store(v.get());
  verifier_owner = std::move(v);
}

void SetCallerSigner(std::unique_ptr<AssertionSigner> s) {
  signer.store(s.get());
  signer_owner = std::move(s);
}

bool HasCallerVerifier() { return verifier.load() != nullptr; }

absl::StatusOr<Identity> IdentityFromContext(const grpc::ServerContextBase& context) {
  Identity identity{Metadata(context, kTenantMetadataKey), Metadata(context, kUserMetadataKey)};
  if (const AssertionVerifier* v = verifier.load(); v != nullptr) {
    auto asserted = v->Verify(Metadata(context, kAssertionMetadataKey));
    if (!asserted.ok()) return asserted.status();
    if ((!identity.tenant_id.empty() && identity.tenant_id != asserted->who.tenant_id) ||
        (!identity.user_id.empty() && identity.user_id != asserted->who.user_id)) {
      return absl::UnauthenticatedError(
          "the identity metadata names someone other than the caller assertion");
    }
    return asserted->who;
  }
  if (absl::Status status = ValidateIdentity(identity); !status.ok()) {
    return status;
  }
  return identity;
}

void AttachIdentity(grpc::ClientContext& context, const Identity& identity,
                    std::string_view audience) {
  context.AddMetadata(kTenantMetadataKey, identity.tenant_id);
  context.AddMetadata(kUserMetadataKey, identity.user_id);
  if (AssertionSigner* s = signer.load(); s != nullptr) {
    context.AddMetadata(kAssertionMetadataKey, s->Assert(identity, audience));
  }
}

std::string CallerAssertion(const Identity& identity, std::string_view audience) {
  AssertionSigner* s = signer.load();
  return s == nullptr ? std::string() : s->Assert(identity, audience);
}

}  // namespace omniforge::core
