// The agent runtime and the scheduler on the real platform tools and
// PostgreSQL: a local run does its steps and stores them, a run with a
// model (the fake provider, OpenAI wire format) is given the agent's
// instructions and only its tools and records tokens and cost, a tool
// outside the grant is refused, limits end runs; two scheduler replicas
// over one database fire each slot of a simulated week exactly once,
// downtime follows each agent's policy, pause and resume, overlaps and
// abandoned runs. Time is an injected clock.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <mutex>
#include <thread>

#include "absl/time/civil_time.h"
#include "absl/time/time.h"
#include "libs/core/config.h"
#include "libs/core/ids.h"
#include "libs/core/metrics.h"
#include "libs/llm/llm_config.h"
#include "libs/llm/llm_factory.h"
#include "libs/llm/testing/fake_provider.h"
#include "libs/schedule/schedule.h"
#include "services/executor/src/llm_dialogue.h"
#include "services/executor/src/pg_schedule_store.h"
#include "services/executor/tests/fake_model.h"
#include "services/executor/tests/platform_runtime.h"

namespace omniforge::executor {
namespace {

using ::testing::HasSubstr;
using Json = nlohmann::json;

class ManualClock final : public core::Clock {
 public:
  explicit ManualClock(core::TimePoint start) : micros_(core::MicrosOf(start)) {}
  core::TimePoint Now() const override { return core::TimePointFromMicros(micros_.load()); }
  void Set(core::TimePoint t) { micros_ = core::MicrosOf(t); }
  void Advance(std::chrono::seconds by) { micros_ += by.count() * 1'000'000; }

 private:
  std::atomic<int64_t> micros_;
};

core::TimePoint Utc(int y, int mo, int d, int h, int mi) {
  return core::TimePointFromMicros(
      absl::ToUnixMicros(absl::FromCivil(absl::CivilMinute(y, mo, d, h, mi), absl::UTCTimeZone())));
}

// A tool that takes its time: it waits until the call's deadline.
class SlowTools final : public ToolProvider {
 public:
  absl::StatusOr<std::vector<ToolSpec>> ListTools() override {
    return std::vector<ToolSpec>{{"slow_report", "Takes a long time.",
                                  R"({"type": "object", "properties": {}})", ToolRisk::kRead,
                                  "test"}};
  }
  absl::StatusOr<ToolResult> Invoke(const ToolCall& call) override {
    std::this_thread::sleep_until(
        std::min(call.deadline, std::chrono::system_clock::now() + std::chrono::seconds(30)));
    return absl::DeadlineExceededError("slow_report ran out of time");
  }
};

class AgentRuntimeTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    platform_ = new testing::PlatformRuntime(6);
    ASSERT_TRUE(platform_->catalog.AddProvider(slow_).ok());
  }
  static void TearDownTestSuite() { delete platform_; }

  void SetUp() override { who_ = {"acme", "user-" + core::NewUuid()}; }

  absl::StatusOr<InvokeOutcome> Call(const std::string& tool, const Json& args) {
    return platform_->runtime.Invoke(who_, {tool, args.dump(), ""},
                                     std::chrono::system_clock::now() + std::chrono::seconds(30));
  }
  Json Ok(const std::string& tool, const Json& args) {
    auto out = Call(tool, args);
    EXPECT_TRUE(out.ok()) << tool << ": " << out.status();
    if (!out.ok()) return Json();
    EXPECT_FALSE(out->is_error) << tool << ": " << out->result_json;
    return Json::parse(out->result_json);
  }
  int64_t Count(const std::string& sql) {
    pqxx::connection conn(platform_->database.dsn());
    pqxx::work tx(conn);
    return tx.exec1(sql)[0].as<int64_t>();
  }
  void Exec(const std::string& sql) {
    pqxx::connection conn(platform_->database.dsn());
    pqxx::work tx(conn);
    tx.exec(sql);
    tx.commit();
  }

  // Runs the agent `name` with `runner` as run_agent does (the run recorded
  // first): the run as stored, null when that failed (reported).
  Json RunWith(AgentRunner& runner, const std::string& name) {
    auto agent = platform_->run_store.LoadAgent(who_, name);
    EXPECT_TRUE(agent.ok() && agent->has_value()) << name;
    if (!agent.ok() || !agent->has_value()) return Json();
    auto run_id = platform_->run_store.StartRun(who_, **agent, {});
    EXPECT_TRUE(run_id.ok()) << run_id.status();
    if (!run_id.ok()) return Json();
    auto stored = runner.Run(who_, **agent, *run_id, "{}");
    EXPECT_TRUE(stored.ok()) << stored.status();
    return stored.ok() ? Json::parse(*stored)["run"] : Json();
  }

  // A project with three tasks, from a template.
  void HarborProject() {
    Ok("create_project_template", {{"name", "launch-" + core::NewUuid()},
                                   {"tasks",
                                    {{{"title", "Write the announcement"}},
                                     {{"title", "Book the venue"}},
                                     {{"title", "Send the invitations"}}}}});
    const Json templates = Ok("list_project_templates", Json::object());
    Ok("create_project", {{"name", "Harbor"}, {"template", templates["templates"][0]["id"]}});
  }

  static testing::PlatformRuntime* platform_;
  static SlowTools slow_;
  core::Identity who_;
};

testing::PlatformRuntime* AgentRuntimeTest::platform_ = nullptr;
SlowTools AgentRuntimeTest::slow_;

