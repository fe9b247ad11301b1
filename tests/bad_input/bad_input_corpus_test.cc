// The bad-input corpus (tests/bad_input/corpus/) replayed against the real
// stack: the four services in local mode over PostgreSQL, with the
// orchestrator's admin port open. A little state is made first (user A's
// conversation with messages and an agent dialogue, A's agent, a managed
// key, another tenant's conversation); then every case is sent through a
// generic gRPC call as its caller, and each must get its documented status
// with a short, non-empty message. Afterwards every service still runs and
// answers its health check, and nothing changed: the row counts of every
// table of the services' schemas (but the error log) and what the APIs
// show of A's state are as they were.
#include <google/protobuf/util/json_util.h>
#include <grpcpp/create_channel.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/security/credentials.h>
#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <pqxx/pqxx>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "libs/core/api_keys.h"
#include "libs/core/grpc_identity.h"
#include "libs/core/ids.h"
#include "omniforge/conversation/v1/conversation_service.grpc.pb.h"
#include "omniforge/executor/v1/executor_service.grpc.pb.h"
#include "omniforge/intent/v1/intent_service.grpc.pb.h"
#include "omniforge/orchestrator/v1/chat_service.grpc.pb.h"
#include "omniforge/orchestrator/v1/key_admin_service.grpc.pb.h"
#include "tests/bad_input/callers.h"
#include "tests/bad_input/corpus.h"
#include "tests/support/server_process.h"
#include "tests/support/service_stack.h"
#include "tests/support/test_database.h"

