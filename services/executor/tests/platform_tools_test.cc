// Integration tests of the built-in platform tools on a real PostgreSQL:
// every tool through the ToolRuntime (validation, idempotency) as the gRPC
// layer drives it, tenant and user scoping, and row-level security.
#include "services/executor/src/platform_tools.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <pqxx/pqxx>

#include "absl/strings/str_cat.h"
#include "libs/core/ids.h"
#include "libs/pg/migrate.h"
#include "libs/pg/pool.h"
#include "services/executor/src/pg_invocation_ledger.h"
#include "services/executor/src/tool_runtime.h"
#include "services/executor/tests/platform_runtime.h"

namespace omniforge::executor {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using Json = nlohmann::json;

class PlatformToolsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { platform_ = new testing::PlatformRuntime(4); }
  static void TearDownTestSuite() { delete platform_; }

  absl::StatusOr<InvokeOutcome> Call(const core::Identity& who, const std::string& tool,
                                     const Json& args, const std::string& key = "") {
    return platform_->runtime.Invoke(who, {tool, args.dump(), key},
                                     std::chrono::system_clock::now() + std::chrono::seconds(10));
  }

  // The result of a call that must succeed without a tool error.
  Json Ok(const core::Identity& who, const std::string& tool, const Json& args) {
    auto out = Call(who, tool, args);
    EXPECT_TRUE(out.ok()) << tool << ": " << out.status();
    if (!out.ok()) return Json();
    EXPECT_FALSE(out->is_error) << tool << ": " << out->result_json;
    return Json::parse(out->result_json);
  }

  // The error code of a call that must end in a tool error.
  std::string ToolError(const core::Identity& who, const std::string& tool, const Json& args) {
    auto out = Call(who, tool, args);
    EXPECT_TRUE(out.ok()) << tool << ": " << out.status();
    if (!out.ok()) return "";
    EXPECT_TRUE(out->is_error) << tool << ": " << out->result_json;
    return Json::parse(out->result_json)["error"].value("code", "");
  }

  // The message of a call that must be refused with INVALID_ARGUMENT.
  std::string Invalid(const core::Identity& who, const std::string& tool, const Json& args) {
    auto out = Call(who, tool, args);
    EXPECT_TRUE(absl::IsInvalidArgument(out.status())) << tool << ": " << out.status();
    return std::string(out.status().message());
  }

  int64_t Count(const std::string& sql) {
    pqxx::connection conn(platform_->database.dsn());
    pqxx::work tx(conn);
    return tx.exec1(sql)[0].as<int64_t>();
  }

  static core::Identity Fresh(const std::string& tenant = "acme") {
    return {tenant, "user-" + core::NewUuid()};
  }

  static testing::PlatformRuntime* platform_;
};

testing::PlatformRuntime* PlatformToolsTest::platform_ = nullptr;

