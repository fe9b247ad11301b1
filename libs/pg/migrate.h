// Versioned schema migrations: numbered SQL files embedded in the binary,
// each applied once in its own transaction and recorded in
// public.omniforge_schema_migrations with a checksum.
//
// Concurrent migrators (several replicas starting at once) serialise on an
// advisory lock. Editing a migration that was already applied is refused.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace omniforge::pg {

struct Migration {
  int version;
  std::string name;  // file name, e.g. "0001_init.sql"
  std::string sql;
};

// Applies the migrations of `component` not applied yet, in version order,
// connecting with `dsn` (a role allowed to create schemas). Returns how many
// were applied. FAILED_PRECONDITION when an applied migration's text changed;
// UNAVAILABLE when the database cannot be reached; INTERNAL on an SQL error
// (that migration is rolled back).
absl::StatusOr<int> ApplyMigrations(const std::string& dsn, const std::string& component,
                                    const std::vector<Migration>& migrations);

}  // namespace omniforge::pg
