#include "libs/core/config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

namespace omniforge::core {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// A fake environment, so tests never depend on the real one.
ConfigReader::EnvLookup FakeEnv(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](const std::string& name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

ConfigReader Parse(const std::string& yaml, std::map<std::string, std::string> env = {}) {
  absl::StatusOr<ConfigReader> reader = ConfigReader::FromString(yaml, FakeEnv(std::move(env)));
  EXPECT_TRUE(reader.ok()) << reader.status();
  return std::move(*reader);
}

TEST(ConfigTest, EnvNameUpperCasesAndReplacesDots) {
  EXPECT_EQ(ConfigReader::EnvName("database.pool_size"), "OMNIFORGE_DATABASE_POOL_SIZE");
  EXPECT_EQ(ConfigReader::EnvName("port"), "OMNIFORGE_PORT");
}

TEST(ConfigTest, ReadsNestedValuesOfEveryType) {
  ConfigReader c = Parse(R"(
database:
  pool_size: 8
  url: postgres://db/app
  timeout_s: 2.5
  ssl: yes
server:
  hosts: [a, b]
tenants:
  acme: gold
  initech: silver
)");
  EXPECT_EQ(c.Int("database.pool_size", 1), 8);
  EXPECT_EQ(c.String("database.url", ""), "postgres://db/app");
  EXPECT_DOUBLE_EQ(c.Double("database.timeout_s", 0), 2.5);
  EXPECT_TRUE(c.Bool("database.ssl", false));
  EXPECT_THAT(c.StringList("server.hosts", {}), ::testing::ElementsAre("a", "b"));
  EXPECT_EQ(c.StringMap("tenants"),
            (std::map<std::string, std::string>{{"acme", "gold"}, {"initech", "silver"}}));
  EXPECT_TRUE(c.Finish().ok()) << c.Finish();
}

TEST(ConfigTest, EmptyYamlGivesFallbacks) {
  ConfigReader c = Parse("");
  EXPECT_EQ(c.Int("database.pool_size", 4), 4);
  EXPECT_EQ(c.String("name", "x"), "x");
  EXPECT_FALSE(c.Bool("debug", false));
  EXPECT_THAT(c.StringList("hosts", {"h"}), ::testing::ElementsAre("h"));
  EXPECT_TRUE(c.StringMap("tenants").empty());
  EXPECT_TRUE(c.Finish().ok());
}

TEST(ConfigTest, EnvironmentBeatsFileBeatsFallback) {
  ConfigReader c = Parse("database: {pool_size: 8, name: app}\nport: 1\n",
                         {{"OMNIFORGE_DATABASE_POOL_SIZE", "16"}, {"OMNIFORGE_TIMEOUT", "3"}});
  EXPECT_EQ(c.Int("database.pool_size", 1), 16);     // env over file
  EXPECT_EQ(c.String("database.name", "x"), "app");  // file over fallback
  EXPECT_EQ(c.Int("timeout", 9), 3);                 // env without a file entry
  EXPECT_EQ(c.Int("port", 2), 1);
  EXPECT_EQ(c.Int("missing", 7), 7);
  EXPECT_TRUE(c.Finish().ok());
}

TEST(ConfigTest, EnvironmentVariablesNamingNoKeyReadAreReported) {
  ConfigReader c = Parse("database: {dsn: x}\n");
  (void)c.String("database.dsn", "");
  (void)c.Int("server.port", 1);
  (void)c.StringMap("retention.per_tenant");
  EXPECT_THAT(c.UnknownEnvironment({"OMNIFORGE_DATABASE_DSN", "OMNIFORGE_DATABASE_DNS",
                                    "OMNIFORGE_SERVER_PORT", "OMNIFORGE_DOWNSTREAM_INTENT",
                                    "OMNIFORGE_RETENTION_PER_TENANT", "OMNIFORGE_CONFIG", "PATH",
                                    "PGPASSWORD"}),
              ::testing::ElementsAre("OMNIFORGE_DATABASE_DNS", "OMNIFORGE_DOWNSTREAM_INTENT"));
}

TEST(ConfigTest, EnvironmentNamesAreThisProcesss) {
  ASSERT_EQ(setenv("OMNIFORGE_CONFIG_TEST_PROBE", "a=b", 1), 0);
  EXPECT_THAT(ConfigReader::EnvironmentNames(), ::testing::Contains("OMNIFORGE_CONFIG_TEST_PROBE"));
  unsetenv("OMNIFORGE_CONFIG_TEST_PROBE");
}

TEST(ConfigTest, EnvironmentListAndMapForms) {
  ConfigReader c =
      Parse("hosts: [x]\n", {{"OMNIFORGE_HOSTS", "a, b,,c"}, {"OMNIFORGE_TENANTS", "k1=v1,k2=v2"}});
  EXPECT_THAT(c.StringList("hosts", {}), ::testing::ElementsAre("a", "b", "c"));
  EXPECT_EQ(c.StringMap("tenants"),
            (std::map<std::string, std::string>{{"k1", "v1"}, {"k2", "v2"}}));
  EXPECT_TRUE(c.Finish().ok());
}

TEST(ConfigTest, UnknownKeysAreAllReportedByPath) {
  ConfigReader c = Parse(R"(
database:
  pool_size: 8
  pool_sise: 9
  replica: {host: r}
logging: {level: info}
tenants: {acme: gold}
)");
  c.Int("database.pool_size", 1);
  c.StringMap("tenants");
  const absl::Status s = c.Finish();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("database.pool_sise"));
  EXPECT_THAT(s.message(), HasSubstr("database.replica"));
  EXPECT_THAT(s.message(), HasSubstr("logging"));
  EXPECT_THAT(s.message(), Not(HasSubstr("database.pool_size")));
  EXPECT_THAT(s.message(), Not(HasSubstr("acme")));
}

TEST(ConfigTest, WrongTypeIsReportedWithKeyAndValue) {
  ConfigReader c = Parse("database:\n  pool_size: abc\n");
  EXPECT_EQ(c.Int("database.pool_size", 5), 5);
  const absl::Status s = c.Finish();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("config: database.pool_size: expected an integer, "
                                     "got \"abc\""));
}

