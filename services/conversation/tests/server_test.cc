// Black-box tests of the omniforge-conversation binary: the real process,
// configured only through its environment, on a fresh PostgreSQL database,
// driven over gRPC and HTTP exactly as clients drive it.
#include <fcntl.h>
#include <gmock/gmock.h>
#include <google/protobuf/descriptor.pb.h>
#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/message_differencer.h>
#include <grpcpp/create_channel.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/security/credentials.h>
#include <grpcpp/support/byte_buffer.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_replace.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "grpc/reflection/v1alpha/reflection.grpc.pb.h"
#include "libs/core/grpc_identity.h"
#include "libs/core/ids.h"
#include "omniforge/conversation/v1/conversation_service.grpc.pb.h"
#include "tests/support/identity_keys.h"
#include "tests/support/server_process.h"
#include "tests/support/test_database.h"

namespace omniforge::conversation {
namespace {

namespace pb = ::omniforge::conversation::v1;
namespace health = ::grpc::health::v1;
namespace reflection = ::grpc::reflection::v1alpha;
using Clock = std::chrono::steady_clock;
using ::google::protobuf::Struct;
using ::google::protobuf::util::MessageDifferencer;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::UnorderedElementsAreArray;

constexpr char kMasterKey[] = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";
constexpr char kServiceName[] = "omniforge.conversation.v1.ConversationService";
constexpr auto kRpcTimeout = std::chrono::seconds(10);

using testing::ServerProcess;

// The environment of an omniforge-conversation process on `db`, plus `extra`.
std::vector<std::string> ServerEnv(const testing::TestDatabase& db,
                                   std::vector<std::string> extra = {}) {
  extra.insert(extra.begin(), {std::string("OMNIFORGE_ENCRYPTION_MASTER_KEY=") + kMasterKey,
                               "OMNIFORGE_SERVER_DRAIN_TIMEOUT_S=10"});
  const auto identity = testing::TestIdentityEnv(testing::TestKeyUse::kVerify);
  extra.insert(extra.end(), identity.begin(), identity.end());
  return testing::DatabaseEnv(db, "conversation", extra);
}

// A client context with the caller identity (when given) and a deadline.
std::unique_ptr<grpc::ClientContext> Call(const std::optional<core::Identity>& who) {
  auto context = std::make_unique<grpc::ClientContext>();
  if (who) core::AttachIdentity(*context, *who, core::kConversationAudience);
  context->set_deadline(std::chrono::system_clock::now() + kRpcTimeout);
  return context;
}

Struct MakeStruct(const std::map<std::string, std::string>& fields) {
  Struct s;
  for (const auto& [key, value] : fields) (*s.mutable_fields())[key].set_string_value(value);
  return s;
}

// A user of its own for every test, so listings see only that test's data.
core::Identity FreshUser(const std::string& tenant = "acme") {
  return {tenant, "user-" + core::NewUuid()};
}

class ConversationServerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { database_ = new testing::TestDatabase(); }
  static void TearDownTestSuite() {
    delete database_;
    database_ = nullptr;
  }

  void SetUp() override { StartServer({}); }

  void StartServer(std::vector<std::string> extra_env) {
    server_ = std::make_unique<ServerProcess>(OMNIFORGE_CONVERSATION_BIN);
    const auto error = server_->Start(ServerEnv(*database_, std::move(extra_env)));
    ASSERT_FALSE(error.has_value()) << *error;
    channel_ = grpc::CreateChannel(server_->address(), grpc::InsecureChannelCredentials());
    stub_ = pb::ConversationService::NewStub(channel_);
  }

  void TearDown() override {
    const auto status = StopServer();
    EXPECT_TRUE(status && WIFEXITED(*status) && WEXITSTATUS(*status) == 0)
        << "server did not exit cleanly; log:\n"
        << server_->JoinedLog();
  }

  // Closes the client side first: gRPC's drain waits for connected clients to
  // hang up, and an idle blocking-API channel only notices the GOAWAY on its
  // 5 s backup poll.
  std::optional<int> StopServer() {
    stub_.reset();
    channel_.reset();
    return server_->Stop();
  }

  pb::Conversation Create(const core::Identity& who, const std::string& title,
                          pb::ConversationKind kind = pb::CONVERSATION_KIND_UNSPECIFIED,
                          const std::string& parent = "") {
    pb::CreateConversationRequest request;
    request.set_title(title);
    request.set_kind(kind);
    request.set_parent_conversation_id(parent);
    pb::CreateConversationResponse response;
    const grpc::Status status = stub_->CreateConversation(Call(who).get(), request, &response);
    EXPECT_TRUE(status.ok()) << status.error_message();
    return response.conversation();
  }

  grpc::Status Append(const core::Identity& who, const pb::AppendMessageRequest& request,
                      pb::AppendMessageResponse* response = nullptr) {
    pb::AppendMessageResponse ignored;
    return stub_->AppendMessage(Call(who).get(), request, response ? response : &ignored);
  }

  grpc::Status Get(const core::Identity& who, const std::string& id,
                   pb::Conversation* out = nullptr) {
    pb::GetConversationRequest request;
    request.set_conversation_id(id);
    pb::GetConversationResponse response;
    grpc::Status status = stub_->GetConversation(Call(who).get(), request, &response);
    if (out) *out = response.conversation();
    return status;
  }

  int64_t MessageCount(const core::Identity& who, const std::string& id) {
    pb::Conversation conversation;
    const grpc::Status status = Get(who, id, &conversation);
    EXPECT_TRUE(status.ok()) << status.error_message();
    return conversation.message_count();
  }

  grpc::Status List(const core::Identity& who, const pb::ListConversationsRequest& request,
                    pb::ListConversationsResponse* response) {
    return stub_->ListConversations(Call(who).get(), request, response);
  }

  grpc::Status Delete(const core::Identity& who, const std::string& id) {
    pb::DeleteConversationRequest request;
    request.set_conversation_id(id);
    pb::DeleteConversationResponse response;
    return stub_->DeleteConversation(Call(who).get(), request, &response);
  }

  static pb::AppendMessageRequest Message(const std::string& conversation_id, pb::Role role,
                                          const std::string& content) {
    pb::AppendMessageRequest request;
    request.set_conversation_id(conversation_id);
    request.set_role(role);
    request.set_content(content);
    return request;
  }

