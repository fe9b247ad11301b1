#include "libs/core/grpc_identity.h"

#include <atomic>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace omniforge::core {
namespace {

// Read without a lock by every call. Replaced ones are kept, never freed:
// a call may still be using one (a process replaces them at most a few
// times, at start or in tests).
std::atomic<const AssertionVerifier*> verifier{nullptr};
std::atomic<AssertionSigner*> signer{nullptr};
std::mutex owners_mu;
std::vector<std::unique_ptr<const AssertionVerifier>> verifiers;  // guarded by owners_mu
std::vector<std::unique_ptr<AssertionSigner>> signers;            // guarded by owners_mu

std::string Metadata(const grpc::ServerContextBase& context, const char* key) {
  const auto& metadata = context.client_metadata();
  auto it = metadata.find(key);
  return it == metadata.end() ? std::string() : std::string(it->second.data(), it->second.size());
}

}  // namespace

void SetCallerVerifier(std::unique_ptr<const AssertionVerifier> v) {
  std::lock_guard lock(owners_mu);
  verifier.store(v.get());
  if (v != nullptr) verifiers.push_back(std::move(v));
}

void SetCallerSigner(std::unique_ptr<AssertionSigner> s) {
  std::lock_guard lock(owners_mu);
  signer.store(s.get());
  if (s != nullptr) signers.push_back(std::move(s));
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