TEST(ConfigTest, WrongTypeFromEnvironmentNamesTheVariable) {
  ConfigReader c = Parse("", {{"OMNIFORGE_DEBUG", "maybe"}});
  EXPECT_TRUE(c.Bool("debug", true));
  EXPECT_THAT(c.Finish().message(), HasSubstr("OMNIFORGE_DEBUG"));
  EXPECT_THAT(c.Finish().message(), HasSubstr("debug: expected"));
}

TEST(ConfigTest, MapWhereScalarExpectedIsAnError) {
  ConfigReader c = Parse("name: {first: a}\n");
  EXPECT_EQ(c.String("name", "fb"), "fb");
  EXPECT_THAT(c.Finish().message(), HasSubstr("name: expected a string, got a map"));
}

TEST(ConfigTest, ScalarWhereSectionExpectedIsAnError) {
  ConfigReader c = Parse("database: 5\n");
  EXPECT_EQ(c.Int("database.pool_size", 3), 3);
  EXPECT_THAT(c.Finish().message(), HasSubstr("database: expected a map, got a scalar"));
}

TEST(ConfigTest, EmptySectionIsAllowed) {
  ConfigReader c = Parse("database:\n");
  EXPECT_EQ(c.Int("database.pool_size", 3), 3);
  EXPECT_TRUE(c.Finish().ok()) << c.Finish();
}

TEST(ConfigTest, OutOfRangeIsReported) {
  ConfigReader c = Parse("port: 70000\nworkers: -1\n");
  EXPECT_EQ(c.Int("port", 80, 0, 65535), 80);
  EXPECT_EQ(c.Int("workers", 2, 1, 64), 2);
  const std::string message(c.Finish().message());
  EXPECT_THAT(message, HasSubstr("port: 70000 is outside [0, 65535]"));
  EXPECT_THAT(message, HasSubstr("workers: -1 is outside [1, 64]"));
}

TEST(ConfigTest, IntegerOverflowIsATypeError) {
  ConfigReader c = Parse("n: 99999999999999999999\n");
  EXPECT_EQ(c.Int("n", 1), 1);
  EXPECT_THAT(c.Finish().message(), HasSubstr("n: expected an integer"));
}

