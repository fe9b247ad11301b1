// The real omniforge-sandbox-mcp binary as the executor runs it: one
// process per tenant and domain, started by libs/mcp's registry over
// stdio, its tools offered as the email, calendar and contacts domains
// (services/executor/src/domain_tools.h) and called through the executor's
// tool runtime, with the state in the test database. Covers the risks the
// annotations give, two Johns, a conflicting booking with its
// alternatives, a draft previewed then sent, and tenants kept apart across
// processes.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>

#include "libs/mcp/registry.h"
#include "libs/pg/migrate.h"
#include "services/executor/src/domain_tools.h"
#include "services/executor/src/mcp_tools.h"
#include "services/executor/src/tool_runtime.h"
#include "services/sandbox/src/sandbox_time.h"
#include "tests/support/test_database.h"

namespace omniforge::sandbox {
namespace {

using ::testing::HasSubstr;
using Json = nlohmann::json;
using executor::ToolRisk;

// The sandbox's "now" in these tests (a Tuesday morning): the seed's
// "tomorrow" and the tests' are then the same day whenever they run.
constexpr char kNow[] = "2026-11-24T08:00:00Z";

// A per-tenant stdio server running the sandbox for `domain`, configured
// as deploy/local/executor.yaml and scripts/stack.sh do (the schema is
// applied once beforehand, not by each process).
mcp::McpServerConfig SandboxServer(const std::string& domain,
                                   const omniforge::testing::TestDatabase& db) {
  mcp::McpServerConfig server;
  server.name = "sandbox_" + domain;
  server.transport = mcp::TransportKind::kStdio;
  server.stdio.server_name = server.name;
  server.stdio.command = OMNIFORGE_SANDBOX_BIN;
  server.stdio.args = {"--domain", domain, "--tenant", "{tenant}", "--time-zone", "UTC"};
  server.stdio.env = {{"OMNIFORGE_DATABASE_DSN", db.service_dsn("sandbox")},
                      {"OMNIFORGE_DATABASE_MIGRATE_ON_START", "false"},
                      {"OMNIFORGE_SANDBOX_NOW", kNow}};
  server.session.server_name = server.name;
  server.trust = mcp::ServerTrust::kReadHints;
  server.per_tenant = true;
  return server;
}

// The day after kNow at hh:mm UTC.
std::string Tomorrow(int hour, int minute) {
  const absl::TimeZone utc = absl::UTCTimeZone();
  const core::TimePoint now = *ParseRfc3339("now", kNow);
  return FormatRfc3339(AtTime(StartOfDay(now, utc, 1), utc, hour, minute), utc);
}

class ExecutorDomainsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    db_ = new omniforge::testing::TestDatabase();
    const std::string migrate = "OMNIFORGE_DATABASE_MIGRATE_DSN='" + db_->owner_dsn() + "' " +
                                OMNIFORGE_SANDBOX_BIN + " migrate 2>&1";
    ASSERT_EQ(std::system(migrate.c_str()), 0);
  }
  static void TearDownTestSuite() { delete db_; }

  void SetUp() override {
    registry_ = std::make_unique<mcp::McpRegistry>(
        mcp::McpConfig{{SandboxServer("email", *db_), SandboxServer("calendar", *db_),
                        SandboxServer("contacts", *db_)}});
    mcp::CallOptions within;
    within.deadline = std::chrono::system_clock::now() + std::chrono::seconds(30);
    const absl::Status refreshed = registry_->Refresh(within);
    ASSERT_TRUE(refreshed.ok()) << refreshed;
    domains_ = std::make_unique<executor::DomainTools>(
        *registry_, std::vector<executor::DomainConfig>{{"email", {"sandbox_email"}},
                                                        {"calendar", {"sandbox_calendar"}},
                                                        {"contacts", {"sandbox_contacts"}}});
    ASSERT_TRUE(catalog_.AddProvider(*domains_).ok());
  }

  // The planner's view of a call that ran.
  Json Call(const std::string& tenant, const std::string& tool, const Json& args,
            bool expect_error = false) {
    auto outcome = runtime_.Invoke({tenant, "alice"}, {tool, args.dump(), ""},
                                   std::chrono::system_clock::now() + std::chrono::seconds(20));
    EXPECT_TRUE(outcome.ok()) << outcome.status();
    if (!outcome.ok()) return Json();
    EXPECT_EQ(outcome->is_error, expect_error) << outcome->result_json;
    return Json::parse(outcome->result_json, nullptr, false);
  }

  static omniforge::testing::TestDatabase* db_;
  std::unique_ptr<mcp::McpRegistry> registry_;
  std::unique_ptr<executor::DomainTools> domains_;
  executor::ToolCatalog catalog_;
  executor::ToolRuntime runtime_{catalog_, nullptr};
};

omniforge::testing::TestDatabase* ExecutorDomainsTest::db_ = nullptr;

TEST_F(ExecutorDomainsTest, EachDomainsToolsAreListedWithTheRiskTheirHintsGive) {
  std::map<std::string, ToolRisk> listed;
  for (const executor::ToolSpec& spec : catalog_.List()) listed[spec.name] = spec.risk;
  EXPECT_EQ(listed.size(), 11u);
  EXPECT_EQ(listed.at("contacts__find_contacts"), ToolRisk::kRead);
  EXPECT_EQ(listed.at("contacts__add_contact"), ToolRisk::kWrite);
  EXPECT_EQ(listed.at("calendar__find_free_slots"), ToolRisk::kRead);
  EXPECT_EQ(listed.at("calendar__create_event"), ToolRisk::kWrite);
  EXPECT_EQ(listed.at("calendar__delete_event"), ToolRisk::kHigh);
  EXPECT_EQ(listed.at("email__draft_message"), ToolRisk::kWrite);
  EXPECT_EQ(listed.at("email__send_message"), ToolRisk::kWrite);
  EXPECT_EQ(listed.at("email__search_messages"), ToolRisk::kRead);
}

