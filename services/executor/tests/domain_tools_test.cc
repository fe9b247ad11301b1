// The email and calendar domains through the executor's runtime, served by a
// fake of the third-party services that speaks the real MCP stdio wire
// format (fake_saas_mcp.mjs): the catalog, each result shape the planner
// reads (success, partial, error), and clear refusals for a domain that is
// not configured or whose server is down. Skips only where node is absent.
#include "services/executor/src/domain_tools.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "libs/mcp/registry.h"
#include "libs/mcp/testing/node_servers.h"
#include "services/executor/src/mcp_tools.h"
#include "services/executor/src/tool_runtime.h"

namespace omniforge::executor {
namespace {

using ::testing::HasSubstr;
using Json = nlohmann::json;

// A stdio server running the fake service of `domain` ("email" or
// "calendar"), trusted for its read-only hints as an operator would trust
// the provider it stands in for (`trust: read_hints`).
mcp::McpServerConfig FakeService(const std::string& name, const std::string& domain,
                                 std::vector<std::string> extra_args = {}) {
  mcp::McpServerConfig server;
  server.name = name;
  server.transport = mcp::TransportKind::kStdio;
  server.stdio.server_name = name;
  server.stdio.command = "node";
  server.stdio.args = {
      std::string(OMNIFORGE_SOURCE_DIR) + "/services/executor/tests/fake_saas_mcp.mjs", domain};
  server.stdio.args.insert(server.stdio.args.end(), extra_args.begin(), extra_args.end());
  server.session.server_name = name;
  server.trust = mcp::ServerTrust::kReadHints;
  return server;
}

mcp::CallOptions Within(std::chrono::seconds seconds) {
  mcp::CallOptions options;
  options.deadline = std::chrono::system_clock::now() + seconds;
  return options;
}

class DomainToolsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!mcp::testing::NodeAvailable()) GTEST_SKIP() << "node is not on PATH";
    registry_ = std::make_unique<mcp::McpRegistry>(
        mcp::McpConfig{{FakeService("mail", "email"), FakeService("cal", "calendar")}});
    ASSERT_TRUE(registry_->Refresh(Within(std::chrono::seconds(30))).ok());
    domains_ = std::make_unique<DomainTools>(
        *registry_, std::vector<DomainConfig>{{"email", {"mail"}}, {"calendar", {"cal"}}});
    const auto servers = domains_->DomainServers();
    mcp_tools_ = std::make_unique<McpTools>(*registry_,
                                            std::set<std::string>(servers.begin(), servers.end()));
    ASSERT_TRUE(catalog_.AddProvider(*mcp_tools_).ok());
    ASSERT_TRUE(catalog_.AddProvider(*domains_).ok());
  }

  absl::StatusOr<InvokeOutcome> Invoke(const std::string& tool, const Json& args) {
    return runtime_.Invoke({"acme", "alice"}, {tool, args.dump(), ""},
                           std::chrono::system_clock::now() + std::chrono::seconds(10));
  }

  // The result of a call that ran, as the planner reads it.
  Json Call(const std::string& tool, const Json& args, bool expect_error = false) {
    auto outcome = Invoke(tool, args);
    EXPECT_TRUE(outcome.ok()) << outcome.status();
    if (!outcome.ok()) return Json();
    EXPECT_EQ(outcome->is_error, expect_error) << outcome->result_json;
    return Json::parse(outcome->result_json, nullptr, false);
  }

  std::unique_ptr<mcp::McpRegistry> registry_;
  std::unique_ptr<DomainTools> domains_;
  std::unique_ptr<McpTools> mcp_tools_;
  ToolCatalog catalog_;
  ToolRuntime runtime_{catalog_, nullptr};
};

TEST_F(DomainToolsTest, TheCatalogListsEachDomainsToolsWithTheirRisk) {
  std::map<std::string, ToolRisk> listed;
  for (const ToolSpec& spec : catalog_.List()) listed[spec.name] = spec.risk;
  EXPECT_EQ(listed.at("email__search_messages"), ToolRisk::kRead);
  EXPECT_EQ(listed.at("email__send_email"), ToolRisk::kWrite);
  EXPECT_EQ(listed.at("calendar__list_events"), ToolRisk::kRead);
  EXPECT_EQ(listed.at("calendar__delete_event"), ToolRisk::kHigh);
  // A domain's server is not offered a second time under its own name.
  for (const auto& [name, risk] : listed) {
    EXPECT_FALSE(name.starts_with("mail__") || name.starts_with("cal__")) << name;
  }
  const auto search = catalog_.Find("email__search_messages");
  ASSERT_TRUE(search.has_value());
  EXPECT_EQ(search->spec.source, "mail");
  EXPECT_THAT(search->spec.description, ::testing::StartsWith("[email] Search messages: Searches"));
  EXPECT_EQ(Json::parse(search->spec.parameters_schema)["required"], Json::array({"query"}));
}

