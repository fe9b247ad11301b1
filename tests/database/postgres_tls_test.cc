// PostgreSQL over TLS with the server verified (sslmode=verify-full): a
// cluster of the test's own, started by scripts/pg.sh with a certificate
// for localhost that a test CA signed (both made with openssl here), takes
// TCP connections over TLS only. The pool a service builds from its
// database settings, the conversation service and its migrations connect
// through it, and refuse a server another CA signed or reached by a name
// its certificate does not hold.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <pqxx/pqxx>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "libs/core/config.h"
#include "libs/core/ids.h"
#include "libs/pg/migrate.h"
#include "libs/pg/pool.h"
#include "libs/pg/settings.h"
#include "tests/support/command.h"
#include "tests/support/identity_keys.h"
#include "tests/support/private_cluster.h"
#include "tests/support/server_process.h"
#include "tests/support/test_database.h"

namespace omniforge::pg {
const std::vector<Migration>& ConversationMigrations();
}

namespace omniforge {
namespace {

namespace fs = std::filesystem;

// The server's certificate holds the name localhost only (not 127.0.0.1).
constexpr char kServerExtensions[] =
    "subjectAltName=DNS:localhost\\nextendedKeyUsage=serverAuth\\n";
constexpr char kClientExtensions[] = "extendedKeyUsage=clientAuth\\n";

// What libpq says when the CA in sslrootcert did not sign the server's
// certificate, and when the host is not a name the certificate holds.
constexpr char kOtherCa[] = "certificate verify failed";
constexpr char kOtherName[] = "does not match host name";

// Makes CA `ca` and, signed by it, a certificate (CN = its name) for each
// of `leaves`, with its openssl -extfile lines. False on failure.
bool MakeCertificates(const fs::path& dir, const std::string& ca,
                      const std::vector<std::pair<std::string, std::string>>& leaves) {
  std::string script = absl::StrCat(
      "(set -e; cd ", dir.string(),
      "; openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj /CN=",
      ca, " -keyout ", ca, ".key -out ", ca, ".crt");
  for (const auto& [name, extensions] : leaves) {
    absl::StrAppend(&script, "; printf '", extensions, "' > ", name,
                    ".ext; openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes",
                    " -subj /CN=", name, " -keyout ", name, ".key -out ", name, ".csr");
    absl::StrAppend(&script, "; openssl x509 -req -in ", name, ".csr -CA ", ca, ".crt -CAkey ", ca,
                    ".key -CAcreateserial -days 1 -out ", name, ".crt -extfile ", name,
                    ".ext; chmod 600 ", name, ".key");
  }
  absl::StrAppend(&script, ") >/dev/null 2>&1");
  return std::system(script.c_str()) == 0;
}

// The exit code of a process that exited, -1 when it did not (killed).
int ExitCode(std::optional<int> wait_status) {
  if (!wait_status.has_value() || !WIFEXITED(*wait_status)) return -1;
  return WEXITSTATUS(*wait_status);
}

class PostgresTlsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new fs::path(fs::temp_directory_path() / ("omniforge-pgtls-" + core::NewUuid()));
    fs::create_directories(*dir_);
    ASSERT_TRUE(MakeCertificates(
        *dir_, "pg-ca",
        {{"server", kServerExtensions}, {"omniforge_conversation", kClientExtensions}}));
    ASSERT_TRUE(MakeCertificates(*dir_, "rogue-ca", {}));
    cluster_ = new testing::PrivateCluster(*dir_, {"OMNIFORGE_PG_TLS_CERT=" + File("server.crt"),
                                                   "OMNIFORGE_PG_TLS_KEY=" + File("server.key"),
                                                   "OMNIFORGE_PG_TLS_CA=" + File("pg-ca.crt")});
    const std::optional<std::string> error = cluster_->Start();
    ASSERT_EQ(error, std::nullopt);
    ASSERT_NE(cluster_->start_output().find("TLS on"), std::string::npos)
        << cluster_->start_output();
    // The roles, the database and the conversation schema, all over TLS.
    db_ = new testing::TestDatabase(
        absl::StrCat(Tls("localhost", "pg-ca"), " user=omniforge dbname=postgres"));
  }