namespace omniforge::testing::bad_input {
namespace {

namespace chat = ::omniforge::orchestrator::v1;
namespace conv = ::omniforge::conversation::v1;
namespace exec = ::omniforge::executor::v1;
namespace intent = ::omniforge::intent::v1;
using google::protobuf::ServiceDescriptor;

constexpr size_t kMinCases = 200;
constexpr size_t kMaxStatusMessageBytes = 1024;
constexpr auto kCallDeadline = std::chrono::seconds(10);

// The services the corpus must cover, every RPC of each.
std::vector<const ServiceDescriptor*> CoveredServices() {
  return {
      chat::StreamChatRequest::descriptor()->file()->FindServiceByName("ChatService"),
      chat::CreateKeyRequest::descriptor()->file()->FindServiceByName("KeyAdminService"),
      conv::AppendMessageRequest::descriptor()->file()->FindServiceByName("ConversationService"),
      intent::AnalyzeIntentRequest::descriptor()->file()->FindServiceByName("IntentService"),
      exec::InvokeToolRequest::descriptor()->file()->FindServiceByName("ExecutorService")};
}

// The audience of a service's caller assertions; empty for the
// orchestrator's services, whose callers present keys.
std::string AudienceOf(const std::string& service) {
  if (service == "omniforge.conversation.v1.ConversationService") {
    return core::kConversationAudience;
  }
  if (service == "omniforge.intent.v1.IntentService") return core::kIntentAudience;
  if (service == "omniforge.executor.v1.ExecutorService") return core::kExecutorAudience;
  return "";
}

std::unique_ptr<grpc::ClientContext> WithDeadline() {
  auto context = std::make_unique<grpc::ClientContext>();
  context->set_deadline(std::chrono::system_clock::now() + kCallDeadline);
  return context;
}

struct Outcome {
  grpc::Status status;
  std::vector<std::string> responses;
};

// Sends `request` on `method` as a stream of one message (what every gRPC
// method is on the wire, unary or streaming), then reads every response
// and the status.
Outcome Send(grpc::GenericStub& stub, grpc::ClientContext& context, const std::string& method,
             const std::string& request) {
  grpc::CompletionQueue cq;
  auto wait = [&cq] {
    void* tag = nullptr;
    bool ok = false;
    return cq.Next(&tag, &ok) && ok;
  };
  std::unique_ptr<grpc::GenericClientAsyncReaderWriter> call =
      stub.PrepareCall(&context, method, &cq);
  call->StartCall(nullptr);
  Outcome outcome;
  if (wait()) {
    grpc::Slice slice(request);
    call->Write(grpc::ByteBuffer(&slice, 1), nullptr);
    if (wait()) {
      call->WritesDone(nullptr);
      wait();
    }
    for (grpc::ByteBuffer buffer;;) {
      call->Read(&buffer, nullptr);
      if (!wait()) break;
      std::vector<grpc::Slice> slices;
      (void)buffer.Dump(&slices);
      std::string bytes;
      for (const grpc::Slice& s : slices) bytes.append(s.begin(), s.end());
      outcome.responses.push_back(std::move(bytes));
    }
  }
  call->Finish(&outcome.status, nullptr);
  wait();
  cq.Shutdown();
  void* tag = nullptr;
  bool ok = false;
  while (cq.Next(&tag, &ok)) {
  }
  return outcome;
}

// A response's JSON mapping, for a case that expects OK.
std::string ResponseJson(const Case& c, const std::string& bytes) {
  const auto* method = google::protobuf::DescriptorPool::generated_pool()
                           ->FindServiceByName(c.service)
                           ->FindMethodByName(c.rpc);
  std::unique_ptr<google::protobuf::Message> response(
      google::protobuf::MessageFactory::generated_factory()
          ->GetPrototype(method->output_type())
          ->New());
  std::string json;
  if (!response->ParseFromString(bytes))
    return "(not a " + method->output_type()->full_name() + ")";
  (void)google::protobuf::util::MessageToJsonString(*response, &json);
  return json;
}

// What is wrong with `outcome` for `c`; empty when nothing.
std::string Verdict(const Case& c, const Outcome& outcome) {
  const grpc::Status& status = outcome.status;
  const std::string got =
      StatusCodeName(status.error_code()) + " \"" + status.error_message().substr(0, 300) + "\"";
  if (static_cast<int>(status.error_code()) != c.code) {
    return "expected " + StatusCodeName(c.code) + ", got " + got;
  }
  if (status.error_message().size() > kMaxStatusMessageBytes) {
    return absl::StrCat("status message of ", status.error_message().size(), " bytes: ", got);
  }
  if (!status.ok() && status.error_message().empty()) return "no status message";
  if (status.error_message().find(c.message) == std::string::npos) {
    return "message without \"" + c.message + "\": " + got;
  }
  if (!c.response_contains.empty()) {
    std::string json;
    for (const std::string& response : outcome.responses) json += ResponseJson(c, response);
    if (json.find(c.response_contains) == std::string::npos) {
      return "response without \"" + c.response_contains + "\": " + json.substr(0, 300);
    }
  }
  return "";
}

// Whether the process is running (not gone, not a zombie).
bool Running(pid_t pid) {
  if (pid <= 0 || kill(pid, 0) != 0) return false;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(stat, line);
  const size_t close = line.rfind(')');
  return close != std::string::npos && close + 2 < line.size() && line[close + 2] != 'Z';
}

// The admin port the orchestrator logged.
int AdminPort(const ServerProcess& process) {
  for (int i = 0; i < 100; ++i) {
    for (const std::string& line : process.LogLines()) {
      if (LogField(line, "msg") == "key admin API started") {
        return std::stoi(LogField(line, "admin_port"));
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return -1;
}

std::shared_ptr<grpc::Channel> Channel(const std::string& address) {
  return grpc::CreateChannel(address, grpc::InsecureChannelCredentials());
}

std::string ToJson(const google::protobuf::Message& message) {
  std::string json;
  (void)google::protobuf::util::MessageToJsonString(message, &json);
  return json;
}

class BadInputCorpusTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite();
  static void TearDownTestSuite();

  static void WriteKeyFiles();
  static void StartStack();
  static void SeedState();
  static std::string CreateAgent(const core::Identity& who, const std::string& name);
  static void SeedKeys();
  static std::string Turn(const std::string& key, const std::string& conversation,
                          const std::string& message);
  static std::map<std::string, std::string> Snapshot();
  static void SnapshotApis(std::map<std::string, std::string>& snapshot);
  static std::vector<std::string> Casualties();
  static std::string Replay(const Case& c);

  static inline TestDatabase* db_ = nullptr;
  static inline std::filesystem::path* dir_ = nullptr;
  static inline ServiceStack* stack_ = nullptr;
  static inline CallerKeys* keys_ = nullptr;
  // Placeholder values of the corpus: the ids of the state made first.
  static inline std::map<std::string, std::string>* values_ = nullptr;
  // A generic stub per service (full name).
  static inline std::map<std::string, std::unique_ptr<grpc::GenericStub>>* stubs_ = nullptr;
};

void BadInputCorpusTest::SetUpTestSuite() {
  db_ = new TestDatabase();
  dir_ = new std::filesystem::path(std::filesystem::temp_directory_path() /
                                   ("omniforge-bad-input-" + core::NewUuid()));
  std::filesystem::create_directories(*dir_);
  keys_ = new CallerKeys();
  values_ = new std::map<std::string, std::string>();
  stubs_ = new std::map<std::string, std::unique_ptr<grpc::GenericStub>>();
  WriteKeyFiles();
  StartStack();
  if (::testing::Test::HasFatalFailure()) return;
  SeedState();
}

void BadInputCorpusTest::TearDownTestSuite() {
  delete stubs_;
  delete stack_;
  std::error_code ignored;
  std::filesystem::remove_all(*dir_, ignored);
  delete dir_;
  delete values_;
  delete keys_;
  delete db_;
}

void BadInputCorpusTest::WriteKeyFiles() {
  const std::vector<std::string> keys =
      WriteApiKeyFile(*dir_ / "api_keys", {kUserA, kUserB, kTenantB}, "bad-input");
  ASSERT_EQ(keys.size(), 3U);
  keys_->user_a = keys[0];
  keys_->user_b = keys[1];
  keys_->tenant_b = keys[2];
  std::ofstream admin_file(*dir_ / "admin_keys");
  auto admin_key = [&](const core::Identity& who) {
    absl::StatusOr<core::NewApiKey> key = core::GenerateApiKey(who, "admin", std::nullopt, true);
    admin_file << key->file_line << "\n";
    return key->key;
  };
  keys_->admin_root = admin_key({core::kAllTenants, "root"});
  keys_->admin_acme = admin_key({kUserA.tenant_id, "acme-admin"});
}

void BadInputCorpusTest::StartStack() {
  std::vector<std::string> orchestrator_env =
      DatabaseEnv(*db_, "orchestrator",
                  {"OMNIFORGE_ADMIN_PORT=0",
                   "OMNIFORGE_AUTH_ADMIN_KEYS_FILE=" + (*dir_ / "admin_keys").string()});
  stack_ = new ServiceStack({OMNIFORGE_CONVERSATION_BIN, OMNIFORGE_INTENT_BIN,
                             OMNIFORGE_EXECUTOR_BIN, OMNIFORGE_ORCHESTRATOR_BIN});
  ASSERT_EQ(stack_->Start(*db_, (*dir_ / "api_keys").string(), {.orchestrator = orchestrator_env}),
            std::nullopt);
  const int admin_port = AdminPort(stack_->orchestrator());
  ASSERT_GT(admin_port, 0);
  const std::map<std::string, std::string> addresses = {
      {"omniforge.orchestrator.v1.ChatService", stack_->orchestrator().address()},
      {"omniforge.orchestrator.v1.KeyAdminService", "127.0.0.1:" + std::to_string(admin_port)},
      {"omniforge.conversation.v1.ConversationService", stack_->conversation().address()},
      {"omniforge.intent.v1.IntentService", stack_->intent().address()},
      {"omniforge.executor.v1.ExecutorService", stack_->executor().address()}};
  for (const auto& [service, address] : addresses) {
    (*stubs_)[service] = std::make_unique<grpc::GenericStub>(Channel(address));
  }
}

// A turn of `message` with `key` in `conversation` (empty: a new one);
// the conversation's id.
std::string BadInputCorpusTest::Turn(const std::string& key, const std::string& conversation,
                                     const std::string& message) {
  auto stub = chat::ChatService::NewStub(Channel(stack_->orchestrator().address()));
  auto context = WithDeadline();
  context->AddMetadata("authorization", "Bearer " + key);
  chat::StreamChatRequest request;
  request.set_conversation_id(conversation);
  request.set_message(message);
  auto reader = stub->StreamChat(context.get(), request);
  std::string id;
  for (chat::ChatEvent event; reader->Read(&event);) {
    if (event.has_session()) id = event.session().conversation_id();
  }
  const grpc::Status status = reader->Finish();
  EXPECT_TRUE(status.ok()) << status.error_message();
  return id;
}

void BadInputCorpusTest::SeedState() {
  std::map<std::string, std::string>& v = *values_;
  v["CONV_A"] = Turn(keys_->user_a, "", "hello");
  Turn(keys_->user_a, v["CONV_A"], "list my agents");
  v["CONV_A_UPPER"] = absl::AsciiStrToUpper(v["CONV_A"]);
  v["CONV_B"] = Turn(keys_->tenant_b, "", "hello");
  v["MISSING_UUID"] = core::NewUuid();
  v["FILE_KEY_ID"] = std::string(core::ApiKeyIdOf(keys_->user_a));

  auto conversations =
      conv::ConversationService::NewStub(Channel(stack_->conversation().address()));
  auto context = WithDeadline();
  core::AttachIdentity(*context, kUserA, core::kConversationAudience);
  conv::CreateConversationRequest dialogue;
  dialogue.set_kind(conv::CONVERSATION_KIND_AGENT_DIALOGUE);
  dialogue.set_parent_conversation_id(v["CONV_A"]);
  conv::CreateConversationResponse made;
  ASSERT_TRUE(conversations->CreateConversation(context.get(), dialogue, &made).ok());
  v["DIALOGUE_A"] = made.conversation().id();

  v["AGENT_A"] = CreateAgent(kUserA, "weekly-digest");
  CreateAgent(kTenantB, "morning-brief");
  SeedKeys();
}

// An agent of `who` named `name`: its id.
std::string BadInputCorpusTest::CreateAgent(const core::Identity& who, const std::string& name) {
  auto executor = exec::ExecutorService::NewStub(Channel(stack_->executor().address()));
  auto context = WithDeadline();
  core::AttachIdentity(*context, who, core::kExecutorAudience);
  exec::InvokeToolRequest create;
  create.set_tool_name("create_agent");
  create.set_arguments_json(
      nlohmann::json({{"name", name}, {"description", "made before the corpus"}}).dump());
  exec::InvokeToolResponse created;
  const grpc::Status status = executor->InvokeTool(context.get(), create, &created);
  EXPECT_TRUE(status.ok() && !created.is_error())
      << status.error_message() << created.result_json();
  return nlohmann::json::parse(created.result_json(), nullptr, false)["agent"].value("id", "");
}

// A managed user key of A's tenant (its id for the corpus) and a gateway key.
void BadInputCorpusTest::SeedKeys() {
  auto admin = chat::KeyAdminService::NewStub(
      Channel("127.0.0.1:" + std::to_string(AdminPort(stack_->orchestrator()))));
  for (const chat::KeyKind kind : {chat::KEY_KIND_USER, chat::KEY_KIND_GATEWAY}) {
    auto context = WithDeadline();
    context->AddMetadata("authorization", "Bearer " + keys_->admin_root);
    chat::CreateKeyRequest request;
    request.set_tenant_id(kUserA.tenant_id);
    if (kind == chat::KEY_KIND_USER) request.set_user_id("dave");
    request.set_kind(kind);
    chat::CreateKeyResponse key;
    ASSERT_TRUE(admin->CreateKey(context.get(), request, &key).ok());
    if (kind == chat::KEY_KIND_USER) (*values_)["MANAGED_KEY_ID"] = key.api_key().key_id();
    if (kind == chat::KEY_KIND_GATEWAY) keys_->gateway = key.key();
  }
}

// Row counts of every table of the services' schemas but the error log
// (errors are logged by design), and what the APIs show of A's state.
std::map<std::string, std::string> BadInputCorpusTest::Snapshot() {
  std::map<std::string, std::string> snapshot;
  pqxx::connection conn(db_->dsn());
  pqxx::nontransaction tx(conn);
  const pqxx::result tables = tx.exec(
      "SELECT table_schema || '.' || table_name FROM information_schema.tables "
      "WHERE table_schema IN ('conversation', 'orchestration', 'platform') "
      "AND table_type = 'BASE TABLE' AND table_name <> 'error_log' ORDER BY 1");
  for (const auto& row : tables) {
    const std::string table = row[0].as<std::string>();
    snapshot["rows " + table] = tx.exec1("SELECT count(*) FROM " + table)[0].as<std::string>();
  }
  SnapshotApis(snapshot);
  return snapshot;
}

void BadInputCorpusTest::SnapshotApis(std::map<std::string, std::string>& snapshot) {
  auto chat_stub = chat::ChatService::NewStub(Channel(stack_->orchestrator().address()));
  auto with_key = [](const std::string& key) {
    auto context = WithDeadline();
    context->AddMetadata("authorization", "Bearer " + key);
    return context;
  };
  chat::GetConversationRequest get;
  get.set_conversation_id(values_->at("CONV_A"));
  chat::GetConversationResponse conversation;
  grpc::Status status =
      chat_stub->GetConversation(with_key(keys_->user_a).get(), get, &conversation);
  snapshot["A's conversation"] = status.error_message() + ToJson(conversation);
  chat::ListMessagesRequest list;
  list.set_conversation_id(values_->at("CONV_A"));
  chat::ListMessagesResponse messages;
  status = chat_stub->ListMessages(with_key(keys_->user_a).get(), list, &messages);
  snapshot["A's messages"] = status.error_message() + ToJson(messages);
  for (const std::string* key : {&keys_->user_a, &keys_->user_b, &keys_->tenant_b}) {
    chat::ListConversationsResponse listed;
    status = chat_stub->ListConversations(with_key(*key).get(), {}, &listed);
    snapshot["conversations of " + key->substr(0, 16)] = status.error_message() + ToJson(listed);
  }

  auto conversations =
      conv::ConversationService::NewStub(Channel(stack_->conversation().address()));
  auto context = WithDeadline();
  core::AttachIdentity(*context, kUserA, core::kConversationAudience);
  conv::GetConversationRequest dialogue;
  dialogue.set_conversation_id(values_->at("DIALOGUE_A"));
  conv::GetConversationResponse read;
  status = conversations->GetConversation(context.get(), dialogue, &read);
  snapshot["A's dialogue"] = status.error_message() + ToJson(read);

  auto executor = exec::ExecutorService::NewStub(Channel(stack_->executor().address()));
  context = WithDeadline();
  core::AttachIdentity(*context, kUserA, core::kExecutorAudience);
  exec::InvokeToolRequest agent;
  agent.set_tool_name("get_agent");
  agent.set_arguments_json(R"({"agent": ")" + values_->at("AGENT_A") + R"("})");
  exec::InvokeToolResponse got;
  status = executor->InvokeTool(context.get(), agent, &got);
  snapshot["A's agent"] = status.error_message() + got.result_json();

  auto admin = chat::KeyAdminService::NewStub(
      Channel("127.0.0.1:" + std::to_string(AdminPort(stack_->orchestrator()))));
  chat::ListKeysRequest keys;
  keys.set_include_revoked(true);
  chat::ListKeysResponse listed_keys;
  status = admin->ListKeys(with_key(keys_->admin_root).get(), keys, &listed_keys);
  snapshot["managed keys"] = status.error_message() + ToJson(listed_keys);
}

// The services that died or stopped answering their health check.
std::vector<std::string> BadInputCorpusTest::Casualties() {
  std::vector<std::string> casualties;
  const std::vector<std::pair<std::string, ServerProcess*>> processes = {
      {"orchestrator", &stack_->orchestrator()},
      {"conversation", &stack_->conversation()},
      {"intent", &stack_->intent()},
      {"executor", &stack_->executor()}};
  for (const auto& [name, process] : processes) {
    grpc::GenericStub health(Channel(process->address()));
    auto context = WithDeadline();
    // An empty HealthCheckRequest (every service); SERVING is field 1 = 1.
    const Outcome outcome = Send(health, *context, "/grpc.health.v1.Health/Check", "");
    const bool serving = outcome.status.ok() && outcome.responses.size() == 1 &&
                         outcome.responses[0] == std::string("\x08\x01", 2);
    if (!Running(process->pid()) || !serving) casualties.push_back(name);
  }
  return casualties;
}

// Sends `c` as its caller; what is wrong with the outcome ("" when right).
std::string BadInputCorpusTest::Replay(const Case& c) {
  auto context = WithDeadline();
  if (!Present(c.caller, *keys_, AudienceOf(c.service), *context)) {
    return "unknown caller " + c.caller + " for " + c.service;
  }
  return Verdict(c, Send(*stubs_->at(c.service), *context, c.Method(), c.request));
}

TEST_F(BadInputCorpusTest, EveryCaseGetsItsCodeAndChangesNothing) {
  absl::StatusOr<std::vector<Case>> cases =
      LoadCorpus(std::filesystem::path(OMNIFORGE_SOURCE_DIR) / "tests/bad_input/corpus", *values_);
  ASSERT_TRUE(cases.ok()) << cases.status();
  EXPECT_GE(cases->size(), kMinCases);
  std::map<std::string, int> per_method;
  for (const Case& c : *cases) ++per_method[c.service + "/" + c.rpc];
  for (const ServiceDescriptor* service : CoveredServices()) {
    for (int i = 0; i < service->method_count(); ++i) {
      EXPECT_GT(per_method[service->full_name() + "/" + service->method(i)->name()], 0)
          << "no case for " << service->method(i)->full_name();
    }
  }

  const std::map<std::string, std::string> before = Snapshot();
  std::map<std::string, std::pair<int, int>> per_service;  // cases, passed
  for (const Case& c : *cases) {
    const std::string wrong = Replay(c);
    EXPECT_EQ(wrong, "") << c.file << " " << c.name << " (" << c.rpc << ", " << c.caller << ")";
    auto& [sent, passed] = per_service[c.service];
    ++sent;
    passed += wrong.empty() ? 1 : 0;
  }
  int total_passed = 0;
  for (const auto& [service, counts] : per_service) {
    std::printf("%-48s %3d cases, %3d passed\n", service.c_str(), counts.first, counts.second);
    total_passed += counts.second;
  }
  std::printf("bad-input corpus: %zu cases, %d passed\n", cases->size(), total_passed);

  EXPECT_EQ(Casualties(), std::vector<std::string>());
  const std::map<std::string, std::string> after = Snapshot();
  for (const auto& [what, was] : before) {
    EXPECT_EQ(after.at(what), was) << what << " changed";
  }
  EXPECT_EQ(after.size(), before.size());
}

}  // namespace
}  // namespace omniforge::testing::bad_input
