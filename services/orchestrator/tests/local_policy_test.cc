#include "services/orchestrator/planner/local_policy.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "services/orchestrator/flow/context_box.h"
#include "services/orchestrator/flow/notices.h"
#include "services/orchestrator/flow/routing.h"
#include "services/orchestrator/planner/agent_draft.h"
#include "services/orchestrator/planner/model_planner.h"
#include "services/orchestrator/turn/turn_bus.h"

namespace omniforge::orchestrator {
namespace {

namespace intentpb = ::omniforge::intent::v1;
namespace execpb = ::omniforge::executor::v1;
using nlohmann::json;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;

intentpb::IntentAnalysis Intent(
    intentpb::ActionType action, std::map<std::string, std::string> entities = {},
    intentpb::ReferenceKind reference = intentpb::REFERENCE_KIND_UNSPECIFIED) {
  intentpb::IntentAnalysis analysis;
  analysis.set_action_type(action);
  analysis.set_confidence(0.9f);
  analysis.mutable_entities()->insert(entities.begin(), entities.end());
  analysis.set_reference(reference);
  return analysis;
}

json SetDraftStepsFor(const std::string& kind, const std::string& project) {
  json args = json::object();
  SetDraftSteps(kind, project, args);
  return args["steps"];
}

const std::vector<AgentInfo> kAgents = {{"invoice-chaser", "Chases invoices", "active", ""},
                                        {"weekly-sales-digest", "Sums up sales", "paused", ""}};

FlowState WithPending(const std::string& tool, json args,
                      execpb::ToolRisk risk = execpb::TOOL_RISK_WRITE) {
  FlowState state;
  state.flow_id = "flow-1";
  state.action_type = intentpb::ACTION_TYPE_CREATE_AGENT;
  state.pending = {PendingAction{"action-1", tool, std::move(args), risk, "a draft."}};
  return state;
}

TEST(LocalPolicyTest, AProblemBecomesAnAgentDraftThatWaits) {
  // As the intent service reads it: what the draft is for, and its name.
  Move move = DecideLocally({Intent(intentpb::ACTION_TYPE_CREATE_AGENT,
                                    {{"data_source", "notion"},
                                     {"schedule", "every monday"},
                                     {"purpose", "our Monday Notion updates take hours"},
                                     {"suggested_name", "monday-notion-updates"}}),
                             "our Monday Notion updates take hours - can you help?", std::nullopt,
                             kAgents});
  EXPECT_TRUE(move.run.empty()) << "nothing is written before the user agrees";
  ASSERT_EQ(move.propose.size(), 1u);
  EXPECT_EQ(move.propose[0].tool, "create_agent");
  EXPECT_EQ(move.propose[0].risk, execpb::TOOL_RISK_WRITE);
  EXPECT_EQ(move.propose[0].arguments["schedule"], "every monday");
  EXPECT_EQ(move.propose[0].arguments["config"]["data_source"], "notion");
  EXPECT_EQ(move.propose[0].arguments["name"], "monday-notion-updates");
  EXPECT_EQ(move.propose[0].arguments["description"],
            "Takes care of this for you: Our Monday Notion updates take hours.");
  EXPECT_THAT(move.reply, HasSubstr("Shall I go ahead?"));
}

// A schedule is read as the executor will store it: one that cannot be read
// is left out of the draft and the reply says why and asks when; the
// preview says it in the stored words.
TEST(LocalPolicyTest, AScheduleThatCannotBeReadIsLeftOutAndAskedAbout) {
  Move move = DecideLocally(
      {Intent(intentpb::ACTION_TYPE_CREATE_AGENT, {{"schedule", "every other week"},
                                                   {"purpose", "post the team's wins to #general"},
                                                   {"suggested_name", "team-wins"}}),
       "post the team's wins to #general every other week", std::nullopt, kAgents});
  ASSERT_EQ(move.propose.size(), 1u);
  EXPECT_FALSE(move.propose[0].arguments.contains("schedule"));
  EXPECT_THAT(move.reply, HasSubstr("I could not read that as a schedule (could not read the "
                                    "schedule 'every other week'"));
  EXPECT_THAT(move.reply, HasSubstr("tell me when it should run"));
  // The answer revises the draft; the preview gives the schedule as stored.
  FlowState last = WithPending("create_agent", move.propose[0].arguments);
  std::optional<Move> revised = ReviseLocally(
      {Intent(intentpb::ACTION_TYPE_CREATE_AGENT, {{"schedule", "every monday at 9am"}}),
       "every monday at 9am", last, kAgents},
      "");
  ASSERT_TRUE(revised.has_value());
  EXPECT_EQ(revised->propose[0].arguments["schedule"], "every monday at 9am");
  // Where the user's zone is not known, the preview says it is theirs (as
  // the executor reads it); where it is, the draft is read in it.
  EXPECT_THAT(revised->reply, HasSubstr("It runs every Monday at 09:00 (your time zone)."));
  PolicyInput in_berlin{
      Intent(intentpb::ACTION_TYPE_CREATE_AGENT, {{"schedule", "every monday at 9am"}}),
      "every monday at 9am", last, kAgents};
  in_berlin.time_zone = "Europe/Berlin";
  revised = ReviseLocally(in_berlin, "");
  ASSERT_TRUE(revised.has_value());
  EXPECT_EQ(revised->propose[0].arguments["time_zone"], "Europe/Berlin");
  EXPECT_THAT(revised->reply, HasSubstr("It runs every Monday at 09:00 (Europe/Berlin)."));
  // Another unreadable one changes nothing and says so.
  revised = ReviseLocally({Intent(intentpb::ACTION_TYPE_CREATE_AGENT, {{"schedule", "biweekly"}}),
                           "make it biweekly", last, kAgents},
                          "");
  ASSERT_TRUE(revised.has_value());
  EXPECT_THAT(revised->reply, HasSubstr("Nothing changed. I could not read that as a schedule"));
  EXPECT_FALSE(revised->propose[0].arguments.contains("schedule"));
  // A change of schedule alone that cannot be read asks when.
  move = DecideLocally({Intent(intentpb::ACTION_TYPE_UPDATE_AGENT,
                               {{"agent_name", "invoice-chaser"}, {"schedule", "every 3 days"}}),
                        "run invoice-chaser every 3 days", std::nullopt, kAgents});
  EXPECT_TRUE(move.propose.empty());
  EXPECT_THAT(move.reply, HasSubstr("When should 'invoice-chaser' run?"));
}

// In local mode a draft is runnable: its kind gives its instructions, the
// project it names its step and the tool the step needs.
TEST(LocalPolicyTest, ADraftGetsInstructionsOfItsKindAndStepsForTheProjectItNames) {
  Move move = DecideLocally(
      {Intent(intentpb::ACTION_TYPE_CREATE_AGENT, {{"agent_kind", "monitor"},
                                                   {"project", "Website relaunch"},
                                                   {"recipients", "#launch"},
                                                   {"purpose", "warn me about tasks still open"}}),
       "warn #launch about tasks of the Website relaunch project still open", std::nullopt,
       kAgents});
  ASSERT_EQ(move.propose.size(), 1u);
  const json& args = move.propose[0].arguments;
  EXPECT_EQ(args["config"]["kind"], "monitor");
  EXPECT_EQ(args["steps"], json::parse(R"([{"tool": "list_tasks", "arguments": )"
                                       R"({"project": "Website relaunch", "status": "todo"}}])"));
  EXPECT_EQ(args["tools"], json::array({"list_tasks"}));
  EXPECT_THAT(args["instructions"].get<std::string>(),
              HasSubstr("Each run, check the project 'Website relaunch' for anything that needs "
                        "attention; when something does, say what and why for #launch"));
  EXPECT_THAT(move.reply,
              HasSubstr("Each run it lists the tasks of 'Website relaunch' still to do."));
  // A report reads the whole project; with no project there are no steps,
  // and the preview says a run without a model has none.
  EXPECT_EQ(SetDraftStepsFor("report", "Harbor")[0]["tool"], "get_project_details");
  move = DecideLocally({Intent(intentpb::ACTION_TYPE_CREATE_AGENT,
                               {{"agent_kind", "digest"}, {"data_source", "notion"}}),
                        "a digest of our notion pages", std::nullopt, kAgents});
  ASSERT_EQ(move.propose.size(), 1u);
  EXPECT_FALSE(move.propose[0].arguments.contains("steps"));
  EXPECT_THAT(move.propose[0].arguments["instructions"].get<std::string>(),
              HasSubstr("Each run, read notion and sum up what is new"));
  EXPECT_THAT(move.reply, HasSubstr("Without a model it has no steps to run yet"));
}

// The user's time zone: set by saying so (a setting: previewed), asked, and
// the zone a draft's schedule is read in unless the request names one.
TEST(LocalPolicyTest, TheUsersTimeZoneIsSetAskedAndReadIntoDrafts) {
  PolicyInput in{Intent(intentpb::ACTION_TYPE_MANAGE_PLATFORM, {{"time_zone", "Europe/Berlin"}}),
                 "set my time zone to Europe/Berlin", std::nullopt, kAgents};
  Move move = DecideLocally(in);
  ASSERT_EQ(move.propose.size(), 1u) << move.reply;
  EXPECT_EQ(move.propose[0].tool, "update_settings");
  EXPECT_EQ(move.propose[0].risk, execpb::TOOL_RISK_WRITE);
  EXPECT_EQ(move.propose[0].arguments, json({{"time_zone", "Europe/Berlin"}}));
  EXPECT_TRUE(move.run.empty());
  EXPECT_THAT(move.reply, HasSubstr("set your time zone to Europe/Berlin"));
  EXPECT_THAT(move.reply, HasSubstr("your agents keep theirs"));
  in.time_zone = "Europe/Berlin";
  move = DecideLocally(in);
  EXPECT_TRUE(move.propose.empty());
  EXPECT_EQ(move.reply, "Your time zone is Europe/Berlin already.");
  // Even when the reading was unsure, a question about it is answered.
  intentpb::IntentAnalysis unsure = Intent(intentpb::ACTION_TYPE_UNKNOWN);
  unsure.set_is_ambiguous(true);
  move = DecideLocally({unsure, "what's my timezone?", std::nullopt, kAgents});
  ASSERT_EQ(move.run.size(), 1u);
  EXPECT_EQ(move.run[0].tool, "get_settings");
  EXPECT_EQ(
      DescribeResult(move.run[0], {{"settings", {{"time_zone", "Asia/Tokyo"}}}}, false, nullptr),
      "Your time zone is Asia/Tokyo: schedules that name none are read in it. Say \"set my "
      "time zone to Europe/Berlin\" (or a city) to change it.");

  // Without "my": a verb that sets it; a zone not recognised is said so.
  move =
      DecideLocally({Intent(intentpb::ACTION_TYPE_MANAGE_PLATFORM, {{"time_zone", "Asia/Tokyo"}}),
                     "use the Tokyo time zone", std::nullopt, kAgents});
  ASSERT_EQ(move.propose.size(), 1u);
  EXPECT_EQ(move.propose[0].arguments["time_zone"], "Asia/Tokyo");
  move = DecideLocally({Intent(intentpb::ACTION_TYPE_MANAGE_PLATFORM),
                        "set my time zone to Atlantis", std::nullopt, kAgents});
  EXPECT_TRUE(move.propose.empty());
  EXPECT_TRUE(move.run.empty());
  EXPECT_THAT(move.reply, HasSubstr("I did not recognise that time zone"));

  PolicyInput draft{
      Intent(intentpb::ACTION_TYPE_CREATE_AGENT, {{"schedule", "every monday at 9am"},
                                                  {"purpose", "sum up the week's sales"},
                                                  {"suggested_name", "sales-digest"}}),
      "sum up the week's sales every monday at 9am", std::nullopt, kAgents};
  draft.time_zone = "Asia/Tokyo";
  move = DecideLocally(draft);
  ASSERT_EQ(move.propose.size(), 1u);
  EXPECT_EQ(move.propose[0].arguments["time_zone"], "Asia/Tokyo");
  EXPECT_THAT(move.reply, HasSubstr("It runs every Monday at 09:00 (Asia/Tokyo)."));
  (*draft.intent.mutable_entities())["time_zone"] = "Europe/Paris";
  move = DecideLocally(draft);
  EXPECT_EQ(move.propose[0].arguments["time_zone"], "Europe/Paris");
  EXPECT_THAT(move.reply, HasSubstr("(Europe/Paris)"));
  // A zone inside a request for an agent is the draft's, not a setting.
  draft.message = "sum up the week's sales every monday at 9am, my time zone is Paris";
  move = DecideLocally(draft);
  ASSERT_EQ(move.propose.size(), 1u);
  EXPECT_EQ(move.propose[0].tool, "create_agent");
  EXPECT_EQ(move.propose[0].arguments["time_zone"], "Europe/Paris");
}

// A later message of the flow ("set up an agent for it" after a question)
// does not rename the draft: it is named and described after the goal.
TEST(LocalPolicyTest, ADraftIsNamedAfterTheFlowsGoalNotTheAnswer) {
  const std::string goal = "our Monday Notion updates take hours";
  Move asked =
      DecideLocally({Intent(intentpb::ACTION_TYPE_UNKNOWN,
                            {{"purpose", goal}, {"suggested_name", "monday-notion-updates"}}),
                     goal, std::nullopt, kAgents});
  ASSERT_TRUE(asked.clarifying);
  FlowState last;
  last.flow_id = "flow-1";
  last.goal = goal;
  last.clarifications = 1;
  last.asked = asked.asked;
  last.entities = asked.entities;
  // A second question on the way keeps them too.
  intentpb::IntentAnalysis unsure =
      Intent(intentpb::ACTION_TYPE_UNKNOWN, {{"purpose", "hmm"}, {"suggested_name", "hmm-agent"}});
  unsure.set_is_ambiguous(true);
  PolicyInput again{unsure, "hmm", last, kAgents};
  again.goal = goal;
  const Move asked_again = DecideLocally(again);
  ASSERT_TRUE(asked_again.clarifying);
  EXPECT_EQ(asked_again.entities.at("suggested_name"), "monday-notion-updates");
  last.clarifications = 2;
  last.entities = asked_again.entities;
  const std::string answer = "set up an agent for it";
  PolicyInput in{Intent(intentpb::ACTION_TYPE_CREATE_AGENT,
                        {{"purpose", answer}, {"suggested_name", "agent"}}),
                 answer, last, kAgents};
  in.goal = goal;
  Move move = DecideLocally(in);
  ASSERT_EQ(move.propose.size(), 1u) << move.reply;
  EXPECT_EQ(move.propose[0].arguments["name"], "monday-notion-updates");
  EXPECT_EQ(move.propose[0].arguments["description"],
            "Takes care of this for you: Our Monday Notion updates take hours.");
  EXPECT_EQ(move.entities.at("purpose"), goal) << "kept for the flow's next turn";
}

TEST(LocalPolicyTest, NewDetailsReviseTheDraftAndAskAgain) {
  const json args = {{"name", "digest"}, {"description", "d"}};
  std::optional<Move> revised =
      ReviseLocally({Intent(intentpb::ACTION_TYPE_CREATE_AGENT,
                            {{"schedule", "weekly"}, {"recipients", "the team"}},
                            intentpb::REFERENCE_KIND_CORRECTION),
                     "actually make it weekly and send it to the team",
                     WithPending("create_agent", args), kAgents},
                    "");
  ASSERT_TRUE(revised.has_value());
  const Move& move = *revised;
  EXPECT_TRUE(move.run.empty());
  ASSERT_EQ(move.propose.size(), 1u);
  EXPECT_EQ(move.propose[0].arguments["schedule"], "weekly");
  EXPECT_EQ(move.propose[0].arguments["config"]["recipients"], "the team");
  EXPECT_EQ(move.propose[0].arguments["name"], "digest");
  EXPECT_NE(move.propose[0].action_id, "action-1");
}

TEST(LocalPolicyTest, DeletingIsHighRiskAndWaits) {
  Move move = DecideLocally({Intent(intentpb::ACTION_TYPE_MANAGE_PLATFORM,
                                    {{"agent_name", "invoice-chaser"}, {"operation", "delete"}}),
                             "delete invoice-chaser", std::nullopt, kAgents});
  ASSERT_EQ(move.propose.size(), 1u);
  EXPECT_EQ(move.propose[0].tool, "delete_agent");
  EXPECT_EQ(move.propose[0].risk, execpb::TOOL_RISK_HIGH);
  EXPECT_THAT(move.reply, HasSubstr("cannot be undone"));
  Move pause = DecideLocally({Intent(intentpb::ACTION_TYPE_MANAGE_PLATFORM,
                                     {{"agent_name", "invoice-chaser"}, {"operation", "pause"}}),
                              "pause invoice-chaser for now", std::nullopt, kAgents});
  ASSERT_EQ(pause.propose.size(), 1u);
  EXPECT_EQ(pause.propose[0].tool, "pause_agent");
  EXPECT_EQ(pause.propose[0].risk, execpb::TOOL_RISK_WRITE);
  Move resume = DecideLocally({Intent(intentpb::ACTION_TYPE_MANAGE_PLATFORM,
                                      {{"agent_name", "invoice-chaser"}, {"operation", "resume"}}),
                               "unpause invoice-chaser", std::nullopt, kAgents});
  ASSERT_EQ(resume.propose.size(), 1u);
  EXPECT_EQ(resume.propose[0].tool, "resume_agent");
  // No lifecycle operation: what the topic asks for is shown.
  Move other = DecideLocally({Intent(intentpb::ACTION_TYPE_MANAGE_PLATFORM,
                                     {{"operation", "other"}, {"topic", "projects"}}),
                              "show me the projects", std::nullopt, kAgents});
  EXPECT_TRUE(other.propose.empty());
  ASSERT_EQ(other.run.size(), 1u);
  EXPECT_EQ(other.run[0].tool, "search_projects");
}

TEST(LocalPolicyTest, ReadsRunAtOnce) {
  Move list = DecideLocally({Intent(intentpb::ACTION_TYPE_QUERY_INFO, {{"topic", "agents"}}),
                             "what agents do I have", std::nullopt, kAgents});
  ASSERT_EQ(list.run.size(), 1u);
  EXPECT_EQ(list.run[0].tool, "list_agents");
  EXPECT_TRUE(list.propose.empty());
  Move runs = DecideLocally({Intent(intentpb::ACTION_TYPE_QUERY_INFO,
                                    {{"agent_name", "invoice-chaser"}, {"topic", "runs"}}),
                             "did invoice-chaser fail last night?", std::nullopt, kAgents});
  ASSERT_EQ(runs.run.size(), 1u);
  EXPECT_EQ(runs.run[0].tool, "list_runs");
  EXPECT_EQ(runs.run[0].arguments["agent"], "invoice-chaser");
  // One agent: the one named, else (nothing to show it by) the list.
  const std::map<std::string, std::string> one = {{"agent_name", "invoice-chaser"},
                                                  {"topic", "agent"}};
  Move agent = DecideLocally({Intent(intentpb::ACTION_TYPE_QUERY_INFO, one),
                              "how is invoice-chaser doing", std::nullopt, kAgents});
  ASSERT_EQ(agent.run.size(), 1u);
  EXPECT_EQ(agent.run[0].tool, "get_agent");
  Move none = DecideLocally({Intent(intentpb::ACTION_TYPE_QUERY_INFO, {{"topic", "agent"}}),
                             "how is it going", std::nullopt, kAgents});
  ASSERT_EQ(none.run.size(), 1u);
  EXPECT_EQ(none.run[0].tool, "list_agents");
  for (const auto& [topic, tool] : std::map<std::string, std::string>{
           {"skills", "list_skills"}, {"templates", "list_project_templates"}}) {
    Move read = DecideLocally({Intent(intentpb::ACTION_TYPE_QUERY_INFO, {{"topic", topic}}),
                               "which " + topic + " are there", std::nullopt, kAgents});
    ASSERT_EQ(read.run.size(), 1u) << topic;
    EXPECT_EQ(read.run[0].tool, tool);
  }
}

TEST(LocalPolicyTest, ThanksAreAnsweredAsThanksAndAnythingElseAsAGreeting) {
  Move thanks =
      DecideLocally({Intent(intentpb::ACTION_TYPE_CONVERSATION, {{"small_talk", "thanks"}}), "thx!",
                     std::nullopt, kAgents});
  EXPECT_THAT(thanks.reply, HasSubstr("You're welcome"));
  Move hello =
      DecideLocally({Intent(intentpb::ACTION_TYPE_CONVERSATION, {{"small_talk", "greeting"}}),
                     "hello there", std::nullopt, kAgents});
  EXPECT_THAT(hello.reply, HasSubstr("Hi! I can set up agents"));
}

TEST(LocalPolicyTest, RunningWithoutAnAgentAsksWhichWithTheAgentsNumbered) {
  Move move = DecideLocally(
      {Intent(intentpb::ACTION_TYPE_EXECUTE_TASK), "run one of my agents", std::nullopt, kAgents});
  EXPECT_TRUE(move.clarifying);
  EXPECT_THAT(move.reply, HasSubstr("1. invoice-chaser"));
  EXPECT_THAT(move.reply, HasSubstr("2. weekly-sales-digest"));
  EXPECT_EQ(move.listed_agents,
            (std::vector<std::string>{"invoice-chaser", "weekly-sales-digest"}));
}

TEST(LocalPolicyTest, ClarifiesAtMostTwiceInARowThenProceeds) {
  intentpb::IntentAnalysis unsure = Intent(intentpb::ACTION_TYPE_UNKNOWN);
  unsure.set_is_ambiguous(true);
  unsure.set_clarifying_question("Create a new agent, or change invoice-chaser?");
  FlowState asked;
  for (int before = 0; before < 2; ++before) {
    asked.clarifications = before;
    Move move = DecideLocally({unsure, "hmm", asked, kAgents});
    EXPECT_TRUE(move.clarifying) << before;
    EXPECT_EQ(move.reply, "Create a new agent, or change invoice-chaser?");
  }
  asked.clarifications = 2;
  Move move = DecideLocally({unsure, "hmm", asked, kAgents});
  EXPECT_FALSE(move.clarifying);
  EXPECT_FALSE(move.run.empty());
}

// What the intent service reads an answer to give (services/intent/src/reply.h).
intentpb::ReplyDecision Answered(std::map<std::string, std::string> fields) {
  intentpb::ReplyDecision reply;
  reply.set_kind(intentpb::REPLY_KIND_ANSWER);
  reply.mutable_fields()->insert(fields.begin(), fields.end());
  return reply;
}

TEST(LocalPolicyTest, AnAnswerToWhichAgentIsMergedIntoTheFlow) {
  Move ask = DecideLocally(
      {Intent(intentpb::ACTION_TYPE_EXECUTE_TASK), "run one of my agents", std::nullopt, kAgents});
  ASSERT_TRUE(ask.clarifying);
  FlowState asked;
  asked.action_type = ask.action_type;
  asked.listed_agents = ask.listed_agents;
  asked.clarifications = 1;
  asked.asked = ask.asked;
  ASSERT_TRUE(AnswerSkipsAnalysis(asked));
  // The intent service is told which agents the question listed, in order.
  const intentpb::PendingQuestion question = PendingQuestionOf(asked);
  EXPECT_EQ(question.kind(), intentpb::QUESTION_KIND_AGENT);
  EXPECT_THAT(question.options(), ElementsAreArray(ask.listed_agents));
  bool settles = false;
  const intentpb::IntentAnalysis answer =
      AnalysisOfAnswer(asked, Answered({{"agent_name", "weekly-sales-digest"}}), &settles);
  EXPECT_TRUE(settles);
  EXPECT_EQ(answer.action_type(), intentpb::ACTION_TYPE_EXECUTE_TASK);
  EXPECT_EQ(answer.entities().at("agent_name"), "weekly-sales-digest");
  EXPECT_FALSE(answer.is_ambiguous());
  Move move = DecideLocally({answer, "the second one", asked, kAgents});
  ASSERT_EQ(move.propose.size(), 1u);
  EXPECT_EQ(move.propose[0].tool, "run_agent");
  EXPECT_EQ(move.propose[0].arguments["agent"], "weekly-sales-digest");
  // By name, with a schedule, for an agent being changed.
  asked.action_type = intentpb::ACTION_TYPE_UPDATE_AGENT;
  asked.entities["data_source"] = "notion";
  const intentpb::IntentAnalysis named = AnalysisOfAnswer(
      asked, Answered({{"agent_name", "invoice-chaser"}, {"schedule", "every friday at 5pm"}}));
  EXPECT_EQ(named.entities().at("agent_name"), "invoice-chaser");
  EXPECT_EQ(named.entities().at("data_source"), "notion") << "the flow's entities stay";
  EXPECT_THAT(named.entities().at("schedule"), HasSubstr("friday"));
  // An answer that settles nothing, or a reply that is no answer, adds
  // nothing and says so.
  for (intentpb::ReplyKind kind : {intentpb::REPLY_KIND_ANSWER, intentpb::REPLY_KIND_NEW_REQUEST}) {
    intentpb::ReplyDecision reply;
    reply.set_kind(kind);
    settles = true;
    AnalysisOfAnswer(asked, reply, &settles);
    EXPECT_FALSE(settles) << intentpb::ReplyKind_Name(kind);
  }
  // "What would you like me to do?" is answered by a request of its own.
  asked.asked = kAskedIntent;
  EXPECT_FALSE(AnswerSkipsAnalysis(asked));
}

TEST(LocalPolicyTest, PastTheCapTheLikeliestAgentIsProposedInsteadOfAskingAgain) {
  FlowState asked;
  asked.clarifications = 2;
  asked.asked = kAskedAgent;
  asked.listed_agents = {"weekly-sales-digest", "invoice-chaser"};
  Move move =
      DecideLocally({Intent(intentpb::ACTION_TYPE_EXECUTE_TASK), "not sure", asked, kAgents});
  EXPECT_FALSE(move.clarifying);
  ASSERT_EQ(move.propose.size(), 1u) << move.reply;
  EXPECT_EQ(move.propose[0].arguments["agent"], "weekly-sales-digest");
  // Nothing to change named, past the cap: the agent is shown, not asked about.
  Move update =
      DecideLocally({Intent(intentpb::ACTION_TYPE_UPDATE_AGENT, {{"agent_name", "invoice-chaser"}}),
                     "hmm", asked, kAgents, 2});
  EXPECT_FALSE(update.clarifying);
  ASSERT_EQ(update.run.size(), 1u);
  EXPECT_EQ(update.run[0].tool, "get_agent");
  // A cap of zero never asks.
  Move none = DecideLocally(
      {Intent(intentpb::ACTION_TYPE_EXECUTE_TASK), "run one", std::nullopt, kAgents, 0});
  EXPECT_FALSE(none.clarifying);
}

// Notices in words, in the user's zone: a failure with its error, missed
// slots within a day and across days, and what the policy did.
TEST(NoticesTest, ListAgentsNoticesReadInTheUsersZone) {
  const AgentListing listing = ListingFromResult(json::parse(R"({
    "agents": [], "count": 0, "time_zone": "America/New_York",
    "notices": [
      {"id": "r1", "kind": "run_failed", "agent": "digest", "agent_id": "a1", "run_id": "r1",
       "slot": "2030-05-06T13:00:00+00:00", "error": "no project matches 'X'"},
      {"id": "missed:a1:1", "kind": "missed", "agent": "digest", "slot": "2030-05-06T13:00:00+00:00",
       "missed": 2, "missed_until": "2030-05-06T14:00:00+00:00", "policy": "skip"},
      {"id": "missed:a1:2", "kind": "missed", "agent": "digest", "slot": "2030-05-06T13:00:00+00:00",
       "missed": 30, "missed_until": "2030-05-07T18:00:00+00:00", "policy": "run_once"},
      {"id": "x", "kind": "something new", "agent": "digest"}]})"));
  EXPECT_EQ(listing.time_zone, "America/New_York");
  ASSERT_EQ(listing.notices.size(), 3u);  // an unknown kind is left out
  EXPECT_EQ(listing.notice_ids, (std::vector<std::string>{"r1", "missed:a1:1", "missed:a1:2"}));
  EXPECT_EQ(listing.notices[0].message(),
            "Your agent 'digest' failed on its scheduled run of Monday 6 May at 09:00 "
            "(America/New_York): no project matches 'X'.");
  EXPECT_EQ(listing.notices[1].message(),
            "Your agent 'digest' missed 2 scheduled runs, Monday 6 May at 09:00 to 10:00 "
            "America/New_York, while no scheduler was running; they were skipped, as the agent "
            "is set to.");
  EXPECT_THAT(listing.notices[2].message(),
              HasSubstr("Monday 6 May at 09:00 to Tuesday 7 May at 14:00 America/New_York"));
  EXPECT_THAT(listing.notices[2].message(), HasSubstr("the run after them ran late"));
  // A result that says nothing of the zone leaves it unknown.
  EXPECT_TRUE(ListingFromResult(json::parse(R"({"agents": []})")).time_zone.empty());
}

TEST(ContextBoxTest, KeepsTheNewestEntriesAndRendersOneLinePerSection) {
  ContextBox box;
  box.goal = "weekly sales report";
  box.entities = {{"agent_name", "weekly-sales-digest"}, {"schedule", "every monday"}};
  for (int i = 0; i < 12; ++i) ContextBox::Add(box.progress, "step " + std::to_string(i));
  ContextBox::Add(box.progress, "step 11");  // the newest again: not repeated
  ContextBox::Add(box.data, std::string(1000, 'x'));
  ContextBox::Add(box.next, "run create_agent once approved");
  EXPECT_EQ(box.progress.size(), 8u);
  EXPECT_EQ(box.progress.front(), "step 4");
  EXPECT_LT(box.data[0].size(), 310u);
  const std::string text = RenderContextBox(box);
  EXPECT_THAT(text, HasSubstr("GOAL: weekly sales report\n"));
  EXPECT_THAT(text, HasSubstr("ENTITIES: agent_name=weekly-sales-digest; schedule=every monday"));
  EXPECT_THAT(text, HasSubstr("NEXT: run create_agent once approved"));
  EXPECT_EQ(text.find("BLOCKERS"), std::string::npos) << "empty sections are left out";
  const ContextBox back = ContextBoxFromJson(ContextBoxToJson(box));
  EXPECT_EQ(RenderContextBox(back), text);
  EXPECT_TRUE(ContextBoxFromJson(json::array()).empty());
}

// A model that asks for the same tool calls each time it is asked.
class ToolCallingModel final : public llm::ChatModel {
 public:
  explicit ToolCallingModel(std::vector<llm::ToolCall> calls) : calls_(std::move(calls)) {}
  absl::StatusOr<llm::ChatResponse> Complete(const llm::ChatRequest& request,
                                             const llm::CallContext& context) override {
    return Stream(request, context, nullptr);
  }
  absl::StatusOr<llm::ChatResponse> Stream(const llm::ChatRequest&, const llm::CallContext&,
                                           const llm::StreamCallback&) override {
    ++asked;
    llm::ChatResponse answer;
    answer.tool_calls = calls_;
    answer.finish_reason = llm::FinishReason::kToolCalls;
    return answer;
  }
  int asked = 0;