TEST_F(PlatformToolsTest, AgentLifecycle) {
  const auto alice = Fresh();
  Json created = Ok(alice, "create_agent",
                    {{"name", "Weekly Digest"},
                     {"description", "Sums up the week's Notion updates"},
                     {"instructions", "Read the pages, write five bullets"},
                     {"schedule", "every Monday 09:00"},
                     {"steps", {{{"tool", "list_agents"}, {"arguments", Json::object()}}}},
                     {"skills", {"notion-read"}},
                     {"config", {{"channel", "#team"}}}});
  const std::string id = created["agent"]["id"];
  EXPECT_TRUE(core::IsUuid(id));
  EXPECT_EQ(created["agent"]["status"], "active");
  EXPECT_EQ(created["agent"]["config"]["channel"], "#team");
  EXPECT_EQ(ToolError(alice, "create_agent", {{"name", "weekly digest"}, {"description", "x"}}),
            "already_exists");

  Json by_name = Ok(alice, "get_agent", {{"agent", "WEEKLY DIGEST"}});
  EXPECT_EQ(by_name["agent"]["id"], id);
  EXPECT_EQ(by_name["agent"]["instructions"], "Read the pages, write five bullets");
  EXPECT_EQ(Ok(alice, "get_agent", {{"agent", id}})["agent"]["name"], "Weekly Digest");

  Ok(alice, "create_agent", {{"name", "alpha"}, {"description", "first by name"}});
  Json listed = Ok(alice, "list_agents", Json::object());
  ASSERT_EQ(listed["count"], 2);
  EXPECT_EQ(listed["agents"][0]["name"], "alpha");
  EXPECT_EQ(listed["agents"][1]["skills"], Json({"notion-read"}));

  Json updated = Ok(alice, "update_agent",
                    {{"agent", id}, {"schedule", "every Friday"}, {"skills", Json::array()}});
  EXPECT_EQ(updated["agent"]["schedule"], "every Friday at 09:00 (UTC)");
  EXPECT_EQ(updated["agent"]["schedule_cron"], "0 9 * * 5");
  EXPECT_EQ(updated["agent"]["skills"], Json::array());
  EXPECT_EQ(updated["agent"]["description"], "Sums up the week's Notion updates");
  EXPECT_EQ(ToolError(alice, "update_agent", {{"agent", id}, {"name", "Alpha"}}), "already_exists");

  EXPECT_EQ(Ok(alice, "pause_agent", {{"agent", id}})["changed"], true);
  EXPECT_EQ(Ok(alice, "pause_agent", {{"agent", id}})["changed"], false);
  EXPECT_EQ(Ok(alice, "list_agents", {{"status", "paused"}})["count"], 1);
  EXPECT_EQ(ToolError(alice, "run_agent", {{"agent", id}}), "failed_precondition");
  EXPECT_EQ(Ok(alice, "resume_agent", {{"agent", id}})["agent"]["status"], "active");

  Json run = Ok(alice, "run_agent", {{"agent", "weekly digest"}, {"input", {{"week", 47}}}})["run"];
  EXPECT_EQ(run["status"], "succeeded") << run.dump();
  EXPECT_EQ(run["agent_id"], id);
  EXPECT_EQ(run["input"]["week"], 47);
  EXPECT_EQ(run["trigger"], "manual");
  // The run did its step: the agents it listed are in its output and its
  // tool call is stored with the result.
  EXPECT_THAT(run["output"]["summary"].get<std::string>(), HasSubstr("Weekly Digest"));
  EXPECT_THAT(run["output"]["summary"].get<std::string>(), HasSubstr("- alpha"));
  ASSERT_EQ(run["tool_calls"].size(), 1u) << run.dump();
  EXPECT_EQ(run["tool_calls"][0]["tool"], "list_agents");
  EXPECT_EQ(run["tool_calls"][0]["result"]["count"], 2);
  EXPECT_FALSE(run["finished_at"].is_null());

  Json runs = Ok(alice, "list_runs", {{"agent", id}});
  ASSERT_EQ(runs["count"], 1);
  EXPECT_EQ(runs["runs"][0]["id"], run["id"]);
  EXPECT_EQ(Ok(alice, "list_runs", {{"status", "failed"}})["count"], 0);
  EXPECT_EQ(Ok(alice, "get_run", {{"run_id", run["id"]}})["run"]["output"], run["output"]);
  EXPECT_EQ(Ok(alice, "get_agent", {{"agent", id}})["recent_runs"].size(), 1u);

  Json deleted = Ok(alice, "delete_agent", {{"agent", id}});
  EXPECT_EQ(deleted["agent"]["name"], "Weekly Digest");
  EXPECT_EQ(deleted["runs_deleted"], 1);
  EXPECT_EQ(ToolError(alice, "get_agent", {{"agent", id}}), "not_found");
  EXPECT_EQ(ToolError(alice, "get_run", {{"run_id", run["id"]}}), "not_found");
  EXPECT_EQ(ToolError(alice, "delete_agent", {{"agent", id}}), "not_found");
}

