// What the turn asks of the services below it, on fakes (testing/
// turn_harness.h), with time on a fake clock and no sleeping: every
// downstream call ends within the call timeout and the turn's deadline,
// the intent service's model calls count in the turn's usage beside the
// planner's, and a flow store that fails (unreachable, or written by a
// concurrent turn) costs the turn neither its answer nor its stored reply.
// A tool call that fails for a temporary reason is tried again; one that
// fails for good ends in a question, and its answer acts on it.
#include <algorithm>

#include "services/orchestrator/testing/turn_test_names.h"

namespace omniforge::orchestrator {
namespace {

using std::chrono::milliseconds;

FakeUnderstanding::Answer Reads() {
  return FakeUnderstanding::Always(intentpb::ACTION_TYPE_QUERY_INFO);
}

// The calls the fakes were given after the first `before`.
std::vector<SeenCall> CallsAfter(const TurnHarness& h, size_t before) {
  const std::vector<SeenCall> all = h.calls.calls();
  return std::vector<SeenCall>(all.begin() + static_cast<std::ptrdiff_t>(before), all.end());
}

std::vector<std::string> Names(const std::vector<SeenCall>& calls) {
  std::vector<std::string> names;
  names.reserve(calls.size());
  for (const SeenCall& call : calls) names.push_back(call.what);
  return names;
}

// A turn that reads two pages of runs in its second turn; the first read
// takes `first_read` of the turn's time.
struct TwoReads {
  explicit TwoReads(TurnOptions options, milliseconds first_read)
      : h(Reads(), {std::move(options), &model}) {
    h.tools.OnCall([this, first_read](const execpb::InvokeToolRequest& call) {
      if (call.tool_name() == "list_runs" && ++reads == 1) h.clock.Advance(first_read);
    });
    model.PushText("Hello.");
    RecordingSink hello;
    EXPECT_TRUE(h.Turn("hello", hello).ok());
    conversation = ConversationOf(hello);
    model.PushToolCall("list_runs", json{{"page", 1}});
    model.PushToolCall("list_runs", json{{"page", 2}});
    model.PushText("Two pages of runs.");
  }