TEST_F(AgentRuntimeTest, ALocalRunOfADigestListsTheProjectsTasksAndStoresItsCalls) {
  HarborProject();
  Ok("create_agent",
     {{"name", "harbor-digest"},
      {"description", "The open tasks of Harbor"},
      {"steps", {{{"tool", "list_tasks"}, {"arguments", {{"project", "Harbor"}}}}}}});
  const Json run = Ok("run_agent", {{"agent", "harbor-digest"}})["run"];
  EXPECT_EQ(run["status"], "succeeded") << run.dump();
  const std::string summary = run["output"]["summary"];
  EXPECT_THAT(summary, HasSubstr("harbor-digest: The open tasks of Harbor"));
  EXPECT_THAT(summary, HasSubstr("3 tasks:"));
  EXPECT_THAT(summary, HasSubstr("- Write the announcement (todo)"));
  EXPECT_THAT(summary, HasSubstr("- Send the invitations (todo)"));
  ASSERT_EQ(run["tool_calls"].size(), 1u);
  EXPECT_EQ(run["tool_calls"][0]["tool"], "list_tasks");
  EXPECT_EQ(run["tool_calls"][0]["arguments"]["project"], "Harbor");
  EXPECT_EQ(run["tool_calls"][0]["result"]["tasks"].size(), 3u);
  EXPECT_EQ(run["tokens"], 0);
  // get_run and list_runs show the same run.
  const Json got = Ok("get_run", {{"run_id", run["id"]}})["run"];
  EXPECT_EQ(got["output"]["summary"], summary);
  const Json listed = Ok("list_runs", {{"agent", "harbor-digest"}});
  ASSERT_EQ(listed["count"], 1);
  EXPECT_EQ(listed["runs"][0]["summary"], summary);
  EXPECT_EQ(listed["runs"][0]["trigger"], "manual");
}

TEST_F(AgentRuntimeTest, ARunThatCannotWorkFailsAndSaysWhy) {
  Ok("create_agent", {{"name", "words-only"}, {"description", "Has instructions, no steps"}});
  Json run = Ok("run_agent", {{"agent", "words-only"}})["run"];
  EXPECT_EQ(run["status"], "failed");
  EXPECT_THAT(run["error"].get<std::string>(), HasSubstr("no steps to run without a model"));

  // A step whose project does not exist: the run fails with the tool's error.
  Ok("create_agent",
     {{"name", "lost"},
      {"description", "x"},
      {"steps", {{{"tool", "list_tasks"}, {"arguments", {{"project", "Nowhere"}}}}}}});
  run = Ok("run_agent", {{"agent", "lost"}})["run"];
  EXPECT_EQ(run["status"], "failed");
  EXPECT_THAT(run["error"].get<std::string>(), HasSubstr("Nowhere"));
  EXPECT_EQ(Ok("list_runs", {{"status", "failed"}})["count"], 2);
}

TEST_F(AgentRuntimeTest, StepsAndToolsOutsideTheGrantAreRefusedAtCreation) {
  auto out = Call("create_agent",
                  {{"name", "sneaky"},
                   {"description", "x"},
                   {"tools", {"list_agents"}},
                   {"steps", {{{"tool", "update_task"}, {"arguments", {{"task_id", "x"}}}}}}});
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(out.status().message(), HasSubstr("'update_task' is not among the agent's tools"));
  // A run manages no agents: it can neither start runs nor widen a grant.
  for (const char* tool : {"run_agent", "update_agent", "create_agent", "resume_agent"}) {
    out = Call("create_agent", {{"name", "recursive"}, {"description", "x"}, {"tools", {tool}}});
    ASSERT_FALSE(out.ok()) << tool;
    EXPECT_THAT(out.status().message(), HasSubstr("cannot run, create, change")) << tool;
  }
  out = Call("create_agent", {{"name", "bad-zone"},
                              {"description", "x"},
                              {"schedule", "daily"},
                              {"time_zone", "Mars/Olympus"}});
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(out.status().message(), HasSubstr("$.time_zone"));
  EXPECT_EQ(Ok("list_agents", Json::object())["count"], 0);
}

TEST_F(AgentRuntimeTest, AScheduleThatCannotBeReadIsRefusedWithHowToSayIt) {
  auto out =
      Call("create_agent",
           {{"name", "fortnightly"}, {"description", "x"}, {"schedule", "every other week"}});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(out.status().message(), HasSubstr("$.schedule"));
  EXPECT_THAT(out.status().message(), HasSubstr("every monday at 9am"));
  const Json made = Ok("create_agent", {{"name", "weekly"},
                                        {"description", "x"},
                                        {"schedule", "weekdays at 7:30"},
                                        {"time_zone", "Europe/Berlin"}})["agent"];
  EXPECT_EQ(made["schedule"], "weekdays at 07:30 (Europe/Berlin)");
  EXPECT_EQ(made["schedule_cron"], "30 7 * * 1-5");
  EXPECT_EQ(made["time_zone"], "Europe/Berlin");
  EXPECT_EQ(Count("SELECT count(*) FROM platform.agent_schedules WHERE agent_id = '" +
                  made["id"].get<std::string>() + "'"),
            1);
  // No schedule: nothing for the scheduler.
  Ok("update_agent", {{"agent", "weekly"}, {"schedule", ""}});
  EXPECT_EQ(Count("SELECT count(*) FROM platform.agent_schedules WHERE agent_id = '" +
                  made["id"].get<std::string>() + "'"),
            0);
}

TEST_F(AgentRuntimeTest, TheUsersTimeZoneIsWhereSchedulesAreReadUnlessTheyNameOne) {
  EXPECT_EQ(Ok("get_settings", Json::object())["settings"]["time_zone"], "UTC");
  EXPECT_EQ(Ok("list_agents", Json::object())["time_zone"], "UTC");
  auto bad = Call("update_settings", {{"time_zone", "Mars/Olympus"}});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.status().message(), HasSubstr("$.time_zone"));
  EXPECT_THAT(bad.status().message(), HasSubstr("Europe/Berlin"));
  bad = Call("update_settings", {{"time_zone", "../../etc/passwd"}});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(Ok("get_settings", Json::object())["settings"]["time_zone"], "UTC");

  EXPECT_EQ(Ok("update_settings", {{"time_zone", "Europe/Berlin"}})["settings"]["time_zone"],
            "Europe/Berlin");
  EXPECT_EQ(Ok("list_agents", Json::object())["time_zone"], "Europe/Berlin");
  const Json berlin = Ok("create_agent", {{"name", "monday-report"},
                                          {"description", "x"},
                                          {"schedule", "every monday at 9am"}})["agent"];
  EXPECT_EQ(berlin["time_zone"], "Europe/Berlin");
  EXPECT_EQ(berlin["schedule"], "every Monday at 09:00 (Europe/Berlin)");
  // A zone of its own wins; agents keep theirs when the setting changes.
  const Json tokyo = Ok("create_agent", {{"name", "tokyo-report"},
                                         {"description", "x"},
                                         {"schedule", "daily at 8am"},
                                         {"time_zone", "Asia/Tokyo"}})["agent"];
  EXPECT_EQ(tokyo["time_zone"], "Asia/Tokyo");
  Ok("update_settings", {{"time_zone", "America/New_York"}});
  EXPECT_EQ(Ok("get_agent", {{"agent", "monday-report"}})["agent"]["time_zone"], "Europe/Berlin");
  // Another user of the tenant keeps the default.
  const core::Identity me = who_;
  who_ = {"acme", "user-" + core::NewUuid()};
  EXPECT_EQ(Ok("get_settings", Json::object())["settings"]["time_zone"], "UTC");
  who_ = me;
  // A run changes no settings.
  auto grant = Call("create_agent",
                    {{"name", "mover"}, {"description", "x"}, {"tools", {"update_settings"}}});
  ASSERT_FALSE(grant.ok());
  EXPECT_THAT(grant.status().message(), HasSubstr("settings"));
}