TEST_F(PlatformToolsTest, AnotherTenantsOrUsersAgentIsNotFound) {
  const auto alice = Fresh("acme");
  const auto mallory = Fresh("globex");
  const core::Identity colleague{"acme", "user-" + core::NewUuid()};
  const std::string id =
      Ok(alice, "create_agent", {{"name", "payroll"}, {"description", "pays"}})["agent"]["id"];
  const std::string run_id = Ok(alice, "run_agent", {{"agent", id}})["run"]["id"];
  for (const auto& other : {mallory, colleague}) {
    for (const std::string& ref : {id, std::string("payroll")}) {
      EXPECT_EQ(ToolError(other, "get_agent", {{"agent", ref}}), "not_found");
      EXPECT_EQ(ToolError(other, "update_agent", {{"agent", ref}, {"description", "mine"}}),
                "not_found");
      EXPECT_EQ(ToolError(other, "pause_agent", {{"agent", ref}}), "not_found");
      EXPECT_EQ(ToolError(other, "run_agent", {{"agent", ref}}), "not_found");
      EXPECT_EQ(ToolError(other, "delete_agent", {{"agent", ref}}), "not_found");
    }
    EXPECT_EQ(ToolError(other, "get_run", {{"run_id", run_id}}), "not_found");
    EXPECT_EQ(Ok(other, "list_agents", Json::object())["count"], 0);
    EXPECT_EQ(Ok(other, "list_runs", Json::object())["count"], 0);
    // The same name is free for someone else.
    Ok(other, "create_agent", {{"name", "payroll"}, {"description", "theirs"}});
  }
  Json mine = Ok(alice, "get_agent", {{"agent", id}})["agent"];
  EXPECT_EQ(mine["description"], "pays");
  EXPECT_EQ(mine["status"], "active");
}

TEST_F(PlatformToolsTest, RowLevelSecurityHidesOtherTenantsFromTheServiceRole) {
  const auto alice = Fresh("initech");
  Ok(alice, "create_agent", {{"name", "rls"}, {"description", "x"}});
  Ok(alice, "create_project", {{"name", "rls project"}});
  pqxx::connection conn(platform_->database.dsn());
  pqxx::work tx(conn);
  tx.exec("SET ROLE omniforge_executor");
  tx.exec("SELECT set_config('app.tenant_id', 'someone-else', true)");
  EXPECT_EQ(tx.exec1("SELECT count(*) FROM platform.agents")[0].as<int>(), 0);
  EXPECT_EQ(tx.exec1("SELECT count(*) FROM platform.projects")[0].as<int>(), 0);
  EXPECT_THROW(tx.exec("INSERT INTO platform.skills (tenant_id, id, user_id, name) VALUES "
                       "('initech', gen_random_uuid(), 'u', 'sneaky')"),
               pqxx::sql_error);
}

TEST_F(PlatformToolsTest, ReadFunctionsRunWithTheCallersRights) {
  // The read tools are functions (migration 0003). One running with its
  // owner's rights would read as the tables' owner, whom row-level security
  // does not restrict: each must run as the application role that calls it.
  pqxx::connection conn(platform_->database.dsn());
  pqxx::work tx(conn);
  const pqxx::row row = tx.exec1(
      "SELECT count(*), count(*) FILTER (WHERE prosecdef) FROM pg_proc WHERE pronamespace = "
      "'platform'::regnamespace AND (proname LIKE 'read\\_%' OR proname LIKE 'resolve\\_%')");
  EXPECT_EQ(row[0].as<int>(), 13);  // 0003, 0004 and 0005
  EXPECT_EQ(row[1].as<int>(), 0);
  tx.commit();
  // The tenant a read function sets ends with the statement that called it
  // (autocommit, as the tools call them): a pooled connection never carries
  // one tenant into the next caller's statement.
  const auto alice = Fresh("initech");
  Ok(alice, "create_agent", {{"name", "walled"}, {"description", "x"}});
  pqxx::nontransaction auto_commit(conn);
  auto_commit.exec("SET ROLE omniforge_executor");
  EXPECT_FALSE(auto_commit
                   .exec1("SELECT platform.read_get_agent(" + auto_commit.quote(alice.tenant_id) +
                          ", " + auto_commit.quote(alice.user_id) + ", NULL, 'walled')")[0]
                   .is_null());
  EXPECT_EQ(auto_commit.exec1("SELECT coalesce(current_setting('app.tenant_id', true), '')")[0]
                .as<std::string>(),
            "");
  EXPECT_EQ(auto_commit.exec1("SELECT count(*) FROM platform.agents")[0].as<int>(), 0);
}

