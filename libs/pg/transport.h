// Whether a PostgreSQL connection string leaves its traffic unverified on
// the network: a host other than the local machine reached without
// sslmode=verify-full, so a machine in between could read the statements
// and their results, or pose as the server, unnoticed.
#pragma once

#include <functional>
#include <optional>
#include <string>

namespace omniforge::pg {

// Looks up a libpq environment variable (PGHOST, PGHOSTADDR, PGSSLMODE):
// libpq uses them for what the connection string leaves out.
using LibpqEnvLookup = std::function<std::optional<std::string>(const std::string&)>;

// When `dsn` (a libpq key=value string or URI) reaches a host that is not
// loopback or a unix socket with an sslmode other than verify-full, the
// risk in one sentence naming that host and the sslmode (never the
// password); nullopt otherwise, and for a string libpq cannot parse (the
// connection then fails with libpq's own message). `env` defaults to getenv.
std::optional<std::string> UnverifiedTransportRisk(const std::string& dsn,
                                                   const LibpqEnvLookup& env = nullptr);

}  // namespace omniforge::pg