  static void TearDownTestSuite() {
    delete db_;
    db_ = nullptr;
    if (cluster_ != nullptr) {
      EXPECT_EQ(cluster_->Stop(), std::nullopt);
    }
    delete cluster_;
    cluster_ = nullptr;
    std::error_code ignored;
    fs::remove_all(*dir_, ignored);
    delete dir_;
  }

  static std::string File(const std::string& name) { return (*dir_ / name).string(); }

  // Reaching the cluster as `host`, verifying it with CA `ca`'s certificate.
  static std::string Tls(const std::string& host, const std::string& ca) {
    return absl::StrCat("host=", host, " port=", cluster_->port(),
                        " sslmode=verify-full sslrootcert=", File(ca + ".crt"));
  }

  // The conversation service's login over TLS, with `overrides` (in a
  // key=value string the last value of a key counts).
  static std::string ServiceDsn(const std::string& overrides = "") {
    return absl::StrCat(db_->service_dsn("conversation"), " ", overrides);
  }

  // The conversation service's environment: `dsn` to serve with,
  // `migrate_dsn` to migrate with.
  static std::vector<std::string> ServiceEnv(const std::string& dsn,
                                             const std::string& migrate_dsn) {
    return {"OMNIFORGE_DATABASE_DSN=" + dsn, "OMNIFORGE_DATABASE_MIGRATE_DSN=" + migrate_dsn,
            "OMNIFORGE_ENCRYPTION_MASTER_KEY=" + std::string(64, 'c'), testing::TrustTestKeyEnv()};
  }

  static fs::path* dir_;
  static testing::PrivateCluster* cluster_;
  static testing::TestDatabase* db_;
};

fs::path* PostgresTlsTest::dir_ = nullptr;
testing::PrivateCluster* PostgresTlsTest::cluster_ = nullptr;
testing::TestDatabase* PostgresTlsTest::db_ = nullptr;

// What a service's pool opens for `dsn`: its settings read as a service
// reads them (database.dsn), nothing from the environment.
absl::StatusOr<std::unique_ptr<pg::PgPool>> ServicePool(const std::string& dsn) {
  auto config = core::ConfigReader::FromString(
      absl::StrCat("database:\n  dsn: \"", dsn, "\"\n  pool_size: 2\n"),
      [](const std::string&) -> std::optional<std::string> { return std::nullopt; });
  if (!config.ok()) return config.status();
  const pg::DatabaseSettings settings =
      pg::ReadDatabaseSettings(*config, "omniforge_conversation", true, 16);
  if (absl::Status status = config->Finish(); !status.ok()) return status;
  return pg::PgPool::Create(settings.pool);
}