TEST_F(DomainToolsTest, StructuredContentIsASuccessWithFullConfidence) {
  const Json result = Call("email__search_messages", {{"query", "budget"}});
  EXPECT_EQ(result["domain"], "email");
  EXPECT_EQ(result["tool"], "search_messages");
  EXPECT_EQ(result["status"], "success");
  ASSERT_EQ(result["data"]["messages"].size(), 2u);
  EXPECT_EQ(result["data"]["messages"][0]["subject"], "Q3 budget review");
  EXPECT_EQ(result["confidence"], 1.0);
  EXPECT_EQ(result["limitations"], Json::array());

  const Json sent = Call("email__send_email", {{"to", "ana@example.com"}, {"subject", "Hi"}});
  EXPECT_EQ(sent["status"], "success");
  EXPECT_EQ(sent["data"]["to"], "ana@example.com");
}

TEST_F(DomainToolsTest, MoreMatchesThanReturnedArePartial) {
  const Json result = Call("email__search_messages", {{"query", "budget"}, {"limit", 1}});
  EXPECT_EQ(result["status"], "partial");
  EXPECT_EQ(result["data"]["messages"].size(), 1u);
  EXPECT_EQ(result["confidence"], 0.5);
  ASSERT_EQ(result["limitations"].size(), 1u);
  EXPECT_THAT(result["limitations"][0].get<std::string>(), HasSubstr("more results exist"));
}

TEST_F(DomainToolsTest, TextOnlyContentIsParsedAndLessCertain) {
  const Json result = Call("calendar__list_events", Json::object());
  EXPECT_EQ(result["status"], "success");
  ASSERT_TRUE(result["data"].is_array());
  EXPECT_EQ(result["data"][0]["title"], "Budget review");
  EXPECT_EQ(result["confidence"], 0.8);
}

TEST_F(DomainToolsTest, AServiceErrorIsAnErrorResultWithItsMessage) {
  const Json result = Call("email__search_messages", {{"query", "outage"}}, /*expect_error=*/true);
  EXPECT_EQ(result["status"], "error");
  EXPECT_EQ(result["confidence"], 0.0);
  EXPECT_TRUE(result["data"].is_string());
  ASSERT_EQ(result["limitations"].size(), 1u);
  EXPECT_THAT(result["limitations"][0].get<std::string>(),
              HasSubstr("the email service said: the mail provider is unavailable (HTTP 503)"));
}

TEST_F(DomainToolsTest, ADomainThatIsNotConfiguredIsRefusedWithTheReason) {
  auto outcome = Invoke("contacts__find_person", {{"name", "Ana"}});
  EXPECT_EQ(outcome.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(outcome.status().message(),
              HasSubstr("the contacts domain is not configured (domains.contacts.servers"));
  // A configured domain without such a tool: an unknown tool, as any other.
  EXPECT_EQ(Invoke("email__archive_everything", Json::object()).status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(Invoke("weather__forecast", Json::object()).status().code(),
            absl::StatusCode::kNotFound);
}

TEST(DomainToolsDownTest, ADomainWhoseServerIsDownIsRefusedWithTheServersError) {
  mcp::McpServerConfig broken = FakeService("cal", "calendar");
  broken.stdio.command = "/nonexistent/fake-calendar";
  broken.session.max_restarts = 0;
  mcp::McpRegistry registry(mcp::McpConfig{{broken}});
  EXPECT_FALSE(registry.Refresh(Within(std::chrono::seconds(10))).ok());
  DomainTools domains(registry, {{"calendar", {"cal"}}});
  ToolCatalog catalog;
  ASSERT_TRUE(catalog.AddProvider(domains).ok());
  EXPECT_EQ(catalog.size(), 0u);
  ToolRuntime runtime(catalog, nullptr);
  auto outcome = runtime.Invoke({"acme", "alice"}, {"calendar__list_events", "{}", ""},
                                std::chrono::system_clock::now() + std::chrono::seconds(5));
  EXPECT_EQ(outcome.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(outcome.status().message(),
              HasSubstr("the calendar domain's MCP servers are unavailable: cal: "));
}

TEST(DomainConfigTest, EachDomainNamesEnabledServersOfItsOwn) {
  const mcp::McpConfig mcp{{FakeService("mail", "email"), FakeService("cal", "calendar")}};
  auto read = [&mcp](const std::string& yaml) {
    auto reader = core::ConfigReader::FromString(yaml);
    EXPECT_TRUE(reader.ok()) << reader.status();
    return ReadDomainConfig(*reader, mcp);
  };
  auto good = read("domains:\n  email: {servers: [mail]}\n  calendar: {servers: [cal]}\n");
  ASSERT_TRUE(good.ok()) << good.status();
  ASSERT_EQ(good->size(), 2u);
  EXPECT_EQ((*good)[0].domain, "email");
  EXPECT_EQ((*good)[0].servers, std::vector<std::string>{"mail"});

  const std::pair<std::string, std::string> bad[] = {
      {"domains:\n  weather: {servers: [mail]}\n", "domains.weather: not a domain"},
      {"domains:\n  email: {servers: [gmail]}\n",
       "domains.email.servers: 'gmail' is not an enabled server of mcp.servers"},
      {"domains:\n  email: {servers: []}\n", "domains.email.servers: names no MCP server"},
      {"domains:\n  email: {servers: [mail]}\n  contacts: {servers: [mail]}\n",
       "'mail' already serves"},
  };
  for (const auto& [yaml, message] : bad) {
    auto config = read(yaml);
    EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument) << yaml;
    EXPECT_THAT(config.status().message(), HasSubstr(message)) << yaml;
  }
}

}  // namespace
}  // namespace omniforge::executor