TEST_F(PlatformToolsTest, Skills) {
  const auto alice = Fresh();
  Json skill = Ok(alice, "create_skill",
                  {{"name", "notion-read"}, {"description", "Reads Notion pages"}})["skill"];
  EXPECT_EQ(skill["name"], "notion-read");
  Ok(alice, "create_skill", {{"name", "slack_post"}, {"description", "Posts to Slack"}});
  EXPECT_EQ(ToolError(alice, "create_skill", {{"name", "Notion-Read"}, {"description", "x"}}),
            "already_exists");
  EXPECT_EQ(Ok(alice, "list_skills", Json::object())["count"], 2);
  EXPECT_EQ(Ok(alice, "list_skills", {{"query", "notion"}})["skills"][0]["name"], "notion-read");
  // LIKE wildcards in the query are literal.
  EXPECT_EQ(Ok(alice, "list_skills", {{"query", "_"}})["skills"][0]["name"], "slack_post");
  EXPECT_EQ(Ok(alice, "list_skills", {{"query", "%"}})["count"], 0);
  EXPECT_EQ(Ok(Fresh(), "list_skills", Json::object())["count"], 0);
}

TEST_F(PlatformToolsTest, ProjectsTemplatesTasksAndDocuments) {
  const auto alice = Fresh();
  Json tmpl = Ok(alice, "create_project_template",
                 {{"name", "Campaign"},
                  {"description", "A marketing campaign"},
                  {"tasks",
                   {{{"title", "Brief"}, {"description", "Who, what, why"}},
                    {{"title", "Assets"}},
                    {{"title", "Launch"}}}}})["template"];
  EXPECT_EQ(tmpl["tasks"].size(), 3u);
  EXPECT_EQ(ToolError(alice, "create_project_template", {{"name", "campaign"}}), "already_exists");
  Json templates = Ok(alice, "list_project_templates", {{"query", "market"}});
  ASSERT_EQ(templates["count"], 1);
  EXPECT_EQ(templates["templates"][0]["tasks"][0]["title"], "Brief");

  Json made = Ok(alice, "create_project",
                 {{"name", "Spring marketing"}, {"description", "Q2"}, {"template", "campaign"}});
  const std::string project_id = made["project"]["id"];
  EXPECT_EQ(made["project"]["template_id"], tmpl["id"]);
  ASSERT_EQ(made["tasks"].size(), 3u);
  EXPECT_EQ(made["tasks"][0]["title"], "Brief");
  EXPECT_EQ(made["tasks"][0]["description"], "Who, what, why");
  EXPECT_EQ(made["tasks"][2]["status"], "todo");
  EXPECT_EQ(ToolError(alice, "create_project", {{"name", "spring MARKETING"}}), "already_exists");
  EXPECT_EQ(ToolError(alice, "create_project", {{"name", "x"}, {"template", "nope"}}), "not_found");
  EXPECT_EQ(Ok(alice, "search_projects", {{"query", "x"}})["count"], 0);
  Ok(alice, "create_project", {{"name", "Autumn marketing"}});
  Ok(alice, "create_project", {{"name", "Hiring"}});

  Json found = Ok(alice, "search_projects", {{"query", "marketing"}});
  ASSERT_EQ(found["count"], 2);
  EXPECT_EQ(found["projects"][0]["name"], "Autumn marketing");
  EXPECT_EQ(found["projects"][1]["task_count"], 3);
  EXPECT_EQ(found["projects"][1]["open_task_count"], 3);
  EXPECT_EQ(Ok(alice, "search_projects", Json::object())["count"], 3);

  const std::string task_id = made["tasks"][1]["id"];
  Json task = Ok(alice, "update_task",
                 {{"task_id", task_id},
                  {"status", "in_progress"},
                  {"assignee", "dana"},
                  {"due_date", "2027-03-01"}})["task"];
  EXPECT_EQ(task["status"], "in_progress");
  EXPECT_EQ(task["due_date"], "2027-03-01");
  EXPECT_EQ(task["title"], "Assets");
  EXPECT_TRUE(Ok(alice, "update_task", {{"task_id", task_id}, {"due_date", ""}})["task"]["due_date"]
                  .is_null());
  EXPECT_THAT(Invalid(alice, "update_task", {{"task_id", task_id}, {"due_date", "2027-02-30"}}),
              HasSubstr("$.due_date"));
  EXPECT_THAT(Invalid(alice, "update_task", {{"task_id", task_id}}),
              HasSubstr("nothing to change"));
  EXPECT_EQ(
      Ok(alice, "list_tasks", {{"project", project_id}, {"status", "in_progress"}})["tasks"].size(),
      1u);

  Json doc = Ok(alice, "create_context_document",
                {{"project", "spring marketing"},
                 {"title", "Brief"},
                 {"content", "Launch in April for EU customers."}})["document"];
  EXPECT_EQ(doc["project_id"], project_id);
  Json details = Ok(alice, "get_project_details", {{"project", project_id}});
  EXPECT_EQ(details["project"]["name"], "Spring marketing");
  EXPECT_EQ(details["tasks"].size(), 3u);
  EXPECT_EQ(details["tasks"][1]["assignee"], "dana");
  ASSERT_EQ(details["context_documents"].size(), 1u);
  EXPECT_EQ(details["context_documents"][0]["content"], "Launch in April for EU customers.");

  const auto bob = Fresh();
  EXPECT_EQ(ToolError(bob, "get_project_details", {{"project", project_id}}), "not_found");
  EXPECT_EQ(ToolError(bob, "list_tasks", {{"project", "Spring marketing"}}), "not_found");
  EXPECT_EQ(ToolError(bob, "update_task", {{"task_id", task_id}, {"status", "done"}}), "not_found");
  EXPECT_EQ(ToolError(bob, "create_context_document",
                      {{"project", project_id}, {"title", "t"}, {"content", "c"}}),
            "not_found");
  EXPECT_EQ(ToolError(bob, "create_project", {{"name", "p"}, {"template", tmpl["id"]}}),
            "not_found");
  EXPECT_EQ(Ok(alice, "list_tasks", {{"project", project_id}})["tasks"][1]["status"],
            "in_progress");
}

