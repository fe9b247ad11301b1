// Every error path of the public ChatService as a gateway sees it: the
// service on a real gRPC server on loopback, its turns on the fakes of
// testing/, per-tenant limits on a fake clock. Each refusal is checked for
// its code and the google.rpc details decoded from grpc-status-details-bin
// (ErrorInfo reason and domain, RetryInfo, BadRequest field), and error
// events for their reason and retryable flag.
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include <atomic>
#include <condition_variable>
#include <future>
#include <mutex>
#include <thread>

#include "libs/core/api_keys.h"
#include "libs/core/clock.h"
#include "libs/core/error_catalog.h"
#include "libs/core/ids.h"
#include "libs/core/thread_pool.h"
#include "services/orchestrator/api/chat_service.h"
#include "services/orchestrator/testing/turn_test_names.h"
#include "tests/support/refusal.h"

namespace omniforge::orchestrator {
namespace {

using ::omniforge::testing::Decode;
using ::omniforge::testing::Refusal;

// Holds the turns that call `list_runs` until released.
class ToolGate {
 public:
  void Enter() {
    std::unique_lock lock(mu_);
    ++entered_;
    changed_.notify_all();
    changed_.wait(lock, [this] { return released_; });
  }
  void AwaitEntered(int count) {
    std::unique_lock lock(mu_);
    changed_.wait(lock, [&] { return entered_ >= count; });
  }
  void Release() {
    std::lock_guard lock(mu_);
    released_ = true;
    changed_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable changed_;
  int entered_ = 0;
  bool released_ = false;
};

const core::Identity kCarol{"tenant-c", "carol"};  // one turn at once
const core::Identity kRita{"tenant-r", "rita"};    // one call per second
const core::Identity kBert{"tenant-b", "bert"};    // over the LLM budget

class ChatErrorsTest : public ::testing::Test {
 protected:
  ChatErrorsTest()
      : h_(FakeUnderstanding::Always(intentpb::ACTION_TYPE_QUERY_INFO), {{}, &model_}),
        keys_(Keys()),
        limits_(Limits(), nullptr, h_.clock),
        service_(keys_, *h_.runner, h_.memory, workers_, nullptr, &h_.audit, &limits_, Streams()) {
    h_.tools.OnCall([this](const execpb::InvokeToolRequest& call) {
      if (call.tool_name() == "list_runs") gate_.Enter();
    });
    h_.tools.AddTool(
        "read_status", execpb::TOOL_RISK_READ,
        [](const execpb::InvokeToolRequest&) -> absl::StatusOr<execpb::InvokeToolResponse> {
          return absl::UnavailableError("status backend down");
        });
    limits_.Spent(kBert.tenant_id, 5);
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(&service_);
    server_ = builder.BuildAndStart();
    channel_ = grpc::CreateChannel("127.0.0.1:" + std::to_string(port),
                                   grpc::InsecureChannelCredentials());
    stub_ = pb::ChatService::NewStub(channel_);
  }
  ~ChatErrorsTest() override {
    gate_.Release();
    server_->Shutdown();
  }

  core::ApiKeyStore Keys() {
    std::string file;
    for (const core::Identity& who : {kAlice, kCarol, kRita, kBert}) {
      auto made = core::GenerateApiKey(who, "test");
      EXPECT_TRUE(made.ok());
      key_[who.tenant_id] = made->key;
      file += made->file_line + "\n";
    }
    auto expired = core::GenerateApiKey({"tenant-a", "old"}, "old", core::NowMicros() - 1'000'000);
    EXPECT_TRUE(expired.ok());
    expired_key_ = expired->key;
    file += expired->file_line + "\n";
    auto store = core::ApiKeyStore::Parse(file);
    EXPECT_TRUE(store.ok()) << store.status();
    return *std::move(store);
  }

  static LimitsConfig Limits() {
    LimitsConfig config;
    config.tenants["tenant-a"] = {};
    config.tenants["tenant-c"].user_turns = 1;
    config.tenants["tenant-r"].key_rate = 1;
    config.tenants["tenant-r"].key_burst = 1;
    config.tenants["tenant-b"].daily_usd = 1;
    return config;
  }

  // One turn of a conversation at once (none waits behind it), so that the
  // conversation's bound is reached with the one turn the gate holds.
  static StreamOptions Streams() {
    StreamOptions options;
    options.admission.max_queued_per_conversation = 0;
    return options;
  }

  std::unique_ptr<grpc::ClientContext> Context(const std::string& key) {
    auto context = std::make_unique<grpc::ClientContext>();
    if (!key.empty()) context->AddMetadata("authorization", "Bearer " + key);
    context->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
    return context;
  }

