// The meeting journey over the real binaries: the four services with the
// executor on the shipped deploy/local/executor.yaml, whose email, calendar
// and contacts domains are the sandbox servers (omniforge-sandbox-mcp, one
// per tenant and domain, their state in PostgreSQL). In local mode (the
// intent service's reading and the local policy's meeting flow) and with
// the planner model on the fake provider: the two Johns asked about, a
// conflict with the alternatives offered, the preview, and the booking
// only after the user's "yes", read back from the sandbox's tables; and the
// email journey in local mode over the same servers. The
// orchestrator's calendar clock (turn.calendar_now) and the sandbox's
// (OMNIFORGE_SANDBOX_NOW) are fixed, so "tomorrow" is the same day for the
// flow, the seed and the test, whatever day the test runs: a Tuesday for
// the journey, a Saturday for the weekend's.
#include <gmock/gmock.h>
#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "libs/core/ids.h"
#include "libs/llm/testing/fake_provider.h"
#include "libs/pg/pool.h"
#include "libs/seal/key_ring.h"
#include "omniforge/orchestrator/v1/chat_service.grpc.pb.h"
#include "services/sandbox/src/pg_store.h"
#include "tests/support/chat_turn.h"
#include "tests/support/identity_keys.h"
#include "tests/support/master_keys.h"
#include "tests/support/service_stack.h"
#include "tests/support/test_database.h"