// An agent's output goes where it says besides the run record: its
// delivery tool is called after the run with the output in the named field
// (here a context document of the project; a Slack or email MCP tool works
// the same way), recorded with the run's calls; a delivery that fails
// leaves the run partial, saying so.
TEST_F(AgentRuntimeTest, ARunsOutputIsDeliveredWithItsToolAndAFailedDeliveryIsPartial) {
  HarborProject();
  const Json deliver = {{"tool", "create_context_document"},
                        {"arguments", {{"project", "Harbor"}, {"title", "Harbor digest"}}},
                        {"field", "content"}};
  const Json made =
      Ok("create_agent",
         {{"name", "harbor-notes"},
          {"description", "The open tasks of Harbor"},
          {"steps", {{{"tool", "list_tasks"}, {"arguments", {{"project", "Harbor"}}}}}},
          {"deliver", deliver}})["agent"];
  EXPECT_EQ(made["tools"], Json::array({"list_tasks", "create_context_document"}));
  Json run = Ok("run_agent", {{"agent", "harbor-notes"}})["run"];
  EXPECT_EQ(run["status"], "succeeded") << run.dump();
  EXPECT_EQ(run["output"]["delivered_with"], "create_context_document");
  ASSERT_EQ(run["tool_calls"].size(), 2u);
  EXPECT_EQ(run["tool_calls"][1]["delivery"], true);
  EXPECT_EQ(run["tool_calls"][1]["is_error"], false);
  const Json docs = Ok("get_project_details", {{"project", "Harbor"}})["context_documents"];
  ASSERT_EQ(docs.size(), 1u) << docs.dump();
  EXPECT_EQ(docs[0]["title"], "Harbor digest");
  EXPECT_THAT(docs[0]["content"].get<std::string>(), HasSubstr("- Write the announcement (todo)"));

  Ok("update_agent", {{"agent", "harbor-notes"},
                      {"deliver",
                       {{"tool", "create_context_document"},
                        {"arguments", {{"project", "Nowhere"}, {"title", "x"}}},
                        {"field", "content"}}}});
  run = Ok("run_agent", {{"agent", "harbor-notes"}})["run"];
  EXPECT_EQ(run["status"], "partial");
  EXPECT_THAT(run["error"].get<std::string>(),
              HasSubstr("the output was not delivered with create_context_document"));
  EXPECT_THAT(run["error"].get<std::string>(), HasSubstr("Nowhere"));
  EXPECT_THAT(run["output"]["summary"].get<std::string>(), HasSubstr("3 tasks:"));

  // Refused: a delivery outside the grant given, by a tool a run may not
  // call, into a field the arguments already fill; a smaller grant that
  // drops the delivery's tool.
  for (const Json& bad :
       {Json{{"tools", {"list_tasks"}}, {"deliver", {{"tool", "create_context_document"}}}},
        Json{{"deliver", {{"tool", "delete_agent"}}}},
        Json{{"deliver",
              {{"tool", "create_context_document"},
               {"arguments", {{"content", "x"}}},
               {"field", "content"}}}},
        // The default field (text) is no parameter of this tool; its
        // required project and title are missing.
        Json{{"deliver", {{"tool", "create_context_document"}}}}}) {
    Json args = {{"name", "bad-delivery"}, {"description", "x"}};
    args.update(bad);
    auto out = Call("create_agent", args);
    ASSERT_FALSE(out.ok()) << bad.dump();
    EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(out.status().message(), HasSubstr("deliver")) << bad.dump();
  }
  auto smaller = Call("update_agent", {{"agent", "harbor-notes"}, {"tools", {"list_tasks"}}});
  ASSERT_FALSE(smaller.ok());
  EXPECT_THAT(smaller.status().message(), HasSubstr("delivery call 'create_context_document'"));
  // {} takes the delivery away.
  Ok("update_agent", {{"agent", "harbor-notes"}, {"deliver", Json::object()}});
  EXPECT_EQ(Ok("get_agent", {{"agent", "harbor-notes"}})["agent"]["deliver"], Json::object());
  EXPECT_EQ(Ok("run_agent", {{"agent", "harbor-notes"}})["run"]["status"], "succeeded");
}

TEST_F(AgentRuntimeTest, ARunPastItsTimeoutFails) {
  Ok("create_agent", {{"name", "slowpoke"},
                      {"description", "x"},
                      {"steps", {{{"tool", "slow_report"}}}},
                      {"limits", {{"timeout_s", 1}}}});
  const auto started = std::chrono::steady_clock::now();
  const Json run = Ok("run_agent", {{"agent", "slowpoke"}})["run"];
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(10));
  EXPECT_EQ(run["status"], "failed");
  EXPECT_THAT(run["error"].get<std::string>(), HasSubstr("timed out"));
}

using testing::FakeModel;
using testing::OnFakeProvider;