  ScriptedModel model;
  TurnHarness h;
  int reads = 0;
  std::string conversation;
};

TEST(TurnDownstreamTest, EveryCallEndsWithinTheCallTimeoutAndTheTurnsDeadline) {
  TurnOptions options;
  options.turn_timeout = milliseconds(1000);
  options.call_timeout = milliseconds(250);
  options.window_cache_bytes = 0;  // every turn reads its window
  TwoReads t(options, milliseconds(900));
  const core::TimePoint started = t.h.clock.Now();
  const size_t before = t.h.calls.calls().size();
  const core::TimePoint turn_deadline = started + milliseconds(1000);
  RecordingSink sink;
  ASSERT_TRUE(t.h.Turn("list my runs", sink, t.conversation).ok());
  ASSERT_TRUE(sink.events.back().has_done());

  const std::vector<SeenCall> calls = CallsAfter(t.h, before);
  const std::vector<std::string> names = Names(calls);
  EXPECT_THAT(names, Contains("AppendMessage ROLE_USER"));
  EXPECT_THAT(names, Contains("GetContextWindow"));
  EXPECT_THAT(names, Contains("AnalyzeIntent"));
  EXPECT_THAT(names, Contains("InvokeTool list_agents"));
  EXPECT_THAT(names, Contains("InvokeTool list_runs"));
  for (const SeenCall& call : calls) {
    EXPECT_LE(call.deadline, call.at + milliseconds(250)) << call.what;
    // Only the closing write of the reply may outlive the turn: what was
    // done is kept (stage_save.cc).
    if (call.cancellable) {
      EXPECT_LE(call.deadline, turn_deadline) << call.what;
    }
  }
  // The second read starts 900 ms in: the turn's deadline cuts its call.
  std::vector<SeenCall> reads;
  for (const SeenCall& call : calls) {
    if (call.what == "InvokeTool list_runs") reads.push_back(call);
  }
  ASSERT_EQ(reads.size(), 2u);
  EXPECT_EQ(reads[0].deadline, started + milliseconds(250));
  EXPECT_EQ(reads[1].deadline, turn_deadline);
  // The reply is stored with a call's time of its own, from when it is sent.
  const auto reply = std::find_if(calls.begin(), calls.end(), [](const SeenCall& call) {
    return call.what == "AppendMessage ROLE_ASSISTANT";
  });
  ASSERT_NE(reply, calls.end());
  EXPECT_FALSE(reply->cancellable);
  EXPECT_EQ(reply->deadline, reply->at + milliseconds(250));
}

TEST(TurnDownstreamTest, AClientDeadlineSoonerThanTheTurnsBoundsEveryCallOfTheTurn) {
  TurnOptions options;
  options.call_timeout = milliseconds(10000);
  options.window_cache_bytes = 0;
  TwoReads t(options, milliseconds(100));
  const core::TimePoint started = t.h.clock.Now();
  const size_t before = t.h.calls.calls().size();
  const core::TimePoint client_deadline = started + milliseconds(300);
  RecordingSink sink;
  TurnControl control;
  ASSERT_TRUE(t.h.runner
                  ->Run(kAlice, TurnHarness::Request("list my runs", t.conversation), control, sink,
                        client_deadline)
                  .ok());
  ASSERT_TRUE(sink.events.back().has_done());
  const std::vector<SeenCall> calls = CallsAfter(t.h, before);
  ASSERT_GE(calls.size(), 5u);
  for (const SeenCall& call : calls) {
    if (call.cancellable) {
      EXPECT_LE(call.deadline, client_deadline) << call.what;
    }
    EXPECT_LE(call.deadline, call.at + milliseconds(10000)) << call.what;
  }
  // The user's message is stored uncancelled, yet within the turn's time.
  const auto user_message = std::find_if(calls.begin(), calls.end(), [](const SeenCall& call) {
    return call.what == "AppendMessage ROLE_USER";
  });
  ASSERT_NE(user_message, calls.end());
  EXPECT_FALSE(user_message->cancellable);
  EXPECT_LE(user_message->deadline, client_deadline);
}

// What the intent service reports its analysis cost.
::omniforge::llm::v1::ModelCall IntentCall() {
  ::omniforge::llm::v1::ModelCall call;
  call.set_operation_type("intent_analysis");
  call.set_profile("intent");
  call.set_provider("fake");
  call.set_model("fake-intent");
  call.set_prompt_tokens(40);
  call.set_completion_tokens(4);
  call.set_cost_usd(0.5);
  call.set_attempts(1);
  call.set_ok(true);
  return call;
}

std::vector<std::string> Operations(const UsageRow& row) {
  std::vector<std::string> operations;
  for (const AttributedCall& call : row.calls) operations.push_back(call.record.operation_type);
  return operations;
}

TEST(TurnDownstreamTest, TheIntentServicesModelCallsCountInTheTurnWithThePlanners) {
  ScriptedModel model;
  TurnHarness h(Reads(), {{}, &model});
  model.ReportUsageTo(&h.usage);
  h.understanding.AnswerWithCalls({IntentCall()});
  model.PushText("Nothing ran today.");
  RecordingSink sink;
  ASSERT_TRUE(h.Turn("what ran today?", sink, "", "turn-7").ok());
  ASSERT_EQ(h.understanding.requests().size(), 1u);

  const pb::TurnUsage& done = sink.events.back().done().usage();
  EXPECT_EQ(done.llm_calls(), 2);
  EXPECT_EQ(done.prompt_tokens(), 40 + 100);
  EXPECT_EQ(done.completion_tokens(), 4 + 10);
  EXPECT_GE(done.cost_usd(), 0.5);
  const std::vector<UsageRow> rows = h.usage.rows();
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].who.turn_id, "turn-7");
  EXPECT_EQ(rows[0].who.conversation_id, ConversationOf(sink));
  EXPECT_THAT(Operations(rows[0]), ElementsAre("intent_analysis", "planner_stream"));
  EXPECT_EQ(rows[0].calls[0].record.tokens.prompt_tokens, 40);
  EXPECT_EQ(rows[0].calls[0].record.model, "fake-intent");
  EXPECT_EQ(h.usage.unattributed(), 0);
}