namespace omniforge::orchestrator {
namespace {

namespace pb = ::omniforge::orchestrator::v1;
using nlohmann::json;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

using Turn = ::omniforge::testing::ChatTurn;

// "Now" for the orchestrator's meeting flow and the sandbox: a Tuesday
// morning, and a Saturday's.
constexpr char kTuesday[] = "2026-11-24T08:00:00Z";
// The sandbox servers' master key (hex), as the local stack gives them one.
constexpr char kSandboxMasterKey[] =
    "5555555555555555555555555555555555555555555555555555555555555555";
constexpr char kSaturday[] = "2026-11-28T10:00:00Z";

// `days` after kTuesday at hh:mm in UTC, as the sandbox (and the local
// stack's users) read times: the seed's design review is tomorrow
// 14:00-15:00.
std::string DayAt(int days, int hour, int minute) {
  const absl::TimeZone utc = absl::UTCTimeZone();
  absl::Time now;
  std::string error;
  EXPECT_TRUE(absl::ParseTime(absl::RFC3339_full, kTuesday, &now, &error)) << error;
  const absl::CivilDay day = absl::CivilDay(absl::ToCivilSecond(now, utc)) + days;
  return absl::FormatTime(
      "%Y-%m-%dT%H:%M:%S%Ez",
      absl::FromCivil(absl::CivilMinute(day.year(), day.month(), day.day(), hour, minute), utc),
      utc);
}

std::string Tomorrow(int hour, int minute) { return DayAt(1, hour, minute); }

// The suite's tenants: each test books in a sandbox of its own.
const std::vector<core::Identity> kUsers = {{"meet-a", "ann"}, {"meet-b", "bob"},
                                            {"meet-c", "cat"}, {"meet-d", "dan"},
                                            {"meet-e", "eve"}, {"meet-f", "fay"}};

class MeetingEndToEndTest : public ::testing::Test {
 protected:
  // Starts the stack with the clocks at `now`; `orchestrator_config` (YAML)
  // when the planner is a model.
  static void StartStack(const std::string& orchestrator_config,
                         const std::string& now = kTuesday) {
    db_ = new testing::TestDatabase();
    dir_ = new std::filesystem::path(std::filesystem::temp_directory_path() /
                                     ("omniforge-meeting-" + core::NewUuid()));
    std::filesystem::create_directories(*dir_);
    keys_ = new std::vector<std::string>(
        testing::WriteApiKeyFile(*dir_ / "api_keys", kUsers, "meeting-e2e"));
    ASSERT_EQ(keys_->size(), kUsers.size());
    testing::ServiceStack::ExtraEnv extra;
    extra.executor = {std::string("OMNIFORGE_CONFIG=") + OMNIFORGE_SOURCE_DIR +
                      "/deploy/local/executor.yaml"};
    // What scripts/stack.sh gives the sandbox servers: their schema applied
    // once, by the owner, as `stack.sh up` does; the servers log in as
    // omniforge_sandbox and do not migrate.
    ASSERT_EQ(std::system(("OMNIFORGE_DATABASE_MIGRATE_DSN='" + db_->owner_dsn() + "' " +
                           OMNIFORGE_SANDBOX_BIN + " migrate >/dev/null 2>&1")
                              .c_str()),
              0);
    // Their master key, in a file their file sandbox lets them read.
    const std::string key_file = (*dir_ / "sandbox-master.key").string();
    std::ofstream(key_file) << kSandboxMasterKey << "\n";
    for (const char* domain : {"EMAIL", "CALENDAR", "CONTACTS"}) {
      const std::string prefix = std::string("OMNIFORGE_MCP_SERVERS_SANDBOX_") + domain;
      extra.executor.push_back(prefix + "_COMMAND=" + OMNIFORGE_SANDBOX_BIN);
      std::string env = prefix + "_ENV=OMNIFORGE_DATABASE_DSN=" + db_->service_dsn("sandbox");
      env += ",OMNIFORGE_DATABASE_MIGRATE_ON_START=false,OMNIFORGE_SANDBOX_NOW=" + now;
      env += ",OMNIFORGE_ENCRYPTION_MASTER_KEY_FILE=" + key_file;
      extra.executor.push_back(std::move(env));
      extra.executor.push_back(absl::StrCat(prefix, "_READ_PATHS=", key_file));
    }
    // The test reads the sandbox's sealed rows as its servers do.
    auto pool = pg::PgPool::Create({.dsn = db_->service_dsn("sandbox"), .pool_size = 1});
    ASSERT_TRUE(pool.ok()) << pool.status();
    sandbox_pool_ = pool->release();
    sandbox_keys_ = new seal::KeyRing(*sandbox_pool_, sandbox::kSandboxKeys,
                                      *seal::KeyRing::ParseMasterKey(kSandboxMasterKey), "primary");
    sandbox_ = new sandbox::PgSandboxStore(*sandbox_pool_, *sandbox_keys_);
    extra.orchestrator = {"OMNIFORGE_TURN_CALENDAR_NOW=" + now};
    if (!orchestrator_config.empty()) {
      const std::filesystem::path path = *dir_ / "orchestrator.yaml";
      std::ofstream(path) << orchestrator_config;
      extra.orchestrator.push_back("OMNIFORGE_CONFIG=" + path.string());
      extra.orchestrator.emplace_back("FAKE_LLM_KEY=fake-key");
    }
    stack_ = new testing::ServiceStack({OMNIFORGE_CONVERSATION_BIN, OMNIFORGE_INTENT_BIN,
                                        OMNIFORGE_EXECUTOR_BIN, OMNIFORGE_ORCHESTRATOR_BIN});
    const auto failed = stack_->Start(*db_, (*dir_ / "api_keys").string(), extra);
    ASSERT_EQ(failed, std::nullopt) << *failed;
    stub_ = pb::ChatService::NewStub(grpc::CreateChannel(stack_->orchestrator().address(),
                                                         grpc::InsecureChannelCredentials()))
                .release();
  }

  static void StopStack() {
    delete sandbox_;
    delete sandbox_keys_;
    delete sandbox_pool_;
    delete stub_;
    delete stack_;
    delete keys_;
    std::filesystem::remove_all(*dir_);
    delete dir_;
    delete db_;
  }

  Turn Chat(int user, const std::string& message, const std::string& conversation_id = "") const {
    pb::StreamChatRequest request;
    request.set_message(message);
    request.set_conversation_id(conversation_id);
    Turn turn = ::omniforge::testing::StreamTurn(*stub_, request, (*keys_)[user]);
    EXPECT_TRUE(turn.status.ok()) << turn.status.error_message();
    EXPECT_FALSE(turn.events.empty());
    return turn;
  }

