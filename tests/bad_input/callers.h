// Who sends a case of the bad-input corpus: the caller names a case gives,
// and what each presents. At the orchestrator's ports (ChatService, the
// admin port's KeyAdminService) a caller is an API or admin key; at the
// internal services, a caller assertion signed with the test key
// (tests/support/identity_keys.h), or a forged, expired, misdirected or
// missing one.
#pragma once

#include <grpcpp/client_context.h>

#include <string>
#include <string_view>

#include "libs/core/identity.h"

namespace omniforge::testing::bad_input {

// The users the corpus speaks of: user A holds the conversation, agent and
// dialogue the cases aim at; user B shares A's tenant; tenant B is another
// tenant's user.
inline const core::Identity kUserA{"acme", "alice"};
inline const core::Identity kUserB{"acme", "bob"};
inline const core::Identity kTenantB{"globex", "carol"};

// The keys of the stack under test.
struct CallerKeys {
  std::string user_a, user_b, tenant_b;  // API keys of the users above
  std::string gateway;                   // a gateway key of A's tenant
  std::string admin_root, admin_acme;    // admin keys: every tenant; A's tenant
};

// Adds what `caller` presents to `context`: through an API key when
// `audience` is empty (the orchestrator), else a caller assertion for
// `audience` (core::kConversationAudience...). False for a caller name it
// does not know. Thread-compatible; the signers it makes live as long as
// the program.
bool Present(const std::string& caller, const CallerKeys& keys, std::string_view audience,
             grpc::ClientContext& context);

}  // namespace omniforge::testing::bad_input