// A later turn of the conversation takes the kept window and may analyse
// early, beside the listing of the agents; when the listing it gets differs
// from the one the early analysis used, it asks again. Whether the early
// analysis starts before the listing returns depends on the threads, so
// the turn makes one analysis or two: every one asked counts.
TEST(TurnDownstreamTest, EveryAnalysisOfATurnIsCountedAlsoWhenAskedEarlyAndAgain) {
  ScriptedModel model;
  TurnHarness h(Reads(), {{}, &model});
  model.ReportUsageTo(&h.usage);
  h.understanding.AnswerWithCalls({IntentCall()});
  h.tools.SetAgents(json::array({{{"name", "alpha-reports"}}}));
  model.PushText("Hello.");
  RecordingSink hello;
  ASSERT_TRUE(h.Turn("hello", hello).ok());
  h.tools.SetAgents(json::array({{{"name", "beta-digest"}}}));
  const size_t asked_before = h.understanding.requests().size();
  model.PushText("One agent.");
  RecordingSink sink;
  ASSERT_TRUE(h.Turn("what agents do I have?", sink, ConversationOf(hello), "turn-2").ok());
  const int analyses = static_cast<int>(h.understanding.requests().size() - asked_before);
  ASSERT_TRUE(analyses == 1 || analyses == 2) << analyses;

  EXPECT_EQ(sink.events.back().done().usage().llm_calls(), analyses + 1);
  EXPECT_EQ(sink.events.back().done().usage().prompt_tokens(), analyses * 40 + 100);
  const std::vector<UsageRow> rows = h.usage.rows();
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[1].who.turn_id, "turn-2");
  EXPECT_EQ(rows[1].calls.size(), static_cast<size_t>(analyses + 1));
}

TEST(TurnDownstreamTest, TheLocalPolicysTurnCountsTheIntentServicesCallsAlone) {
  TurnHarness h(Reads());
  h.understanding.AnswerWithCalls({IntentCall(), IntentCall()});
  RecordingSink sink;
  ASSERT_TRUE(h.Turn("list my agents", sink).ok());
  EXPECT_EQ(sink.events.back().done().usage().llm_calls(), 2);
  EXPECT_EQ(sink.events.back().done().usage().prompt_tokens(), 80);
  const std::vector<UsageRow> rows = h.usage.rows();
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_THAT(Operations(rows[0]), ElementsAre("intent_analysis", "intent_analysis"));
}

// A delete of an agent the user names waits for their approval: its flow
// is in the flow store while it waits.
struct Deleting {
  Deleting() : h(FakeUnderstanding::DeleteOfAlphaOrBeta()) {
    h.tools.SetAgents(json::array({{{"name", "alpha-reports"}, {"id", "agent-alpha"}},
                                   {{"name", "beta-digest"}, {"id", "agent-beta"}}}));
  }
  // One turn in the conversation (a new one when it has none yet).
  RecordingSink Turn(const std::string& message) {
    RecordingSink sink;
    EXPECT_TRUE(h.Turn(message, sink, conversation).ok());
    if (conversation.empty()) conversation = ConversationOf(sink);
    return sink;
  }
  // The messages stored, as role: content.
  std::vector<std::string> Stored() const {
    std::vector<std::string> stored;
    for (const convpb::Message& m : h.memory.Messages(conversation)) {
      stored.push_back(convpb::Role_Name(m.role()) + ": " + m.content());
    }
    return stored;
  }
  // The stages of the errors filed.
  std::vector<std::string> StagesFiled() const {
    std::vector<std::string> stages;
    for (const TurnError& e : h.errors.errors()) stages.push_back(e.stage);
    return stages;
  }

  TurnHarness h;
  std::string conversation;
};

size_t Previews(const RecordingSink& sink) { return sink.Of(pb::ChatEvent::kPreview).size(); }