  struct Streamed {
    std::vector<pb::ChatEvent> events;
    grpc::Status status;
  };
  Streamed Chat(const pb::StreamChatRequest& request, const std::string& key) {
    auto context = Context(key);
    auto reader = stub_->StreamChat(context.get(), request);
    Streamed out;
    pb::ChatEvent event;
    while (reader->Read(&event)) out.events.push_back(event);
    out.status = reader->Finish();
    return out;
  }
  Refusal ChatRefusal(const pb::StreamChatRequest& request, const std::string& key) {
    const Streamed streamed = Chat(request, key);
    EXPECT_TRUE(streamed.events.empty()) << "a refused call streams nothing";
    return Decode(streamed.status);
  }

  // Sends `bytes` as the request of `method` (any RPC of the service).
  grpc::Status Raw(const std::string& method, const std::string& bytes) {
    grpc::GenericStub generic(channel_);
    auto context = Context(key_["tenant-a"]);
    grpc::CompletionQueue cq;
    grpc::Slice slice(bytes);
    grpc::ByteBuffer buffer(&slice, 1);
    auto call =
        generic.PrepareCall(context.get(), "/omniforge.orchestrator.v1.ChatService/" + method, &cq);
    void* tag = nullptr;
    bool ok = false;
    grpc::ByteBuffer reply;
    grpc::Status status;
    call->StartCall(reinterpret_cast<void*>(1));
    cq.Next(&tag, &ok);
    call->Write(buffer, reinterpret_cast<void*>(2));
    cq.Next(&tag, &ok);
    call->WritesDone(reinterpret_cast<void*>(3));
    cq.Next(&tag, &ok);
    call->Read(&reply, reinterpret_cast<void*>(4));
    cq.Next(&tag, &ok);
    call->Finish(&status, reinterpret_cast<void*>(5));
    cq.Next(&tag, &ok);
    return status;
  }

  // A conversation of `who` with one turn in it.
  std::string Open(const core::Identity& who) {
    model_.PushText("Hello.");
    RecordingSink sink;
    EXPECT_TRUE(h_.Turn("hello", sink, "", "", who).ok());
    return ConversationOf(sink);
  }