TEST_F(AgentRuntimeTest, WithAModelTheRunGetsTheInstructionsAndOnlyTheGrantedTools) {
  using llm::testing::FakeRule;
  Ok("create_agent", {{"name", "victim"}, {"description", "must survive"}});
  // A scripted attacker: the model tries to delete an agent, then finishes.
  FakeRule attack;
  attack.match.operation = "executor_turn";
  attack.times = 1;
  attack.reply.tool_calls = {{"call_1", "delete_agent", R"({"agent": "victim"})"}};
  attack.reply.usage = llm::testing::FakeUsage{1000, 200, 0};
  FakeRule finish;
  finish.match.operation = "executor_turn";
  finish.match.last_is_tool_result = true;
  finish.reply.tool_calls = {
      {"call_2", "complete_task", R"({"summary": "2 agents listed", "confidence": 0.9})"}};
  finish.reply.usage = llm::testing::FakeUsage{1500, 100, 0};
  FakeModel fake = OnFakeProvider({attack, finish});
  ASSERT_NE(fake.model, nullptr);
  const AgentFactory with_model = LlmAgents(*fake.model, platform_->runtime);
  AgentRunner runner(platform_->run_store, platform_->runtime, with_model, core::SystemClock());
  Ok("create_agent", {{"name", "lister"},
                      {"description", "Lists the agents"},
                      {"instructions", "List my agents and say how many there are."},
                      {"tools", {"list_agents"}}});
  const Json run = RunWith(runner, "lister");
  EXPECT_EQ(run["status"], "succeeded") << run.dump();
  EXPECT_EQ(run["output"]["summary"], "2 agents listed");
  // The refused call is stored as refused, and nothing was deleted.
  ASSERT_GE(run["tool_calls"].size(), 1u) << run.dump();
  EXPECT_EQ(run["tool_calls"][0]["tool"], "delete_agent");
  EXPECT_EQ(run["tool_calls"][0]["is_error"], true);
  EXPECT_EQ(Ok("get_agent", {{"agent", "victim"}})["agent"]["name"], "victim");
  // Tokens and cost: 2,500 in at $2/M and 300 out at $8/M.
  EXPECT_EQ(run["tokens"], 2800);
  EXPECT_NEAR(run["cost_usd"].get<double>(), 0.0074, 1e-6);
  // The model read the instructions and was offered only the grant (and
  // the protocol's own tools).
  const auto requests = fake.server->Requests();
  ASSERT_FALSE(requests.empty());
  const Json body = Json::parse(requests[0].body);
  EXPECT_THAT(body.dump(), HasSubstr("List my agents and say how many there are."));
  std::vector<std::string> offered;
  for (const Json& tool : body["tools"]) offered.push_back(tool["function"]["name"]);
  EXPECT_THAT(offered,
              ::testing::UnorderedElementsAre("list_agents", "ask_planner", "complete_task"));
}

// ---- The scheduler -------------------------------------------------------

class SchedulerTest : public AgentRuntimeTest {
 protected:
  // Every scheduled agent's next slot as of `t` (what creation at `t` sets).
  void StartAt(core::TimePoint t) {
    pqxx::connection conn(platform_->database.dsn());
    pqxx::work tx(conn);
    for (const auto& row : tx.exec("SELECT tenant_id, agent_id::text, cron, time_zone FROM "
                                   "platform.agent_schedules WHERE user_id = " +
                                   tx.quote(who_.user_id))) {
      auto cron = schedule::Cron::Parse(row[2].c_str());
      ASSERT_TRUE(cron.ok());
      const auto next = cron->NextAfter(t, row[3].c_str());
      tx.exec_params(
          "UPDATE platform.agent_schedules SET next_slot = to_timestamp($3::double "
          "precision / 1e6) WHERE tenant_id = $1 AND agent_id = $2::uuid",
          row[0].c_str(), row[1].c_str(), core::MicrosOf(*next));
    }
    tx.commit();
  }

  static std::unique_ptr<Scheduler> MakeScheduler(ScheduleStore& store, const core::Clock& clock,
                                                  const std::string& name) {
    SchedulerOptions options;
    options.claimant = name;
    options.batch = 3;  // several claims per pass
    return std::make_unique<Scheduler>(
        store, [](const ClaimedRun& run) { RunClaimed(*runner_, run); }, clock, options);
  }

  std::map<std::string, int64_t> RunsPerAgent(const std::string& outcome = "run") {
    pqxx::connection conn(platform_->database.dsn());
    pqxx::work tx(conn);
    std::map<std::string, int64_t> out;
    for (const auto& row : tx.exec_params(
             "SELECT a.name, count(*) FROM platform.schedule_slots s JOIN platform.agents a ON "
             "a.tenant_id = s.tenant_id AND a.id = s.agent_id WHERE a.user_id = $1 AND s.outcome "
             "= $2 GROUP BY a.name",
             who_.user_id, outcome)) {
      out[row[0].c_str()] = row[1].as<int64_t>();
    }
    return out;
  }

  static AgentRunner* runner_;
};

AgentRunner* SchedulerTest::runner_ = nullptr;

Json Steps() { return {{{"tool", "list_agents"}, {"arguments", Json::object()}}}; }