TEST(TurnFlowStoreTest, AFlowThatCannotBeSavedStillAnswersStoresTheReplyAndIsFiled) {
  Deleting d;
  d.h.flows.FailSaves(absl::UnavailableError("flow store unreachable"));
  const RecordingSink ask = d.Turn("delete alpha-reports");
  EXPECT_EQ(Previews(ask), 1u);
  ASSERT_TRUE(ask.events.back().has_done());
  EXPECT_FALSE(ask.events.back().done().assistant_message_id().empty());
  const std::vector<std::string> stored = d.Stored();
  ASSERT_EQ(stored.size(), 2u);
  EXPECT_EQ(stored[0], "ROLE_USER: delete alpha-reports");
  EXPECT_EQ(stored[1].rfind("ROLE_ASSISTANT: ", 0), 0u) << stored[1];
  ASSERT_THAT(d.StagesFiled(), ElementsAre("store_flow"));
  EXPECT_EQ(d.h.errors.errors()[0].component, "orchestration");
  EXPECT_EQ(d.h.errors.errors()[0].kind, "downstream_unavailable");
  EXPECT_EQ(d.h.errors.errors()[0].conversation_id, d.conversation);
  // The preview cannot be approved: the user is told so, not left to find
  // out when "yes" approves nothing.
  EXPECT_THAT(ask.ErrorCodes(), ElementsAre(pb::CHAT_ERROR_CODE_STORAGE_UNAVAILABLE));
  EXPECT_FALSE(ask.Of(pb::ChatEvent::kError)[0].error().fatal());
  EXPECT_TRUE(d.h.tools.CallsOf("delete_agent").empty());

  d.h.flows.FailSaves(absl::OkStatus());
  d.Turn("yes");
  EXPECT_TRUE(d.h.tools.CallsOf("delete_agent").empty());
}

TEST(TurnFlowStoreTest, AFlowThatCannotBeReadStillAnswersAndItsSavedStateIsKept) {
  Deleting d;
  const RecordingSink ask = d.Turn("delete alpha-reports");
  ASSERT_EQ(Previews(ask), 1u);
  const std::string flow_id = ask.events.front().session().flow_id();
  ASSERT_TRUE(d.h.Flow(flow_id).has_value());
  const int64_t revision = d.h.Flow(flow_id)->revision;

  d.h.flows.FailLoads(absl::UnavailableError("flow store unreachable"));
  const RecordingSink yes = d.Turn("yes");
  ASSERT_TRUE(yes.events.back().has_done());
  EXPECT_FALSE(yes.events.back().done().assistant_message_id().empty());
  EXPECT_EQ(d.Stored().size(), 4u);
  EXPECT_THAT(d.StagesFiled(), Contains("read_flow"));
  // Not read, not approved: nothing runs, and the state waiting for the
  // approval is not overwritten by a turn that could not read it.
  EXPECT_TRUE(d.h.tools.CallsOf("delete_agent").empty());
  ASSERT_TRUE(d.h.Flow(flow_id).has_value());
  EXPECT_EQ(d.h.Flow(flow_id)->revision, revision);
  EXPECT_EQ(d.h.Flow(flow_id)->pending.size(), 1u);
}

TEST(TurnFlowStoreTest, ASaveAbortedByAConcurrentWriterKeepsTheReplyAndTheOtherState) {
  Deleting d;
  const RecordingSink ask = d.Turn("delete alpha-reports");
  ASSERT_EQ(Previews(ask), 1u);
  const std::string flow_id = ask.events.front().session().flow_id();
  const int64_t revision = d.h.Flow(flow_id)->revision;

  d.h.flows.FailSaves(absl::AbortedError("the flow moved on"));
  const size_t before = d.h.calls.calls().size();
  const RecordingSink beta = d.Turn("delete beta-digest instead");
  ASSERT_TRUE(beta.events.back().has_done());
  EXPECT_FALSE(beta.events.back().done().assistant_message_id().empty());
  EXPECT_EQ(d.Stored().size(), 4u);
  EXPECT_THAT(d.StagesFiled(), ElementsAre("store_flow"));
  EXPECT_THAT(beta.ErrorCodes(), ElementsAre(pb::CHAT_ERROR_CODE_STORAGE_UNAVAILABLE));
  // The save was tried, as a closing write: not cancelled with the turn.
  const std::vector<std::string> names = Names(CallsAfter(d.h, before));
  ASSERT_THAT(names, Contains("SaveFlow"));
  for (const SeenCall& call : CallsAfter(d.h, before)) {
    if (call.what != "SaveFlow") continue;
    EXPECT_FALSE(call.cancellable);
    EXPECT_LE(call.deadline, call.at + TurnOptions().call_timeout);
  }
  EXPECT_EQ(d.h.Flow(flow_id)->revision, revision) << "the other writer's state stands";
  EXPECT_TRUE(d.h.tools.CallsOf("delete_agent").empty());
}