TEST(ConfigTest, BoolSpellings) {
  ConfigReader c = Parse("a: TRUE\nb: No\nc: 1\nd: 0\ne: yes\nf: false\ng: on\n");
  EXPECT_TRUE(c.Bool("a", false));
  EXPECT_FALSE(c.Bool("b", true));
  EXPECT_TRUE(c.Bool("c", false));
  EXPECT_FALSE(c.Bool("d", true));
  EXPECT_TRUE(c.Bool("e", false));
  EXPECT_FALSE(c.Bool("f", true));
  EXPECT_TRUE(c.Bool("g", true));  // "on" is not accepted: fallback.
  EXPECT_THAT(c.Finish().message(), HasSubstr("g: expected"));
}

TEST(ConfigTest, DoubleRejectsGarbageAndNonFinite) {
  ConfigReader c = Parse("a: 1.5x\nb: .nan\nc: 1e-3\n");
  EXPECT_DOUBLE_EQ(c.Double("a", 7), 7);
  EXPECT_DOUBLE_EQ(c.Double("b", 7), 7);
  EXPECT_DOUBLE_EQ(c.Double("c", 7), 0.001);
  const std::string message(c.Finish().message());
  EXPECT_THAT(message, HasSubstr("a: expected a number"));
  EXPECT_THAT(message, HasSubstr("b: expected a number"));
}

TEST(ConfigTest, StringListRejectsScalarAndNestedItems) {
  ConfigReader c = Parse("a: single\nb: [x, [y]]\n");
  EXPECT_THAT(c.StringList("a", {"fb"}), ::testing::ElementsAre("fb"));
  EXPECT_THAT(c.StringList("b", {"fb"}), ::testing::ElementsAre("fb"));
  const std::string message(c.Finish().message());
  EXPECT_THAT(message, HasSubstr("a: expected a list, got a scalar"));
  EXPECT_THAT(message, HasSubstr("b[1]: expected a string, got a list"));
}

TEST(ConfigTest, StringMapRejectsNestedValuesAndBadEnv) {
  ConfigReader c = Parse("m: {a: {b: c}}\n", {{"OMNIFORGE_N", "k1=v1,oops"}});
  EXPECT_TRUE(c.StringMap("m").empty());
  EXPECT_TRUE(c.StringMap("n").empty());
  const std::string message(c.Finish().message());
  EXPECT_THAT(message, HasSubstr("m.a: expected a string, got a map"));
  EXPECT_THAT(message, HasSubstr("n: expected key=value, got \"oops\""));
}

TEST(ConfigTest, StringMapKeysMayContainDots) {
  ConfigReader c = Parse("prices:\n  gpt-4.1: \"2 0.5 8\"\n  meta-llama/Llama-3.1-8B: \"0 0 0\"\n");
  EXPECT_EQ(c.StringMap("prices"),
            (std::map<std::string, std::string>{{"gpt-4.1", "2 0.5 8"},
                                                {"meta-llama/Llama-3.1-8B", "0 0 0"}}));
  EXPECT_TRUE(c.Finish().ok()) << c.Finish();
}

TEST(ConfigTest, KeysListsAMapInFileOrder) {
  ConfigReader c = Parse("providers:\n  zeta: {api: x}\n  alpha: {api: y}\n");
  EXPECT_THAT(c.Keys("providers"), ::testing::ElementsAre("zeta", "alpha"));
  EXPECT_EQ(c.String("providers.zeta.api", ""), "x");
  EXPECT_EQ(c.String("providers.alpha.api", ""), "y");
  EXPECT_TRUE(c.Finish().ok()) << c.Finish();
}

TEST(ConfigTest, KeysAbsentOrNullIsEmptyAndAccepted) {
  ConfigReader c = Parse("llm:\n  providers:\n");
  EXPECT_TRUE(c.Keys("llm.providers").empty());
  EXPECT_TRUE(c.Keys("llm.profiles").empty());
  EXPECT_TRUE(c.Finish().ok()) << c.Finish();
}

TEST(ConfigTest, KeysDoesNotMakeUnreadChildrenKnown) {
  ConfigReader c = Parse("providers:\n  a: {api: x, tyop: 1}\n  b: {api: y}\n");
  for (const std::string& name : c.Keys("providers")) c.String("providers." + name + ".api", "");
  const std::string message(c.Finish().message());
  EXPECT_THAT(message, HasSubstr("unknown keys: providers.a.tyop"));
  EXPECT_THAT(message, Not(HasSubstr("providers.b")));
}