TEST_F(SchedulerTest, TwoReplicasFireEachSlotOfASimulatedWeekExactlyOnce) {
  runner_ = &platform_->runner;
  const std::map<std::string, std::pair<std::string, int64_t>> agents = {
      // name: schedule, slots in the week (Monday 2030-01-07 00:00 to the next)
      {"quarter-hourly", {"every 15 minutes", 7 * 24 * 4}},
      {"hourly", {"hourly", 7 * 24}},
      {"six-hourly", {"0 */6 * * *", 7 * 4}},
      {"weekday-mornings", {"weekdays at 7:30", 5}},
      {"monday-report", {"every monday at 9am", 1}},
  };
  for (const auto& [name, spec] : agents) {
    Ok("create_agent",
       {{"name", name}, {"description", name}, {"schedule", spec.first}, {"steps", Steps()}});
  }
  const core::TimePoint monday = Utc(2030, 1, 7, 0, 0);
  StartAt(monday);
  ManualClock clock(monday);
  // Two replicas, each with its own connections, over one database.
  auto second_pool = pg::PgPool::Create(platform_->database.pool().options());
  ASSERT_TRUE(second_pool.ok());
  PgScheduleStore store_a(platform_->database.pool()), store_b(**second_pool);
  auto a = MakeScheduler(store_a, clock, "replica-a");
  auto b = MakeScheduler(store_b, clock, "replica-b");
  for (int step = 1; step <= 7 * 24 * 12; ++step) {  // every 5 minutes
    clock.Set(monday + std::chrono::minutes(5 * step));
    std::thread other([&] { EXPECT_TRUE(b->Pass().ok()); });
    EXPECT_TRUE(a->Pass().ok());
    other.join();
  }
  std::map<std::string, int64_t> expected;
  for (const auto& [name, spec] : agents) expected[name] = spec.second;
  EXPECT_EQ(RunsPerAgent("run"), expected);
  EXPECT_TRUE(RunsPerAgent("missed").empty());
  EXPECT_TRUE(RunsPerAgent("overlap").empty());
  // One run per slot, each finished, none twice.
  const std::string mine = "user_id = '" + who_.user_id + "' AND trigger = 'schedule'";
  EXPECT_EQ(Count("SELECT count(*) FROM platform.runs WHERE " + mine), 672 + 168 + 28 + 5 + 1);
  EXPECT_EQ(Count("SELECT count(DISTINCT (agent_id, slot)) FROM platform.runs WHERE " + mine),
            672 + 168 + 28 + 5 + 1);
  EXPECT_EQ(Count("SELECT count(*) FROM platform.runs WHERE status <> 'succeeded' AND " + mine), 0);
  EXPECT_EQ(a->counts().runs_started.load() + b->counts().runs_started.load(), 874);
  EXPECT_EQ(Count("SELECT count(*) FROM platform.runs WHERE " + mine +
                  " AND slot = '2030-01-07 07:30:00+00' AND agent_name = 'weekday-mornings'"),
            1);
}

TEST_F(SchedulerTest, DowntimeAcrossTwoSlotsFollowsEachAgentsPolicy) {
  runner_ = &platform_->runner;
  Ok("create_agent",
     {{"name", "catch-up"}, {"description", "x"}, {"schedule", "hourly"}, {"steps", Steps()}});
  Ok("create_agent", {{"name", "skipper"},
                      {"description", "x"},
                      {"schedule", "hourly"},
                      {"missed_runs", "skip"},
                      {"steps", Steps()}});
  const core::TimePoint t0 = Utc(2030, 2, 4, 10, 0);
  StartAt(t0);
  ManualClock clock(t0);
  PgScheduleStore store(platform_->database.pool());
  auto s = MakeScheduler(store, clock, "only");
  // Down from 10:00 to 12:30: the 11:00 and 12:00 slots were missed.
  clock.Set(t0 + std::chrono::minutes(150));
  ASSERT_TRUE(s->Pass().ok());
  EXPECT_EQ(RunsPerAgent("run"), (std::map<std::string, int64_t>{{"catch-up", 1}}));
  // run_once ran the 12:00 slot late and reports the 11:00 one; skip ran
  // nothing and reports both.
  EXPECT_EQ(Count("SELECT missed FROM platform.schedule_slots s JOIN platform.agents a ON a.id = "
                  "s.agent_id WHERE a.name = 'catch-up' AND a.user_id = '" +
                  who_.user_id + "' AND s.outcome = 'missed'"),
            1);
  EXPECT_EQ(Count("SELECT missed FROM platform.schedule_slots s JOIN platform.agents a ON a.id = "
                  "s.agent_id WHERE a.name = 'skipper' AND a.user_id = '" +
                  who_.user_id + "' AND s.outcome = 'missed'"),
            2);
  EXPECT_EQ(Count("SELECT count(*) FROM platform.runs WHERE user_id = '" + who_.user_id +
                  "' AND slot = '2030-02-04 12:00:00+00'"),
            1);
  // Back to normal: 13:00 runs for both.
  clock.Set(t0 + std::chrono::minutes(180));
  ASSERT_TRUE(s->Pass().ok());
  EXPECT_EQ(RunsPerAgent("run"), (std::map<std::string, int64_t>{{"catch-up", 2}, {"skipper", 1}}));
}

// What the owner hears about: a scheduled run that failed and slots missed
// in downtime, as notices in list_agents until marked seen; not a run they
// started themselves, not another user's.
TEST_F(SchedulerTest, FailedScheduledRunsAndMissedSlotsAreNoticesUntilSeen) {
  runner_ = &platform_->runner;
  Ok("create_agent",
     {{"name", "lost-hourly"},
      {"description", "x"},
      {"schedule", "hourly"},
      {"missed_runs", "skip"},
      {"steps", {{{"tool", "list_tasks"}, {"arguments", {{"project", "Nowhere"}}}}}}});
  Ok("run_agent", {{"agent", "lost-hourly"}});  // fails, but the user saw it
  const core::TimePoint t0 = Utc(2030, 5, 6, 10, 0);
  StartAt(t0);
  ManualClock clock(t0);
  PgScheduleStore store(platform_->database.pool());
  auto s = MakeScheduler(store, clock, "only");
  clock.Set(t0 + std::chrono::minutes(61));  // 11:00 runs and fails
  ASSERT_TRUE(s->Pass().ok());
  clock.Set(t0 + std::chrono::minutes(210));  // down over 12:00 and 13:00: skipped
  ASSERT_TRUE(s->Pass().ok());

  const Json notices = Ok("list_agents", Json::object())["notices"];
  ASSERT_EQ(notices.size(), 2u) << notices.dump();
  EXPECT_EQ(notices[0]["kind"], "run_failed");
  EXPECT_EQ(notices[0]["agent"], "lost-hourly");
  EXPECT_EQ(notices[0]["slot"], "2030-05-06T11:00:00+00:00");
  EXPECT_THAT(notices[0]["error"].get<std::string>(), HasSubstr("Nowhere"));
  EXPECT_EQ(notices[1]["kind"], "missed");
  EXPECT_EQ(notices[1]["missed"], 2);
  EXPECT_EQ(notices[1]["slot"], "2030-05-06T12:00:00+00:00");
  EXPECT_EQ(notices[1]["missed_until"], "2030-05-06T13:00:00+00:00");
  EXPECT_EQ(notices[1]["policy"], "skip");
  // Another user of the tenant hears nothing of them.
  const core::Identity me = who_;
  who_ = {"acme", "user-" + core::NewUuid()};
  EXPECT_FALSE(Ok("list_agents", Json::object()).contains("notices"));
  EXPECT_EQ(Ok("mark_notices_seen", {{"notices", {notices[0]["id"]}}})["marked"], 0);
  who_ = me;

  auto bad = Call("mark_notices_seen", {{"notices", {"missed:nope"}}});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Ok("list_agents", Json::object())["notices"].size(), 2u);
  EXPECT_EQ(Ok("mark_notices_seen", {{"notices", {notices[0]["id"], notices[1]["id"]}}})["marked"],
            2);
  EXPECT_FALSE(Ok("list_agents", Json::object()).contains("notices"));
  EXPECT_EQ(Ok("mark_notices_seen", {{"notices", {notices[0]["id"]}}})["marked"], 0);
}