// A turn whose model calls `tool` once and then answers; the tool answers
// with `outcomes` in turn (the last one again when they run out).
struct FailingTool {
  FailingTool(const std::string& tool, execpb::ToolRisk risk,
              std::vector<absl::StatusOr<execpb::InvokeToolResponse>> outcomes,
              TurnOptions options = Quick())
      : h(FakeUnderstanding::PicksOptions(Reads()), {std::move(options), &model}) {
    h.tools.AddTool(tool, risk,
                    [this, outcomes = std::move(outcomes)](const execpb::InvokeToolRequest&) {
                      const size_t n = std::min(calls++, outcomes.size() - 1);
                      return outcomes[n];
                    });
    model.PushToolCall(tool, json{{"name", "x"}});
    model.PushText("Done.");
  }
  static TurnOptions Quick() {
    TurnOptions options;
    options.tool_retry.initial_backoff_micros = 1000;  // real waits stay short
    options.approvals.write = GateVerdict::kRun;       // writes run unasked
    return options;
  }
  static execpb::InvokeToolResponse Ok() {
    execpb::InvokeToolResponse ok;
    ok.set_result_json(R"({"ok": true})");
    return ok;
  }
  static execpb::InvokeToolResponse ToolError(const std::string& code) {
    execpb::InvokeToolResponse error;
    error.set_is_error(true);
    error.set_result_json(json{{"error", {{"code", code}, {"message", "no"}}}}.dump());
    return error;
  }
  std::vector<const pb::ChatEvent*> Errors() const {
    std::vector<const pb::ChatEvent*> errors;
    for (const pb::ChatEvent& e : sink.events) {
      if (e.has_error()) errors.push_back(&e);
    }
    return errors;
  }
  std::vector<std::string> States() const {
    std::vector<std::string> states;
    for (const pb::ChatEvent& e : sink.events) {
      if (e.has_agent_state()) states.push_back(e.agent_state().details());
    }
    return states;
  }

  ScriptedModel model;
  TurnHarness h;
  size_t calls = 0;
  RecordingSink sink;
};

TEST(TurnRecoveryTest, AToolCallThatFailsForATemporaryReasonIsTriedAgainAndTheTurnGoesOn) {
  FailingTool t("create_agent", execpb::TOOL_RISK_WRITE,
                {absl::UnavailableError("executor restarting"), FailingTool::Ok()});
  ASSERT_TRUE(t.h.Turn("make an agent called x", t.sink).ok());
  const std::vector<execpb::InvokeToolRequest> calls = t.h.tools.CallsOf("create_agent");
  ASSERT_EQ(calls.size(), 2u);
  // The same write: the executor runs it at most once under its key.
  EXPECT_FALSE(calls[0].idempotency_key().empty());
  EXPECT_EQ(calls[1].idempotency_key(), calls[0].idempotency_key());
  EXPECT_EQ(calls[1].arguments_json(), calls[0].arguments_json());
  EXPECT_THAT(t.States(), Contains(HasSubstr("Trying create_agent again (attempt 2 of 3)")));
  EXPECT_TRUE(t.Errors().empty());
  EXPECT_TRUE(t.h.errors.errors().empty());
  const pb::ChatEvent* result = nullptr;
  for (const pb::ChatEvent& e : t.sink.events) {
    if (e.has_tool_result()) result = &e;
  }
  ASSERT_NE(result, nullptr);
  EXPECT_FALSE(result->tool_result().is_error());
  EXPECT_TRUE(t.sink.events.back().has_done());
}

TEST(TurnRecoveryTest, ARateLimitTheToolReportsItselfIsTriedAgain) {
  FailingTool t("list_runs", execpb::TOOL_RISK_READ,
                {FailingTool::ToolError("rate_limited"), FailingTool::Ok()});
  ASSERT_TRUE(t.h.Turn("what ran today?", t.sink).ok());
  EXPECT_EQ(t.h.tools.CallsOf("list_runs").size(), 2u);
  EXPECT_TRUE(t.Errors().empty());
}