TEST_F(ExecutorDomainsTest, TwoJohnsComeBackWithAQuestion) {
  const Json johns = Call("acme", "contacts__find_contacts", {{"query", "John"}});
  EXPECT_EQ(johns["domain"], "contacts");
  EXPECT_EQ(johns["status"], "success");
  ASSERT_EQ(johns["data"]["matches"].size(), 2u);
  EXPECT_THAT(johns["data"]["question"].get<std::string>(), HasSubstr("John Smith"));
  EXPECT_EQ(johns["confidence"], 0.5);
  EXPECT_THAT(johns["limitations"][0].get<std::string>(), HasSubstr("ask the user which one"));
}

TEST_F(ExecutorDomainsTest, AConflictingBookingProposesAlternativesAndOneIsBooked) {
  const Json wanted = {{"title", "Call with Sarah and John Smith"},
                       {"start", Tomorrow(14, 0)},
                       {"end", Tomorrow(14, 30)},
                       {"attendees", {"sarah.chen@example.com", "john.smith@example.com"}}};
  const Json refused = Call("acme", "calendar__create_event", wanted, /*expect_error=*/true);
  EXPECT_EQ(refused["status"], "error");
  const Json& error = refused["data"]["error"];
  EXPECT_EQ(error["code"], "conflict");
  EXPECT_EQ(error["conflicts"]["events"][0]["title"], "Design review");
  ASSERT_EQ(error["alternatives"].size(), 3u);
  EXPECT_THAT(refused["limitations"][0].get<std::string>(), HasSubstr("was not booked"));

  const Json free = Call("acme", "calendar__find_free_slots",
                         {{"attendees", wanted["attendees"]},
                          {"duration_minutes", 30},
                          {"window_start", Tomorrow(12, 0)},
                          {"window_end", Tomorrow(18, 0)}});
  EXPECT_EQ(free["data"]["slots"][0]["start"], Tomorrow(12, 0));

  Json moved = wanted;
  moved["start"] = error["alternatives"][0]["start"];
  moved["end"] = error["alternatives"][0]["end"];
  const Json booked = Call("acme", "calendar__create_event", moved);
  EXPECT_EQ(booked["status"], "success");
  EXPECT_EQ(booked["data"]["event"]["start"], moved["start"]);

  // Another tenant's process, another tenant's calendar.
  const Json window = {{"start", Tomorrow(0, 0)}, {"end", Tomorrow(23, 59)}};
  EXPECT_EQ(Call("acme", "calendar__list_events", window)["data"]["events"].size(), 3u);
  EXPECT_EQ(Call("globex", "calendar__list_events", window)["data"]["events"].size(), 2u);
}

TEST_F(ExecutorDomainsTest, ADraftIsPreviewedThenSent) {
  Json message = {{"to", {"sarah.chen@example.com"}},
                  {"subject", "Moving our call"},
                  {"body", "Could we talk at 12:00 instead?"}};
  const Json draft = Call("acme", "email__draft_message", message);
  EXPECT_THAT(draft["data"]["preview"].get<std::string>(), HasSubstr("Subject: Moving our call"));
  message["draft_id"] = draft["data"]["draft_id"];
  const Json sent = Call("acme", "email__send_message", message);
  EXPECT_EQ(sent["data"]["message"]["folder"], "sent");
  EXPECT_THAT(sent["limitations"].dump(), HasSubstr("nothing leaves the sandbox"));
  const Json found = Call("acme", "email__search_messages", {{"query", "moving our call"}});
  EXPECT_EQ(found["data"]["messages"].size(), 1u);
  EXPECT_EQ(
      Call("globex", "email__search_messages", {{"query", "moving our call"}})["data"]["messages"]
          .size(),
      0u);
}

TEST_F(ExecutorDomainsTest, BadInputIsAToolErrorNamingTheProblem) {
  // The executor checks the schema first (a wrong type never reaches the
  // server); what a schema cannot say comes back from the server.
  const Json refused = Call("acme", "calendar__create_event",
                            {{"title", "x"}, {"start", "tomorrow"}, {"end", Tomorrow(10, 0)}},
                            /*expect_error=*/true);
  EXPECT_EQ(refused["data"]["error"]["code"], "invalid_argument");
  EXPECT_THAT(refused["limitations"][0].get<std::string>(),
              HasSubstr("start: expected an RFC 3339"));
  const Json unknown = Call("acme", "calendar__delete_event", {{"event_id", "no-such-event"}},
                            /*expect_error=*/true);
  EXPECT_EQ(unknown["data"]["error"]["code"], "not_found");
}

TEST(SandboxBinaryTest, ATenantIsRequiredUnlessTheStateIsInMemory) {
  const std::string bin = OMNIFORGE_SANDBOX_BIN;
  const int without = std::system((bin + " --domain email </dev/null 2>/dev/null").c_str());
  ASSERT_TRUE(WIFEXITED(without));
  EXPECT_EQ(WEXITSTATUS(without), 2);
  const int in_memory =
      std::system((bin + " --domain email --memory </dev/null 2>/dev/null").c_str());
  ASSERT_TRUE(WIFEXITED(in_memory));
  EXPECT_EQ(WEXITSTATUS(in_memory), 0);
}

}  // namespace
}  // namespace omniforge::sandbox