// Agents kept by an older version with their schedule only in words are
// read at start as their owner and then fire like any other; one that
// cannot be read keeps its words.
TEST_F(SchedulerTest, SchedulesKeptOnlyAsWordsAreReadAtStart) {
  runner_ = &platform_->runner;
  Ok("create_agent", {{"name", "old-monday"}, {"description", "x"}, {"steps", Steps()}});
  Ok("create_agent", {{"name", "old-odd"}, {"description", "x"}, {"steps", Steps()}});
  // As the older version left them: words, no cron, no schedule row.
  Exec(
      "UPDATE platform.agents SET schedule = CASE name WHEN 'old-monday' THEN 'every monday at "
      "9am' ELSE 'every other week' END WHERE user_id = '" +
      who_.user_id + "'");
  PgScheduleStore store(platform_->database.pool());
  absl::StatusOr<OldSchedules> old = ReadOldSchedules(store, platform_->tools);
  ASSERT_TRUE(old.ok()) << old.status();
  EXPECT_GE(old->read, 1);
  EXPECT_GE(old->unreadable, 1);
  const Json monday = Ok("get_agent", {{"agent", "old-monday"}})["agent"];
  EXPECT_EQ(monday["schedule_cron"], "0 9 * * 1");
  EXPECT_EQ(monday["schedule"], "every Monday at 09:00 (UTC)");
  const Json odd = Ok("get_agent", {{"agent", "old-odd"}})["agent"];
  EXPECT_EQ(odd["schedule"], "every other week");
  EXPECT_EQ(odd["schedule_cron"], "");
  // The read one fires on the scheduler.
  const core::TimePoint sunday = Utc(2030, 6, 2, 12, 0);
  StartAt(sunday);
  ManualClock clock(sunday);
  auto s = MakeScheduler(store, clock, "only");
  clock.Set(Utc(2030, 6, 3, 9, 0));
  ASSERT_TRUE(s->Pass().ok());
  EXPECT_EQ(RunsPerAgent()["old-monday"], 1);
  EXPECT_EQ(RunsPerAgent().count("old-odd"), 0u);
}

TEST_F(SchedulerTest, PauseStopsTheScheduleAndResumeRestartsIt) {
  runner_ = &platform_->runner;
  const core::TimePoint t0 = Utc(2030, 3, 4, 8, 0);
  ManualClock clock(t0);
  PlatformTools tools(platform_->database.pool(), platform_->keys,
                      clock);  // creation on the test's clock
  ToolCatalog catalog;
  ASSERT_TRUE(catalog.AddProvider(tools).ok());
  ToolRuntime runtime(catalog, nullptr);
  const auto invoke = [&](const std::string& tool, const Json& args) {
    auto out = runtime.Invoke(who_, {tool, args.dump(), ""},
                              std::chrono::system_clock::now() + std::chrono::seconds(30));
    ASSERT_TRUE(out.ok() && !out->is_error) << tool;
  };
  invoke("create_agent",
         {{"name", "pausable"}, {"description", "x"}, {"schedule", "hourly"}, {"steps", Steps()}});
  PgScheduleStore store(platform_->database.pool());
  auto s = MakeScheduler(store, clock, "only");
  clock.Set(t0 + std::chrono::minutes(60));
  ASSERT_TRUE(s->Pass().ok());
  EXPECT_EQ(RunsPerAgent()["pausable"], 1);
  invoke("pause_agent", {{"agent", "pausable"}});
  for (int h = 2; h <= 4; ++h) {
    clock.Set(t0 + std::chrono::hours(h));
    ASSERT_TRUE(s->Pass().ok());
  }
  EXPECT_EQ(RunsPerAgent()["pausable"], 1);
  EXPECT_TRUE(RunsPerAgent("missed").empty()) << "a pause is no downtime";
  invoke("resume_agent", {{"agent", "pausable"}});  // at 12:00: next slot 13:00
  clock.Set(t0 + std::chrono::hours(5));
  ASSERT_TRUE(s->Pass().ok());
  EXPECT_EQ(RunsPerAgent()["pausable"], 2);
  EXPECT_TRUE(RunsPerAgent("missed").empty());
}

TEST_F(SchedulerTest, ARunPastItsTimeoutFailsAndTheNextSlotStillFires) {
  runner_ = &platform_->runner;
  Ok("create_agent", {{"name", "slow-hourly"},
                      {"description", "x"},
                      {"schedule", "hourly"},
                      {"steps", {{{"tool", "slow_report"}}}},
                      {"limits", {{"timeout_s", 1}}}});
  const core::TimePoint t0 = Utc(2030, 4, 1, 0, 0);
  StartAt(t0);
  ManualClock clock(t0);
  PgScheduleStore store(platform_->database.pool());
  auto s = MakeScheduler(store, clock, "only");
  for (int h = 1; h <= 2; ++h) {
    clock.Set(t0 + std::chrono::hours(h));
    ASSERT_TRUE(s->Pass().ok());
  }
  // The runs' errors are sealed at rest; list_runs reads them.
  const Json runs = Ok("list_runs", {{"agent", "slow-hourly"}, {"status", "failed"}});
  ASSERT_EQ(runs["runs"].size(), 2u) << runs.dump();
  for (const Json& run : runs["runs"]) {
    EXPECT_EQ(run["error"].get<std::string>().rfind("timed out", 0), 0u) << run.dump();
  }
  EXPECT_EQ(Count("SELECT count(*) FROM platform.runs WHERE status = 'failed' AND error LIKE "
                  "'ofs1:%' AND user_id = '" +
                  who_.user_id + "'"),
            2);
  EXPECT_EQ(RunsPerAgent()["slow-hourly"], 2);
}