  static void ExpectInvalid(const Refusal& refused, const std::string& reason,
                            const std::string& field) {
    EXPECT_EQ(refused.code, grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_EQ(refused.reason, reason);
    EXPECT_EQ(refused.domain, "omniforge.dev");
    EXPECT_THAT(refused.fields, ElementsAre(field));
    EXPECT_FALSE(refused.retry.has_value());
  }

  ScriptedModel model_;
  TurnHarness h_;
  ToolGate gate_;
  std::map<std::string, std::string> key_;  // by tenant
  std::string expired_key_;
  core::ApiKeyStore keys_;
  TenantLimits limits_;
  core::ThreadPool workers_{4, 16};
  ChatGrpcService service_;
  std::unique_ptr<grpc::Server> server_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<pb::ChatService::Stub> stub_;
};

TEST_F(ChatErrorsTest, KeysAreRefusedWithTheirReason) {
  const pb::StreamChatRequest hi = TurnHarness::Request("hi");
  Refusal missing = ChatRefusal(hi, "");
  EXPECT_EQ(missing.code, grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(missing.reason, "API_KEY_MISSING");
  EXPECT_EQ(missing.domain, "omniforge.dev");
  Refusal wrong = ChatRefusal(hi, "ofk_0123456789ab_wrongsecret");
  EXPECT_EQ(wrong.code, grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(wrong.reason, "API_KEY_INVALID");
  Refusal expired = ChatRefusal(hi, expired_key_);
  EXPECT_EQ(expired.code, grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(expired.reason, "API_KEY_EXPIRED");

  // The unary calls pass the same door.
  auto context = Context("");
  pb::ListConversationsResponse listed;
  Refusal unary =
      Decode(stub_->ListConversations(context.get(), pb::ListConversationsRequest(), &listed));
  EXPECT_EQ(unary.code, grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(unary.reason, "API_KEY_MISSING");
}

TEST_F(ChatErrorsTest, LimitsAreResourceExhaustedWithTheLimitAndARetryHint) {
  const pb::StreamChatRequest hi = TurnHarness::Request("hi");
  auto context = Context(key_["tenant-r"]);
  pb::ListConversationsResponse listed;
  ASSERT_TRUE(stub_->ListConversations(context.get(), {}, &listed).ok());
  Refusal rate = ChatRefusal(hi, key_["tenant-r"]);
  EXPECT_EQ(rate.code, grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_EQ(rate.reason, "RATE_LIMITED");
  EXPECT_EQ(rate.metadata["limit"], "key_rate");
  ASSERT_TRUE(rate.retry.has_value());
  EXPECT_GT(*rate.retry, std::chrono::milliseconds(0));

  Refusal budget = ChatRefusal(hi, key_["tenant-b"]);
  EXPECT_EQ(budget.code, grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_EQ(budget.reason, "BUDGET_EXHAUSTED");
  EXPECT_EQ(budget.metadata["limit"], "daily_usd");
  ASSERT_TRUE(budget.retry.has_value());
  EXPECT_GT(*budget.retry, std::chrono::minutes(1)) << "until the next UTC day";

  // Carol's turn waits in its tool; her next one is over her cap.
  const std::string conversation = Open(kCarol);
  model_.PushToolCalls({{"list_runs", json::object()}});
  model_.PushText("Here they are.");
  std::thread running(
      [&] { Chat(TurnHarness::Request("show the runs", conversation), key_["tenant-c"]); });
  gate_.AwaitEntered(1);
  Refusal cap = ChatRefusal(hi, key_["tenant-c"]);
  gate_.Release();
  running.join();
  EXPECT_EQ(cap.code, grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_EQ(cap.reason, "TOO_MANY_TURNS");
  EXPECT_EQ(cap.metadata["limit"], "user_turns");
  EXPECT_TRUE(cap.retry.has_value());
}

// Every worker busy and the queue full: calls are refused at once with
// SERVER_BUSY and a retry hint, and served again once the work is done.
TEST_F(ChatErrorsTest, AFullWorkerPoolIsServerBusyWithARetryHint) {
  std::promise<void> release;
  const std::shared_future<void> released = release.get_future().share();
  // The four workers first (each waits once it runs), then the queue.
  std::atomic<int> running{0};
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(workers_.Submit([released, &running] {
      ++running;
      released.wait();
    }));
  }
  while (running.load() < 4) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  int queued = 0;
  while (workers_.Submit([released] { released.wait(); })) ++queued;
  ASSERT_EQ(queued, 16) << "the queue is full";

  auto context = Context(key_["tenant-a"]);
  pb::ListConversationsResponse listed;
  Refusal list = Decode(stub_->ListConversations(context.get(), {}, &listed));
  Refusal turn = ChatRefusal(TurnHarness::Request("hi"), key_["tenant-a"]);
  release.set_value();
  for (const Refusal& busy : {list, turn}) {
    EXPECT_EQ(busy.code, grpc::StatusCode::RESOURCE_EXHAUSTED);
    EXPECT_EQ(busy.reason, "SERVER_BUSY");
    ASSERT_TRUE(busy.retry.has_value());
    EXPECT_GT(*busy.retry, std::chrono::milliseconds(0));
  }
  // The pool drains; the same call is served.
  grpc::Status again;
  for (int i = 0; i < 200; ++i) {
    auto retry = Context(key_["tenant-a"]);
    again = stub_->ListConversations(retry.get(), {}, &listed);
    if (again.ok()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(again.ok()) << again.error_message();
}

TEST_F(ChatErrorsTest, BadRequestsNameTheFieldAtFault) {
  const std::string alice = key_["tenant-a"];
  ExpectInvalid(ChatRefusal(TurnHarness::Request(""), alice), "FIELD_REQUIRED", "message");
  ExpectInvalid(ChatRefusal(TurnHarness::Request(std::string(64 * 1024 + 1, 'a')), alice),
                "FIELD_TOO_LARGE", "message");
  ExpectInvalid(ChatRefusal(TurnHarness::Request("hi", "not-a-uuid"), alice), "FIELD_INVALID",
                "conversation_id");
  ExpectInvalid(ChatRefusal(TurnHarness::Request("hi", "", "has space"), alice), "FIELD_INVALID",
                "turn_id");
  pb::StreamChatRequest edit = TurnHarness::Request("", core::NewUuid());
  edit.mutable_decision()->set_kind(pb::DECISION_KIND_EDIT);
  edit.mutable_decision()->set_action_id("act-1");
  edit.mutable_decision()->set_arguments_json("[1]");
  ExpectInvalid(ChatRefusal(edit, alice), "FIELD_INVALID", "decision.arguments_json");
  pb::StreamChatRequest unknown_enum = TurnHarness::Request("hi");
  unknown_enum.set_context_type(static_cast<pb::ContextType>(99));
  ExpectInvalid(Decode(Raw("StreamChat", unknown_enum.SerializeAsString())), "FIELD_INVALID",
                "context_type");

  // Invalid UTF-8 fails the parse; the refusal still names the field.
  pb::StreamChatRequest utf8 = TurnHarness::Request("utf8-hole");
  std::string bytes = utf8.SerializeAsString();
  bytes.replace(bytes.find("utf8-hole"), 2, "\xC3\x28");
  ExpectInvalid(Decode(Raw("StreamChat", bytes)), "INVALID_UTF8", "message");
  pb::StreamChatRequest nested = TurnHarness::Request("hi", core::NewUuid());
  nested.mutable_decision()->set_kind(pb::DECISION_KIND_EDIT);
  nested.mutable_decision()->set_action_id("act-1");
  nested.mutable_decision()->set_arguments_json("{\"utf8-hole\":1}");
  bytes = nested.SerializeAsString();
  bytes.replace(bytes.find("utf8-hole"), 2, "\xC3\x28");
  ExpectInvalid(Decode(Raw("StreamChat", bytes)), "INVALID_UTF8", "decision.arguments_json");
  const Refusal garbage = Decode(Raw("ListActions", "\xFF\xFF\xFF"));
  EXPECT_EQ(garbage.code, grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(garbage.reason, "REQUEST_MALFORMED");
  EXPECT_EQ(garbage.fields.size(), 1u);

  pb::CancelTurnResponse cancelled;
  auto context = Context(alice);
  ExpectInvalid(Decode(stub_->CancelTurn(context.get(), pb::CancelTurnRequest(), &cancelled)),
                "FIELD_REQUIRED", "conversation_id");
  pb::ListActionsRequest actions;
  actions.set_conversation_id("nope");
  pb::ListActionsResponse listed;
  context = Context(alice);
  ExpectInvalid(Decode(stub_->ListActions(context.get(), actions, &listed)), "FIELD_INVALID",
                "conversation_id");
  actions.set_conversation_id(core::NewUuid());
  actions.set_limit(501);
  context = Context(alice);
  ExpectInvalid(Decode(stub_->ListActions(context.get(), actions, &listed)), "FIELD_INVALID",
                "limit");
}

TEST_F(ChatErrorsTest, AnotherUsersConversationIsNotFoundOnEveryCall) {
  const std::string bobs = Open(kBob);
  const std::string alice = key_["tenant-a"];
  const Refusal chat = ChatRefusal(TurnHarness::Request("hi", bobs), alice);
  EXPECT_EQ(chat.code, grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(chat.reason, "CONVERSATION_NOT_FOUND");

  auto context = Context(alice);
  pb::GetConversationRequest get;
  get.set_conversation_id(bobs);
  pb::GetConversationResponse got;
  EXPECT_EQ(Decode(stub_->GetConversation(context.get(), get, &got)).reason,
            "CONVERSATION_NOT_FOUND");
  context = Context(alice);
  pb::ListMessagesRequest messages;
  messages.set_conversation_id(bobs);
  pb::ListMessagesResponse page;
  EXPECT_EQ(Decode(stub_->ListMessages(context.get(), messages, &page)).reason,
            "CONVERSATION_NOT_FOUND");
  context = Context(alice);
  pb::ListActionsRequest actions;
  actions.set_conversation_id(bobs);
  pb::ListActionsResponse listed;
  const Refusal trail = Decode(stub_->ListActions(context.get(), actions, &listed));
  EXPECT_EQ(trail.code, grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(trail.reason, "CONVERSATION_NOT_FOUND");
}

TEST_F(ChatErrorsTest, StorageOutOfReachIsUnavailableWithARetryHint) {
  const std::string conversation = Open(kAlice);
  h_.memory.SetUnreachable(true);
  const std::string alice = key_["tenant-a"];
  const Refusal chat = ChatRefusal(TurnHarness::Request("hi", conversation), alice);
  EXPECT_EQ(chat.code, grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(chat.reason, "STORAGE_UNAVAILABLE");
  EXPECT_TRUE(chat.retry.has_value());
  auto context = Context(alice);
  pb::ListConversationsResponse listed;
  const Refusal list =
      Decode(stub_->ListConversations(context.get(), pb::ListConversationsRequest(), &listed));
  EXPECT_EQ(list.code, grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(list.reason, "STORAGE_UNAVAILABLE");
  EXPECT_TRUE(list.retry.has_value());
}

TEST_F(ChatErrorsTest, ARetryOfARunningTurnIsAbortedAndACancelEndsItWithAReasonedEvent) {
  const std::string conversation = Open(kAlice);
  const std::string alice = key_["tenant-a"];
  model_.PushToolCalls({{"list_runs", json::object()}});
  model_.PushText("Here they are.");
  Streamed first;
  std::thread running(
      [&] { first = Chat(TurnHarness::Request("show the runs", conversation, "turn-1"), alice); });
  gate_.AwaitEntered(1);
  const Refusal retry =
      ChatRefusal(TurnHarness::Request("show the runs", conversation, "turn-1"), alice);
  EXPECT_EQ(retry.code, grpc::StatusCode::ABORTED);
  EXPECT_EQ(retry.reason, "TURN_IN_PROGRESS");
  EXPECT_TRUE(retry.retry.has_value());

  auto context = Context(alice);
  pb::CancelTurnRequest cancel;
  cancel.set_conversation_id(conversation);
  cancel.set_turn_id("turn-1");
  pb::CancelTurnResponse cancelled;
  ASSERT_TRUE(stub_->CancelTurn(context.get(), cancel, &cancelled).ok());
  EXPECT_TRUE(cancelled.cancelled());
  gate_.Release();
  running.join();
  std::vector<pb::ErrorEvent> errors;
  for (const pb::ChatEvent& event : first.events) {
    if (event.has_error()) errors.push_back(event.error());
  }
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].code(), pb::CHAT_ERROR_CODE_CANCELLED);
  EXPECT_EQ(errors[0].reason(), "CANCELLED");
  EXPECT_FALSE(errors[0].retryable());
}

TEST_F(ChatErrorsTest, ATurnBeyondItsConversationsBoundIsRefusedButARetryOrReattachIsNot) {
  const std::string conversation = Open(kAlice);
  const std::string alice = key_["tenant-a"];
  model_.PushToolCalls({{"list_runs", json::object()}});
  model_.PushText("Here they are.");
  Streamed first;
  std::thread running(
      [&] { first = Chat(TurnHarness::Request("show the runs", conversation, "turn-1"), alice); });
  gate_.AwaitEntered(1);

  Refusal other =
      ChatRefusal(TurnHarness::Request("and my agents?", conversation, "turn-2"), alice);
  EXPECT_EQ(other.code, grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_EQ(other.reason, "TOO_MANY_TURNS");
  EXPECT_EQ(other.metadata["limit"], "conversation_queue");
  EXPECT_TRUE(other.retry.has_value());
  // The running turn's own retry is told it runs, not that the bound is
  // reached; a reattach reads it whole.
  const Refusal retry =
      ChatRefusal(TurnHarness::Request("show the runs", conversation, "turn-1"), alice);
  EXPECT_EQ(retry.code, grpc::StatusCode::ABORTED);
  EXPECT_EQ(retry.reason, "TURN_IN_PROGRESS");
  pb::StreamChatRequest reattach;
  reattach.set_conversation_id(conversation);
  reattach.set_turn_id("turn-1");
  reattach.set_resume_after_seq(0);
  Streamed reattached;
  std::thread reading([&] { reattached = Chat(reattach, alice); });
  gate_.Release();
  running.join();
  reading.join();
  ASSERT_TRUE(first.status.ok()) << first.status.error_message();
  ASSERT_TRUE(reattached.status.ok()) << reattached.status.error_message();
  ASSERT_FALSE(first.events.empty());
  EXPECT_TRUE(first.events.back().has_done());
  for (const pb::ChatEvent& event : first.events) {
    EXPECT_NE(event.agent_state().state(), pb::AGENT_STATE_SUSPENDED)
        << "a refused message suspends nothing";
  }
  ASSERT_EQ(reattached.events.size(), first.events.size());
  EXPECT_EQ(reattached.events.back().seq(), first.events.back().seq());

  // Once it has ended, the refused turn is let in.
  model_.PushText("Your agents are listed above.");
  const Streamed later =
      Chat(TurnHarness::Request("and my agents?", conversation, "turn-2"), alice);
  EXPECT_TRUE(later.status.ok()) << later.status.error_message();
}

TEST_F(ChatErrorsTest, AFailedToolIsARetryableErrorEvent) {
  model_.PushToolCalls({{"read_status", json::object()}});
  model_.PushText("The status could not be read.");
  const Streamed turn = Chat(TurnHarness::Request("what is the status?"), key_["tenant-a"]);
  ASSERT_TRUE(turn.status.ok()) << turn.status.error_message();
  std::vector<pb::ErrorEvent> errors;
  for (const pb::ChatEvent& event : turn.events) {
    if (event.has_error()) errors.push_back(event.error());
  }
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].code(), pb::CHAT_ERROR_CODE_TOOL_FAILED);
  EXPECT_EQ(errors[0].reason(), "TOOL_FAILED");
  EXPECT_TRUE(errors[0].retryable());
}

}  // namespace
}  // namespace omniforge::orchestrator