TEST_F(PostgresTlsTest, AServicesPoolConnectsOverVerifiedTls) {
  auto pool = ServicePool(ServiceDsn());
  ASSERT_TRUE(pool.ok()) << pool.status();
  auto lease = (*pool)->Acquire();
  ASSERT_TRUE(lease.ok()) << lease.status();
  pqxx::nontransaction tx(lease->conn());
  const pqxx::row row = tx.exec1(
      "SELECT s.ssl, s.version, current_user, s.client_dn IS NULL FROM pg_stat_ssl s"
      " WHERE s.pid = pg_backend_pid()");
  EXPECT_TRUE(row[0].as<bool>());
  EXPECT_EQ(row[1].as<std::string>("").rfind("TLSv1.", 0), 0U) << row[1].c_str();
  EXPECT_EQ(row[2].as<std::string>(), "omniforge_conversation");
  EXPECT_TRUE(row[3].as<bool>());  // no client certificate was asked for

  // The server takes TCP over TLS only: a connection without is refused,
  // so every connection this test makes is encrypted.
  auto plain = ServicePool(ServiceDsn("sslmode=disable"));
  ASSERT_FALSE(plain.ok());
  EXPECT_EQ(plain.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(plain.status().message().find("no encryption"), std::string::npos) << plain.status();
}

TEST_F(PostgresTlsTest, AClientCertificateInTheDsnIsPresented) {
  auto pool = ServicePool(ServiceDsn(absl::StrCat("sslcert=", File("omniforge_conversation.crt"),
                                                  " sslkey=", File("omniforge_conversation.key"))));
  ASSERT_TRUE(pool.ok()) << pool.status();
  auto lease = (*pool)->Acquire();
  ASSERT_TRUE(lease.ok()) << lease.status();
  pqxx::nontransaction tx(lease->conn());
  const pqxx::row row =
      tx.exec1("SELECT ssl, client_dn FROM pg_stat_ssl WHERE pid = pg_backend_pid()");
  EXPECT_TRUE(row[0].as<bool>());
  EXPECT_EQ(row[1].as<std::string>(""), "/CN=omniforge_conversation");
}

TEST_F(PostgresTlsTest, TheConversationServiceServesOverVerifiedTls) {
  testing::ServerProcess service(OMNIFORGE_CONVERSATION_BIN);
  ASSERT_EQ(service.Start(ServiceEnv(ServiceDsn(), db_->owner_dsn())), std::nullopt);
  // The server's view of the service's connections (its pool keeps one open).
  pqxx::connection admin(db_->dsn());
  pqxx::nontransaction tx(admin);
  const pqxx::row row = tx.exec_params1(
      "SELECT count(*), coalesce(bool_and(s.ssl), false) FROM pg_stat_activity a"
      " JOIN pg_stat_ssl s USING (pid) WHERE a.usename = 'omniforge_conversation'"
      " AND a.datname = $1",
      db_->name());
  EXPECT_GE(row[0].as<int>(), 1);
  EXPECT_TRUE(row[1].as<bool>());
  EXPECT_EQ(service.JoinedLog().find("database connection not verified"), std::string::npos)
      << service.JoinedLog();
}

// Each way the server fails verification, for the pool and the service:
// with database.dsn, or database.migrate_dsn (migrated at start).
struct Refusal {
  std::string what;
  std::string overrides;  // on the DSN that verifies the server
  std::string expected;   // in the error
};

std::vector<Refusal> Refusals(const std::string& rogue_ca) {
  return {{"a server another CA signed", "sslrootcert=" + rogue_ca, kOtherCa},
          {"a name the certificate lacks", "host=127.0.0.1", kOtherName}};
}

TEST_F(PostgresTlsTest, APoolRefusesAServerItCannotVerify) {
  for (const Refusal& refusal : Refusals(File("rogue-ca.crt"))) {
    auto pool = ServicePool(ServiceDsn(refusal.overrides));
    ASSERT_FALSE(pool.ok()) << refusal.what;
    EXPECT_EQ(pool.status().code(), absl::StatusCode::kUnavailable) << refusal.what;
    EXPECT_NE(pool.status().message().find(refusal.expected), std::string::npos)
        << refusal.what << ": " << pool.status();
  }
  // What the refusal says to check.
  auto other_ca = ServicePool(ServiceDsn("sslrootcert=" + File("rogue-ca.crt")));
  EXPECT_NE(other_ca.status().message().find("not signed by the CA in sslrootcert"),
            std::string::npos)
      << other_ca.status();
  auto other_name = ServicePool(ServiceDsn("host=127.0.0.1"));
  EXPECT_NE(other_name.status().message().find("host must be a name the server's certificate"),
            std::string::npos)
      << other_name.status();
  // verify-ca checks the CA alone: the same name passes. verify-full is
  // what refuses it.
  auto chain_only = ServicePool(ServiceDsn("host=127.0.0.1 sslmode=verify-ca"));
  EXPECT_TRUE(chain_only.ok()) << chain_only.status();
}

TEST_F(PostgresTlsTest, TheServiceRefusesToStartOnAServerItCannotVerify) {
  for (const Refusal& refusal : Refusals(File("rogue-ca.crt"))) {
    const std::vector<std::pair<std::string, std::vector<std::string>>> cases = {
        {"database.dsn", ServiceEnv(ServiceDsn(refusal.overrides), db_->owner_dsn())},
        {"database.migrate_dsn",
         ServiceEnv(ServiceDsn(), absl::StrCat(db_->owner_dsn(), " ", refusal.overrides))},
    };
    for (const auto& [key, env] : cases) {
      testing::ServerProcess service(OMNIFORGE_CONVERSATION_BIN);
      const std::optional<std::string> failed = service.Start(env);
      ASSERT_TRUE(failed.has_value()) << key << ", " << refusal.what << ": it served";
      EXPECT_NE(failed->find("did not start (exited)"), std::string::npos) << *failed;
      EXPECT_EQ(ExitCode(service.WaitForExit(std::chrono::seconds(10))), 1)
          << key << ", " << refusal.what;
      EXPECT_NE(service.JoinedLog().find(refusal.expected), std::string::npos)
          << key << ", " << refusal.what << ": " << service.JoinedLog();
    }
  }
}

TEST_F(PostgresTlsTest, MigrationsRunOverVerifiedTlsOnly) {
  // A database with no schema yet, owned by the test databases' owner.
  const std::string fresh = db_->name() + "_m";
  pqxx::connection admin(db_->dsn());
  pqxx::nontransaction(admin).exec(
      absl::StrCat("CREATE DATABASE ", admin.quote_name(fresh), " OWNER omniforge_test_owner"));
  const std::string migrate_dsn = absl::StrCat(db_->owner_dsn(), " dbname=", fresh);
  auto migrate = [&](const std::string& overrides) {
    return testing::RunCommand(
        {OMNIFORGE_CONVERSATION_BIN, "migrate"}, "",
        {absl::StrCat("OMNIFORGE_DATABASE_MIGRATE_DSN=", migrate_dsn, " ", overrides)});
  };
  auto applied = [&] {
    pqxx::connection conn(absl::StrCat(db_->dsn(), " dbname=", fresh));
    return pqxx::nontransaction(conn)
        .exec1(
            "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'"
            " AND tablename = 'omniforge_schema_migrations'")[0]
        .as<int>();
  };
  for (const Refusal& refusal : Refusals(File("rogue-ca.crt"))) {
    const testing::CommandResult refused = migrate(refusal.overrides);
    EXPECT_EQ(refused.exit_code, 1) << refusal.what << ": " << refused.err;
    EXPECT_NE(refused.err.find(refusal.expected), std::string::npos)
        << refusal.what << ": " << refused.err;
  }
  EXPECT_EQ(applied(), 0);  // nothing reached the database

  const testing::CommandResult done = migrate("");
  ASSERT_EQ(done.exit_code, 0) << done.err;
  EXPECT_NE(done.err.find("schema up to date"), std::string::npos) << done.err;
  {
    pqxx::connection conn(absl::StrCat(db_->dsn(), " dbname=", fresh));
    EXPECT_EQ(pqxx::nontransaction(conn)
                  .exec1("SELECT count(*) FROM public.omniforge_schema_migrations"
                         " WHERE component = 'conversation'")[0]
                  .as<size_t>(),
              pg::ConversationMigrations().size());
  }
  pqxx::nontransaction(admin).exec(
      absl::StrCat("DROP DATABASE ", admin.quote_name(fresh), " WITH (FORCE)"));
}

// No cluster needed: the warning comes before any connection.
TEST(PostgresTransportWarning, AServiceWarnsOfAnUnverifiedDatabaseOffThisMachine) {
  // 192.0.2.1 is reserved for documentation: nothing answers there.
  const testing::CommandResult result = testing::RunCommand(
      {OMNIFORGE_CONVERSATION_BIN, "migrate"}, "",
      {"OMNIFORGE_DATABASE_MIGRATE_DSN=hostaddr=192.0.2.1 connect_timeout=2 user=omniforge "
       "password=not-in-the-log sslmode=require"});
  EXPECT_EQ(result.exit_code, 1) << result.err;
  EXPECT_NE(result.err.find("database connection not verified"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find(R"("key":"database.migrate_dsn")"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("PostgreSQL at 192.0.2.1 with sslmode=require"), std::string::npos)
      << result.err;
  EXPECT_EQ(result.err.find("not-in-the-log"), std::string::npos) << result.err;
  // The local default (127.0.0.1) is not warned of.
  EXPECT_EQ(result.err.find(R"("key":"database.dsn")"), std::string::npos) << result.err;
}

}  // namespace
}  // namespace omniforge
