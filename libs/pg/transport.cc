#include "libs/pg/transport.h"

#include <arpa/inet.h>
#include <libpq-fe.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <memory>
#include <string_view>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace omniforge::pg {
namespace {

// The options libpq parsed from a connection string, by keyword; an option
// the string does not set is absent.
std::optional<std::map<std::string, std::string>> ParseConnectionString(const std::string& dsn) {
  char* error = nullptr;
  std::unique_ptr<PQconninfoOption, decltype(&PQconninfoFree)> options(
      PQconninfoParse(dsn.c_str(), &error), &PQconninfoFree);
  if (error != nullptr) PQfreemem(error);
  if (options == nullptr) return std::nullopt;
  std::map<std::string, std::string> set;
  for (const PQconninfoOption* o = options.get(); o->keyword != nullptr; ++o) {
    if (o->val != nullptr && o->val[0] != '\0') set[o->keyword] = o->val;
  }
  return set;
}

bool IsUri(const std::string& dsn) {
  return dsn.starts_with("postgresql://") || dsn.starts_with("postgres://");
}

}  // namespace

std::string WithClientTimeouts(const std::string& dsn, const ClientTimeouts& timeouts) {
  const std::optional<std::map<std::string, std::string>> set = ParseConnectionString(dsn);
  const std::pair<const char*, int> wanted[] = {
      {"connect_timeout", timeouts.connect_timeout_s},
      {"keepalives", 1},
      {"keepalives_idle", timeouts.keepalives_idle_s},
      {"keepalives_interval", timeouts.keepalives_interval_s},
      {"keepalives_count", timeouts.keepalives_count},
      {"tcp_user_timeout", timeouts.tcp_user_timeout_ms}};
  std::string out = dsn;
  bool query = IsUri(dsn) && dsn.find('?') != std::string::npos;
  for (const auto& [key, value] : wanted) {
    if (set.has_value() && set->contains(key)) continue;
    // libpq's own environment variable for it is the operator's word too.
    if (std::string_view(key) == "connect_timeout" && std::getenv("PGCONNECT_TIMEOUT") != nullptr) {
      continue;
    }
    if (IsUri(dsn)) {
      absl::StrAppend(&out, query ? "&" : "?", key, "=", value);
      query = true;
    } else {
      absl::StrAppend(&out, out.empty() ? "" : " ", key, "=", value);
    }
  }
  return out;
}

namespace {

bool IsLoopbackAddress(const std::string& address) {
  in_addr v4{};
  if (inet_pton(AF_INET, address.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{};
  if (inet_pton(AF_INET6, address.c_str(), &v6) == 1) return IN6_IS_ADDR_LOOPBACK(&v6) != 0;
  return false;
}

// One entry of libpq's host list (with its hostaddr, when one is given):
// true when the connection stays on this machine.
bool StaysLocal(const std::string& host, const std::string& hostaddr) {
  if (!hostaddr.empty()) return IsLoopbackAddress(hostaddr);
  // No host: libpq's default unix socket; a path or '@' name: a unix socket.
  if (host.empty() || host[0] == '/' || host[0] == '@') return true;
  return absl::AsciiStrToLower(host) == "localhost" || IsLoopbackAddress(host);
}

// What a connection with `sslmode` leaves open against a machine between
// the service and the server.
std::string WhatSslmodeLeavesOpen(const std::string& sslmode) {
  if (sslmode == "require") {
    return "encrypted, but the server is not verified: a machine in between can pose as it";
  }
  if (sslmode == "verify-ca") {
    return "the certificate's CA is checked but not its name: any server with a certificate "
           "from that CA can pose as this one";
  }
  // disable, allow, prefer (libpq's default) or a mode libpq will refuse.
  return "not verified and not surely encrypted: a machine in between can read and change the "
         "traffic";
}

}  // namespace

std::optional<std::string> UnverifiedTransportRisk(const std::string& dsn,
                                                   const LibpqEnvLookup& env) {
  const LibpqEnvLookup lookup =
      env != nullptr ? env : [](const std::string& name) -> std::optional<std::string> {
    const char* value = std::getenv(name.c_str());
    if (value == nullptr || value[0] == '\0') return std::nullopt;
    return std::string(value);
  };
  auto options = ParseConnectionString(dsn);
  if (!options.has_value()) return std::nullopt;
  auto option = [&](const std::string& keyword, const std::string& variable) -> std::string {
    if (auto it = options->find(keyword); it != options->end()) return it->second;
    return lookup(variable).value_or("");
  };
  std::string sslmode = option("sslmode", "PGSSLMODE");
  if (sslmode.empty()) sslmode = "prefer";  // libpq's default
  if (sslmode == "verify-full") return std::nullopt;
  const std::vector<std::string> hosts = absl::StrSplit(option("host", "PGHOST"), ',');
  const std::vector<std::string> hostaddrs = absl::StrSplit(option("hostaddr", "PGHOSTADDR"), ',');
  for (size_t i = 0; i < std::max(hosts.size(), hostaddrs.size()); ++i) {
    const std::string host =
        i < hosts.size() ? std::string(absl::StripAsciiWhitespace(hosts[i])) : "";
    const std::string hostaddr =
        i < hostaddrs.size() ? std::string(absl::StripAsciiWhitespace(hostaddrs[i])) : "";
    if (StaysLocal(host, hostaddr)) continue;
    std::string where = host.empty() ? hostaddr : host;
    if (!host.empty() && !hostaddr.empty()) absl::StrAppend(&where, " (", hostaddr, ")");
    return absl::StrCat("PostgreSQL at ", where, " with sslmode=", sslmode, " is ",
                        WhatSslmodeLeavesOpen(sslmode),
                        "; set sslmode=verify-full and sslrootcert (the CA that signed the "
                        "server's certificate)");
  }
  return std::nullopt;
}

}  // namespace omniforge::pg