  // The events the user booked in their sandbox calendar (beside the
  // seed's), as {title, start}.
  static std::vector<std::pair<std::string, std::string>> Booked(int user, bool with_day = false) {
    const core::TimePoint now =
        std::chrono::time_point_cast<std::chrono::microseconds>(std::chrono::system_clock::now());
    const std::chrono::hours year(24 * 365);
    const auto events = sandbox_->ListEvents(kUsers[user].tenant_id, {now - year, now + year});
    EXPECT_TRUE(events.ok()) << events.status();
    std::vector<std::pair<std::string, std::string>> out;
    if (!events.ok()) return out;
    for (const sandbox::Event& event : *events) {
      if (event.id.starts_with("event-")) continue;  // the seed's
      out.emplace_back(
          event.title,
          absl::FormatTime(with_day ? "%a %H:%M" : "%H:%M",
                           absl::FromUnixMicros(event.when.start.time_since_epoch().count()),
                           absl::UTCTimeZone()));
    }
    return out;
  }

  // The messages of `folder` (0 drafts, 1 sent) beside the seed's, as
  // {recipients as JSON, subject}.
  static std::vector<std::pair<std::string, std::string>> Messages(int user, int folder) {
    const auto listed =
        sandbox_->ListFolder(kUsers[user].tenant_id,
                             folder == 0 ? sandbox::Folder::kDraft : sandbox::Folder::kSent, 500);
    EXPECT_TRUE(listed.ok()) << listed.status();
    std::vector<std::pair<std::string, std::string>> out;
    if (!listed.ok()) return out;
    // Newest first: the oldest first here.
    // NOLINTNEXTLINE(modernize-loop-convert): clang 14 cannot compile libstdc++ 12's views::reverse
    for (auto it = listed->rbegin(); it != listed->rend(); ++it) {
      if (it->id.starts_with("message-")) continue;  // the seed's
      out.emplace_back(json(it->to).dump(), it->subject);
    }
    return out;
  }