TEST_F(PlatformToolsTest, WhatTheToolsStoreOfTheUsersWordsIsSealedAtRestAndReadsBack) {
  const auto alice = Fresh();
  const std::string words = "the Zanzibar merger";
  Ok(alice, "create_agent",
     {{"name", "merger-watch"},
      {"description", "Watches " + words},
      {"instructions", "Report on " + words},
      {"config", {{"recipients", "the " + words + " channel"}}},
      {"steps", {{{"tool", "list_agents"}, {"arguments", Json::object()}}}}});
  Ok(alice, "create_skill", {{"name", "merger-notes"}, {"description", "Notes on " + words}});
  Ok(alice, "create_project_template",
     {{"name", "Merger"}, {"description", words}, {"tasks", {{{"title", "Review " + words}}}}});
  Ok(alice, "create_project",
     {{"name", "Deal room"}, {"description", "All about " + words}, {"template", "Merger"}});
  Ok(alice, "create_context_document",
     {{"project", "Deal room"}, {"title", "Memo on " + words}, {"content", "Close " + words}});
  const Json run = Ok(alice, "run_agent", {{"agent", "merger-watch"}, {"input", {{"why", words}}}});
  ASSERT_EQ(run["run"]["status"], "succeeded") << run.dump();

  // Every row of the user's, whole, as text: no word of it in the clear.
  pqxx::connection conn(platform_->database.dsn());
  pqxx::work tx(conn);
  std::string rows;
  for (const char* table : {"agents", "skills", "project_templates", "projects",
                            "context_documents", "runs", "tool_invocations"}) {
    rows += tx.exec_params1(absl::StrCat("SELECT coalesce(string_agg(t::text, ''), '') FROM "
                                         "platform.",
                                         table, " t WHERE user_id = $1"),
                            alice.user_id)[0]
                .as<std::string>();
  }
  rows += tx.exec_params1(
                "SELECT coalesce(string_agg(t::text, ''), '') FROM platform.tasks t JOIN "
                "platform.projects p ON p.id = t.project_id WHERE p.user_id = $1",
                alice.user_id)[0]
              .as<std::string>();
  EXPECT_THAT(rows, HasSubstr("ofs1:"));
  EXPECT_THAT(rows, Not(HasSubstr("Zanzibar")));

  // The tools read every word back, and a search finds a description.
  const Json agent = Ok(alice, "get_agent", {{"agent", "merger-watch"}})["agent"];
  EXPECT_EQ(agent["description"], "Watches " + words);
  EXPECT_EQ(agent["instructions"], "Report on " + words);
  EXPECT_EQ(agent["config"]["recipients"], "the " + words + " channel");
  const Json found = Ok(alice, "search_projects", {{"query", "zanzibar"}});
  ASSERT_EQ(found["count"], 1);
  EXPECT_EQ(found["projects"][0]["description"], "All about " + words);
  EXPECT_EQ(Ok(alice, "list_skills", {{"query", "ZANZIBAR"}})["count"], 1);
  EXPECT_EQ(Ok(alice, "list_project_templates", {{"query", "zanzibar"}})["count"], 1);
  const Json details = Ok(alice, "get_project_details", {{"project", "Deal room"}});
  EXPECT_EQ(details["tasks"][0]["title"], "Review " + words);
  EXPECT_EQ(details["context_documents"][0]["content"], "Close " + words);
  const Json runs = Ok(alice, "list_runs", {{"agent", "merger-watch"}});
  ASSERT_EQ(runs["count"], 1);
  const Json got = Ok(alice, "get_run", {{"run_id", runs["runs"][0]["id"]}});
  EXPECT_EQ(got["run"]["input"]["why"], words) << got.dump();
}

