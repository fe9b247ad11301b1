#include "libs/seal/key_admin.h"

#include "libs/core/logging.h"
#include "libs/core/text.h"
#include "libs/seal/key_ring.h"

namespace omniforge::seal {

absl::Status RotateTenantKey(const pg::DatabaseSettings& database, const std::string& keys_table,
                             const MasterKeySettings& master_keys, const std::string& tenant) {
  if (!core::IsSafeToken(tenant)) {
    return absl::InvalidArgumentError("--tenant must be 1..128 characters of [A-Za-z0-9._:@-]");
  }
  auto keys = LoadMasterKeys(master_keys);
  if (!keys.ok()) return keys.status();
  auto pool = pg::PgPool::Create(database.pool);
  if (!pool.ok()) return pool.status();
  KeyRing ring(**pool, keys_table, keys->current, keys->current_id);
  auto key_id = ring.Rotate(tenant);
  if (!key_id.ok()) return key_id.status();
  core::LogInfo("tenant key rotated",
                {{"tenant", tenant}, {"key_id", std::to_string(*key_id)}, {"table", keys_table}});
  return absl::OkStatus();
}

absl::Status RewrapTenantKeys(const pg::DatabaseSettings& database, const std::string& keys_table,
                              const MasterKeySettings& master_keys) {
  auto keys = LoadMasterKeys(master_keys);
  if (!keys.ok()) return keys.status();
  // Every tenant's keys: connect as the schema owner, whose cross-tenant
  // policy lets it see them all.
  pg::PgOptions owner = database.pool;
  owner.dsn = database.migrate_dsn;
  owner.role.clear();
  owner.pool_size = 1;
  auto pool = pg::PgPool::Create(owner);
  if (!pool.ok()) return pool.status();
  auto count = KeyRing::RewrapTenantKeys(**pool, keys_table, keys->current, keys->current_id,
                                         keys->previous);
  if (!count.ok()) return count.status();
  core::LogInfo("tenant keys re-wrapped", {{"master_key_id", keys->current_id},
                                           {"count", std::to_string(*count)},
                                           {"table", keys_table}});
  return absl::OkStatus();
}

}  // namespace omniforge::seal