  static testing::TestDatabase* db_;
  static std::filesystem::path* dir_;
  static std::vector<std::string>* keys_;
  static testing::ServiceStack* stack_;
  static pb::ChatService::Stub* stub_;
  static pg::PgPool* sandbox_pool_;
  static seal::KeyRing* sandbox_keys_;
  static sandbox::PgSandboxStore* sandbox_;
};

pg::PgPool* MeetingEndToEndTest::sandbox_pool_ = nullptr;
seal::KeyRing* MeetingEndToEndTest::sandbox_keys_ = nullptr;
sandbox::PgSandboxStore* MeetingEndToEndTest::sandbox_ = nullptr;

testing::TestDatabase* MeetingEndToEndTest::db_ = nullptr;
std::filesystem::path* MeetingEndToEndTest::dir_ = nullptr;
std::vector<std::string>* MeetingEndToEndTest::keys_ = nullptr;
testing::ServiceStack* MeetingEndToEndTest::stack_ = nullptr;
pb::ChatService::Stub* MeetingEndToEndTest::stub_ = nullptr;

class LocalMeetingTest : public MeetingEndToEndTest {
 protected:
  static void SetUpTestSuite() { StartStack(""); }
  static void TearDownTestSuite() { StopStack(); }
};

TEST_F(LocalMeetingTest, TwoJohnsThenAConflictThenAnAlternativeThenThePreviewThenBooked) {
  const int user = 0;
  const Turn asked = Chat(user, "schedule a 30-minute call with Sarah and John tomorrow at 2pm");
  EXPECT_THAT(asked.tools_called(),
              ElementsAre("contacts__find_contacts", "contacts__find_contacts"));
  EXPECT_THAT(asked.text(), HasSubstr("Which John do you mean?"));
  EXPECT_THAT(asked.text(), HasSubstr("John Doe (john.doe@example.net)"));
  EXPECT_THAT(asked.text(), HasSubstr("John Smith (john.smith@example.com)"));
  EXPECT_FALSE(asked.preview().has_value());
  const std::string conversation = asked.conversation_id();

  const Turn when = Chat(user, "the second one", conversation);
  EXPECT_THAT(when.tools_called(),
              ElementsAre("calendar__find_free_slots", "calendar__find_free_slots"));
  EXPECT_THAT(when.text(), HasSubstr("is taken: it overlaps your event \"Design review\""));
  EXPECT_THAT(when.text(), HasSubstr("1. tomorrow"));
  EXPECT_THAT(when.text(), HasSubstr("15:30–16:00"));
  EXPECT_FALSE(when.preview().has_value()) << when.text();

  const Turn preview = Chat(user, "yes, 15:30", conversation);
  ASSERT_TRUE(preview.preview().has_value()) << preview.text();
  EXPECT_EQ(preview.preview()->tool_name(), "calendar__create_event");
  const json args = json::parse(preview.preview()->arguments_json());
  EXPECT_EQ(args["title"], "Call with Sarah Chen and John Smith");
  EXPECT_EQ(args["start"], Tomorrow(15, 30));
  EXPECT_EQ(args["end"], Tomorrow(16, 0));
  EXPECT_EQ(args["attendees"], json::array({"sarah.chen@example.com", "john.smith@example.com"}));
  EXPECT_THAT(preview.text(), HasSubstr("Ready to book \"Call with Sarah Chen and John Smith\""));
  EXPECT_TRUE(Booked(user).empty()) << "nothing is booked before the yes";

  const Turn yes = Chat(user, "yes", conversation);
  EXPECT_THAT(yes.tools_called(), ElementsAre("calendar__create_event"));
  EXPECT_THAT(yes.text(), HasSubstr("Booked \"Call with Sarah Chen and John Smith\""));
  EXPECT_THAT(yes.text(), HasSubstr("15:30–16:00"));
  EXPECT_THAT(Booked(user), ElementsAre(std::pair<std::string, std::string>(
                                "Call with Sarah Chen and John Smith", "15:30")));
}

TEST_F(LocalMeetingTest, AnAfternoonTakesItsFirstFreeSlotAChangeIsCheckedAndNoBooksNothing) {
  const int user = 1;
  const Turn preview = Chat(user, "set up a meeting with John Smith and Sarah tomorrow afternoon");
  EXPECT_THAT(preview.tools_called(),
              ElementsAre("contacts__find_contacts", "contacts__find_contacts",
                          "calendar__find_free_slots"));
  ASSERT_TRUE(preview.preview().has_value()) << preview.text();
  const json args = json::parse(preview.preview()->arguments_json());
  EXPECT_EQ(args["start"], Tomorrow(12, 0));
  EXPECT_THAT(preview.text(), HasSubstr("The first time everyone is free tomorrow afternoon"));
  // A change to the preview: the new time is checked and previewed again.
  const Turn changed = Chat(user, "make it 4pm instead", preview.conversation_id());
  EXPECT_THAT(changed.tools_called(), ElementsAre("calendar__find_free_slots"));
  ASSERT_TRUE(changed.preview().has_value()) << changed.text();
  EXPECT_EQ(json::parse(changed.preview()->arguments_json())["start"], Tomorrow(16, 0));
  EXPECT_THAT(changed.text(), HasSubstr("16:00–16:30 is free for everyone."));
  const Turn no = Chat(user, "no", preview.conversation_id());
  EXPECT_TRUE(no.tools_called().empty());
  EXPECT_TRUE(Booked(user).empty());
}

TEST_F(LocalMeetingTest, AWeekdayMorningWithOneContactIsProposed) {
  const int user = 2;
  const Turn preview = Chat(user, "book 45 minutes with Priya on Friday morning");
  ASSERT_TRUE(preview.preview().has_value()) << preview.text();
  const json args = json::parse(preview.preview()->arguments_json());
  EXPECT_EQ(args["attendees"], json::array({"priya.patel@example.org"}));
  EXPECT_THAT(preview.text(), HasSubstr("with Priya Patel"));
  EXPECT_TRUE(Booked(user).empty());
}

TEST_F(LocalMeetingTest, AnUnknownNameIsSaidAndAsked) {
  const Turn asked = Chat(3, "schedule a call with Zoltan tomorrow at 10am");
  EXPECT_THAT(asked.text(), HasSubstr("I couldn't find \"Zoltan\" among your contacts"));
  const Turn answered = Chat(3, "Miguel Alvarez", asked.conversation_id());
  ASSERT_TRUE(answered.preview().has_value()) << answered.text();
  EXPECT_THAT(answered.text(), HasSubstr("with Miguel Alvarez"));
}

// The clocks on a Saturday: "tomorrow" is a Sunday, no working day; the
// nearest free times are offered on Monday, and the booking is made there.
class WeekendMeetingTest : public MeetingEndToEndTest {
 protected:
  static void SetUpTestSuite() { StartStack("", kSaturday); }
  static void TearDownTestSuite() { StopStack(); }
};

TEST_F(WeekendMeetingTest, TomorrowIsSundaySoMondaysNearestTimesAreOfferedAndBookedAfterYes) {
  const int user = 5;
  const Turn asked =
      Chat(user, "schedule a 30-minute call with Sarah and John Smith tomorrow at 2pm");
  EXPECT_THAT(asked.tools_called(),
              ElementsAre("contacts__find_contacts", "contacts__find_contacts",
                          "calendar__find_free_slots"));
  EXPECT_THAT(asked.text(), HasSubstr("Sunday (29 Nov) is not a working day. The nearest free "
                                      "times are on Monday (30 Nov)."));
  EXPECT_THAT(asked.text(), HasSubstr("1. Mon 30 Nov 14:00–14:30"));
  EXPECT_FALSE(asked.preview().has_value()) << asked.text();

  const Turn preview = Chat(user, "yes, 14:30", asked.conversation_id());
  ASSERT_TRUE(preview.preview().has_value()) << preview.text();
  const json args = json::parse(preview.preview()->arguments_json());
  EXPECT_EQ(args["start"], "2026-11-30T14:30:00+00:00");
  EXPECT_TRUE(Booked(user).empty()) << "nothing is booked before the yes";

  const Turn yes = Chat(user, "yes", asked.conversation_id());
  EXPECT_THAT(yes.tools_called(), ElementsAre("calendar__create_event"));
  EXPECT_THAT(Booked(user, true), ElementsAre(std::pair<std::string, std::string>(
                                      "Call with Sarah Chen and John Smith", "Mon 14:30")));
}

// The email journey in local mode, over the same stack: the recipients
// looked up, the draft, its preview, and the message sent only after the
// user's "yes", read back from the sandbox's mailbox.
class LocalEmailTest : public MeetingEndToEndTest {
 protected:
  static void SetUpTestSuite() { StartStack(""); }
  static void TearDownTestSuite() { StopStack(); }
};

TEST_F(LocalEmailTest, WhichJohnThenTheDraftPreviewedThenSentOnlyAfterYes) {
  const int user = 0;
  const Turn asked = Chat(user, "email John the agenda for tomorrow's design review");
  EXPECT_THAT(asked.tools_called(), ElementsAre("contacts__find_contacts"));
  EXPECT_THAT(asked.text(), HasSubstr("Which John do you mean?"));
  EXPECT_THAT(asked.text(), HasSubstr("2. John Smith (john.smith@example.com)"));
  EXPECT_FALSE(asked.preview().has_value());

  const Turn preview = Chat(user, "the second one", asked.conversation_id());
  EXPECT_THAT(preview.tools_called(), ElementsAre("email__draft_message"));
  ASSERT_TRUE(preview.preview().has_value()) << preview.text();
  EXPECT_EQ(preview.preview()->tool_name(), "email__send_message");
  const json args = json::parse(preview.preview()->arguments_json());
  EXPECT_EQ(args["to"], json::array({"john.smith@example.com"}));
  EXPECT_EQ(args["subject"], "The agenda for tomorrow's design review");
  EXPECT_EQ(args["body"],
            "Hi John,\n\nHere is the agenda for tomorrow's design review.\n\nBest regards");
  EXPECT_THAT(preview.text(), HasSubstr("To: John Smith (john.smith@example.com)"));
  EXPECT_THAT(preview.text(), HasSubstr("Subject: The agenda for tomorrow's design review"));
  EXPECT_THAT(Messages(user, 0),
              ElementsAre(std::pair<std::string, std::string>(
                  R"(["john.smith@example.com"])", "The agenda for tomorrow's design review")));
  EXPECT_TRUE(Messages(user, 1).empty()) << "nothing is sent before the yes";

  const Turn yes = Chat(user, "yes", asked.conversation_id());
  EXPECT_THAT(yes.tools_called(), ElementsAre("email__send_message"));
  EXPECT_THAT(yes.text(), HasSubstr("Sent \"The agenda for tomorrow's design review\" to "
                                    "john.smith@example.com"));
  EXPECT_THAT(Messages(user, 1),
              ElementsAre(std::pair<std::string, std::string>(
                  R"(["john.smith@example.com"])", "The agenda for tomorrow's design review")));
  EXPECT_TRUE(Messages(user, 0).empty()) << "the draft was the message sent";
}

TEST_F(LocalEmailTest, NoSendsNothing) {
  const int user = 1;
  const Turn preview =
      Chat(user, "send an email to Sarah and Priya about the launch saying it moves to Friday");
  EXPECT_THAT(
      preview.tools_called(),
      ElementsAre("contacts__find_contacts", "contacts__find_contacts", "email__draft_message"));
  ASSERT_TRUE(preview.preview().has_value()) << preview.text();
  const json args = json::parse(preview.preview()->arguments_json());
  EXPECT_EQ(args["to"], json::array({"sarah.chen@example.com", "priya.patel@example.org"}));
  EXPECT_EQ(args["subject"], "The launch");
  EXPECT_EQ(args["body"], "Hi Sarah and Priya,\n\nIt moves to Friday.\n\nBest regards");

  const Turn no = Chat(user, "no", preview.conversation_id());
  EXPECT_TRUE(no.tools_called().empty());
  EXPECT_TRUE(Messages(user, 1).empty());
}

// The planner is a model (the fake provider, rules per turn): it is offered
// the domain tools and drives the same journey itself; the approval gate
// holds its booking for the user's "yes" as it does the local policy's.
class ModelMeetingTest : public MeetingEndToEndTest {
 protected:
  static void SetUpTestSuite() {
    auto fake = llm::testing::FakeLlmServer::Start({}, {.api_key = "fake-key"});
    ASSERT_TRUE(fake.ok()) << fake.status();
    fake_ = fake->release();
    StartStack("llm:\n  providers:\n    fake:\n      api: openai\n      base_url: " +
               fake_->openai_base_url() +
               "\n      api_key_env: FAKE_LLM_KEY\n  profiles:\n"
               "    balanced: [fake/planner-model]\n    quality: [fake/planner-model]\n"
               "  retry: {max_attempts: 1}\n");
  }
  static void TearDownTestSuite() {
    StopStack();
    delete fake_;
  }

