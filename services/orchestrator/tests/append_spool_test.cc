// The append spool against the real conversation service (its binary on
// PostgreSQL), stopped and started again on the same port to take storage
// away and bring it back.
#include "services/orchestrator/downstream/append_spool.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/ascii.h"
#include "libs/core/call.h"
#include "libs/core/clock.h"
#include "libs/core/ids.h"
#include "libs/seal/key_ring.h"
#include "libs/seal/master_keys.h"
#include "libs/seal/test_keys.h"
#include "services/orchestrator/downstream/grpc_downstream.h"
#include "tests/support/identity_keys.h"
#include "tests/support/server_process.h"
#include "tests/support/test_database.h"

namespace omniforge::orchestrator {
namespace {

constexpr char kMasterKey[] = "4f6d6e69666f7267652d746573742d6d61737465722d6b65792d303030303030";

class AppendSpoolTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    db_ = new testing::TestDatabase();
    conversation_ = new testing::ServerProcess(OMNIFORGE_CONVERSATION_BIN);
    ASSERT_EQ(conversation_->Start(ConversationEnv()), std::nullopt);
    port_ = conversation_->port();
    memory_ = MakeGrpcMemory(conversation_->address()).release();
  }
  static void TearDownTestSuite() {
    delete memory_;
    delete conversation_;
    delete db_;
  }

