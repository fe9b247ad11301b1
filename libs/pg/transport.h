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

// How long the client side of a connection waits for a server that has
// gone quiet (a host powered off, a network that drops packets): without
// them a blackholed database holds a thread past every deadline, since the
// server's statement_timeout never reaches it.
struct ClientTimeouts {
  int connect_timeout_s = 5;        // connecting and logging in, at most
  int keepalives_idle_s = 10;       // an idle connection is probed after this
  int keepalives_interval_s = 5;    // and again this often,
  int keepalives_count = 3;         // this many times before it is dropped
  int tcp_user_timeout_ms = 20000;  // data sent and not acknowledged, at most
};

// `dsn` (key=value or URI) with libpq's connect_timeout, keepalives,
// keepalives_idle, keepalives_interval, keepalives_count and
// tcp_user_timeout added, each unless the string sets it itself (the
// operator's own value wins).
std::string WithClientTimeouts(const std::string& dsn, const ClientTimeouts& timeouts);

}  // namespace omniforge::pg
