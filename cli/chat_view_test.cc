// What `omniforge chat` shows for each kind of event, in each output mode.
#include "cli/chat_view.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>

namespace omniforge::cli {
namespace {

namespace pb = ::omniforge::orchestrator::v1;
using ::testing::HasSubstr;
using ::testing::Not;

pb::ChatEvent State(pb::AgentState state, const std::string& details) {
  pb::ChatEvent event;
  event.mutable_agent_state()->set_state(state);
  event.mutable_agent_state()->set_details(details);
  return event;
}

pb::ChatEvent Text(const std::string& delta) {
  pb::ChatEvent event;
  event.mutable_text()->set_delta(delta);
  return event;
}

pb::ChatEvent Done(bool is_final) {
  pb::ChatEvent event;
  event.mutable_done()->set_is_final(is_final);
  event.mutable_done()->mutable_usage()->set_tool_calls(1);
  event.mutable_done()->mutable_usage()->set_duration_ms(12);
  return event;
}

pb::ChatEvent Preview() {
  pb::ChatEvent event;
  pb::PreviewEvent* p = event.mutable_preview();
  p->set_tool_name("delete_agent");
  p->set_arguments_json(R"({"name": "invoice-chaser"})");
  p->set_risk(::omniforge::orchestrator::v1::TOOL_RISK_HIGH);
  p->set_summary("Delete the agent invoice-chaser");
  p->add_affected("invoice-chaser");
  p->add_risk_factors("deletes data that cannot be recovered");
  return event;
}

class ChatViewTest : public ::testing::Test {
 protected:
  std::string Render(ChatOutput mode, const std::vector<pb::ChatEvent>& events) {
    ChatView view(out_, mode);
    for (const pb::ChatEvent& event : events) view.Show(event);
    view.EndTurn();
    return out_.str();
  }
  std::ostringstream out_;
};

TEST(ChooseChatOutputTest, ColourOnlyOnATerminalWithoutNoColor) {
  EXPECT_EQ(ChooseChatOutput(false, true, nullptr), ChatOutput::kTerminal);
  EXPECT_EQ(ChooseChatOutput(false, false, nullptr), ChatOutput::kPlain);
  EXPECT_EQ(ChooseChatOutput(false, true, "1"), ChatOutput::kPlain);
  EXPECT_EQ(ChooseChatOutput(false, true, ""), ChatOutput::kPlain);
  EXPECT_EQ(ChooseChatOutput(true, true, nullptr), ChatOutput::kJson);
  EXPECT_EQ(ChooseChatOutput(true, false, "1"), ChatOutput::kJson);
}

// An answer whose stream broke off and is given again: the fragment stays
// on its own line, marked, and the answer starts again on a fresh one.
TEST_F(ChatViewTest, ARestartedAnswerStartsAgainOnAFreshLine) {
  pb::ChatEvent again = Text("Your order has shipped.");
  again.mutable_text()->set_restart(true);
  const std::string shown = Render(ChatOutput::kPlain, {Text("Your order h"), again});
  EXPECT_THAT(shown, HasSubstr("omniforge: Your order h\n"));
  EXPECT_THAT(shown, HasSubstr("(the answer broke off; here it is again)\n"
                               "omniforge: Your order has shipped."));
}

TEST_F(ChatViewTest, PlainOutputIsReadableLinesWithoutEscapes) {
  pb::ChatEvent session;
  session.mutable_session()->set_conversation_id("c-1");
  session.mutable_session()->set_conversation_created(true);
  pb::ChatEvent call;
  call.mutable_tool_call()->set_tool_name("list_agents");
  call.mutable_tool_call()->set_arguments_json("{}");
  call.mutable_tool_call()->set_risk(::omniforge::orchestrator::v1::TOOL_RISK_READ);
  pb::ChatEvent result;
  result.mutable_tool_result()->set_tool_name("list_agents");
  result.mutable_tool_result()->set_result_json("{\"agents\":\n[]}");
  result.mutable_tool_result()->set_duration_ms(3);
  const std::string out = Render(
      ChatOutput::kPlain, {session, State(pb::AGENT_STATE_THINKING, "Reading what you asked"), call,
                           result, State(pb::AGENT_STATE_EXECUTING_TOOL, "Running list_agents"),
                           Text("You have "), Text("no agents yet."), Done(true)});
  EXPECT_EQ(out,
            "· conversation c-1\n"
            "· thinking: Reading what you asked\n"
            "→ list_agents {}  (read)\n"
            "← list_agents ok (3 ms): {\"agents\": []}\n"
            "· executing tool: Running list_agents\n"
            "omniforge: You have no agents yet.\n"
            "· done in 12 ms, 1 tool call\n");
  EXPECT_THAT(out, Not(HasSubstr("\033")));
}

TEST_F(ChatViewTest, APreviewSaysWhatWhoAndTheRisk) {
  const std::string out = Render(ChatOutput::kPlain, {Preview(), Done(false)});
  EXPECT_THAT(out, HasSubstr("waiting for your approval: Delete the agent invoice-chaser\n"));
  EXPECT_THAT(out, HasSubstr("action:   delete_agent {\"name\": \"invoice-chaser\"}\n"));
  EXPECT_THAT(out, HasSubstr("affects:  invoice-chaser\n"));
  EXPECT_THAT(out, HasSubstr("risk:     high — deletes data that cannot be recovered\n"));
  EXPECT_THAT(out, HasSubstr("reply \"yes\" to go ahead"));
  EXPECT_THAT(out, HasSubstr("; waiting for your answer\n"));
}

TEST_F(ChatViewTest, PlanEventsShowTheStepsAndHowTheyEnd) {
  pb::ChatEvent created;
  pb::Plan* plan = created.mutable_plan_created()->mutable_plan();
  plan->set_objective("Set up the launch project");
  plan->set_execution_mode(pb::EXECUTION_MODE_AUTO_EXECUTE);
  pb::PlanStep* first = plan->add_steps();
  first->set_step_id("s1");
  first->set_description("Find a template");
  first->add_tools("list_project_templates");
  pb::PlanStep* second = plan->add_steps();
  second->set_step_id("s2");
  second->set_description("Create the project");
  second->add_depends_on("s1");
  pb::ChatEvent start;
  start.mutable_step_start()->set_step_id("s1");
  start.mutable_step_start()->set_description("Find a template");
  pb::ChatEvent complete;
  complete.mutable_step_complete()->set_step_id("s1");
  complete.mutable_step_complete()->set_status(pb::STEP_STATUS_COMPLETED);
  complete.mutable_step_complete()->set_summary("found Launch checklist");
  pb::ChatEvent failed;
  failed.mutable_step_complete()->set_step_id("s2");
  failed.mutable_step_complete()->set_status(pb::STEP_STATUS_FAILED);
  const std::string out = Render(ChatOutput::kPlain, {created, start, complete, failed});
  EXPECT_THAT(out, HasSubstr("plan: Set up the launch project (auto execute, 2 steps)\n"
                             "    1. Find a template [list_project_templates]\n"
                             "    2. Create the project after s1\n"));
  EXPECT_THAT(out, HasSubstr("▸ step s1: Find a template\n"));
  EXPECT_THAT(out, HasSubstr("✓ step s1 completed: found Launch checklist\n"));
  EXPECT_THAT(out, HasSubstr("✗ step s2 failed\n"));
}

TEST_F(ChatViewTest, PlainShowsTheAssessmentsOfStepsAndOfTheTurn) {
  pb::ChatEvent complete;
  complete.mutable_step_complete()->set_step_id("s1");
  complete.mutable_step_complete()->set_status(pb::STEP_STATUS_COMPLETED);
  complete.mutable_step_complete()->set_summary("read 50 tasks");
  pb::Assessment* step = complete.mutable_step_complete()->mutable_assessment();
  step->set_score(72);
  step->set_verdict(pb::ASSESSMENT_VERDICT_PARTIAL);
  step->add_reasons("only the first 50 tasks were read");
  pb::ChatEvent done = Done(true);
  pb::Assessment* turn = done.mutable_done()->mutable_assessment();
  turn->set_score(95);
  turn->set_verdict(pb::ASSESSMENT_VERDICT_COMPLETE);
  const std::string out = Render(ChatOutput::kPlain, {complete, done});
  EXPECT_THAT(out, HasSubstr("✓ step s1 completed: read 50 tasks "
                             "(partial, 72/100: only the first 50 tasks were read)\n"));
  EXPECT_THAT(out, HasSubstr("· done in 12 ms, 1 tool call; assessed complete, 95/100\n"));

  // A turn waiting for the user's answer is not judged yet.
  pb::ChatEvent waiting = Done(false);
  waiting.mutable_done()->mutable_assessment()->set_score(80);
  waiting.mutable_done()->mutable_assessment()->set_verdict(pb::ASSESSMENT_VERDICT_PARTIAL);
  // (Render returns everything shown so far.)
  const std::string asked = Render(ChatOutput::kPlain, {waiting}).substr(out.size());
  EXPECT_THAT(asked, HasSubstr("; waiting for your answer\n"));
  EXPECT_THAT(asked, Not(HasSubstr("assessed")));
}

TEST_F(ChatViewTest, TerminalShowsTheStateOnASpinnerLineClearedWhenTextArrives) {
  ChatView view(out_, ChatOutput::kTerminal);
  view.Show(State(pb::AGENT_STATE_THINKING, "Planning"));
  EXPECT_THAT(out_.str(), HasSubstr("thinking: Planning"));
  EXPECT_THAT(out_.str(), Not(HasSubstr("\n"))) << "the spinner is one line redrawn in place";
  const size_t before_tick = out_.str().size();
  view.Tick();
  EXPECT_GT(out_.str().size(), before_tick) << "a tick draws the next frame";

  view.Show(Text("Hello"));
  const std::string after_text = out_.str().substr(before_tick);
  EXPECT_THAT(after_text, HasSubstr("\r\033[K")) << "the spinner line is cleared";
  EXPECT_THAT(after_text, HasSubstr("omniforge:"));
  const size_t after_hello = out_.str().size();
  view.Tick();
  EXPECT_EQ(out_.str().size(), after_hello) << "no spinner while the answer is written";
  view.Show(Text(", world"));
  view.Show(Done(true));
  EXPECT_THAT(out_.str(), HasSubstr("Hello, world\n"));
  EXPECT_THAT(out_.str(), HasSubstr("\033[2m· done in 12 ms"));
}

TEST_F(ChatViewTest, JsonIsOneObjectPerEventAndLine) {
  pb::ChatEvent session;
  session.set_seq(1);
  session.mutable_session()->set_conversation_id("c-1");
  const std::string out = Render(ChatOutput::kJson, {session, Text("hi"), Done(true)});
  std::istringstream lines(out);
  std::vector<nlohmann::json> objects;
  for (std::string line; std::getline(lines, line);) {
    objects.push_back(nlohmann::json::parse(line));
  }
  ASSERT_EQ(objects.size(), 3u);
  EXPECT_EQ(objects[0]["session"]["conversation_id"], "c-1");
  EXPECT_EQ(objects[1]["text"]["delta"], "hi");
  EXPECT_TRUE(objects[2]["done"]["is_final"].get<bool>());
}

}  // namespace
}  // namespace omniforge::cli