  static std::vector<std::string> ConversationEnv() {
    std::vector<std::string> env =
        testing::DatabaseEnv(*db_, "conversation",
                             {std::string("OMNIFORGE_ENCRYPTION_MASTER_KEY=") + kMasterKey,
                              testing::TestIdentityEnv(testing::TestKeyUse::kVerify).front()});
    if (port_ != 0) env.push_back("OMNIFORGE_SERVER_PORT=" + std::to_string(port_));
    return env;
  }

  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("omniforge-spool-test-" + core::NewUuid());
    who_ = {"acme", "user-" + core::NewUuid().substr(0, 8)};
  }
  void TearDown() override {
    // Every test leaves storage up for the next one.
    if (!up_) StartStorage();
    std::filesystem::remove_all(dir_);
  }

  // Storage goes away at once, as a crashed service or a cut network does.
  void StopStorage() {
    conversation_->Stop(std::chrono::seconds(0));
    up_ = false;
  }
  // Starts storage and waits until this process's channel reaches it again
  // (it reconnects with a backoff of its own).
  void StartStorage() {
    ASSERT_EQ(conversation_->Start(ConversationEnv()), std::nullopt);
    up_ = true;
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (std::chrono::steady_clock::now() < give_up) {
      if (memory_->ListConversations(Bounded(), convpb::ListConversationsRequest()).ok()) {
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    FAIL() << "the conversation service is not reachable again";
  }

  absl::StatusOr<std::unique_ptr<AppendSpool>> TryOpenSpool(
      std::optional<seal::MasterKeySet> keys) {
    AppendSpoolOptions options;
    options.dir = dir_;
    options.master_keys = std::move(keys);
    return AppendSpool::Open(*memory_, options);
  }

  std::string SpoolFile() const {
    std::ifstream in(dir_ / "appends.log", std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }

  std::unique_ptr<AppendSpool> OpenSpool(int64_t max_bytes = 64LL << 20) {
    AppendSpoolOptions options;
    options.dir = dir_;
    options.master_keys = seal::TestMasterKeys("primary", '7');
    options.max_bytes = max_bytes;
    options.call_timeout = std::chrono::milliseconds(10000);
    options.min_backoff = std::chrono::milliseconds(20);
    options.max_backoff = std::chrono::milliseconds(200);
    absl::StatusOr<std::unique_ptr<AppendSpool>> spool = AppendSpool::Open(*memory_, options);
    EXPECT_TRUE(spool.ok()) << spool.status();
    return spool.ok() ? *std::move(spool) : nullptr;
  }

  // A call for the test's user, ending 15 s from now.
  core::Call Bounded() const {
    return core::Call{who_, core::TimePointFromMicros(core::NowMicros() + 15'000'000)};
  }

  // Drains until nothing is left (a pass stops early when a call to storage
  // times out on a loaded machine, though its message may have landed).
  // Returns how many messages left the spool.
  static size_t DrainAll(AppendSpool& spool) {
    size_t removed = 0;
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (spool.depth() > 0 && std::chrono::steady_clock::now() < give_up) {
      const size_t pass = spool.DrainOnce();
      if (pass == 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));
      removed += pass;
    }
    return removed;
  }

  std::string NewConversation() {
    convpb::CreateConversationRequest request;
    request.set_title("spool test");
    auto made = memory_->CreateConversation(Bounded(), request);
    EXPECT_TRUE(made.ok()) << made.status();
    return made.ok() ? made->conversation().id() : "";
  }

  static convpb::AppendMessageRequest Message(const std::string& conversation,
                                              const std::string& content,
                                              convpb::Role role = convpb::ROLE_USER) {
    convpb::AppendMessageRequest request;
    request.set_conversation_id(conversation);
    request.set_role(role);
    request.set_content(content);
    request.set_idempotency_key("test:" + core::NewUuid());
    return request;
  }

  // The conversation's messages, oldest first.
  std::vector<std::string> Contents(const std::string& conversation) {
    convpb::ListMessagesRequest request;
    request.set_conversation_id(conversation);
    request.set_limit(500);
    auto listed = memory_->ListMessages(Bounded(), request);
    EXPECT_TRUE(listed.ok()) << listed.status();
    std::vector<std::string> contents;
    if (listed.ok()) {
      for (const convpb::Message& m : listed->messages()) contents.push_back(m.content());
    }
    return contents;
  }

  // The append calls (AppendMessage and AppendMessages) the conversation
  // service has answered since it started, from its /metrics.
  static double AppendCalls() {
    httplib::Client metrics("127.0.0.1", conversation_->metrics_port());
    metrics.set_read_timeout(5);
    auto got = metrics.Get("/metrics");
    EXPECT_TRUE(got) << httplib::to_string(got.error());
    if (!got) return -1;
    double calls = 0;
    for (const char* method : {"AppendMessage", "AppendMessages"}) {
      const std::string series =
          std::string("grpc_server_started_total{grpc_method=\"") + method +
          "\",grpc_service=\"omniforge.conversation.v1.ConversationService\","
          "grpc_type=\"unary\"} ";
      const size_t at = got->body.find(series);
      if (at != std::string::npos) calls += std::stod(got->body.substr(at + series.size()));
    }
    return calls;
  }

  // Spools `request` while storage is down: the append is kept, not stored.
  void Spool(AppendSpool& spool, const convpb::AppendMessageRequest& request) {
    auto appended = spool.Append(Bounded(), request);
    ASSERT_TRUE(appended.ok()) << appended.status();
    EXPECT_FALSE(appended->has_value());
  }

  static testing::TestDatabase* db_;
  static testing::ServerProcess* conversation_;
  static Memory* memory_;
  static int port_;
  std::filesystem::path dir_;
  core::Identity who_;
  bool up_ = true;
};

testing::TestDatabase* AppendSpoolTest::db_ = nullptr;
testing::ServerProcess* AppendSpoolTest::conversation_ = nullptr;
Memory* AppendSpoolTest::memory_ = nullptr;
int AppendSpoolTest::port_ = 0;

TEST_F(AppendSpoolTest, WhileStorageIsUpAMessageIsStoredAtOnceAndNothingIsSpooled) {
  std::unique_ptr<AppendSpool> spool = OpenSpool();
  const std::string conversation = NewConversation();
  auto appended = spool->Append(Bounded(), Message(conversation, "hello"));
  ASSERT_TRUE(appended.ok()) << appended.status();
  ASSERT_TRUE(appended->has_value());
  EXPECT_EQ((*appended)->message().content(), "hello");
  EXPECT_EQ(spool->depth(), 0u);
  EXPECT_EQ(spool->file_bytes(), 0);
}

TEST_F(AppendSpoolTest, SpooledMessagesSurviveACrashAndAreStoredInOrderPerConversation) {
  const std::string first = NewConversation();
  const std::string second = NewConversation();
  {
    std::unique_ptr<AppendSpool> spool = OpenSpool();
    StopStorage();
    Spool(*spool, Message(first, "first 1"));
    Spool(*spool, Message(second, "second 1"));
    Spool(*spool, Message(first, "first 2", convpb::ROLE_ASSISTANT));
    Spool(*spool, Message(second, "second 2", convpb::ROLE_ASSISTANT));
    Spool(*spool, Message(first, "first 3"));
    EXPECT_EQ(spool->depth(), 5u);
  }
  // The process died while writing a sixth record: only part of it is in
  // the file, and its turn was never told it was kept.
  {
    std::ofstream file(dir_ / "appends.log", std::ios::app | std::ios::binary);
    const char torn[] = {'\x40', '\x00', '\x00', '\x00', '\x12', '\x34', 'p', 'a', 'r'};
    file.write(torn, sizeof(torn));
  }
  std::unique_ptr<AppendSpool> reopened = OpenSpool();
  EXPECT_EQ(reopened->depth(), 5u);
  StartStorage();
  EXPECT_EQ(DrainAll(*reopened), 5u);
  EXPECT_EQ(reopened->depth(), 0u);
  EXPECT_EQ(reopened->file_bytes(), 0);
  EXPECT_EQ(Contents(first), (std::vector<std::string>{"first 1", "first 2", "first 3"}));
  EXPECT_EQ(Contents(second), (std::vector<std::string>{"second 1", "second 2"}));
  // Nothing is left for the next process.
  reopened.reset();
  EXPECT_EQ(OpenSpool()->depth(), 0u);
}

// A live probe sent 12 turns to one conversation alternating its id in
// lower and upper case while storage was down: they were stored as
// 1, 3, 5, ..., 0, 2, 4, ... because each spelling had its own queue.
TEST_F(AppendSpoolTest, OneConversationSpelledInTwoCasesIsOneQueueAndKeepsItsOrder) {
  const std::string conversation = NewConversation();
  const std::string upper = absl::AsciiStrToUpper(conversation);
  std::unique_ptr<AppendSpool> spool = OpenSpool();
  StopStorage();
  std::vector<std::string> sent;
  for (int i = 0; i < 12; ++i) {
    sent.push_back("message " + std::to_string(i));
    Spool(*spool, Message(i % 2 == 0 ? conversation : upper, sent.back()));
  }
  StartStorage();
  // Storage is back before the drainer ran: a new message in the other
  // spelling still waits behind the spooled ones.
  auto late = spool->Append(Bounded(), Message(upper, "message 12"));
  ASSERT_TRUE(late.ok()) << late.status();
  sent.emplace_back("message 12");
  DrainAll(*spool);
  EXPECT_EQ(spool->depth(), 0u);
  EXPECT_EQ(Contents(conversation), sent);
}

// A record damaged in the middle of the file (a flipped byte) used to end
// recovery there: every record after it was dropped with it. Now only the
// damaged one goes, and the file is written again without it.
TEST_F(AppendSpoolTest, ADamagedRecordInTheMiddleIsSkippedAndTheRecordsAfterItAreKept) {
  const std::string conversation = NewConversation();
  int64_t first_record_bytes = 0;
  {
    std::unique_ptr<AppendSpool> spool = OpenSpool();
    StopStorage();
    Spool(*spool, Message(conversation, "one"));
    first_record_bytes = spool->file_bytes();
    Spool(*spool, Message(conversation, "two"));
    Spool(*spool, Message(conversation, "three"));
    Spool(*spool, Message(conversation, "four"));
  }
  {
    // A byte in the second record's payload (past its 8-byte header).
    std::fstream file(dir_ / "appends.log", std::ios::in | std::ios::out | std::ios::binary);
    file.seekg(first_record_bytes + 20);
    char byte = 0;
    file.read(&byte, 1);
    file.seekp(first_record_bytes + 20);
    byte = static_cast<char>(byte ^ 0x5a);
    file.write(&byte, 1);
  }
  const std::uintmax_t damaged_size = std::filesystem::file_size(dir_ / "appends.log");
  std::unique_ptr<AppendSpool> reopened = OpenSpool();
  EXPECT_EQ(reopened->depth(), 3u) << "one, three and four are kept";
  EXPECT_LT(static_cast<std::uintmax_t>(reopened->file_bytes()), damaged_size);
  EXPECT_EQ(static_cast<std::uintmax_t>(reopened->file_bytes()),
            std::filesystem::file_size(dir_ / "appends.log"))
      << "the file was written again without the damaged record";
  StartStorage();
  EXPECT_EQ(DrainAll(*reopened), 3u);
  EXPECT_EQ(Contents(conversation), (std::vector<std::string>{"one", "three", "four"}));
  reopened.reset();
  EXPECT_EQ(OpenSpool()->depth(), 0u);
}

TEST_F(AppendSpoolTest, AMessageThatLandedBeforeItsDeadlinePassedIsNotStoredTwice) {
  std::unique_ptr<AppendSpool> spool = OpenSpool();
  const std::string conversation = NewConversation();
  const convpb::AppendMessageRequest message = Message(conversation, "said once");
  // The first try reached storage, but its answer was lost with the
  // connection: the turn spools the same message (same key) again.
  ASSERT_TRUE(memory_->AppendMessage(Bounded(), message).ok());
  StopStorage();
  Spool(*spool, message);
  Spool(*spool, Message(conversation, "said after"));
  StartStorage();
  EXPECT_EQ(DrainAll(*spool), 2u);
  EXPECT_EQ(Contents(conversation), (std::vector<std::string>{"said once", "said after"}));
}

TEST_F(AppendSpoolTest, AMessageWithoutAKeyIsGivenOneSoItsRetriesStoreItOnce) {
  std::unique_ptr<AppendSpool> spool = OpenSpool();
  const std::string conversation = NewConversation();
  StopStorage();
  convpb::AppendMessageRequest message = Message(conversation, "no key");
  message.clear_idempotency_key();
  Spool(*spool, message);
  spool.reset();
  // Two processes' worth of draining: the first stores it and dies before
  // its file is rewritten, so the second finds it again.
  const std::filesystem::path kept = dir_ / "kept.log";
  std::filesystem::copy_file(dir_ / "appends.log", kept);
  StartStorage();
  spool = OpenSpool();
  EXPECT_EQ(DrainAll(*spool), 1u);
  spool.reset();
  std::filesystem::copy_file(kept, dir_ / "appends.log",
                             std::filesystem::copy_options::overwrite_existing);
  spool = OpenSpool();
  EXPECT_EQ(spool->depth(), 1u);
  EXPECT_EQ(DrainAll(*spool), 1u);
  EXPECT_EQ(Contents(conversation), std::vector<std::string>{"no key"});
}

TEST_F(AppendSpoolTest, NewMessagesQueueBehindSpooledOnesAndAreStoredOnceStorageIsBack) {
  std::unique_ptr<AppendSpool> spool = OpenSpool();
  const std::string conversation = NewConversation();
  StopStorage();
  Spool(*spool, Message(conversation, "question"));
  StartStorage();
  // Storage is back before the drainer ran: the reply does not overtake
  // the question, and its caller still gets it stored.
  auto reply = spool->Append(Bounded(), Message(conversation, "answer", convpb::ROLE_ASSISTANT));
  ASSERT_TRUE(reply.ok()) << reply.status();
  ASSERT_TRUE(reply->has_value());
  EXPECT_EQ((*reply)->message().content(), "answer");
  EXPECT_EQ(spool->depth(), 0u);
  EXPECT_EQ(Contents(conversation), (std::vector<std::string>{"question", "answer"}));
}

TEST_F(AppendSpoolTest, AFullSpoolRefusesWithAClearErrorAndTakesMessagesAgainOnceDrained) {
  std::unique_ptr<AppendSpool> spool = OpenSpool(/*max_bytes=*/2048);
  const std::string conversation = NewConversation();
  StopStorage();
  const std::string text(400, 'x');
  size_t spooled = 0;
  absl::Status refused;
  for (int i = 0; i < 10 && refused.ok(); ++i) {
    auto appended = spool->Append(Bounded(), Message(conversation, text));
    if (appended.ok()) {
      ++spooled;
    } else {
      refused = appended.status();
    }
  }
  ASSERT_TRUE(absl::IsResourceExhausted(refused)) << refused;
  EXPECT_NE(refused.message().find("append spool is full"), std::string::npos) << refused;
  EXPECT_EQ(spool->depth(), spooled);
  EXPECT_LE(spool->file_bytes(), 2048);
  // What was kept before the spool filled up is stored in full.
  StartStorage();
  EXPECT_EQ(DrainAll(*spool), spooled);
  EXPECT_EQ(Contents(conversation).size(), spooled);
  StopStorage();
  Spool(*spool, Message(conversation, "room again"));
}

TEST_F(AppendSpoolTest, AMessageStorageRefusesForGoodIsDroppedAndHoldsNothingBack) {
  std::unique_ptr<AppendSpool> spool = OpenSpool();
  const std::string conversation = NewConversation();
  StopStorage();
  // Not this user's conversation (or deleted meanwhile): NOT_FOUND.
  Spool(*spool, Message(core::NewUuid(), "lost cause"));
  Spool(*spool, Message(conversation, "kept"));
  StartStorage();
  EXPECT_EQ(DrainAll(*spool), 2u);
  EXPECT_EQ(spool->depth(), 0u);
  EXPECT_EQ(Contents(conversation), std::vector<std::string>{"kept"});
}

// A long outage leaves thousands of messages behind: they are stored a
// batch per call (not one call each), every conversation in its order.
TEST_F(AppendSpoolTest, ALargeBacklogIsStoredInFewCallsAndKeepsEachConversationsOrder) {
  constexpr int kConversations = 10;
  constexpr int kPerConversation = 500;
  std::unique_ptr<AppendSpool> spool = OpenSpool();
  std::vector<std::string> conversations;
  conversations.reserve(kConversations);
  for (int c = 0; c < kConversations; ++c) conversations.push_back(NewConversation());
  StopStorage();
  for (int i = 0; i < kPerConversation; ++i) {
    for (const std::string& conversation : conversations) {
      Spool(*spool, Message(conversation, std::to_string(i)));
    }
  }
  ASSERT_EQ(spool->depth(), static_cast<size_t>(kConversations * kPerConversation));
  StartStorage();
  const double calls_before = AppendCalls();
  const auto started = std::chrono::steady_clock::now();
  EXPECT_EQ(DrainAll(*spool), static_cast<size_t>(kConversations * kPerConversation));
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  const double calls = AppendCalls() - calls_before;
  // 5,000 messages at 256 a call.
  EXPECT_LE(calls, 25) << "append calls to drain the spool";
  std::cout << "drained " << kConversations * kPerConversation << " messages in " << calls
            << " calls, " << seconds << " s\n";
  std::vector<std::string> expected;
  expected.reserve(kPerConversation);
  for (int i = 0; i < kPerConversation; ++i) expected.push_back(std::to_string(i));
  for (const std::string& conversation : conversations) {
    EXPECT_EQ(Contents(conversation), expected) << conversation;
  }
}

TEST_F(AppendSpoolTest, TheDrainerStoresSpooledMessagesOnceStorageIsBack) {
  std::unique_ptr<AppendSpool> spool = OpenSpool();
  spool->StartDrainer();
  const std::string conversation = NewConversation();
  StopStorage();
  Spool(*spool, Message(conversation, "one"));
  Spool(*spool, Message(conversation, "two"));
  StartStorage();
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (spool->depth() > 0 && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(spool->depth(), 0u);
  EXPECT_EQ(Contents(conversation), (std::vector<std::string>{"one", "two"}));
}

TEST_F(AppendSpoolTest, SpooledMessagesAreSealedInTheFileAndOpenAfterARestart) {
  const std::string conversation = NewConversation();
  const std::string words = "the Zanzibar merger closes on Friday";
  {
    std::unique_ptr<AppendSpool> spool = OpenSpool();
    StopStorage();
    Spool(*spool, Message(conversation, words));
  }
  const std::string file = SpoolFile();
  ASSERT_FALSE(file.empty());
  EXPECT_EQ(file.find("Zanzibar"), std::string::npos) << "the message is sealed in the file";
  EXPECT_EQ(file.find(conversation), std::string::npos) << "so is the conversation it is for";
  std::unique_ptr<AppendSpool> reopened = OpenSpool();
  ASSERT_NE(reopened, nullptr);
  EXPECT_EQ(reopened->depth(), 1u);
  StartStorage();
  EXPECT_EQ(DrainAll(*reopened), 1u);
  EXPECT_EQ(Contents(conversation), std::vector<std::string>{words});
}

TEST_F(AppendSpoolTest,
       AMessageSealedUnderAnUnknownMasterKeyStopsTheSpoolAndStaysUntilTheKeyIsGiven) {
  const std::string conversation = NewConversation();
  {
    auto spool = TryOpenSpool(seal::TestMasterKeys("old", '1'));
    ASSERT_TRUE(spool.ok()) << spool.status();
    StopStorage();
    Spool(**spool, Message(conversation, "sealed under the old key"));
  }
  const std::string before = SpoolFile();
  // The master key changed and the old one was not given: nothing starts,
  // nothing is dropped.
  auto refused = TryOpenSpool(seal::TestMasterKeys("new", '2'));
  EXPECT_TRUE(absl::IsFailedPrecondition(refused.status())) << refused.status();
  EXPECT_THAT(std::string(refused.status().message()), ::testing::HasSubstr("'old'"));
  EXPECT_EQ(SpoolFile(), before);
  // A wrong key under the old id does not open it either.
  auto wrong = TryOpenSpool(seal::TestMasterKeys("old", '3'));
  EXPECT_TRUE(absl::IsDataLoss(wrong.status())) << wrong.status();
  EXPECT_EQ(SpoolFile(), before);
  // With the old key among the previous ones it opens, and the message lands.
  auto rotated = TryOpenSpool(seal::TestMasterKeys("new", '2', {{"old", '1'}}));
  ASSERT_TRUE(rotated.ok()) << rotated.status();
  EXPECT_EQ((*rotated)->depth(), 1u);
  StartStorage();
  EXPECT_EQ(DrainAll(**rotated), 1u);
  EXPECT_EQ(Contents(conversation), std::vector<std::string>{"sealed under the old key"});
}

TEST_F(AppendSpoolTest, ASpoolWrittenInTheClearOpensOnceKeysAreGiven) {
  const std::string conversation = NewConversation();
  {
    auto spool = TryOpenSpool(std::nullopt);
    ASSERT_TRUE(spool.ok()) << spool.status();
    StopStorage();
    Spool(**spool, Message(conversation, "written before sealing"));
  }
  EXPECT_NE(SpoolFile().find("written before sealing"), std::string::npos);
  std::unique_ptr<AppendSpool> sealed = OpenSpool();
  ASSERT_NE(sealed, nullptr);
  EXPECT_EQ(sealed->depth(), 1u);
  StartStorage();
  EXPECT_EQ(DrainAll(*sealed), 1u);
  EXPECT_EQ(Contents(conversation), std::vector<std::string>{"written before sealing"});
}

TEST_F(AppendSpoolTest, ASecondProcessCannotOpenTheSameSpool) {
  std::unique_ptr<AppendSpool> spool = OpenSpool();
  AppendSpoolOptions options;
  options.dir = dir_;
  absl::StatusOr<std::unique_ptr<AppendSpool>> second = AppendSpool::Open(*memory_, options);
  EXPECT_TRUE(absl::IsFailedPrecondition(second.status())) << second.status();
}

}  // namespace
}  // namespace omniforge::orchestrator