 private:
  std::vector<llm::ToolCall> calls_;
};

// A turn whose guardrail refuses every tool call (its time ran out, its
// tool calls are used up; the error event is the turn's to send).
class GuardedIo final : public PlannerIo {
 public:
  void Text(const std::string&) override {}
  void RestartText(const std::string&) override {}
  std::optional<ToolRun> RunTool(const ToolStep& step) override {
    tried.push_back(step.tool);
    return std::nullopt;
  }
  std::optional<ToolRun> CreatePlan(const std::string&) override { return std::nullopt; }
  bool Stopped() override { return false; }
  std::vector<std::string> tried;
};

// A guardrail that stops a tool call the model asked for ends the planner as
// stopped: the model is not asked again, no later call of the same answer
// runs, and nothing reads as the model failing (which would bring the local
// policy in).
TEST(ModelPlannerTest, AGuardrailThatStopsAToolCallEndsThePlannerAsStopped) {
  ToolCallingModel model({{"c1", "list_agents", "{}"}, {"c2", "list_runs", "{}"}});
  PlannerRequest request;
  request.message = "what do I have?";
  for (const char* name : {"list_agents", "list_runs"}) {
    execpb::ToolDescriptor tool;
    tool.set_name(name);
    tool.set_risk(execpb::TOOL_RISK_READ);
    request.tools.push_back(tool);
  }
  GuardedIo io;
  const PlannerResult result = RunModelPlanner(model, request, io);
  EXPECT_TRUE(result.stopped);
  EXPECT_TRUE(result.error.empty()) << result.error;
  EXPECT_FALSE(result.iteration_limit);
  EXPECT_EQ(model.asked, 1);
  EXPECT_EQ(io.tried, std::vector<std::string>{"list_agents"});
  EXPECT_TRUE(result.tools_used.empty());
}

TEST(ModelPlannerTest, ThePromptCarriesTheBoxAndStopsQuestionsAtTheCap) {
  PlannerRequest request;
  request.box.goal = "our standup notes pile up";
  ContextBox::Add(request.box.blockers, "waiting for the user's approval");
  request.clarifications = 1;
  request.max_clarifications = 2;
  std::string prompt = PlannerSystemPrompt(request);
  EXPECT_THAT(prompt, HasSubstr("GOAL: our standup notes pile up"));
  EXPECT_THAT(prompt, HasSubstr("BLOCKERS: waiting for the user's approval"));
  EXPECT_EQ(prompt.find("Do not ask"), std::string::npos);
  request.clarifications = 2;
  request.resuming = true;
  prompt = PlannerSystemPrompt(request);
  EXPECT_THAT(prompt, HasSubstr("Do not ask a clarifying question now"));
  EXPECT_THAT(prompt, HasSubstr("RESUMING"));
}

// With no tools on offer (none configured, the executor out of reach) the
// model is reminded that there are none, instead of a list of tool risks.
TEST(LocalPolicyTest, ThePlannerIsRemindedWhenNoToolsAreOnOffer) {
  PlannerRequest request;
  std::string prompt = PlannerSystemPrompt(request);
  EXPECT_THAT(prompt, HasSubstr(kNoToolsReminder));
  EXPECT_EQ(prompt.find("Tool risk:"), std::string::npos);
  execpb::ToolDescriptor tool;
  tool.set_name("list_agents");
  tool.set_risk(execpb::TOOL_RISK_READ);
  request.tools.push_back(tool);
  prompt = PlannerSystemPrompt(request);
  EXPECT_EQ(prompt.find("<system-reminder>"), std::string::npos);
  EXPECT_THAT(prompt, HasSubstr("- list_agents: read-only, runs at once"));
}

TEST(ModelPlannerTest, ThePromptTellsThePlannerToSayAPlansLimitations) {
  PlannerRequest request;
  EXPECT_EQ(PlannerSystemPrompt(request).find("assessment"), std::string::npos);
  request.offer_plans = true;
  const std::string prompt = PlannerSystemPrompt(request);
  EXPECT_THAT(prompt, HasSubstr("Its result carries an assessment (score, verdict, reasons)"));
  EXPECT_THAT(prompt, HasSubstr("never call a partial or blocked result complete"));
}

TEST(LocalPolicyTest, SuggestedNamesAreMadeUnique) {
  EXPECT_EQ(UniqueAgentName("weekly-sales-reports", {}), "weekly-sales-reports");
  EXPECT_EQ(UniqueAgentName("weekly-sales-reports", {{"Weekly-Sales-Reports", "", "", ""}}),
            "weekly-sales-reports-2");
  EXPECT_EQ(UniqueAgentName("", {{"assistant-agent", "", "", ""}}), "assistant-agent-2");
}

TEST(LocalPolicyTest, ResultsReadAsSentencesAndListsNumberTheAgents) {
  std::vector<std::string> listed;
  const std::string text = DescribeResult(
      {"list_agents", json::object()},
      {{"agents", {{{"name", "a1"}, {"description", "first"}}, {{"name", "a2"}}}}, {"count", 2}},
      false, &listed);
  EXPECT_THAT(text, HasSubstr("1. a1 — first"));
  EXPECT_THAT(text, HasSubstr("2. a2"));
  EXPECT_EQ(listed, (std::vector<std::string>{"a1", "a2"}));
  EXPECT_THAT(DescribeResult({"pause_agent", {{"agent", "a1"}}},
                             {{"error", {{"code", "not_found"}, {"message", "no agent 'a1'"}}}},
                             true, nullptr),
              HasSubstr("no agent 'a1'"));
}

TEST(FlowStateTest, RoundTripsThroughJsonAndReadsOldOrBrokenStatesLeniently) {
  FlowState state = WithPending("create_agent", {{"name", "x"}});
  state.turn_id = "t1";
  state.conversation_id = "c1";
  state.revision = 3;
  state.status = FlowStatus::kWaiting;
  state.entities = {{"schedule", "daily"}};
  state.listed_agents = {"a", "b"};
  state.clarifications = 1;
  state.tools_used = {"list_agents"};
  const FlowState back = FlowStateFromJson(FlowStateToJson(state));
  EXPECT_EQ(back.turn_id, "t1");
  EXPECT_EQ(back.flow_id, "flow-1");
  EXPECT_EQ(back.conversation_id, "c1");
  EXPECT_EQ(back.revision, 3);
  EXPECT_EQ(back.status, FlowStatus::kWaiting);
  EXPECT_EQ(back.action_type, intentpb::ACTION_TYPE_CREATE_AGENT);
  EXPECT_EQ(back.entities, state.entities);
  EXPECT_EQ(back.listed_agents, state.listed_agents);
  ASSERT_EQ(back.pending.size(), 1u);
  EXPECT_EQ(back.pending[0].arguments, state.pending[0].arguments);
  EXPECT_EQ(back.clarifications, 1);
  EXPECT_EQ(back.tools_used, state.tools_used);
  EXPECT_TRUE(back.box.empty());
  EXPECT_FALSE(back.suspended_flow.has_value());

  state.box = ContextBox{"goal", {{"k", "v"}}, {}, {"d"}, {"p"}, {}, {"n"}, {}};
  state.status = FlowStatus::kSuspended;
  state.suspended_flow =
      SuspendedFlow{"flow-0", "earlier goal", intentpb::ACTION_TYPE_QUERY_INFO, {}, state.box};
  const FlowState with_box = FlowStateFromJson(FlowStateToJson(state));
  EXPECT_EQ(RenderContextBox(with_box.box), RenderContextBox(state.box));
  EXPECT_EQ(with_box.status, FlowStatus::kSuspended);
  ASSERT_TRUE(with_box.suspended_flow.has_value());
  EXPECT_EQ(with_box.suspended_flow->flow_id, "flow-0");
  EXPECT_EQ(with_box.suspended_flow->action_type, intentpb::ACTION_TYPE_QUERY_INFO);
  ASSERT_TRUE(with_box.suspended_flow->box.has_value());
  EXPECT_FALSE(with_box.plan.has_value());

  // The plan a flow waits on is kept, also with a suspended flow.
  state.plan = PlanRef{"plan-1", "pending_review", "ship it"};
  state.suspended_flow->plan = PlanRef{"plan-0", "running", "earlier"};
  const FlowState with_plan = FlowStateFromJson(FlowStateToJson(state));
  ASSERT_TRUE(with_plan.plan.has_value());
  EXPECT_EQ(with_plan.plan->plan_id, "plan-1");
  EXPECT_EQ(with_plan.plan->status, "pending_review");
  EXPECT_EQ(with_plan.plan->objective, "ship it");
  ASSERT_TRUE(with_plan.suspended_flow->plan.has_value());
  EXPECT_EQ(with_plan.suspended_flow->plan->status, "running");
  EXPECT_FALSE(FlowStateFromJson({{"plan", {{"plan_id", ""}, {"status", "running"}}}}).plan);

  const FlowState broken = FlowStateFromJson({{"action_type", "NOT_AN_ACTION"},
                                              {"pending", {{"tool", 5}}},
                                              {"entities", "x"},
                                              {"revision", "7"}});
  EXPECT_EQ(broken.action_type, intentpb::ACTION_TYPE_UNSPECIFIED);
  EXPECT_TRUE(broken.pending.empty());
  EXPECT_TRUE(broken.entities.empty());
  EXPECT_EQ(broken.revision, 0);
  EXPECT_TRUE(FlowStateFromJson(json::array()).pending.empty());
}

TEST(RoutingTest, TheReplyCarriesOnlyTheProjectionOfItsFlowsState) {
  FlowState state = WithPending("create_agent", {{"name", "x"}});
  state.turn_id = "t1";
  state.status = FlowStatus::kWaiting;
  state.entities = {{"schedule", "daily"}};
  state.listed_agents = {"a", "b"};
  state.clarifications = 1;
  state.asked = "agent";
  state.box.goal = "set up a digest";
  state.plan = PlanRef{"plan-1", "pending_review", "ship it"};
  state.suspended_flow = SuspendedFlow{"flow-0", "earlier goal"};
  const json stored = RoutingToJson(RoutingOf(state));
  for (const char* kept_in_the_store_only :
       {"pending_actions", "clarifications", "asked", "context_box", "plan", "goal"}) {
    EXPECT_FALSE(stored.contains(kept_in_the_store_only)) << kept_in_the_store_only;
  }
  const Routing back = RoutingFromJson(stored);
  EXPECT_EQ(back.turn_id, "t1");
  EXPECT_EQ(back.flow_id, "flow-1");
  EXPECT_EQ(back.action_type, intentpb::ACTION_TYPE_CREATE_AGENT);
  EXPECT_EQ(back.entities, state.entities);
  EXPECT_EQ(back.listed_agents, state.listed_agents);
  EXPECT_TRUE(back.pending_action);
  EXPECT_EQ(back.status, FlowStatus::kWaiting);
  ASSERT_TRUE(back.suspended_flow.has_value());
  EXPECT_EQ(back.suspended_flow->flow_id, "flow-0");
  EXPECT_FALSE(back.written_whole.has_value());
}

TEST(RoutingTest, MetadataOfAnOlderVersionReadsAsTheWholeStateItCarried) {
  // As the previous release stored it with a reply: everything in the
  // routing, no format.
  const json old = {{"turn_id", "t0"},
                    {"flow_id", "flow-9"},
                    {"goal", "chase invoices"},
                    {"action_type", "ACTION_TYPE_CREATE_AGENT"},
                    {"pending_action", true},
                    {"pending_actions",
                     {{{"action_id", "a-1"},
                       {"tool", "create_agent"},
                       {"arguments", {{"name", "invoice-chaser"}}},
                       {"risk", "TOOL_RISK_WRITE"},
                       {"digest", "sha256:x"}}}},
                    {"clarifications", 0},
                    {"context_box", {{"goal", "chase invoices"}}}};
  const Routing routing = RoutingFromJson(old);
  EXPECT_EQ(routing.flow_id, "flow-9");
  EXPECT_EQ(routing.status, FlowStatus::kWaiting);
  EXPECT_TRUE(routing.pending_action);
  ASSERT_TRUE(routing.written_whole.has_value());
  EXPECT_EQ(routing.written_whole->goal, "chase invoices");
  ASSERT_EQ(routing.written_whole->pending.size(), 1u);
  EXPECT_EQ(routing.written_whole->pending[0].digest, "sha256:x");
  EXPECT_EQ(routing.written_whole->box.goal, "chase invoices");

  EXPECT_EQ(RoutingFromJson({{"flow_id", "f"}, {"suspended", true}}).status,
            FlowStatus::kSuspended);
  EXPECT_EQ(
      RoutingFromJson({{"flow_id", "f"}, {"plan", {{"plan_id", "p"}, {"status", "x"}}}}).status,
      FlowStatus::kWaiting);
  EXPECT_EQ(RoutingFromJson({{"flow_id", "f"}, {"clarifications", 0}}).status, FlowStatus::kDone);
}

PolicyInput Input(intentpb::ActionType action, const std::string& message) {
  PolicyInput in;
  in.intent = Intent(action);
  in.message = message;
  in.agents = kAgents;
  return in;
}

TEST(LocalPolicyPlanTest, ProjectWorkBecomesAPlanDraftedWhenItWritesAndOnlyWithAPlanStore) {
  PolicyInput in = Input(intentpb::ACTION_TYPE_MANAGE_PLATFORM, "set up the Apollo project");
  in.context_type = intentpb::CONTEXT_TYPE_PROJECT_CREATE;
  EXPECT_FALSE(DecideLocally(in).plan.has_value()) << "no plan store: no plans";
  in.plans = true;
  Move move = DecideLocally(in);
  ASSERT_TRUE(move.plan.has_value());
  EXPECT_EQ(move.plan->objective, "set up the Apollo project");
  EXPECT_TRUE(move.plan->draft) << "creating writes: the user reviews the plan first";
  EXPECT_TRUE(move.run.empty());

  in.context_type = intentpb::CONTEXT_TYPE_PROJECT_AUDIT;
  move = DecideLocally(in);
  ASSERT_TRUE(move.plan.has_value());
  EXPECT_FALSE(move.plan->draft) << "an audit only reads: it runs at once";

  in.intent.set_action_type(intentpb::ACTION_TYPE_CONVERSATION);
  in.message = "thanks!";
  EXPECT_FALSE(DecideLocally(in).plan.has_value()) << "small talk is not project work";
  in = Input(intentpb::ACTION_TYPE_QUERY_INFO, "list my agents");
  in.plans = true;
  EXPECT_FALSE(DecideLocally(in).plan.has_value()) << "the general workspace plans nothing";
}

TEST(TurnBusTest, SignalsRoundTripAndHoldIdsOnly) {
  const std::string digest = TurnConversationDigest("acme", "alice", "c-1");
  EXPECT_EQ(digest.size(), 32u);
  EXPECT_EQ(digest, TurnConversationDigest("acme", "alice", "c-1"));
  EXPECT_NE(digest, TurnConversationDigest("acme", "bob", "c-1"));
  EXPECT_EQ(digest.find("acme"), std::string::npos);

  const TurnSignal ended{TurnSignal::Kind::kEnded, digest, "turn-1", "flow-1"};
  const std::string text = TurnSignalToText(ended, "replica-a");
  EXPECT_EQ(json::parse(text), (json{{"kind", "ended"},
                                     {"conversation", digest},
                                     {"turn_id", "turn-1"},
                                     {"origin", "replica-a"},
                                     {"set_aside", "flow-1"}}))
      << "the ids, and nothing else";
  std::string origin;
  const std::optional<TurnSignal> back = TurnSignalFromText(text, &origin);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(origin, "replica-a");
  EXPECT_EQ(back->kind, TurnSignal::Kind::kEnded);
  EXPECT_EQ(back->conversation, digest);
  EXPECT_EQ(back->turn_id, "turn-1");
  EXPECT_EQ(back->set_aside_flow_id, "flow-1");
  EXPECT_EQ(json::parse(TurnSignalToText({TurnSignal::Kind::kCancel, digest, ""}, "r"))
                .count("set_aside"),
            0u)
      << "no flow named when none was set aside";

  // An older replica's end named the suspended flow whole: only its id is read.
  const json older = {{"kind", "ended"},
                      {"conversation", digest},
                      {"turn_id", "turn-1"},
                      {"suspended", {{"flow_id", "flow-1"}, {"goal", "close the merger"}}}};
  const std::optional<TurnSignal> from_older = TurnSignalFromText(older.dump(), nullptr);
  ASSERT_TRUE(from_older.has_value());
  EXPECT_EQ(from_older->set_aside_flow_id, "flow-1");

  EXPECT_FALSE(TurnSignalFromText("not json", nullptr).has_value());
  EXPECT_FALSE(TurnSignalFromText(R"({"kind":"explode","conversation":"x"})", nullptr));
  EXPECT_FALSE(TurnSignalFromText(R"({"kind":"cancel"})", nullptr)) << "no conversation";
  auto with = [&](const char* key, const std::string& value) {
    json changed = json::parse(text);
    changed[key] = value;
    return TurnSignalFromText(changed.dump(), nullptr);
  };
  EXPECT_FALSE(with("conversation", "c-1")) << "a conversation's own id, not its digest";
  EXPECT_FALSE(with("turn_id", "show me the runs")) << "words are no turn id";
  EXPECT_FALSE(with("set_aside", "close the merger")) << "words are no flow id";
  EXPECT_FALSE(with("origin", std::string(200, 'r')));
}

}  // namespace
}  // namespace omniforge::orchestrator