TEST_F(PlatformToolsTest, BadInputNamesTheFieldAndWritesNothing) {
  const auto alice = Fresh();
  const int64_t agents_before = Count("SELECT count(*) FROM platform.agents");
  EXPECT_THAT(
      Invalid(alice, "create_agent", {{"name", std::string(101, 'n')}, {"description", ""}}),
      HasSubstr("$.name: must be 1 to 100 characters (got 101)"));
  EXPECT_THAT(Invalid(alice, "create_agent", {{"name", "   "}, {"description", ""}}),
              HasSubstr("$.name: must not be blank"));
  EXPECT_THAT(Invalid(alice, "create_agent", {{"name", "a\nb"}, {"description", ""}}),
              HasSubstr("$.name: must not contain control characters"));
  EXPECT_THAT(Invalid(alice, "create_agent", {{"description", "no name"}}),
              HasSubstr("missing required property \"name\""));
  EXPECT_THAT(
      Invalid(alice, "create_agent", {{"name", "x"}, {"description", "d"}, {"owner", "me"}}),
      HasSubstr("unexpected property \"owner\""));
  EXPECT_THAT(
      Invalid(alice, "create_agent", {{"name", "x"}, {"description", "d"}, {"skills", "notion"}}),
      HasSubstr("$.skills: expected array"));
  EXPECT_THAT(
      Invalid(alice, "create_agent", {{"name", "x"}, {"description", std::string(2001, 'd')}}),
      HasSubstr("$.description"));
  EXPECT_THAT(Invalid(alice, "get_run", {{"run_id", "not-a-uuid"}}),
              HasSubstr("$.run_id: 'not-a-uuid' is not an id"));
  EXPECT_THAT(Invalid(alice, "list_agents", {{"limit", 0}}), HasSubstr("$.limit"));
  EXPECT_THAT(Invalid(alice, "update_task", {{"task_id", core::NewUuid()}, {"status", "finished"}}),
              HasSubstr("$.status"));
  EXPECT_THAT(
      Invalid(alice, "create_project_template", {{"name", "t"}, {"tasks", {{{"title", ""}}}}}),
      HasSubstr("$.tasks[0]: $.title: must be 1 to 200 characters"));
  EXPECT_EQ(Count("SELECT count(*) FROM platform.agents"), agents_before);
  EXPECT_EQ(Count("SELECT count(*) FROM platform.project_templates WHERE name = 't'"), 0);
  // A refused call with an idempotency key leaves no record behind either.
  EXPECT_THAT(
      Call(alice, "create_agent", {{"name", ""}, {"description", ""}}, "bad-1").status().message(),
      HasSubstr("$.name"));
  EXPECT_EQ(Count("SELECT count(*) FROM platform.tool_invocations WHERE idempotency_key = "
                  "'bad-1'"),
            0);
}