TEST(TurnRecoveryTest, APermanentFailureIsNotTriedAgain) {
  FailingTool not_found("list_runs", execpb::TOOL_RISK_READ,
                        {absl::NotFoundError("no such project")});
  ASSERT_TRUE(not_found.h.Turn("what ran today?", not_found.sink).ok());
  EXPECT_EQ(not_found.h.tools.CallsOf("list_runs").size(), 1u);
  ASSERT_EQ(not_found.Errors().size(), 1u);
  EXPECT_EQ(not_found.Errors()[0]->error().code(), pb::CHAT_ERROR_CODE_TOOL_FAILED);

  FailingTool invalid("list_runs", execpb::TOOL_RISK_READ,
                      {FailingTool::ToolError("invalid_argument")});
  ASSERT_TRUE(invalid.h.Turn("what ran today?", invalid.sink).ok());
  EXPECT_EQ(invalid.h.tools.CallsOf("list_runs").size(), 1u);
}

TEST(TurnRecoveryTest, ATemporaryFailureThatLastsEndsAfterTheAttemptsWithTheToolsFailure) {
  FailingTool t("list_runs", execpb::TOOL_RISK_READ, {absl::UnavailableError("executor down")});
  ASSERT_TRUE(t.h.Turn("what ran today?", t.sink).ok());
  EXPECT_EQ(t.h.tools.CallsOf("list_runs").size(), 3u);
  ASSERT_EQ(t.Errors().size(), 1u);
  EXPECT_EQ(t.Errors()[0]->error().code(), pb::CHAT_ERROR_CODE_TOOL_FAILED);
  EXPECT_THAT(t.Errors()[0]->error().message(), HasSubstr("list_runs failed"));
  ASSERT_EQ(t.h.errors.errors().size(), 1u);
  EXPECT_TRUE(t.sink.events.back().has_done());
}

TEST(TurnRecoveryTest, NoAttemptIsMadeThatTheTurnHasNoTimeFor) {
  TurnOptions options = FailingTool::Quick();
  options.turn_timeout = milliseconds(2000);
  FailingTool t("list_runs", execpb::TOOL_RISK_READ, {absl::UnavailableError("executor down")},
                options);
  // The failed call took most of the turn's time: too little is left for
  // another whole call.
  t.h.tools.OnCall([&t](const execpb::InvokeToolRequest& call) {
    if (call.tool_name() == "list_runs") t.h.clock.Advance(milliseconds(1500));
  });
  ASSERT_TRUE(t.h.Turn("what ran today?", t.sink).ok());
  EXPECT_EQ(t.h.tools.CallsOf("list_runs").size(), 1u);
}

TEST(TurnRecoveryTest, OneAttemptWhenRetriesAreOff) {
  TurnOptions options = FailingTool::Quick();
  options.tool_retry.max_attempts = 1;
  FailingTool t("list_runs", execpb::TOOL_RISK_READ,
                {absl::UnavailableError("executor down"), FailingTool::Ok()}, options);
  ASSERT_TRUE(t.h.Turn("what ran today?", t.sink).ok());
  EXPECT_EQ(t.h.tools.CallsOf("list_runs").size(), 1u);
  EXPECT_EQ(t.Errors().size(), 1u);
}

TEST(TurnRecoveryTest, AToolCallThatFailedForGoodEndsInAQuestionWithTheOptions) {
  FailingTool t("list_runs", execpb::TOOL_RISK_READ,
                {absl::NotFoundError("no such project: apollo")});
  ASSERT_TRUE(t.h.Turn("what ran today?", t.sink).ok());
  // The error event is still sent, beside the question.
  ASSERT_EQ(t.Errors().size(), 1u);
  EXPECT_EQ(t.Errors()[0]->error().code(), pb::CHAT_ERROR_CODE_TOOL_FAILED);
  EXPECT_FALSE(t.Errors()[0]->error().fatal());
  const std::string text = t.sink.Text();
  EXPECT_THAT(text, HasSubstr("Done."));
  EXPECT_THAT(
      text,
      HasSubstr("This did not work: the tool list_runs (list_runs (fake)) failed: no such project: "
                "apollo.\nWhat would you like me to do?\n1. Try again\n2. Skip it "
                "and continue\n3. Cancel"));
  EXPECT_FALSE(t.sink.events.back().done().is_final());
  EXPECT_EQ(t.sink.States().back(), pb::AGENT_STATE_WAITING_ON_USER);
  const FlowState flow = t.h.LastFlow(ConversationOf(t.sink));
  EXPECT_EQ(flow.status, FlowStatus::kWaiting);
  EXPECT_EQ(flow.asked, kAskedRecovery);
  ASSERT_TRUE(flow.recovery.has_value());
  EXPECT_EQ(flow.recovery->failed.tool, "list_runs");
  EXPECT_EQ(flow.recovery->failed.arguments, json({{"name", "x"}}));
  EXPECT_THAT(flow.box.blockers, Contains(HasSubstr("no such project: apollo")));
}

