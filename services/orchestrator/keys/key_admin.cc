#include "services/orchestrator/keys/key_admin.h"

#include "absl/strings/str_cat.h"
#include "libs/core/logging.h"
#include "libs/core/text.h"

namespace omniforge::orchestrator {
namespace {

// Attempts at a key id no key has yet (48 random bits: a second one is
// already a sign of trouble).
constexpr int kIdAttempts = 3;

bool IsLowerHexId(std::string_view id) {
  if (id.size() != 12) return false;
  for (char c : id) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

absl::Status CheckLabel(std::string_view label) {
  if (label.size() > kMaxKeyLabelBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("label: at most ", kMaxKeyLabelBytes, " bytes, got ", label.size()));
  }
  for (char c : label) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      return absl::InvalidArgumentError("label: control characters (a line break) are not allowed");
    }
  }
  return absl::OkStatus();
}

absl::Status CheckOwner(const StoredKey& request) {
  if (request.kind == core::KeyKind::kGateway) {
    if (!request.user_id.empty()) {
      return absl::InvalidArgumentError(
          "user_id: a gateway key acts for its tenant's users and names none itself");
    }
    return absl::OkStatus();
  }
  if (!core::IsSafeToken(request.user_id)) {
    return absl::InvalidArgumentError(
        "user_id: a user key needs its user, 1..128 characters of [A-Za-z0-9._:@-]");
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status KeyAdmin::CheckTenant(const KeyAdminCaller& caller, const std::string& tenant) const {
  if (!core::IsSafeToken(tenant)) {
    return absl::InvalidArgumentError("tenant_id: 1..128 characters of [A-Za-z0-9._:@-]");
  }
  if (caller.tenant != core::kAllTenants && caller.tenant != tenant) {
    return absl::PermissionDeniedError(absl::StrCat(
        "admin key ", caller.name, " manages the keys of tenant ", caller.tenant, " only"));
  }
  return absl::OkStatus();
}

absl::Status KeyAdmin::CheckKeyId(const std::string& key_id) const {
  if (!IsLowerHexId(key_id)) {
    return absl::InvalidArgumentError("key_id: 12 lower-case hex digits");
  }
  if (is_file_key_(key_id)) {
    return absl::FailedPreconditionError(
        absl::StrCat("key ", key_id,
                     " comes from the key file (auth.api_keys_file): it is managed there, not "
                     "through this API (remove its line to revoke it)"));
  }
  return absl::OkStatus();
}

absl::StatusOr<IssuedKey> KeyAdmin::Create(const KeyAdminCaller& caller, const StoredKey& request) {
  if (absl::Status s = CheckTenant(caller, request.tenant_id); !s.ok()) return s;
  if (absl::Status s = CheckOwner(request); !s.ok()) return s;
  if (absl::Status s = CheckLabel(request.label); !s.ok()) return s;
  const int64_t now = clock_.NowMicros();
  if (request.expires_micros != 0 && request.expires_micros <= now) {
    return absl::InvalidArgumentError("expire_time: must be in the future");
  }
  for (int attempt = 0; attempt < kIdAttempts; ++attempt) {
    absl::StatusOr<std::string> key = core::NewApiKeySecret();
    if (!key.ok()) return key.status();
    IssuedKey issued{*key, request};
    issued.stored.key_id = std::string(core::ApiKeyIdOf(*key));
    if (is_file_key_(issued.stored.key_id)) continue;
    issued.stored.created_micros = now;
    issued.stored.rotated_micros = now;
    issued.stored.revoked_micros = 0;
    issued.stored.previous_valid_until_micros = 0;
    absl::Status inserted = store_.Insert(issued.stored, core::ApiKeyHash(*key));
    if (absl::IsAlreadyExists(inserted)) continue;
    if (!inserted.ok()) return inserted;
    core::LogInfo("API key created", {{"admin", caller.name},
                                      {"tenant", issued.stored.tenant_id},
                                      {"key_id", issued.stored.key_id}});
    Changed(issued.stored.key_id);
    return issued;
  }
  return absl::InternalError("no free key id after several attempts");
}

absl::StatusOr<std::vector<StoredKey>> KeyAdmin::List(const KeyAdminCaller& caller,
                                                      const std::string& tenant,
                                                      bool include_revoked) {
  if (absl::Status s = CheckTenant(caller, tenant); !s.ok()) return s;
  return store_.List(tenant, include_revoked);
}

absl::StatusOr<IssuedKey> KeyAdmin::Rotate(const KeyAdminCaller& caller, const std::string& tenant,
                                           const std::string& key_id, int64_t grace_micros) {
  if (absl::Status s = CheckTenant(caller, tenant); !s.ok()) return s;
  if (absl::Status s = CheckKeyId(key_id); !s.ok()) return s;
  if (grace_micros < 0 || grace_micros > kMaxRotationGraceMicros) {
    return absl::InvalidArgumentError("grace_period: 0 to 30 days");
  }
  absl::StatusOr<std::string> key = core::NewApiKeySecret(key_id);
  if (!key.ok()) return key.status();
  const int64_t now = clock_.NowMicros();
  absl::StatusOr<StoredKey> stored = store_.Rotate(tenant, key_id, core::ApiKeyHash(*key), now,
                                                   grace_micros > 0 ? now + grace_micros : 0);
  if (!stored.ok()) return stored.status();
  core::LogInfo("API key rotated", {{"admin", caller.name},
                                    {"tenant", tenant},
                                    {"key_id", key_id},
                                    {"grace_s", std::to_string(grace_micros / 1'000'000)}});
  Changed(key_id);
  return IssuedKey{*std::move(key), *std::move(stored)};
}

absl::StatusOr<StoredKey> KeyAdmin::Revoke(const KeyAdminCaller& caller, const std::string& tenant,
                                           const std::string& key_id) {
  if (absl::Status s = CheckTenant(caller, tenant); !s.ok()) return s;
  if (absl::Status s = CheckKeyId(key_id); !s.ok()) return s;
  absl::StatusOr<StoredKey> stored = store_.Revoke(tenant, key_id, clock_.NowMicros());
  if (!stored.ok()) return stored.status();
  core::LogInfo("API key revoked",
                {{"admin", caller.name}, {"tenant", tenant}, {"key_id", key_id}});
  Changed(key_id);
  return stored;
}

}  // namespace omniforge::orchestrator