TEST_F(PlatformToolsTest, RetriesWithAnIdempotencyKeyDoNotRunAgain) {
  const auto alice = Fresh();
  const Json args = {{"name", "once"}, {"description", "created once"}};
  auto first = Call(alice, "create_agent", args, "turn-7/call-1");
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_FALSE(first->deduplicated);
  auto retry = Call(alice, "create_agent", args, "turn-7/call-1");
  ASSERT_TRUE(retry.ok()) << retry.status();
  EXPECT_TRUE(retry->deduplicated);
  EXPECT_FALSE(retry->is_error);  // not "already_exists": the first result comes back
  EXPECT_EQ(retry->result_json, first->result_json);
  EXPECT_EQ(retry->duration_us, first->duration_us);
  EXPECT_EQ(Ok(alice, "list_agents", Json::object())["count"], 1);

  const Json run = {{"agent", "once"}};
  auto ran = Call(alice, "run_agent", run, "turn-7/call-2");
  auto ran_again = Call(alice, "run_agent", run, "turn-7/call-2");
  ASSERT_TRUE(ran.ok() && ran_again.ok());
  EXPECT_TRUE(ran_again->deduplicated);
  EXPECT_EQ(Ok(alice, "list_runs", Json::object())["count"], 1);
  // A new key is a new call.
  ASSERT_TRUE(Call(alice, "run_agent", run, "turn-8/call-1").ok());
  EXPECT_EQ(Ok(alice, "list_runs", Json::object())["count"], 2);

  auto reused =
      Call(alice, "run_agent", {{"agent", "once"}, {"input", {{"a", 1}}}}, "turn-7/call-2");
  EXPECT_TRUE(absl::IsFailedPrecondition(reused.status()));
  EXPECT_THAT(reused.status().message(), HasSubstr("idempotency_key"));

  // Keys belong to their user: someone else's identical key runs their own call.
  const auto bob = Fresh();
  auto bobs = Call(bob, "create_agent", args, "turn-7/call-1");
  ASSERT_TRUE(bobs.ok());
  EXPECT_FALSE(bobs->deduplicated);
  EXPECT_EQ(Ok(bob, "list_agents", Json::object())["count"], 1);
}

