// The operator's commands on a service's tenant keys, shared by the
// services that seal (their `rotate-key` and `rewrap-keys` subcommands).
#pragma once

#include <string>

#include "absl/status/status.h"
#include "libs/pg/settings.h"
#include "libs/seal/master_keys.h"

namespace omniforge::seal {

// Starts `tenant`'s next data key in `keys_table`: new values are sealed
// with it, older ones stay readable.
absl::Status RotateTenantKey(const pg::DatabaseSettings& database, const std::string& keys_table,
                             const MasterKeySettings& master_keys, const std::string& tenant);

// Re-wraps every tenant key of `keys_table` with the current master key,
// connected as the schema owner (`database.migrate_dsn`); the previous
// master keys must include each key's current wrapper.
absl::Status RewrapTenantKeys(const pg::DatabaseSettings& database, const std::string& keys_table,
                              const MasterKeySettings& master_keys);

}  // namespace omniforge::seal