  static llm::testing::FakeRule Rule(const std::string& user_contains, bool after_tool,
                                     llm::testing::FakeReply reply) {
    llm::testing::FakeRule rule;
    rule.match.operation = "planner_stream";
    rule.match.last_user_contains = user_contains;
    rule.match.last_is_tool_result = after_tool;
    rule.times = 1;
    rule.reply = std::move(reply);
    return rule;
  }

  static llm::testing::FakeReply Calls(const std::vector<std::pair<std::string, json>>& calls) {
    llm::testing::FakeReply reply;
    for (const auto& [name, args] : calls) reply.tool_calls.push_back({"", name, args.dump()});
    return reply;
  }

  static llm::testing::FakeReply Says(const std::string& text) {
    llm::testing::FakeReply reply;
    reply.text = text;
    return reply;
  }

  static llm::testing::FakeLlmServer* fake_;
};

llm::testing::FakeLlmServer* ModelMeetingTest::fake_ = nullptr;

TEST_F(ModelMeetingTest, TheModelBooksAnAlternativeAfterAConflictOnlyOnceTheUserSaysYes) {
  const int user = 4;
  const json attendees = {"sarah.chen@example.com", "john.smith@example.com"};
  const json at_two = {{"title", "Call with Sarah Chen and John Smith"},
                       {"start", Tomorrow(14, 0)},
                       {"end", Tomorrow(14, 30)},
                       {"attendees", attendees}};
  json at_half_three = at_two;
  at_half_three["start"] = Tomorrow(15, 30);
  at_half_three["end"] = Tomorrow(16, 0);
  // For "15:30" the model proposes the alternative in words and calls for it.
  llm::testing::FakeReply both = Calls({{"calendar__create_event", at_half_three}});
  both.text = "15:30-16:00 is free for all three of you. Shall I book that instead?";
  ASSERT_TRUE(fake_
                  ->SetRules({
                      Rule("30-minute call", false,
                           Calls({{"contacts__find_contacts", {{"query", "Sarah"}}},
                                  {"contacts__find_contacts", {{"query", "John Smith"}}}})),
                      Rule("30-minute call", true, Calls({{"calendar__create_event", at_two}})),
                      Rule("30-minute call", true, Says("Shall I book it?")),
                      Rule("15:30", false, both),
                      Rule("15:30", true, Says("Shall I book it?")),
                  })
                  .ok());

  const Turn first =
      Chat(user, "schedule a 30-minute call with Sarah and John Smith tomorrow at 2pm");
  EXPECT_THAT(first.tools_called(),
              ElementsAre("contacts__find_contacts", "contacts__find_contacts"));
  ASSERT_TRUE(first.preview().has_value()) << first.text();
  EXPECT_EQ(first.preview()->tool_name(), "calendar__create_event");
  // Risk by content, over the real binaries: a booking that invites other
  // people is HIGH whatever the tool's own level, and the preview says why.
  EXPECT_EQ(first.preview()->risk(), pb::TOOL_RISK_HIGH);
  EXPECT_THAT(first.preview()->risk_factors(), Contains(HasSubstr("invites 2 people besides you")));
  EXPECT_TRUE(Booked(user).empty());
  const std::string conversation = first.conversation_id();

  // Approved, the 14:00 booking meets the design review: nothing is booked,
  // and the sandbox's alternatives are said.
  const Turn conflict = Chat(user, "yes", conversation);

  EXPECT_THAT(conflict.tools_called(), ElementsAre("calendar__create_event"));
  EXPECT_THAT(conflict.text(), HasSubstr("It was not booked"));
  EXPECT_THAT(conflict.text(), HasSubstr("Design review"));
  EXPECT_TRUE(Booked(user).empty());

  const Turn alternative = Chat(user, "yes, 15:30", conversation);
  ASSERT_TRUE(alternative.preview().has_value()) << alternative.text();
  EXPECT_EQ(json::parse(alternative.preview()->arguments_json())["start"], Tomorrow(15, 30));
  EXPECT_THAT(alternative.text(), HasSubstr("15:30-16:00 is free"));
  EXPECT_TRUE(Booked(user).empty()) << "nothing is booked before the yes";

  const Turn yes = Chat(user, "yes", conversation);
  EXPECT_THAT(yes.tools_called(), ElementsAre("calendar__create_event"));
  EXPECT_THAT(yes.text(), HasSubstr("Booked \"Call with Sarah Chen and John Smith\""));
  EXPECT_THAT(Booked(user), ElementsAre(std::pair<std::string, std::string>(
                                "Call with Sarah Chen and John Smith", "15:30")));
}

// The planner model on the fake provider writes the email: the contact and
// the draft run at once (READ), the send waits for the user's "yes".
TEST_F(ModelMeetingTest, TheModelDraftsAnEmailAndSendsItOnlyOnceTheUserSaysYes) {
  const int user = 5;
  const json message = {
      {"to", {"sarah.chen@example.com"}},
      {"subject", "Agenda for the design review"},
      {"body", "Hi Sarah,\n\nThe agenda: the new dashboard, then dates.\n\nBest"}};
  ASSERT_TRUE(fake_
                  ->SetRules({
                      Rule("email Sarah", false,
                           Calls({{"contacts__find_contacts", {{"query", "Sarah"}}}})),
                      Rule("email Sarah", true, Calls({{"email__draft_message", message}})),
                      Rule("email Sarah", true, Calls({{"email__send_message", message}})),
                      Rule("email Sarah", true, Says("Shall I send it?")),
                  })
                  .ok());

  const Turn asked = Chat(user, "email Sarah the agenda for the design review");
  EXPECT_THAT(asked.tools_called(), ElementsAre("contacts__find_contacts", "email__draft_message"));
  ASSERT_TRUE(asked.preview().has_value()) << asked.text();
  EXPECT_EQ(asked.preview()->tool_name(), "email__send_message");
  EXPECT_EQ(json::parse(asked.preview()->arguments_json())["to"], message["to"]);
  EXPECT_TRUE(Messages(user, 1).empty()) << "nothing is sent before the yes";
  EXPECT_EQ(Messages(user, 0).size(), 1u) << "the model's draft";

  const Turn yes = Chat(user, "yes", asked.conversation_id());
  EXPECT_THAT(yes.tools_called(), ElementsAre("email__send_message"));
  EXPECT_THAT(Messages(user, 1),
              ElementsAre(std::pair<std::string, std::string>(R"(["sarah.chen@example.com"])",
                                                              "Agenda for the design review")));
}

}  // namespace
}  // namespace omniforge::orchestrator