TEST_F(SchedulerTest, AnOverlapIsRecordedAndAnAbandonedRunFails) {
  runner_ = &platform_->runner;
  const Json agent = Ok("create_agent", {{"name", "long-runner"},
                                         {"description", "x"},
                                         {"schedule", "hourly"},
                                         {"steps", Steps()}})["agent"];
  const core::TimePoint t0 = Utc(2030, 5, 6, 0, 0);
  StartAt(t0);
  // Its previous run still runs (its executor died: its lease ran out by
  // the database's clock a minute ago).
  Exec(
      "INSERT INTO platform.runs (tenant_id, id, user_id, agent_id, agent_name, status, "
      "lease_until) VALUES ('acme', '" +
      core::NewUuid() + "', '" + who_.user_id + "', '" + agent["id"].get<std::string>() +
      "', 'long-runner', 'running', now() - interval '1 minute')");
  ManualClock clock(t0 + std::chrono::minutes(60));
  PgScheduleStore store(platform_->database.pool());
  auto s = MakeScheduler(store, clock, "only");
  ASSERT_TRUE(s->Pass().ok());
  EXPECT_EQ(RunsPerAgent("overlap")["long-runner"], 1);
  EXPECT_EQ(s->counts().overlaps.load(), 1);
  // The pass also failed the abandoned run, so the next slot runs.
  EXPECT_EQ(Count("SELECT count(*) FROM platform.runs WHERE user_id = '" + who_.user_id +
                  "' AND status = 'failed' AND error LIKE '%abandoned%'"),
            1);
  clock.Set(t0 + std::chrono::minutes(120));
  ASSERT_TRUE(s->Pass().ok());
  EXPECT_EQ(RunsPerAgent("run")["long-runner"], 1);
}

TEST_F(SchedulerTest, LimitsAreStoredAsWholeNumbersAndAnOddOneStopsNoSchedule) {
  runner_ = &platform_->runner;
  // 60.0 passes the schema as an integer; it is stored as 60, and the
  // scheduler's lease reads any number (a text '60.0' cast to an integer
  // would fail every claim of every tenant).
  const Json made =
      Ok("create_agent", {{"name", "whole"},
                          {"description", "x"},
                          {"schedule", "hourly"},
                          {"steps", Steps()},
                          {"limits", {{"timeout_s", 60.0}, {"max_cost_usd", 0.25}}}})["agent"];
  EXPECT_EQ(made["limits"]["timeout_s"].dump(), "60");
  const core::TimePoint t0 = Utc(2030, 6, 3, 0, 0);
  StartAt(t0);
  Exec("UPDATE platform.agents SET limits = '{\"timeout_s\": 60.5}' WHERE id = '" +
       made["id"].get<std::string>() + "'");
  ManualClock clock(t0 + std::chrono::minutes(60));
  PgScheduleStore store(platform_->database.pool());
  auto s = MakeScheduler(store, clock, "only");
  ASSERT_TRUE(s->Pass().ok());
  EXPECT_EQ(Count("SELECT count(*) FROM platform.runs WHERE agent_name = 'whole' AND user_id = '" +
                  who_.user_id + "' AND status = 'succeeded'"),
            1);
}