TEST(ConfigTest, KeysRejectsNonMapsAndDottedKeys) {
  ConfigReader c = Parse("a: [x]\nb:\n  ok: {v: 1}\n  not.ok: {v: 2}\n");
  EXPECT_TRUE(c.Keys("a").empty());
  EXPECT_THAT(c.Keys("b"), ::testing::ElementsAre("ok"));
  c.Int("b.ok.v", 0);
  const std::string message(c.Finish().message());
  EXPECT_THAT(message, HasSubstr("a: expected a map, got a list"));
  EXPECT_THAT(message, HasSubstr("b.not.ok: a key here cannot contain '.'"));
  EXPECT_THAT(message, Not(HasSubstr("unknown keys")));
}

TEST(ConfigTest, SyntaxErrorIsInvalidArgument) {
  absl::StatusOr<ConfigReader> c = ConfigReader::FromString("a: [1, 2\n", FakeEnv({}));
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(ConfigTest, TopLevelMustBeAMap) {
  absl::StatusOr<ConfigReader> c = ConfigReader::FromString("- a\n- b\n", FakeEnv({}));
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(ConfigTest, DuplicateKeyIsInvalidArgument) {
  absl::StatusOr<ConfigReader> c =
      ConfigReader::FromString("db:\n  port: 1\n  port: 2\n", FakeEnv({}));
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(c.status().message(), HasSubstr("db.port: duplicate key"));
}

TEST(ConfigTest, AnAliasStandsForItsValues) {
  ConfigReader c = Parse("base: &base {x: 1}\nother: *base\n");
  EXPECT_EQ(c.Int("other.x", 0), 1);
}

// Found by fuzz/config_fuzz.cc: nine lines of aliases of aliases stand for
// a billion values, and checking them for duplicate keys never ended.
TEST(ConfigTest, AliasesStandingForTooManyValuesAreRefused) {
  std::string yaml = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int i = 1; i < 9; ++i) {
    yaml += "a" + std::to_string(i) + ": &a" + std::to_string(i) + " [";
    for (int j = 0; j < 10; ++j) yaml += (j == 0 ? "*a" : ", *a") + std::to_string(i - 1);
    yaml += "]\n";
  }
  absl::StatusOr<ConfigReader> c = ConfigReader::FromString(yaml, FakeEnv({}));
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(c.status().message(), HasSubstr("alias"));
}

// Found by fuzz/config_fuzz.cc: an alias inside its own anchor makes a
// loop, and checking it for duplicate keys overflowed the stack.
TEST(ConfigTest, AnAliasInsideItsOwnAnchorIsRefused) {
  for (const char* yaml : {"a: &a [x, *a]\n", "a: &a {b: *a}\n", "a: {b: &b [c: *b]}\n"}) {
    absl::StatusOr<ConfigReader> c = ConfigReader::FromString(yaml, FakeEnv({}));
    EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument) << yaml;
  }
  std::string deep = "a: ";
  for (int i = 0; i < 63; ++i) deep += "[";
  deep += std::string(63, ']') + "\n";
  EXPECT_TRUE(ConfigReader::FromString(deep, FakeEnv({})).ok());
}

TEST(ConfigTest, FromFileMissingIsNotFound) {
  absl::StatusOr<ConfigReader> c =
      ConfigReader::FromFile("/nonexistent/omniforge/config.yaml", FakeEnv({}));
  EXPECT_EQ(c.status().code(), absl::StatusCode::kNotFound);
}

TEST(ConfigTest, FromFileReadsTheFile) {
  const std::string path = ::testing::TempDir() + "/omniforge_config_test.yaml";
  {
    std::ofstream out(path);
    out << "server:\n  port: 8443\n";
  }
  absl::StatusOr<ConfigReader> c = ConfigReader::FromFile(path, FakeEnv({}));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->Int("server.port", 0), 8443);
  EXPECT_TRUE(c->Finish().ok());
  std::filesystem::remove(path);
}

TEST(ConfigTest, FromFileOnADirectoryFails) {
  absl::StatusOr<ConfigReader> c = ConfigReader::FromFile(::testing::TempDir(), FakeEnv({}));
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace omniforge::core
