#include "tests/bad_input/callers.h"

#include <chrono>
#include <functional>
#include <map>
#include <memory>

#include "libs/core/api_keys.h"
#include "libs/core/assertion.h"
#include "libs/core/clock.h"
#include "libs/core/grpc_identity.h"
#include "tests/support/identity_keys.h"

namespace omniforge::testing::bad_input {
namespace {

using core::AttachIdentity;

using Presenter = std::function<void(const CallerKeys&, grpc::ClientContext&)>;

// A seed no service trusts, under the trusted key's id.
constexpr char kUntrustedSeed[] =
    "756e747275737465642d6b65792d6f662d7468652d6261642d696e7075742d31";

// The wall clock an hour ago: its assertions expired 55 minutes ago.
class HourAgoClock final : public core::Clock {
 public:
  core::TimePoint Now() const override { return core::SystemClock().Now() - std::chrono::hours(1); }
};

void Bearer(grpc::ClientContext& context, const std::string& key) {
  context.AddMetadata("authorization", "Bearer " + key);
}

std::string WrongSecret(std::string key) {
  key.back() = key.back() == 'A' ? 'B' : 'A';
  return key;
}

const std::map<std::string, Presenter>& ApiKeyCallers() {
  static const auto* callers = new std::map<std::string, Presenter>{
      {"user_a", [](const CallerKeys& k, grpc::ClientContext& c) { Bearer(c, k.user_a); }},
      {"user_b", [](const CallerKeys& k, grpc::ClientContext& c) { Bearer(c, k.user_b); }},
      {"tenant_b", [](const CallerKeys& k, grpc::ClientContext& c) { Bearer(c, k.tenant_b); }},
      {"none", [](const CallerKeys&, grpc::ClientContext&) {}},
      {"malformed_key", [](const CallerKeys&, grpc::ClientContext& c) { Bearer(c, "not-a-key"); }},
      {"wrong_secret",
       [](const CallerKeys& k, grpc::ClientContext& c) { Bearer(c, WrongSecret(k.user_a)); }},
      {"unknown_key",
       [](const CallerKeys&, grpc::ClientContext& c) {
         Bearer(c, core::GenerateApiKey(kUserA, "never filed")->key);
       }},
      {"gateway", [](const CallerKeys& k, grpc::ClientContext& c) { Bearer(c, k.gateway); }},
      {"gateway_bad_user",
       [](const CallerKeys& k, grpc::ClientContext& c) {
         Bearer(c, k.gateway);
         c.AddMetadata(core::kOnBehalfOfHeader, "bad user!");
       }},
      {"gateway_user_b",
       [](const CallerKeys& k, grpc::ClientContext& c) {
         Bearer(c, k.gateway);
         c.AddMetadata(core::kOnBehalfOfHeader, kUserB.user_id);
       }},
      {"user_a_on_behalf",
       [](const CallerKeys& k, grpc::ClientContext& c) {
         Bearer(c, k.user_a);
         c.AddMetadata(core::kOnBehalfOfHeader, kUserB.user_id);
       }},
      {"admin_root", [](const CallerKeys& k, grpc::ClientContext& c) { Bearer(c, k.admin_root); }},
      {"admin_acme", [](const CallerKeys& k, grpc::ClientContext& c) { Bearer(c, k.admin_acme); }},
      {"admin_wrong_secret",
       [](const CallerKeys& k, grpc::ClientContext& c) { Bearer(c, WrongSecret(k.admin_root)); }},
  };
  return *callers;
}

void Metadata(grpc::ClientContext& context, const core::Identity& who) {
  context.AddMetadata(core::kTenantMetadataKey, who.tenant_id);
  context.AddMetadata(core::kUserMetadataKey, who.user_id);
}

// Assertions a service must not believe: signed an hour ago (expired), or
// with a key it does not trust under the trusted key's id.
std::string ExpiredAssertion(std::string_view audience) {
  static const HourAgoClock hour_ago;
  static auto* signer = new core::AssertionSigner(
      "bad-input", kTestIdentityKeyId, *core::ReadSigningKeyFile(TestIdentityKeys().signing_key),
      hour_ago);
  return signer->Assert(kUserA, audience);
}

std::string UntrustedAssertion(std::string_view audience) {
  static auto* signer = new core::AssertionSigner(
      "bad-input", kTestIdentityKeyId, *core::ParseSigningKey(kUntrustedSeed), core::SystemClock());
  return signer->Assert(kUserA, audience);
}

using AssertionPresenter = std::function<void(std::string_view audience, grpc::ClientContext&)>;

const std::map<std::string, AssertionPresenter>& AssertionCallers() {
  static const auto* callers = new std::map<std::string, AssertionPresenter>{
      {"user_a", [](std::string_view a, grpc::ClientContext& c) { AttachIdentity(c, kUserA, a); }},
      {"user_b", [](std::string_view a, grpc::ClientContext& c) { AttachIdentity(c, kUserB, a); }},
      {"tenant_b",
       [](std::string_view a, grpc::ClientContext& c) { AttachIdentity(c, kTenantB, a); }},
      {"none", [](std::string_view, grpc::ClientContext&) {}},
      {"unsigned", [](std::string_view, grpc::ClientContext& c) { Metadata(c, kUserA); }},
      {"wrong_audience",
       [](std::string_view a, grpc::ClientContext& c) {
         AttachIdentity(
             c, kUserA,
             a == core::kIntentAudience ? core::kConversationAudience : core::kIntentAudience);
       }},
      {"malformed_identity",
       [](std::string_view a, grpc::ClientContext& c) {
         AttachIdentity(c, {"bad tenant!", kUserA.user_id}, a);
       }},
      {"forged",
       [](std::string_view, grpc::ClientContext& c) {
         Metadata(c, kUserA);
         c.AddMetadata(core::kAssertionMetadataKey, "v1.forged.assertion");
       }},
      {"mismatch",
       [](std::string_view a, grpc::ClientContext& c) {
         Metadata(c, kUserB);
         c.AddMetadata(core::kAssertionMetadataKey, core::CallerAssertion(kUserA, a));
       }},
      {"expired",
       [](std::string_view a, grpc::ClientContext& c) {
         Metadata(c, kUserA);
         c.AddMetadata(core::kAssertionMetadataKey, ExpiredAssertion(a));
       }},
      {"untrusted",
       [](std::string_view a, grpc::ClientContext& c) {
         Metadata(c, kUserA);
         c.AddMetadata(core::kAssertionMetadataKey, UntrustedAssertion(a));
       }},
  };
  return *callers;
}

}  // namespace

bool Present(const std::string& caller, const CallerKeys& keys, std::string_view audience,
             grpc::ClientContext& context) {
  if (!audience.empty()) {
    auto found = AssertionCallers().find(caller);
    if (found == AssertionCallers().end()) return false;
    found->second(audience, context);
    return true;
  }
  auto found = ApiKeyCallers().find(caller);
  if (found == ApiKeyCallers().end()) return false;
  found->second(keys, context);
  return true;
}

}  // namespace omniforge::testing::bad_input