TEST(TurnRecoveryTest, ACallTheModelMadeWorkAfterAFailureIsNotAskedAbout) {
  ScriptedModel model;  // corrects its call after the failure
  model.PushToolCall("list_runs", json{{"name", "x"}});
  model.PushToolCall("list_runs", json{{"name", "y"}});
  model.PushText("Found them.");
  TurnHarness h(Reads(), {FailingTool::Quick(), &model});
  int calls = 0;
  h.tools.AddTool(
      "list_runs", execpb::TOOL_RISK_READ,
      [&calls](const execpb::InvokeToolRequest&) -> absl::StatusOr<execpb::InvokeToolResponse> {
        if (calls++ == 0) return absl::InvalidArgumentError("bad name");
        return FailingTool::Ok();
      });
  RecordingSink sink;
  ASSERT_TRUE(h.Turn("what ran today?", sink).ok());
  EXPECT_EQ(h.tools.CallsOf("list_runs").size(), 2u);
  EXPECT_THAT(sink.Text(), Not(HasSubstr("This did not work")));
  EXPECT_TRUE(sink.events.back().done().is_final());
}

TEST(TurnRecoveryTest, TryAgainRunsTheCallAgainAndItWorksOnceTheFaultIsGone) {
  FailingTool t("list_runs", execpb::TOOL_RISK_READ,
                {absl::NotFoundError("no such project"), FailingTool::Ok()});
  ASSERT_TRUE(t.h.Turn("what ran today?", t.sink).ok());
  const std::string conversation = ConversationOf(t.sink);
  RecordingSink again;
  ASSERT_TRUE(t.h.Turn("try again", again, conversation).ok());
  const std::vector<execpb::InvokeToolRequest> calls = t.h.tools.CallsOf("list_runs");
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[1].arguments_json(), calls[0].arguments_json());
  EXPECT_THAT(again.Text(), HasSubstr("Trying the tool list_runs again."));
  EXPECT_THAT(again.Text(), Not(HasSubstr("This did not work")));
  EXPECT_TRUE(again.events.back().done().is_final());
  EXPECT_EQ(t.model.requests().size(), 2u) << "the answer needs no model call";
  EXPECT_FALSE(t.h.LastFlow(conversation).recovery.has_value());
}

TEST(TurnRecoveryTest, TryAgainThatFailsAgainAsksAgainAndAWriteGetsAKeyOfItsOwn) {
  FailingTool t("create_agent", execpb::TOOL_RISK_WRITE,
                {absl::FailedPreconditionError("the workspace is read-only")});
  ASSERT_TRUE(t.h.Turn("make an agent called x", t.sink).ok());
  const std::string conversation = ConversationOf(t.sink);
  RecordingSink again;
  ASSERT_TRUE(t.h.Turn("1", again, conversation).ok());
  const std::vector<execpb::InvokeToolRequest> calls = t.h.tools.CallsOf("create_agent");
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_FALSE(calls[1].idempotency_key().empty());
  EXPECT_NE(calls[1].idempotency_key(), calls[0].idempotency_key())
      << "the executor keeps the failed try's result under the first key";
  EXPECT_THAT(again.Text(), HasSubstr("This did not work: the tool create_agent"));
  EXPECT_FALSE(again.events.back().done().is_final());
  EXPECT_TRUE(t.h.LastFlow(conversation).recovery.has_value());
}