TEST_F(PlatformToolsTest, ConcurrentRetriesRunTheToolOnce) {
  const auto alice = Fresh();
  Ok(alice, "create_agent", {{"name", "busy"}, {"description", "d"}});
  constexpr int kCallers = 4;
  std::vector<std::thread> threads;
  threads.reserve(kCallers);
  std::atomic<int> ok = 0;
  for (int i = 0; i < kCallers; ++i) {
    threads.emplace_back([&] {
      auto out = Call(alice, "run_agent", {{"agent", "busy"}}, "same-key");
      // The loser either replays the result or is told the call still runs.
      if (out.ok() || absl::IsAborted(out.status())) ++ok;
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok, 4);
  EXPECT_EQ(Ok(alice, "list_runs", Json::object())["count"], 1);
}

TEST_F(PlatformToolsTest, HighRiskToolsAreFlagged) {
  const auto alice = Fresh();
  Ok(alice, "create_agent", {{"name", "doomed"}, {"description", "d"}});
  auto deleted = Call(alice, "delete_agent", {{"agent", "doomed"}});
  ASSERT_TRUE(deleted.ok());
  EXPECT_EQ(deleted->risk, ToolRisk::kHigh);
  auto listed = Call(alice, "list_agents", Json::object());
  EXPECT_EQ(listed->risk, ToolRisk::kRead);
  auto created = Call(alice, "create_skill", {{"name", "s"}, {"description", "d"}});
  EXPECT_EQ(created->risk, ToolRisk::kWrite);
  std::vector<std::string> high;
  for (const auto& spec : platform_->catalog.List()) {
    if (spec.risk == ToolRisk::kHigh) high.push_back(spec.name);
  }
  EXPECT_THAT(high, ::testing::ElementsAre("delete_agent"));
}

TEST_F(PlatformToolsTest, APassedDeadlineWritesNothing) {
  const auto alice = Fresh();
  auto late = platform_->runtime.Invoke(
      alice, {"create_agent", R"({"name": "late", "description": "d"})", "late-key"},
      std::chrono::system_clock::now() - std::chrono::milliseconds(1));
  EXPECT_TRUE(absl::IsDeadlineExceeded(late.status()));
  EXPECT_EQ(Ok(alice, "list_agents", Json::object())["count"], 0);
  EXPECT_EQ(Count("SELECT count(*) FROM platform.tool_invocations WHERE idempotency_key = "
                  "'late-key'"),
            0);
}

TEST_F(PlatformToolsTest, OldIdempotencyRecordsArePurgedAcrossTenants) {
  const auto alice = Fresh("purge-a");
  const auto bob = Fresh("purge-b");
  ASSERT_TRUE(Call(alice, "list_agents", Json::object(), "old-a").ok());
  ASSERT_TRUE(Call(bob, "list_agents", Json::object(), "old-b").ok());
  ASSERT_TRUE(Call(alice, "list_agents", Json::object(), "recent-a").ok());
  {
    pqxx::connection conn(platform_->database.dsn());
    pqxx::work tx(conn);
    tx.exec(
        "UPDATE platform.tool_invocations SET completed_at = now() - interval '10 days' "
        "WHERE idempotency_key IN ('old-a', 'old-b')");
    tx.commit();
  }
  auto purged =
      PurgeInvocations(platform_->database.pool(),
                       std::chrono::system_clock::now() - std::chrono::hours(24 * 7), 100);
  ASSERT_TRUE(purged.ok()) << purged.status();
  EXPECT_EQ(*purged, 2);
  EXPECT_EQ(Count("SELECT count(*) FROM platform.tool_invocations WHERE idempotency_key IN "
                  "('old-a', 'old-b')"),
            0);
  // The recent one still deduplicates.
  auto again = Call(alice, "list_agents", Json::object(), "recent-a");
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->deduplicated);
  // A purged key is free again: the call runs.
  auto old = Call(alice, "list_agents", Json::object(), "old-a");
  ASSERT_TRUE(old.ok());
  EXPECT_FALSE(old->deduplicated);
}

}  // namespace
}  // namespace omniforge::executor
