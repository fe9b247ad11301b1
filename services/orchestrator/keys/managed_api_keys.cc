#include "services/orchestrator/keys/managed_api_keys.h"

namespace omniforge::orchestrator {

void ManagedApiKeys::ReplaceAll(std::vector<KeyCredential> credentials) {
  std::unordered_map<std::string, KeyCredential> keys;
  for (KeyCredential& c : credentials) {
    std::string id = c.key_id;
    keys.emplace(std::move(id), std::move(c));
  }
  absl::MutexLock lock(&mu_);
  keys_ = std::move(keys);
}

void ManagedApiKeys::Update(const std::vector<std::string>& ids,
                            std::vector<KeyCredential> credentials) {
  absl::MutexLock lock(&mu_);
  for (const std::string& id : ids) keys_.erase(id);
  for (KeyCredential& c : credentials) {
    std::string id = c.key_id;
    keys_.insert_or_assign(std::move(id), std::move(c));
  }
}

absl::StatusOr<core::Identity> ManagedApiKeys::Authenticate(std::string_view key) const {
  absl::StatusOr<core::KeyGrant> grant = Grant(key);
  if (!grant.ok()) return grant.status();
  if (grant->kind != core::KeyKind::kUser) {
    return absl::PermissionDeniedError("a gateway key acts only for the user it names");
  }
  return std::move(grant->identity);
}

absl::StatusOr<core::KeyGrant> ManagedApiKeys::Grant(std::string_view key) const {
  const std::string_view id = core::ApiKeyIdOf(key);
  if (id.empty()) return core::InvalidApiKey();
  const KeyHash presented = core::ApiKeyHash(key);
  const int64_t now = clock_.NowMicros();
  absl::MutexLock lock(&mu_);
  auto it = keys_.find(std::string(id));
  if (it == keys_.end()) return core::InvalidApiKey();
  const KeyCredential& c = it->second;
  const bool current = core::ApiKeyHashMatches(presented, c.hash);
  const bool previous = c.previous_hash.has_value() &&
                        core::ApiKeyHashMatches(presented, *c.previous_hash) &&
                        now < c.previous_valid_until_micros;
  if (!current && !previous) return core::InvalidApiKey();
  // Said only to whoever holds the key.
  if (c.expires_micros != 0 && now >= c.expires_micros)
    return core::ApiKeyExpired(c.expires_micros);
  return c.grant;
}

size_t ManagedApiKeys::size() const {
  absl::MutexLock lock(&mu_);
  return keys_.size();
}

absl::StatusOr<core::Identity> LayeredApiKeys::Authenticate(std::string_view key) const {
  absl::StatusOr<core::KeyGrant> grant = Grant(key);
  if (!grant.ok()) return grant.status();
  if (grant->kind != core::KeyKind::kUser) {
    return absl::PermissionDeniedError("a gateway key acts only for the user it names");
  }
  return std::move(grant->identity);
}

absl::StatusOr<core::KeyGrant> LayeredApiKeys::Grant(std::string_view key) const {
  const std::string_view id = core::ApiKeyIdOf(key);
  if (file_ != nullptr && (managed_ == nullptr || file_->Has(id))) return file_->Grant(key);
  if (managed_ != nullptr) return managed_->Grant(key);
  return core::InvalidApiKey();
}

}  // namespace omniforge::orchestrator