  static testing::TestDatabase* database_;
  std::unique_ptr<ServerProcess> server_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<pb::ConversationService::Stub> stub_;
};

testing::TestDatabase* ConversationServerTest::database_ = nullptr;

TEST_F(ConversationServerTest, HealthCheckReportsServing) {
  auto stub = health::Health::NewStub(channel_);
  health::HealthCheckRequest request;
  request.set_service("");
  health::HealthCheckResponse response;
  const grpc::Status status = stub->Check(Call(std::nullopt).get(), request, &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(response.status(), health::HealthCheckResponse::SERVING);
}

TEST_F(ConversationServerTest, ReflectionDescribesTheService) {
  auto stub = reflection::ServerReflection::NewStub(channel_);
  auto context = Call(std::nullopt);
  auto stream = stub->ServerReflectionInfo(context.get());

  reflection::ServerReflectionRequest list;
  list.set_list_services("");
  ASSERT_TRUE(stream->Write(list));
  reflection::ServerReflectionResponse listed;
  ASSERT_TRUE(stream->Read(&listed));
  ASSERT_TRUE(listed.has_list_services_response()) << listed.DebugString();
  std::vector<std::string> names;
  for (const auto& service : listed.list_services_response().service()) {
    names.push_back(service.name());
  }
  EXPECT_THAT(names, ::testing::Contains(kServiceName));

  reflection::ServerReflectionRequest symbol;
  symbol.set_file_containing_symbol(kServiceName);
  ASSERT_TRUE(stream->Write(symbol));
  reflection::ServerReflectionResponse described;
  ASSERT_TRUE(stream->Read(&described));
  ASSERT_TRUE(described.has_file_descriptor_response()) << described.DebugString();
  ASSERT_GE(described.file_descriptor_response().file_descriptor_proto_size(), 1);
  // The first entry is the file that declares the symbol; the rest are its
  // dependencies.
  google::protobuf::FileDescriptorProto file;
  ASSERT_TRUE(file.ParseFromString(described.file_descriptor_response().file_descriptor_proto(0)));
  EXPECT_EQ(file.package(), "omniforge.conversation.v1");
  ASSERT_EQ(file.service_size(), 1);
  EXPECT_EQ(file.service(0).name(), "ConversationService");
  EXPECT_EQ(file.service(0).method_size(), 9);

  stream->WritesDone();
  const grpc::Status status = stream->Finish();
  EXPECT_TRUE(status.ok()) << status.error_message();
}

TEST_F(ConversationServerTest, RoundTripThroughEveryMethod) {
  const core::Identity alice = FreshUser();

  pb::CreateConversationRequest create;
  create.set_title("Trip to Lisbon");
  *create.mutable_metadata() = MakeStruct({{"channel", "web"}});
  (*create.mutable_metadata()->mutable_fields())["priority"].set_number_value(2);
  pb::CreateConversationResponse created;
  grpc::Status status = stub_->CreateConversation(Call(alice).get(), create, &created);
  ASSERT_TRUE(status.ok()) << status.error_message();
  const pb::Conversation& conversation = created.conversation();
  EXPECT_TRUE(core::IsUuid(conversation.id())) << conversation.id();
  EXPECT_EQ(conversation.tenant_id(), alice.tenant_id);
  EXPECT_EQ(conversation.user_id(), alice.user_id);
  EXPECT_EQ(conversation.title(), "Trip to Lisbon");
  EXPECT_EQ(conversation.kind(), pb::CONVERSATION_KIND_CHAT);
  EXPECT_EQ(conversation.message_count(), 0);
  EXPECT_TRUE(MessageDifferencer::Equals(conversation.metadata(), create.metadata()))
      << conversation.metadata().DebugString();
  const std::string id = conversation.id();

  std::vector<pb::AppendMessageRequest> appended = {
      Message(id, pb::ROLE_USER, "Find me a hotel in Lisbon for next weekend."),
      Message(id, pb::ROLE_ASSISTANT, "Here are three hotels near Baixa: ..."),
      Message(id, pb::ROLE_USER, "Book the second one."),
  };
  *appended[0].mutable_metadata() = MakeStruct({{"client", "web"}});
  *appended[1].mutable_metadata() = MakeStruct({{"model", "planner-small"}, {"route", "travel"}});
  *appended[2].mutable_metadata() = MakeStruct({{"client", "mobile"}});
  for (size_t i = 0; i < appended.size(); ++i) {
    pb::AppendMessageResponse response;
    status = Append(alice, appended[i], &response);
    ASSERT_TRUE(status.ok()) << status.error_message();
    EXPECT_EQ(response.message().seq(), static_cast<int64_t>(i + 1));
    EXPECT_FALSE(response.deduplicated());
  }

  pb::Conversation fetched;
  status = Get(alice, id, &fetched);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(fetched.message_count(), 3);
  EXPECT_EQ(fetched.title(), "Trip to Lisbon");

  pb::ListMessagesRequest list_messages;
  list_messages.set_conversation_id(id);
  pb::ListMessagesResponse messages;
  status = stub_->ListMessages(Call(alice).get(), list_messages, &messages);
  ASSERT_TRUE(status.ok()) << status.error_message();
  ASSERT_EQ(messages.messages_size(), 3);
  EXPECT_FALSE(messages.has_more());
  for (int i = 0; i < 3; ++i) {
    const pb::Message& m = messages.messages(i);
    SCOPED_TRACE("message " + std::to_string(i));
    EXPECT_EQ(m.seq(), i + 1);
    EXPECT_EQ(m.conversation_id(), id);
    EXPECT_EQ(m.role(), appended[i].role());
    EXPECT_EQ(m.content(), appended[i].content());
    EXPECT_TRUE(MessageDifferencer::Equals(m.metadata(), appended[i].metadata()))
        << m.metadata().DebugString();
    EXPECT_GT(m.token_count(), 0);
  }

  pb::GetContextWindowRequest window_request;
  window_request.set_conversation_id(id);
  pb::GetContextWindowResponse window;
  status = stub_->GetContextWindow(Call(alice).get(), window_request, &window);
  ASSERT_TRUE(status.ok()) << status.error_message();
  ASSERT_EQ(window.messages_size(), 3);
  int sum = 0;
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(window.messages(i).seq(), i + 1);
    EXPECT_EQ(window.messages(i).content(), appended[i].content());
    EXPECT_TRUE(MessageDifferencer::Equals(window.messages(i).metadata(), appended[i].metadata()));
    sum += window.messages(i).token_count();
  }
  EXPECT_EQ(window.total_tokens(), sum);
  EXPECT_FALSE(window.truncated());
  EXPECT_EQ(window.token_estimator(), "heuristic-v1");

  // Two newer conversations: the listing puts the most recently active first.
  const std::string second = Create(alice, "second").id();
  const std::string third = Create(alice, "third").id();
  pb::ListConversationsResponse listing;
  status = List(alice, pb::ListConversationsRequest(), &listing);
  ASSERT_TRUE(status.ok()) << status.error_message();
  std::vector<std::string> ids;
  for (const pb::Conversation& c : listing.conversations()) ids.push_back(c.id());
  EXPECT_THAT(ids, ElementsAre(third, second, id));
  EXPECT_TRUE(listing.next_page_token().empty());

  std::vector<std::string> paged;
  pb::ListConversationsRequest page_request;
  page_request.set_page_size(1);
  for (int page = 0; page < 10; ++page) {
    pb::ListConversationsResponse response;
    status = List(alice, page_request, &response);
    ASSERT_TRUE(status.ok()) << status.error_message();
    ASSERT_LE(response.conversations_size(), 1);
    for (const pb::Conversation& c : response.conversations()) paged.push_back(c.id());
    if (response.next_page_token().empty()) break;
    page_request.set_page_token(response.next_page_token());
  }
  EXPECT_THAT(paged, ElementsAre(third, second, id));

  status = Delete(alice, id);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(Get(alice, id).error_code(), grpc::StatusCode::NOT_FOUND);
  pb::ListMessagesResponse after_delete;
  EXPECT_EQ(stub_->ListMessages(Call(alice).get(), list_messages, &after_delete).error_code(),
            grpc::StatusCode::NOT_FOUND);
}

TEST_F(ConversationServerTest, AgentDialoguesBelongToTheirParent) {
  const core::Identity alice = FreshUser();
  const std::string parent = Create(alice, "parent chat").id();
  const pb::Conversation dialogue =
      Create(alice, "planner and executor", pb::CONVERSATION_KIND_AGENT_DIALOGUE, parent);
  ASSERT_FALSE(dialogue.id().empty());
  EXPECT_EQ(dialogue.kind(), pb::CONVERSATION_KIND_AGENT_DIALOGUE);
  EXPECT_EQ(dialogue.parent_conversation_id(), parent);
  ASSERT_TRUE(Append(alice, Message(dialogue.id(), pb::ROLE_PLANNER, "search flights")).ok());

  pb::ListConversationsRequest by_parent;
  by_parent.set_parent_conversation_id(parent);
  pb::ListConversationsResponse children;
  grpc::Status status = List(alice, by_parent, &children);
  ASSERT_TRUE(status.ok()) << status.error_message();
  ASSERT_EQ(children.conversations_size(), 1);
  EXPECT_EQ(children.conversations(0).id(), dialogue.id());

  // The caller's own listing holds chats only.
  pb::ListConversationsResponse chats;
  status = List(alice, pb::ListConversationsRequest(), &chats);
  ASSERT_TRUE(status.ok()) << status.error_message();
  ASSERT_EQ(chats.conversations_size(), 1);
  EXPECT_EQ(chats.conversations(0).id(), parent);

  ASSERT_TRUE(Delete(alice, parent).ok());
  EXPECT_EQ(Get(alice, parent).error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(Get(alice, dialogue.id()).error_code(), grpc::StatusCode::NOT_FOUND);
}

TEST_F(ConversationServerTest, AgentDialoguesEndOnceWithAStatus) {
  const core::Identity alice = FreshUser();
  const pb::Conversation parent = Create(alice, "parent chat");
  EXPECT_EQ(parent.status(), pb::DIALOGUE_STATUS_UNSPECIFIED);
  const pb::Conversation dialogue =
      Create(alice, "step 1", pb::CONVERSATION_KIND_AGENT_DIALOGUE, parent.id());
  EXPECT_EQ(dialogue.status(), pb::DIALOGUE_STATUS_ACTIVE);
  auto set_status = [&](const core::Identity& who, const std::string& id, int status,
                        pb::SetDialogueStatusResponse* response = nullptr) {
    pb::SetDialogueStatusRequest request;
    request.set_conversation_id(id);
    request.set_status(static_cast<pb::DialogueStatus>(status));
    pb::SetDialogueStatusResponse ignored;
    return stub_->SetDialogueStatus(Call(who).get(), request, response ? response : &ignored);
  };

  // Bad input, someone else's dialogue, a chat: refused, nothing changes.
  EXPECT_EQ(set_status(alice, dialogue.id(), pb::DIALOGUE_STATUS_UNSPECIFIED).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  const grpc::Status unknown = set_status(alice, dialogue.id(), 42);
  EXPECT_EQ(unknown.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(unknown.error_message(), HasSubstr("status 42"));
  EXPECT_EQ(set_status(alice, "", pb::DIALOGUE_STATUS_FAILED).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  const core::Identity bob{alice.tenant_id, "bob-" + core::NewUuid()};
  const core::Identity other_tenant{"other", alice.user_id};
  for (const core::Identity& other : {bob, other_tenant}) {
    EXPECT_EQ(set_status(other, dialogue.id(), pb::DIALOGUE_STATUS_FAILED).error_code(),
              grpc::StatusCode::NOT_FOUND);
  }
  EXPECT_EQ(set_status(alice, core::NewUuid(), pb::DIALOGUE_STATUS_FAILED).error_code(),
            grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(set_status(alice, parent.id(), pb::DIALOGUE_STATUS_COMPLETED).error_code(),
            grpc::StatusCode::FAILED_PRECONDITION);
  pb::Conversation read;
  ASSERT_TRUE(Get(alice, dialogue.id(), &read).ok());
  EXPECT_EQ(read.status(), pb::DIALOGUE_STATUS_ACTIVE);

  pb::SetDialogueStatusResponse completed;
  grpc::Status status = set_status(alice, dialogue.id(), pb::DIALOGUE_STATUS_COMPLETED, &completed);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(completed.conversation().status(), pb::DIALOGUE_STATUS_COMPLETED);
  EXPECT_EQ(completed.conversation().title(), "step 1");
  ASSERT_TRUE(set_status(alice, dialogue.id(), pb::DIALOGUE_STATUS_COMPLETED).ok());  // a retry
  const grpc::Status changed = set_status(alice, dialogue.id(), pb::DIALOGUE_STATUS_FAILED);
  EXPECT_EQ(changed.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_THAT(changed.error_message(), HasSubstr("already ended as completed"));

  ASSERT_TRUE(Get(alice, dialogue.id(), &read).ok());
  EXPECT_EQ(read.status(), pb::DIALOGUE_STATUS_COMPLETED);
  pb::ListConversationsRequest by_parent;
  by_parent.set_parent_conversation_id(parent.id());
  pb::ListConversationsResponse children;
  ASSERT_TRUE(List(alice, by_parent, &children).ok());
  ASSERT_EQ(children.conversations_size(), 1);
  EXPECT_EQ(children.conversations(0).status(), pb::DIALOGUE_STATUS_COMPLETED);
}

TEST_F(ConversationServerTest, IdentityScopesEveryCall) {
  pb::CreateConversationResponse created;
  EXPECT_EQ(
      stub_->CreateConversation(Call(std::nullopt).get(), pb::CreateConversationRequest(), &created)
          .error_code(),
      grpc::StatusCode::UNAUTHENTICATED);

  const core::Identity alice{"acme", "alice-" + core::NewUuid()};
  const core::Identity other_tenant{"other", alice.user_id};
  const std::string id = Create(alice, "private").id();
  ASSERT_FALSE(id.empty());

  EXPECT_EQ(Get(other_tenant, id).error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(Append(other_tenant, Message(id, pb::ROLE_USER, "let me in")).error_code(),
            grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(Delete(other_tenant, id).error_code(), grpc::StatusCode::NOT_FOUND);
  pb::ListConversationsResponse other_listing;
  ASSERT_TRUE(List(other_tenant, pb::ListConversationsRequest(), &other_listing).ok());
  EXPECT_EQ(other_listing.conversations_size(), 0);
  EXPECT_EQ(MessageCount(alice, id), 0);

  // Even signed by a trusted key, an assertion naming a malformed tenant is
  // refused.
  const core::Identity bad_tenant{"a b", "alice"};
  EXPECT_EQ(Get(bad_tenant, id).error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(
      stub_->CreateConversation(Call(bad_tenant).get(), pb::CreateConversationRequest(), &created)
          .error_code(),
      grpc::StatusCode::UNAUTHENTICATED);
}

// Another tenant's or user's conversation cannot be told from one that does
// not exist: every call that names a conversation answers both with the same
// code and the same message (the id the caller sent put aside).
TEST_F(ConversationServerTest, AnotherTenantsConversationLooksExactlyLikeAMissingOne) {
  const core::Identity alice = FreshUser();
  const std::string id = Create(alice, "private").id();
  ASSERT_FALSE(id.empty());
  ASSERT_TRUE(Append(alice, Message(id, pb::ROLE_USER, "my plans")).ok());
  const std::string missing = "0190a7e4-0000-7000-8000-00000000beef";

  // Each call, by `who` on conversation `target`.
  using Rpc = std::function<grpc::Status(const core::Identity&, const std::string&)>;
  const std::vector<std::pair<std::string, Rpc>> calls = {
      {"GetConversation",
       [&](const core::Identity& who, const std::string& target) { return Get(who, target); }},
      {"AppendMessage",
       [&](const core::Identity& who, const std::string& target) {
         return Append(who, Message(target, pb::ROLE_USER, "let me in"));
       }},
      {"ListMessages",
       [&](const core::Identity& who, const std::string& target) {
         pb::ListMessagesRequest request;
         request.set_conversation_id(target);
         pb::ListMessagesResponse response;
         return stub_->ListMessages(Call(who).get(), request, &response);
       }},
      {"GetContextWindow",
       [&](const core::Identity& who, const std::string& target) {
         pb::GetContextWindowRequest request;
         request.set_conversation_id(target);
         pb::GetContextWindowResponse response;
         return stub_->GetContextWindow(Call(who).get(), request, &response);
       }},
      {"DeleteConversation",
       [&](const core::Identity& who, const std::string& target) { return Delete(who, target); }}};
  const std::vector<core::Identity> strangers = {{"other-tenant", alice.user_id},
                                                 FreshUser(alice.tenant_id)};
  for (const auto& [name, call] : calls) {
    for (const core::Identity& stranger : strangers) {
      SCOPED_TRACE(name + " by " + stranger.tenant_id + "/" + stranger.user_id);
      const grpc::Status theirs = call(stranger, id);
      const grpc::Status nothing = call(stranger, missing);
      EXPECT_EQ(theirs.error_code(), grpc::StatusCode::NOT_FOUND);
      EXPECT_EQ(theirs.error_code(), nothing.error_code());
      EXPECT_EQ(absl::StrReplaceAll(theirs.error_message(), {{id, "<id>"}}),
                absl::StrReplaceAll(nothing.error_message(), {{missing, "<id>"}}));
      EXPECT_EQ(theirs.error_details(), nothing.error_details());
    }
  }
  // None of it touched Alice's conversation.
  pb::Conversation mine;
  ASSERT_TRUE(Get(alice, id, &mine).ok());
  EXPECT_EQ(mine.message_count(), 1);
}

TEST_F(ConversationServerTest, BadInputIsRejectedAndChangesNothing) {
  const core::Identity alice = FreshUser();
  const std::string id = Create(alice, "valid").id();
  ASSERT_TRUE(Append(alice, Message(id, pb::ROLE_USER, "hello")).ok());

  Struct big_metadata = MakeStruct({{"blob", std::string(size_t{17} * 1024, 'm')}});
  struct BadAppend {
    std::string what;
    pb::AppendMessageRequest request;
  };
  std::vector<BadAppend> bad_appends = {
      {"content of 64 KiB + 1", Message(id, pb::ROLE_USER, std::string(64 * 1024 + 1, 'x'))},
      {"ROLE_UNSPECIFIED", Message(id, pb::ROLE_UNSPECIFIED, "no role")},
      {"unknown role 99", Message(id, static_cast<pb::Role>(99), "role from the future")},
      {"malformed conversation_id", Message("not-a-uuid", pb::ROLE_USER, "hello")},
      {"metadata over 16 KiB", Message(id, pb::ROLE_USER, "hello")},
  };
  *bad_appends.back().request.mutable_metadata() = big_metadata;
  for (const BadAppend& bad : bad_appends) {
    EXPECT_EQ(Append(alice, bad.request).error_code(), grpc::StatusCode::INVALID_ARGUMENT)
        << bad.what;
  }

  pb::CreateConversationRequest big_create;
  *big_create.mutable_metadata() = big_metadata;
  pb::CreateConversationResponse created;
  EXPECT_EQ(stub_->CreateConversation(Call(alice).get(), big_create, &created).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);

  pb::ListConversationsRequest huge_page;
  huge_page.set_page_size(1000);
  pb::ListConversationsResponse listing;
  EXPECT_EQ(List(alice, huge_page, &listing).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  pb::ListConversationsRequest garbage_token;
  garbage_token.set_page_token("not a token, just garbage!");
  EXPECT_EQ(List(alice, garbage_token, &listing).error_code(), grpc::StatusCode::INVALID_ARGUMENT);

  pb::GetContextWindowRequest negative_budget;
  negative_budget.set_conversation_id(id);
  negative_budget.set_token_budget(-1);
  pb::GetContextWindowResponse window;
  EXPECT_EQ(stub_->GetContextWindow(Call(alice).get(), negative_budget, &window).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);

  // Invalid UTF-8 in a proto3 string. The C++ client would only log while
  // serializing it, so the field is written by hand onto a valid request:
  // tag 3 (content), wire type 2, then the length and the bytes.
  const std::string invalid_utf8 = "caf\xc3 \xff\xfe";
  std::string wire = Message(id, pb::ROLE_USER, "").SerializeAsString();
  wire += static_cast<char>((3 << 3) | 2);
  wire += static_cast<char>(invalid_utf8.size());
  wire += invalid_utf8;
  grpc::Slice slice(wire);
  grpc::ByteBuffer request(&slice, 1);
  grpc::ByteBuffer response;
  grpc::GenericStub generic(channel_);
  auto context = Call(alice);
  std::promise<grpc::Status> done;
  generic.UnaryCall(context.get(), "/omniforge.conversation.v1.ConversationService/AppendMessage",
                    grpc::StubOptions(), &request, &response,
                    [&done](grpc::Status s) { done.set_value(std::move(s)); });
  const grpc::Status utf8_status = done.get_future().get();
  // The service parses requests itself, so the client learns what is wrong.
  EXPECT_EQ(utf8_status.error_code(), grpc::StatusCode::INVALID_ARGUMENT)
      << utf8_status.error_message();
  EXPECT_THAT(utf8_status.error_message(), ::testing::HasSubstr("valid UTF-8"));

  EXPECT_EQ(MessageCount(alice, id), 1);
  // Even the parser's complaint about that request arrives as a JSON log line.
  const auto has_protobuf_line = [&] {
    return server_->JoinedLog().find(R"("component":"protobuf")") != std::string::npos;
  };
  for (int i = 0; i < 100 && !has_protobuf_line(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_TRUE(has_protobuf_line()) << server_->JoinedLog();
  for (const std::string& line : server_->LogLines()) {
    EXPECT_TRUE(nlohmann::json::accept(line)) << line;
  }
  ASSERT_TRUE(List(alice, pb::ListConversationsRequest(), &listing).ok());
  EXPECT_EQ(listing.conversations_size(), 1);

  // The limit is exactly 64 KiB: content of that size is stored.
  pb::AppendMessageResponse largest;
  const grpc::Status status =
      Append(alice, Message(id, pb::ROLE_USER, std::string(size_t{64} * 1024, 'x')), &largest);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(largest.message().seq(), 2);
}

TEST_F(ConversationServerTest, IdempotencyKeyDeduplicatesRetries) {
  const core::Identity alice = FreshUser();
  const std::string id = Create(alice, "retries").id();
  pb::AppendMessageRequest request = Message(id, pb::ROLE_USER, "pay the invoice");
  request.set_idempotency_key("retry-key-1");

  pb::AppendMessageResponse first;
  grpc::Status status = Append(alice, request, &first);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_FALSE(first.deduplicated());
  pb::AppendMessageResponse second;
  status = Append(alice, request, &second);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_TRUE(second.deduplicated());
  EXPECT_EQ(second.message().id(), first.message().id());
  EXPECT_EQ(second.message().seq(), first.message().seq());
  EXPECT_EQ(MessageCount(alice, id), 1);
}

TEST_F(ConversationServerTest, MetadataCanTravelAsJsonTextBothWays) {
  const core::Identity alice = FreshUser();
  const std::string id = Create(alice, "json metadata").id();
  pb::AppendMessageRequest request = Message(id, pb::ROLE_ASSISTANT, "here you are");
  request.set_metadata_json(R"({"route":"travel","tools":["a","b"],"n":2})");
  pb::AppendMessageResponse appended;
  grpc::Status status = Append(alice, request, &appended);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_FALSE(appended.message().has_metadata()) << "asked in text, answered in text";
  EXPECT_EQ(nlohmann::json::parse(appended.message().metadata_json()),
            nlohmann::json::parse(request.metadata_json()));

  // Read back as text, or as a Struct by default.
  pb::GetContextWindowRequest window_request;
  window_request.set_conversation_id(id);
  window_request.set_metadata_as_json(true);
  pb::GetContextWindowResponse window;
  ASSERT_TRUE(stub_->GetContextWindow(Call(alice).get(), window_request, &window).ok());
  ASSERT_EQ(window.messages_size(), 1);
  EXPECT_EQ(nlohmann::json::parse(window.messages(0).metadata_json())["route"], "travel");
  EXPECT_FALSE(window.messages(0).has_metadata());
  pb::ListMessagesRequest list_request;
  list_request.set_conversation_id(id);
  pb::ListMessagesResponse listed;
  ASSERT_TRUE(stub_->ListMessages(Call(alice).get(), list_request, &listed).ok());
  ASSERT_EQ(listed.messages_size(), 1);
  EXPECT_TRUE(listed.messages(0).metadata_json().empty());
  EXPECT_EQ(listed.messages(0).metadata().fields().at("route").string_value(), "travel");

  // Text that is not a JSON object, or both forms at once: refused, nothing stored.
  for (const char* bad : {"[1,2]", "{\"a\":", "\"text\""}) {
    pb::AppendMessageRequest wrong = Message(id, pb::ROLE_ASSISTANT, "x");
    wrong.set_metadata_json(bad);
    pb::AppendMessageResponse ignored;
    EXPECT_EQ(Append(alice, wrong, &ignored).error_code(), grpc::StatusCode::INVALID_ARGUMENT)
        << bad;
  }
  pb::AppendMessageRequest both = Message(id, pb::ROLE_ASSISTANT, "x");
  both.set_metadata_json("{}");
  *both.mutable_metadata() = MakeStruct({{"a", "b"}});
  pb::AppendMessageResponse ignored;
  EXPECT_EQ(Append(alice, both, &ignored).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(MessageCount(alice, id), 1);
}

// A live probe stored metadata 5,000 levels deep, after which ListMessages
// of that conversation failed for every reader (protobuf's own nesting
// limit). Metadata at the limit is stored and read back; one level more is
// refused, naming the limit, and changes nothing.
TEST_F(ConversationServerTest, MetadataNestedPastTheLimitIsRefusedAndTheConversationStaysReadable) {
  const core::Identity alice = FreshUser();
  const std::string id = Create(alice, "nested metadata").id();
  const auto nested = [](int levels) {
    std::string text;
    for (int i = 0; i < levels; ++i) text += R"({"a":)";
    text += "1";
    for (int i = 0; i < levels; ++i) text += "}";
    return text;
  };
  // One level too many, and the probe's 5,000 levels of arrays (10 KB).
  const std::string probe = R"({"a":)" + std::string(5000, '[') + std::string(5000, ']') + "}";
  for (const std::string& text : {nested(25), probe}) {
    pb::AppendMessageRequest deep = Message(id, pb::ROLE_USER, "deep");
    deep.set_metadata_json(text);
    pb::AppendMessageResponse ignored;
    const grpc::Status status = Append(alice, deep, &ignored);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << text.size();
    EXPECT_EQ(status.error_message(),
              "metadata_json: JSON nested more than 24 levels deep (the limit)");
  }
  EXPECT_EQ(MessageCount(alice, id), 0);

  pb::AppendMessageRequest at_limit = Message(id, pb::ROLE_USER, "at the limit");
  at_limit.set_metadata_json(nested(24));
  pb::AppendMessageResponse appended;
  ASSERT_TRUE(Append(alice, at_limit, &appended).ok());
  // Read back as a Struct by a client with protobuf's default limits.
  pb::ListMessagesRequest list_request;
  list_request.set_conversation_id(id);
  pb::ListMessagesResponse listed;
  const grpc::Status read = stub_->ListMessages(Call(alice).get(), list_request, &listed);
  ASSERT_TRUE(read.ok()) << read.error_message();
  ASSERT_EQ(listed.messages_size(), 1);
  EXPECT_TRUE(listed.messages(0).metadata().fields().contains("a"));
}

// One user message and 80 replies of 64 KiB: the last exchange alone is
// 5 MiB. Its window used to exceed gRPC's 4 MiB, so every later turn of the
// conversation failed to read it; now the window is bounded in bytes.
TEST_F(ConversationServerTest, AHugeLastExchangeStillGivesAWindowThatFitsInAResponse) {
  const core::Identity alice = FreshUser();
  const std::string id = Create(alice, "long replies").id();
  pb::AppendMessageResponse appended;
  ASSERT_TRUE(Append(alice, Message(id, pb::ROLE_USER, "tell me everything"), &appended).ok());
  // Text of many words, so that the stored form is not trivially small.
  std::string reply;
  while (reply.size() < size_t{64} * 1024 - 16) reply += "lorem ipsum ";
  for (int i = 0; i < 80; ++i) {
    ASSERT_TRUE(Append(alice, Message(id, pb::ROLE_ASSISTANT, reply), &appended).ok()) << i;
  }
  pb::GetContextWindowRequest request;
  request.set_conversation_id(id);
  pb::GetContextWindowResponse window;
  const grpc::Status status = stub_->GetContextWindow(Call(alice).get(), request, &window);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_TRUE(window.truncated());
  EXPECT_GT(window.messages_size(), 20);
  EXPECT_LE(window.ByteSizeLong(), size_t{2} * 1024 * 1024 + size_t{64} * 1024);
  EXPECT_EQ(window.messages(window.messages_size() - 1).content(), reply) << "the newest kept";
}

TEST_F(ConversationServerTest, SecretsAreMaskedFlaggedAndNeverLogged) {
  const std::string secret = "sk-proj-ABCDEFGHIJKLMNOPQRSTUVWX123456";
  const core::Identity alice = FreshUser();
  const std::string id = Create(alice, "keys").id();
  pb::AppendMessageResponse response;
  const grpc::Status status =
      Append(alice, Message(id, pb::ROLE_USER, "my api key is " + secret), &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  const auto& fields = response.message().metadata().fields();
  ASSERT_TRUE(fields.contains("secrets_detected")) << response.message().DebugString();
  std::vector<std::string> kinds;
  for (const auto& value : fields.at("secrets_detected").list_value().values()) {
    kinds.push_back(value.string_value());
  }
  EXPECT_THAT(kinds, ElementsAre("openai_api_key"));
  EXPECT_EQ(response.message().content(), "my api key is [REDACTED]");

  // Stop first so the shutdown lines are in the log too.
  ASSERT_TRUE(StopServer().has_value());
  const std::vector<std::string> log = server_->LogLines();
  ASSERT_FALSE(log.empty());
  for (const std::string& line : log) EXPECT_THAT(line, ::testing::Not(HasSubstr(secret)));
}

TEST_F(ConversationServerTest, MetricsCountRpcsByMethodAndCode) {
  const std::string series =
      R"(grpc_server_handled_total{grpc_code="OK",grpc_method="CreateConversation",)"
      R"(grpc_service="omniforge.conversation.v1.ConversationService",grpc_type="unary"})";
  httplib::Client metrics("127.0.0.1", server_->metrics_port());
  metrics.set_connection_timeout(5);
  metrics.set_read_timeout(5);

  auto before = metrics.Get("/metrics");
  ASSERT_TRUE(before) << httplib::to_string(before.error());
  ASSERT_EQ(before->status, 200);
  EXPECT_THAT(before->body, ::testing::Not(HasSubstr(series)));

  Create(FreshUser(), "counted");
  auto after = metrics.Get("/metrics");
  ASSERT_TRUE(after) << httplib::to_string(after.error());
  ASSERT_EQ(after->status, 200);
  EXPECT_THAT(after->body, HasSubstr(series + " 1\n"));
}

// One in-flight AppendMessage of the drain test.
struct DrainCall {
  grpc::ClientContext context;
  pb::AppendMessageRequest request;
  pb::AppendMessageResponse response;
  grpc::Status status;
};

TEST_F(ConversationServerTest, SigtermDrainsInFlightAppends) {
  constexpr int kCalls = 200;
  // Batches of four: the burst takes dozens of commits, so calls are still
  // queued or being written when SIGTERM arrives, however fast the machine.
  // (With the default batch size one commit can take the whole burst.)
  ASSERT_TRUE(StopServer().has_value());
  StartServer({"OMNIFORGE_APPEND_MAX_BATCH=4"});
  const core::Identity alice = FreshUser();
  const std::string id = Create(alice, "drain").id();
  ASSERT_FALSE(id.empty());

  // Counted by gRPC's callback threads as the calls finish.
  struct Completions {
    absl::Mutex mu;
    absl::CondVar finished;
    int done ABSL_GUARDED_BY(mu) = 0;
  } completions;
  std::vector<std::unique_ptr<DrainCall>> calls;
  for (int i = 0; i < kCalls; ++i) {
    auto call = std::make_unique<DrainCall>();
    core::AttachIdentity(call->context, alice, core::kConversationAudience);
    call->context.set_deadline(std::chrono::system_clock::now() + kRpcTimeout);
    call->request = Message(id, pb::ROLE_USER, "drain " + std::to_string(i));
    calls.push_back(std::move(call));
  }
  for (auto& call : calls) {
    DrainCall* c = call.get();
    stub_->async()->AppendMessage(&c->context, &c->request, &c->response,
                                  [c, &completions](grpc::Status s) {
                                    absl::MutexLock lock(&completions.mu);
                                    c->status = std::move(s);
                                    ++completions.done;
                                    completions.finished.SignalAll();
                                  });
  }
  // SIGTERM once the server is demonstrably handling the burst, so most calls
  // are in flight when the drain begins.
  int done_at_sigterm = 0;
  {
    absl::MutexLock lock(&completions.mu);
    const absl::Time deadline = absl::Now() + absl::FromChrono(kRpcTimeout);
    while (completions.done == 0 &&
           !completions.finished.WaitWithDeadline(&completions.mu, deadline)) {
    }
    ASSERT_GT(completions.done, 0);
    server_->Terminate();
    done_at_sigterm = completions.done;
  }
  const Clock::time_point terminated = Clock::now();
  {
    absl::MutexLock lock(&completions.mu);
    const absl::Time deadline =
        absl::Now() + absl::FromChrono(kRpcTimeout + std::chrono::seconds(5));
    while (completions.done < kCalls &&
           !completions.finished.WaitWithDeadline(&completions.mu, deadline)) {
    }
    ASSERT_EQ(completions.done, kCalls);
  }
  const std::optional<int> exit_status = server_->WaitForExit(std::chrono::seconds(5));
  ASSERT_TRUE(exit_status.has_value()) << "no exit 5 s after SIGTERM; log:\n"
                                       << server_->JoinedLog();
  EXPECT_TRUE(WIFEXITED(*exit_status) && WEXITSTATUS(*exit_status) == 0) << *exit_status;
  EXPECT_LT(Clock::now() - terminated, std::chrono::seconds(5));

  // A call the service never received fails without being stored: it came
  // after the GOAWAY (UNAVAILABLE), or it was still in gRPC's queue of calls
  // not yet handed to a handler, which gRPC 1.51 cancels at shutdown
  // (CANCELLED, observed in about half of the runs).
  std::vector<std::string> acknowledged;
  int unavailable = 0;
  int cancelled = 0;
  for (const auto& call : calls) {
    if (call->status.ok()) {
      acknowledged.push_back(call->request.content());
    } else if (call->status.error_code() == grpc::StatusCode::UNAVAILABLE) {
      ++unavailable;
    } else if (call->status.error_code() == grpc::StatusCode::CANCELLED) {
      ++cancelled;
    } else {
      ADD_FAILURE() << "unexpected status " << call->status.error_code() << ": "
                    << call->status.error_message();
    }
  }
  RecordProperty("done_at_sigterm", done_at_sigterm);
  RecordProperty("acknowledged", static_cast<int>(acknowledged.size()));
  RecordProperty("unavailable", unavailable);
  RecordProperty("cancelled", cancelled);
  // The drain finished calls that were still running when SIGTERM arrived.
  EXPECT_GT(static_cast<int>(acknowledged.size()), done_at_sigterm);

  // A second instance on the same database sees every acknowledged message,
  // and nothing the client was told failed.
  ServerProcess second(OMNIFORGE_CONVERSATION_BIN);
  const auto error = second.Start(ServerEnv(*database_));
  ASSERT_FALSE(error.has_value()) << *error;
  auto stub = pb::ConversationService::NewStub(
      grpc::CreateChannel(second.address(), grpc::InsecureChannelCredentials()));
  pb::ListMessagesRequest list;
  list.set_conversation_id(id);
  list.set_limit(500);
  pb::ListMessagesResponse stored;
  const grpc::Status status = stub->ListMessages(Call(alice).get(), list, &stored);
  ASSERT_TRUE(status.ok()) << status.error_message();
  std::vector<std::string> contents;
  for (int i = 0; i < stored.messages_size(); ++i) {
    EXPECT_EQ(stored.messages(i).seq(), i + 1);
    contents.push_back(stored.messages(i).content());
  }
  EXPECT_THAT(contents, UnorderedElementsAreArray(acknowledged));
  const auto second_exit = second.Stop();
  EXPECT_TRUE(second_exit && WIFEXITED(*second_exit) && WEXITSTATUS(*second_exit) == 0);
}

}  // namespace
}  // namespace omniforge::conversation

namespace omniforge::conversation {
namespace {

// Runs the binary with a clean environment plus `env`, and returns its exit
// status and everything it printed.
std::pair<int, std::string> RunBinary(const std::string& env, const std::string& args) {
  const std::string command =
      "env -i PATH=/usr/bin:/bin " + env + " " + OMNIFORGE_CONVERSATION_BIN + " " + args + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return {-1, "popen failed"};
  std::string output;
  char buffer[4096];
  while (size_t n = fread(buffer, 1, sizeof buffer, pipe)) output.append(buffer, n);
  const int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, output};
}

TEST(ConversationConfigTest, UnknownKeyInTheFileStopsStartAndNamesIt) {
  char path[] = "/tmp/omniforge-config-test-XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  const std::string yaml = "server:\n  port: 0\ndatabse:\n  dsn: host=nowhere\n";
  ASSERT_EQ(write(fd, yaml.data(), yaml.size()), static_cast<ssize_t>(yaml.size()));
  close(fd);
  const auto [status, output] = RunBinary("", std::string("--config ") + path);
  unlink(path);
  EXPECT_EQ(status, 2) << output;
  EXPECT_THAT(output, HasSubstr("unknown keys: databse"));
  EXPECT_TRUE(nlohmann::json::accept(output.substr(0, output.find('\n')))) << output;
}

TEST(ConversationConfigTest, MalformedEnvironmentValueStopsStartAndNamesIt) {
  const auto [status, output] = RunBinary("OMNIFORGE_DATABASE_POOL_SIZE=lots", "");
  EXPECT_EQ(status, 2) << output;
  EXPECT_THAT(output, HasSubstr("database.pool_size"));
  EXPECT_THAT(output, HasSubstr("OMNIFORGE_DATABASE_POOL_SIZE"));
}

TEST(ConversationConfigTest, MissingMasterKeyStopsStartWithHowToFixIt) {
  const auto [status, output] = RunBinary(testing::TrustTestKeyEnv(), "");
  EXPECT_EQ(status, 1) << output;
  EXPECT_THAT(output, HasSubstr("OMNIFORGE_ENCRYPTION_MASTER_KEY"));
}

}  // namespace
}  // namespace omniforge::conversation

namespace omniforge::conversation {
namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(ConversationTlsTest, ServesTlsWhenConfiguredAndRefusesPlaintext) {
  char dir[] = "/tmp/omniforge-tls-test-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string cert = std::string(dir) + "/cert.pem";
  const std::string key = std::string(dir) + "/key.pem";
  const std::string openssl =
      "openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=localhost"
      " -addext subjectAltName=DNS:localhost,IP:127.0.0.1 -keyout " +
      key + " -out " + cert + " >/dev/null 2>&1";
  ASSERT_EQ(std::system(openssl.c_str()), 0) << "openssl could not make a test certificate";

  testing::TestDatabase database;
  ServerProcess server(OMNIFORGE_CONVERSATION_BIN);
  const auto error = server.Start(ServerEnv(database, {"OMNIFORGE_SERVER_TLS_CERT_FILE=" + cert,
                                                       "OMNIFORGE_SERVER_TLS_KEY_FILE=" + key}));
  ASSERT_FALSE(error.has_value()) << *error;
  EXPECT_THAT(server.JoinedLog(), HasSubstr(R"("tls":"on")"));
  {
    grpc::SslCredentialsOptions ssl;
    ssl.pem_root_certs = ReadFile(cert);
    grpc::ChannelArguments args;
    args.SetSslTargetNameOverride("localhost");
    auto secure = pb::ConversationService::NewStub(
        grpc::CreateCustomChannel(server.address(), grpc::SslCredentials(ssl), args));
    pb::CreateConversationRequest request;
    request.set_title("over TLS");
    pb::CreateConversationResponse response;
    grpc::ClientContext context;
    core::AttachIdentity(context, {"acme", "tls-user"}, core::kConversationAudience);
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    const grpc::Status status = secure->CreateConversation(&context, request, &response);
    EXPECT_TRUE(status.ok()) << status.error_message();
    EXPECT_EQ(response.conversation().title(), "over TLS");

    auto plain = pb::ConversationService::NewStub(
        grpc::CreateChannel(server.address(), grpc::InsecureChannelCredentials()));
    grpc::ClientContext plain_context;
    core::AttachIdentity(plain_context, {"acme", "tls-user"}, core::kConversationAudience);
    plain_context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(3));
    EXPECT_FALSE(plain->CreateConversation(&plain_context, request, &response).ok());
  }
  const auto stopped = server.Stop();
  EXPECT_TRUE(stopped && WIFEXITED(*stopped) && WEXITSTATUS(*stopped) == 0) << server.JoinedLog();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace omniforge::conversation

namespace omniforge::conversation {
namespace {

TEST(ConversationOverloadTest, CallsAbandonedWhileQueuedGetNoDatabaseWork) {
  testing::TestDatabase database;
  ServerProcess server(OMNIFORGE_CONVERSATION_BIN);
  const auto error = server.Start(ServerEnv(database, {"OMNIFORGE_SERVER_WORKER_THREADS=1"}));
  ASSERT_FALSE(error.has_value()) << *error;
  {
    auto channel = grpc::CreateChannel(server.address(), grpc::InsecureChannelCredentials());
    auto stub = pb::ConversationService::NewStub(channel);
    const core::Identity who{"acme", "impatient"};
    pb::CreateConversationRequest create;
    pb::CreateConversationResponse created;
    grpc::ClientContext create_context;
    core::AttachIdentity(create_context, who, core::kConversationAudience);
    ASSERT_TRUE(stub->CreateConversation(&create_context, create, &created).ok());

    // Far more calls than one worker serves within their 20 ms deadline.
    constexpr int kCalls = 300;
    pb::GetContextWindowRequest request;
    request.set_conversation_id(created.conversation().id());
    std::vector<std::unique_ptr<grpc::ClientContext>> contexts;
    std::vector<pb::GetContextWindowResponse> responses(kCalls);
    std::mutex mu;
    std::condition_variable finished;
    int pending = kCalls;
    for (int i = 0; i < kCalls; ++i) {
      contexts.push_back(std::make_unique<grpc::ClientContext>());
      core::AttachIdentity(*contexts.back(), who, core::kConversationAudience);
      contexts.back()->set_deadline(std::chrono::system_clock::now() +
                                    std::chrono::milliseconds(20));
      stub->async()->GetContextWindow(contexts.back().get(), &request, &responses[i],
                                      [&](const grpc::Status&) {
                                        std::lock_guard lock(mu);
                                        if (--pending == 0) finished.notify_all();
                                      });
    }
    {
      std::unique_lock lock(mu);
      ASSERT_TRUE(finished.wait_for(lock, std::chrono::seconds(30), [&] { return pending == 0; }));
    }

    // The server answered the abandoned ones without doing their work, and
    // still serves a patient caller.
    grpc::ClientContext patient;
    core::AttachIdentity(patient, who, core::kConversationAudience);
    patient.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    pb::GetContextWindowResponse window;
    EXPECT_TRUE(stub->GetContextWindow(&patient, request, &window).ok());
  }
  httplib::Client metrics("127.0.0.1", server.metrics_port());
  auto page = metrics.Get("/metrics");
  ASSERT_TRUE(page);
  // A call skipped for its deadline is counted as DeadlineExceeded, or as
  // Canceled when gRPC had already cancelled it; one the worker served is OK.
  const auto count = [&](const std::string& code) {
    const std::string series =
        R"(grpc_server_handled_total{grpc_code=")" + code +
        R"(",grpc_method="GetContextWindow",)"
        R"(grpc_service="omniforge.conversation.v1.ConversationService",grpc_type="unary"} )";
    const size_t at = page->body.find(series);
    return at == std::string::npos ? 0.0 : std::stod(page->body.substr(at + series.size()));
  };
  EXPECT_GE(count("DeadlineExceeded") + count("Canceled"), 1) << page->body;
  EXPECT_GE(count("OK"), 1) << page->body;  // the patient call at least
  EXPECT_LT(count("OK"), 300) << page->body;
  const auto stopped = server.Stop();
  EXPECT_TRUE(stopped && WIFEXITED(*stopped) && WEXITSTATUS(*stopped) == 0) << server.JoinedLog();
}

}  // namespace
}  // namespace omniforge::conversation