namespace omniforge::orchestrator {
namespace {

// A model whose answer streams in two pieces; its first `breaks` streams
// break off after the first piece, as a dropped connection does.
class BreakingModel final : public llm::ChatModel {
 public:
  explicit BreakingModel(int breaks) : breaks_(breaks) {}
  absl::StatusOr<llm::ChatResponse> Complete(const llm::ChatRequest& request,
                                             const llm::CallContext& context) override {
    return Stream(request, context, [](const llm::StreamDelta&) { return true; });
  }
  absl::StatusOr<llm::ChatResponse> Stream(const llm::ChatRequest&, const llm::CallContext&,
                                           const llm::StreamCallback& on_delta) override {
    ++asked;
    llm::StreamDelta first;
    first.text = "Your order h";
    on_delta(first);
    if (asked <= breaks_) {
      return llm::LlmError(llm::LlmErrorKind::kStreamBroken, "the stream ended early");
    }
    llm::StreamDelta rest;
    rest.text = "as shipped.";
    on_delta(rest);
    llm::ChatResponse answer;
    answer.content = "Your order has shipped.";
    return answer;
  }
  int asked = 0;

 private:
  int breaks_;
};

// What the turn would stream: the answer as a client shows it.
class ShownIo final : public PlannerIo {
 public:
  void Text(const std::string& delta) override { shown += delta; }
  void RestartText(const std::string& kept) override {
    shown = kept;
    ++restarts;
  }
  std::optional<ToolRun> RunTool(const ToolStep&) override { return std::nullopt; }
  std::optional<ToolRun> CreatePlan(const std::string&) override { return std::nullopt; }
  bool Stopped() override { return false; }
  std::string shown;
  int restarts = 0;
};

// A stream that breaks off mid-answer is asked for again: the client is
// told to withdraw the piece it showed, and the answer kept is the whole
// second one, not the fragment glued to it.
TEST(ModelPlannerTest, AnAnswerWhoseStreamBreaksOffIsAskedForAgainAndReplacesTheFragment) {
  BreakingModel model(/*breaks=*/1);
  PlannerRequest request;
  request.message = "where is my order?";
  ShownIo io;
  const PlannerResult result = RunModelPlanner(model, request, io);
  EXPECT_TRUE(result.error.empty()) << result.error;
  EXPECT_EQ(model.asked, 2);
  EXPECT_EQ(io.restarts, 1);
  EXPECT_EQ(result.text, "Your order has shipped.");
  EXPECT_EQ(io.shown, result.text);
}

// A stream that keeps breaking is asked for three times in all; then the
// failure is the planner's error, with what was shown kept as the answer.
TEST(ModelPlannerTest, AStreamThatKeepsBreakingIsGivenUpAfterTwoRestarts) {
  BreakingModel model(/*breaks=*/10);
  PlannerRequest request;
  request.message = "where is my order?";
  ShownIo io;
  const PlannerResult result = RunModelPlanner(model, request, io);
  EXPECT_EQ(model.asked, 3);
  EXPECT_EQ(io.restarts, 2);
  EXPECT_NE(result.error.find("ended early"), std::string::npos) << result.error;
  EXPECT_EQ(result.text, "Your order h");
  EXPECT_EQ(io.shown, result.text);
}

}  // namespace
}  // namespace omniforge::orchestrator