TEST(TurnRecoveryTest, SkipGoesOnWithTheModelWhichKnowsWhatFailed) {
  FailingTool t("list_runs", execpb::TOOL_RISK_READ, {absl::NotFoundError("no such project")});
  t.model.PushText("I went on without the runs.");
  ASSERT_TRUE(t.h.Turn("what ran today?", t.sink).ok());
  const std::string conversation = ConversationOf(t.sink);
  RecordingSink skip;
  ASSERT_TRUE(t.h.Turn("skip it and continue", skip, conversation).ok());
  EXPECT_EQ(t.h.tools.CallsOf("list_runs").size(), 1u);
  EXPECT_THAT(skip.Text(), HasSubstr("I went on without the runs."));
  const std::vector<llm::ChatRequest> asked = t.model.requests();
  ASSERT_EQ(asked.size(), 3u);
  EXPECT_THAT(asked[2].messages[0].content,
              HasSubstr("the user chose to go on without the tool list_runs"));
  EXPECT_TRUE(skip.events.back().done().is_final());
}

TEST(TurnRecoveryTest, CancelRunsNothingAndEndsTheFlow) {
  FailingTool t("list_runs", execpb::TOOL_RISK_READ, {absl::NotFoundError("no such project")});
  ASSERT_TRUE(t.h.Turn("what ran today?", t.sink).ok());
  const std::string conversation = ConversationOf(t.sink);
  RecordingSink cancel;
  ASSERT_TRUE(t.h.Turn("cancel", cancel, conversation).ok());
  EXPECT_EQ(t.h.tools.CallsOf("list_runs").size(), 1u);
  EXPECT_THAT(cancel.Text(), HasSubstr("OK, I won't try the tool list_runs again."));
  EXPECT_TRUE(cancel.events.back().done().is_final());
  EXPECT_EQ(t.model.requests().size(), 2u);
}

TEST(TurnRecoveryTest, AnAnswerThatPicksNoOptionIsAskedAgain) {
  FailingTool t("list_runs", execpb::TOOL_RISK_READ, {absl::NotFoundError("no such project")});
  ASSERT_TRUE(t.h.Turn("what ran today?", t.sink).ok());
  const std::string conversation = ConversationOf(t.sink);
  RecordingSink unsure;
  ASSERT_TRUE(t.h.Turn("hmm", unsure, conversation).ok());
  EXPECT_EQ(t.h.tools.CallsOf("list_runs").size(), 1u);
  EXPECT_THAT(unsure.Text(), HasSubstr("I did not catch which option you meant."));
  EXPECT_THAT(unsure.Text(), HasSubstr("1. Try again"));
  EXPECT_FALSE(unsure.events.back().done().is_final());
}

// The local policy's call on an agent that is not there: another agent is
// offered, and picking that option asks which one.
TEST(TurnRecoveryTest, AnAgentNotFoundOffersAnotherAgentInLocalMode) {
  TurnHarness h(FakeUnderstanding::PicksOptions(FakeUnderstanding::Always(
      intentpb::ACTION_TYPE_QUERY_INFO, {{"topic", "runs"}, {"agent_name", "ghost"}})));
  h.tools.SetAgents(json::array({{{"name", "alpha-reports"}}, {{"name", "beta-digest"}}}));
  h.tools.AddTool("list_runs", execpb::TOOL_RISK_READ, [](const execpb::InvokeToolRequest&) {
    return FailingTool::ToolError("not_found");
  });
  RecordingSink first;
  ASSERT_TRUE(h.Turn("what did ghost run today?", first).ok());
  EXPECT_THAT(first.Text(), HasSubstr("1. Try again\n2. Use another agent\n3. Cancel"))
      << first.Text();
  const std::string conversation = ConversationOf(first);
  RecordingSink other;
  ASSERT_TRUE(h.Turn("use another agent", other, conversation).ok());
  EXPECT_THAT(other.Text(), HasSubstr("Which agent should I use instead?\n1. alpha-reports\n2. "
                                      "beta-digest"));
  const FlowState flow = h.LastFlow(conversation);
  EXPECT_EQ(flow.asked, kAskedAgent);
  EXPECT_THAT(flow.listed_agents, ElementsAre("alpha-reports", "beta-digest"));
  EXPECT_EQ(flow.entities.count("agent_name"), 0u);
  EXPECT_EQ(h.tools.CallsOf("list_runs").size(), 1u);
}

}  // namespace
}  // namespace omniforge::orchestrator
