#include "libs/pg/transport.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>

#include "libs/pg/pool.h"

namespace omniforge::pg {
namespace {

// libpq's environment as `variables` set it, and nothing else.
LibpqEnvLookup Env(std::map<std::string, std::string> variables = {}) {
  return [variables = std::move(variables)](const std::string& name) -> std::optional<std::string> {
    auto it = variables.find(name);
    if (it == variables.end()) return std::nullopt;
    return it->second;
  };
}

TEST(UnverifiedTransportRisk, ARemoteHostWithoutVerifyFullIsARisk) {
  for (const char* dsn : {
           "host=pg.example.internal dbname=omniforge",  // libpq's default: prefer
           "host=pg.example.internal sslmode=disable",
           "host=pg.example.internal sslmode=require",
           "host=pg.example.internal sslmode=verify-ca sslrootcert=/ca.crt",
           "host=10.0.0.7 sslmode=prefer",
           "postgresql://omniforge:secret@pg.example.internal:5432/omniforge?sslmode=require",
           // One remote host in a list is enough.
           "host=localhost,pg.example.internal sslmode=require",
           // hostaddr is where libpq connects, whatever the name.
           "host=localhost hostaddr=10.0.0.7 sslmode=require",
       }) {
    const auto risk = UnverifiedTransportRisk(dsn, Env());
    ASSERT_TRUE(risk.has_value()) << dsn;
    EXPECT_NE(risk->find("verify-full"), std::string::npos) << *risk;
    EXPECT_EQ(risk->find("secret"), std::string::npos) << *risk;
  }
}

TEST(UnverifiedTransportRisk, TheRiskNamesTheHostAndWhatTheSslmodeLeavesOpen) {
  EXPECT_EQ(
      UnverifiedTransportRisk("host=pg.example.internal password=hunter2 sslmode=require", Env()),
      "PostgreSQL at pg.example.internal with sslmode=require is encrypted, but the server "
      "is not verified: a machine in between can pose as it; set sslmode=verify-full and "
      "sslrootcert (the CA that signed the server's certificate)");
  const auto prefer = UnverifiedTransportRisk("host=postgres dbname=omniforge", Env());
  ASSERT_TRUE(prefer.has_value());
  EXPECT_NE(prefer->find("PostgreSQL at postgres with sslmode=prefer is not verified and not "
                         "surely encrypted"),
            std::string::npos)
      << *prefer;
  const auto verify_ca =
      UnverifiedTransportRisk("host=10.1.2.3 sslmode=verify-ca sslrootcert=/ca.crt", Env());
  ASSERT_TRUE(verify_ca.has_value());
  EXPECT_NE(verify_ca->find("at 10.1.2.3 with sslmode=verify-ca"), std::string::npos);
  EXPECT_NE(verify_ca->find("not its name"), std::string::npos) << *verify_ca;
  const auto hostaddr =
      UnverifiedTransportRisk("host=localhost hostaddr=10.0.0.7 sslmode=disable", Env());
  ASSERT_TRUE(hostaddr.has_value());
  EXPECT_NE(hostaddr->find("PostgreSQL at localhost (10.0.0.7) with sslmode=disable"),
            std::string::npos)
      << *hostaddr;
}

TEST(UnverifiedTransportRisk, VerifyFullOrTheLocalMachineIsNoRisk) {
  for (const char* dsn : {
           "host=pg.example.internal sslmode=verify-full sslrootcert=/ca.crt",
           "postgresql://pg.example.internal/omniforge?sslmode=verify-full",
           "host=127.0.0.1 port=55432 user=omniforge dbname=omniforge",
           "host=127.0.0.5 sslmode=disable",
           "host=localhost sslmode=disable",
           "host=LocalHost",
           "host=::1",
           "host=/var/run/postgresql dbname=omniforge",
           "dbname=omniforge",  // libpq's default unix socket
           "host=pg.example.internal hostaddr=127.0.0.1",
           "host=localhost,127.0.0.1",
       }) {
    EXPECT_EQ(UnverifiedTransportRisk(dsn, Env()), std::nullopt) << dsn;
  }
}

TEST(UnverifiedTransportRisk, LibpqsEnvironmentFillsWhatTheStringLeavesOut) {
  EXPECT_EQ(UnverifiedTransportRisk("dbname=omniforge", Env({{"PGHOST", "pg.example.internal"},
                                                             {"PGSSLMODE", "verify-full"}})),
            std::nullopt);
  EXPECT_TRUE(UnverifiedTransportRisk("dbname=omniforge", Env({{"PGHOST", "pg.example.internal"}}))
                  .has_value());
  EXPECT_TRUE(
      UnverifiedTransportRisk("dbname=omniforge", Env({{"PGHOSTADDR", "192.0.2.10"}})).has_value());
  // The string wins over the environment.
  EXPECT_TRUE(UnverifiedTransportRisk("host=pg.example.internal sslmode=require",
                                      Env({{"PGSSLMODE", "verify-full"}}))
                  .has_value());
  EXPECT_EQ(UnverifiedTransportRisk("host=127.0.0.1", Env({{"PGHOST", "pg.example.internal"}})),
            std::nullopt);
}

TEST(UnverifiedTransportRisk, AStringLibpqCannotParseIsLeftToTheConnection) {
  EXPECT_EQ(UnverifiedTransportRisk("host=pg.example.internal nonsense", Env()), std::nullopt);
  EXPECT_EQ(UnverifiedTransportRisk("host=pg.example.internal bogus_option=1", Env()),
            std::nullopt);
}

TEST(WithClientTimeouts, AddsEachTimeoutToAKeyValueString) {
  EXPECT_EQ(WithClientTimeouts("host=db user=u", {}),
            "host=db user=u connect_timeout=5 keepalives=1 keepalives_idle=10 "
            "keepalives_interval=5 keepalives_count=3 tcp_user_timeout=20000");
}

TEST(WithClientTimeouts, TheStringsOwnValuesWin) {
  ClientTimeouts timeouts;
  timeouts.connect_timeout_s = 7;
  EXPECT_EQ(WithClientTimeouts("host=db connect_timeout=30 keepalives=0", timeouts),
            "host=db connect_timeout=30 keepalives=0 keepalives_idle=10 "
            "keepalives_interval=5 keepalives_count=3 tcp_user_timeout=20000");
}

TEST(WithClientTimeouts, AUriGetsThemAsQueryParameters) {
  EXPECT_EQ(WithClientTimeouts("postgresql://u@db/app", {}),
            "postgresql://u@db/app?connect_timeout=5&keepalives=1&keepalives_idle=10&"
            "keepalives_interval=5&keepalives_count=3&tcp_user_timeout=20000");
  EXPECT_EQ(WithClientTimeouts("postgres://u@db/app?sslmode=verify-full&connect_timeout=9", {}),
            "postgres://u@db/app?sslmode=verify-full&connect_timeout=9&keepalives=1&"
            "keepalives_idle=10&keepalives_interval=5&keepalives_count=3&tcp_user_timeout=20000");
}

TEST(WithClientTimeouts, PgConnectTimeoutInTheEnvironmentWinsToo) {
  ASSERT_EQ(setenv("PGCONNECT_TIMEOUT", "40", 1), 0);
  const std::string dsn = WithClientTimeouts("host=db", {});
  unsetenv("PGCONNECT_TIMEOUT");
  EXPECT_EQ(dsn.find("connect_timeout"), std::string::npos) << dsn;
  EXPECT_NE(dsn.find("keepalives=1"), std::string::npos) << dsn;
}

// A server that takes the connection and never answers (a host gone quiet,
// a network dropping packets): the pool gives up after connect_timeout
// instead of holding the thread forever.
TEST(WithClientTimeouts, APoolGivesUpOnAServerThatNeverAnswers) {
  const int listener = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(listener, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
  ASSERT_EQ(listen(listener, 16), 0);  // the kernel completes connections; none is read
  socklen_t length = sizeof address;
  ASSERT_EQ(getsockname(listener, reinterpret_cast<sockaddr*>(&address), &length), 0);
  PgOptions options;
  options.dsn = "host=127.0.0.1 port=" + std::to_string(ntohs(address.sin_port)) +
                " user=nobody dbname=none sslmode=disable";
  options.timeouts.connect_timeout_s = 2;
  const auto started = std::chrono::steady_clock::now();
  const absl::StatusOr<std::unique_ptr<PgPool>> pool = PgPool::Create(options);
  const auto took = std::chrono::steady_clock::now() - started;
  close(listener);
  EXPECT_EQ(pool.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_GE(took, std::chrono::milliseconds(1500));
  EXPECT_LT(took, std::chrono::seconds(10));
}

}  // namespace
}  // namespace omniforge::pg