TEST_F(AgentRuntimeTest, ARunFailedAsAbandonedStaysFailed) {
  Ok("create_agent", {{"name", "late"}, {"description", "x"}, {"steps", Steps()}});
  auto agent = platform_->run_store.LoadAgent(who_, "late");
  ASSERT_TRUE(agent.ok() && agent->has_value());
  auto run_id = platform_->run_store.StartRun(who_, **agent, {});
  ASSERT_TRUE(run_id.ok());
  Exec("UPDATE platform.runs SET status = 'failed', error = 'abandoned' WHERE id = '" + *run_id +
       "'");
  // Its executor comes back: the run does not start, and is not overwritten.
  auto ran = platform_->runner.Run(who_, **agent, *run_id, "{}");
  EXPECT_EQ(ran.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(Ok("get_run", {{"run_id", *run_id}})["run"]["status"], "failed");
  EXPECT_EQ(Count("SELECT count(*) FROM platform.runs WHERE id = '" + *run_id +
                  "' AND tool_calls = '[]'::jsonb"),
            1);
}

TEST_F(AgentRuntimeTest, WithAModelARunWithoutAGrantFailsInsteadOfReadingEverything) {
  FakeModel fake = OnFakeProvider({});
  const AgentFactory with_model = LlmAgents(*fake.model, platform_->runtime);
  AgentRunner runner(platform_->run_store, platform_->runtime, with_model, core::SystemClock());
  Ok("create_agent", {{"name", "ungranted"}, {"description", "x"}, {"instructions", "do it"}});
  auto agent = platform_->run_store.LoadAgent(who_, "ungranted");
  ASSERT_TRUE(agent.ok() && agent->has_value());
  const RunOutcome out = runner.Execute(who_, **agent, "r1", "{}");
  EXPECT_EQ(out.status, "failed");
  EXPECT_THAT(out.error, HasSubstr("no tools granted"));
  EXPECT_TRUE(fake.server->Requests().empty()) << "the model was never asked";
}

TEST_F(AgentRuntimeTest, ARunStopsAtItsCostLimitAndRunsAreCountedByKind) {
  using llm::testing::FakeRule;
  FakeRule list;
  list.match.operation = "executor_turn";
  list.times = 1;
  list.reply.tool_calls = {{"call_1", "list_agents", "{}"}};
  list.reply.usage = llm::testing::FakeUsage{1000, 0, 0};  // $0.002
  FakeRule more;
  more.match.operation = "executor_turn";
  more.reply.tool_calls = {{"call_2", "list_agents", "{}"}};
  FakeModel fake = OnFakeProvider({list, more});
  const AgentFactory with_model = LlmAgents(*fake.model, platform_->runtime);
  AgentRunner runner(platform_->run_store, platform_->runtime, with_model, core::SystemClock());
  Ok("create_agent", {{"name", "spender"},
                      {"description", "x"},
                      {"instructions", "list my agents, again and again"},
                      {"tools", {"list_agents"}},
                      {"config", {{"kind", "report"}}},
                      {"limits", {{"max_cost_usd", 0.001}}}});
  const Json run = RunWith(runner, "spender");
  EXPECT_EQ(run["status"], "partial") << run.dump();
  EXPECT_THAT(run["error"].get<std::string>(),
              HasSubstr("stopped at its cost limit of $0.001 per run (spent $0.002)"));
  EXPECT_LE(fake.server->Requests().size(), 2u) << "no model call after the limit";
  const std::string metrics = core::MetricsRegistry::Global().Render();
  EXPECT_THAT(metrics, HasSubstr("omniforge_agent_runs_total{kind=\"report\",status=\"partial\"}"));
  EXPECT_THAT(metrics, HasSubstr("omniforge_agent_runs_started_total{kind=\"report\"}"));
}

TEST_F(AgentRuntimeTest, ATenantAtItsCapWaitsWithinItsTimeAndThenFailsSayingSo) {
  AgentRunner runner(platform_->run_store, platform_->runtime, AgentFactory(), core::SystemClock(),
                     /*max_runs_per_tenant=*/1);
  Ok("create_agent", {{"name", "hog"},
                      {"description", "x"},
                      {"steps", {{{"tool", "slow_report"}}}},
                      {"limits", {{"timeout_s", 3}}}});
  Ok("create_agent",
     {{"name", "quick"}, {"description", "x"}, {"steps", Steps()}, {"limits", {{"timeout_s", 1}}}});
  auto hog = platform_->run_store.LoadAgent(who_, "hog");
  auto quick = platform_->run_store.LoadAgent(who_, "quick");
  ASSERT_TRUE(hog.ok() && hog->has_value() && quick.ok() && quick->has_value());
  auto hog_run = platform_->run_store.StartRun(who_, **hog, {});
  auto quick_run = platform_->run_store.StartRun(who_, **quick, {});
  ASSERT_TRUE(hog_run.ok() && quick_run.ok());
  std::thread first([&] { EXPECT_TRUE(runner.Run(who_, **hog, *hog_run, "{}").ok()); });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  auto second = runner.Run(who_, **quick, *quick_run, "{}");
  first.join();
  ASSERT_TRUE(second.ok()) << second.status();
  const Json run = Json::parse(*second)["run"];
  EXPECT_EQ(run["status"], "failed");
  EXPECT_THAT(run["error"].get<std::string>(), HasSubstr("already runs 1 agents at once"));
  EXPECT_EQ(Ok("get_run", {{"run_id", *hog_run}})["run"]["status"], "failed");  // timed out
}

TEST(PlanSlots, OnTimeLateAndMissedSlots) {
  DueSchedule due{{"t", "u"}, "a", "0 * * * *", "UTC", Utc(2030, 1, 1, 10, 0), "run_once", false};
  const std::chrono::seconds grace(120);
  SlotPlan p = PlanSlots(due, Utc(2030, 1, 1, 10, 0) + std::chrono::seconds(3), grace);
  ASSERT_TRUE(p.run.has_value());
  EXPECT_EQ(*p.run, Utc(2030, 1, 1, 10, 0));
  EXPECT_FALSE(p.late);
  EXPECT_EQ(p.missed, 0);
  EXPECT_EQ(p.next_slot, Utc(2030, 1, 1, 11, 0));
  // Three hours down.
  p = PlanSlots(due, Utc(2030, 1, 1, 12, 30), grace);
  ASSERT_TRUE(p.run.has_value());
  EXPECT_EQ(*p.run, Utc(2030, 1, 1, 12, 0));
  EXPECT_TRUE(p.late);
  EXPECT_EQ(p.missed, 2);
  EXPECT_EQ(p.missed_first, Utc(2030, 1, 1, 10, 0));
  EXPECT_EQ(p.missed_last, Utc(2030, 1, 1, 11, 0));
  EXPECT_EQ(p.next_slot, Utc(2030, 1, 1, 13, 0));
  due.missed_runs = "skip";
  p = PlanSlots(due, Utc(2030, 1, 1, 12, 30), grace);
  EXPECT_FALSE(p.run.has_value());
  EXPECT_EQ(p.missed, 3);
  // Within the grace the latest slot is on time whatever the policy.
  p = PlanSlots(due, Utc(2030, 1, 1, 12, 1), grace);
  ASSERT_TRUE(p.run.has_value());
  EXPECT_FALSE(p.late);
  EXPECT_EQ(p.missed, 2);
  // A very long downtime is counted up to the cap, and the next slot is
  // still after now.
  due.cron = "* * * * *";
  p = PlanSlots(due, Utc(2030, 3, 1, 0, 0) + std::chrono::seconds(30), grace, 1000);
  EXPECT_EQ(p.missed, 1000);
  ASSERT_TRUE(p.run.has_value());
  EXPECT_EQ(*p.run, Utc(2030, 3, 1, 0, 0));
  EXPECT_FALSE(p.late);
  EXPECT_EQ(p.next_slot, Utc(2030, 3, 1, 0, 1));
  // A cron with no slot left ends the schedule.
  due.cron = "0 0 29 2 *";
  due.next_slot = Utc(2028, 2, 29, 0, 0);
  p = PlanSlots(due, Utc(2028, 2, 29, 0, 0), grace);
  EXPECT_TRUE(p.run.has_value());
  EXPECT_FALSE(p.ended);  // 2032 is a leap year
}

}  // namespace
}  // namespace omniforge::executor
