// The omniforge CLI against the real stack: PostgreSQL and the four service
// binaries on loopback in local mode, the `omniforge` binary run exactly as a
// user or a script runs it (piped, on a terminal, with NDJSON output).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "libs/core/api_keys.h"
#include "libs/core/ids.h"
#include "tests/support/command.h"
#include "tests/support/identity_keys.h"
#include "tests/support/service_stack.h"
#include "tests/support/test_database.h"

namespace omniforge {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kTenant[] = "cli-tenant";

// What one `omniforge --json chat` printed, one object per line.
struct JsonTurns {
  std::vector<json> events;

  std::vector<json> Of(const std::string& kind) const {
    std::vector<json> out;
    for (const json& e : events) {
      if (e.contains(kind)) out.push_back(e[kind]);
    }
    return out;
  }
};

JsonTurns ParseNdjson(const std::string& out) {
  JsonTurns turns;
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    json event = json::parse(line, nullptr, false);
    EXPECT_FALSE(event.is_discarded()) << "not a JSON object: " << line;
    if (!event.is_discarded()) turns.events.push_back(std::move(event));
  }
  return turns;
}

class CliEndToEndTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    db_ = new testing::TestDatabase();
    dir_ = new std::filesystem::path(std::filesystem::temp_directory_path() /
                                     ("omniforge-cli-e2e-" + core::NewUuid()));
    std::filesystem::create_directories(*dir_);
    std::vector<core::Identity> users;
    users.reserve(kUsers);
    for (int i = 0; i < kUsers; ++i) users.push_back({kTenant, "user-" + std::to_string(i)});
    keys_ = new std::vector<std::string>(
        testing::WriteApiKeyFile(*dir_ / "api_keys", users, "cli e2e"));
    ASSERT_EQ(keys_->size(), users.size());
    stack_ = new testing::ServiceStack({OMNIFORGE_CONVERSATION_BIN, OMNIFORGE_INTENT_BIN,
                                        OMNIFORGE_EXECUTOR_BIN, OMNIFORGE_ORCHESTRATOR_BIN});
    ASSERT_EQ(stack_->Start(*db_, (*dir_ / "api_keys").string()), std::nullopt);
  }

  static void TearDownTestSuite() {
    delete stack_;
    delete keys_;
    std::filesystem::remove_all(*dir_);
    delete dir_;
    delete db_;
  }

  // A user of its own for every test.
  void SetUp() override {
    static int next = 0;
    user_ = next++ % kUsers;
  }

  std::string user() const { return "user-" + std::to_string(user_); }

  // `omniforge [--json] chat ARGS...` as this test's user.
  std::vector<std::string> Chat(bool json_output, const std::vector<std::string>& args,
                                const std::string& key = "") const {
    std::vector<std::string> argv = {OMNIFORGE_CLI_BIN};
    if (json_output) argv.emplace_back("--json");
    argv.insert(argv.end(), {"chat", "--chat-server", stack_->orchestrator().address(), "--api-key",
                             key.empty() ? (*keys_)[user_] : key});
    argv.insert(argv.end(), args.begin(), args.end());
    return argv;
  }

  // `omniforge ARGS...` against the conversation and executor services as
  // this test's user, asserted with the key the stack trusts (or, with
  // `signed_calls` false, with none).
  std::vector<std::string> Cli(const std::vector<std::string>& args,
                               bool signed_calls = true) const {
    std::vector<std::string> argv = {OMNIFORGE_CLI_BIN,
                                     "--server",
                                     stack_->conversation().address(),
                                     "--executor-server",
                                     stack_->executor().address(),
                                     "--tenant",
                                     kTenant,
                                     "--user",
                                     user()};
    if (signed_calls) {
      argv.insert(argv.end(), {"--identity-key", testing::TestIdentityKeys().signing_key,
                               "--identity-key-id", testing::kTestIdentityKeyId});
    }
    argv.insert(argv.end(), args.begin(), args.end());
    return argv;
  }

  // Every turn's events: session first, done last, seq 1..n within the turn.
  static void ExpectWellFormedTurns(const JsonTurns& turns, size_t expected_turns) {
    ASSERT_EQ(turns.Of("session").size(), expected_turns);
    ASSERT_EQ(turns.Of("done").size(), expected_turns);
    ASSERT_FALSE(turns.events.empty());
    EXPECT_TRUE(turns.events.front().contains("session"));
    EXPECT_TRUE(turns.events.back().contains("done"));
    int expected_seq = 0;
    for (const json& event : turns.events) {
      if (event.contains("session")) expected_seq = 0;
      EXPECT_EQ(event.value("seq", 0), ++expected_seq) << event.dump();
    }
  }

  static constexpr int kUsers = 8;
  int user_ = 0;
  static testing::TestDatabase* db_;
  static std::filesystem::path* dir_;
  static std::vector<std::string>* keys_;
  static testing::ServiceStack* stack_;
};

testing::TestDatabase* CliEndToEndTest::db_ = nullptr;
std::filesystem::path* CliEndToEndTest::dir_ = nullptr;
std::vector<std::string>* CliEndToEndTest::keys_ = nullptr;
testing::ServiceStack* CliEndToEndTest::stack_ = nullptr;

TEST_F(CliEndToEndTest, JsonTurnStartsAConversationThatResumesAndIsListed) {
  const testing::CommandResult first = testing::RunCommand(Chat(true, {"list my agents"}));
  ASSERT_EQ(first.exit_code, 0) << first.err;
  const JsonTurns turns = ParseNdjson(first.out);
  ExpectWellFormedTurns(turns, 1);
  const json session = turns.Of("session")[0];
  const std::string conversation = session.value("conversation_id", "");
  ASSERT_FALSE(conversation.empty());
  EXPECT_TRUE(session.value("conversation_created", false));
  EXPECT_FALSE(turns.Of("text").empty());
  EXPECT_EQ(turns.Of("tool_call").at(0).value("tool_name", ""), "list_agents");

  const testing::CommandResult second =
      testing::RunCommand(Chat(true, {"--conversation", conversation, "what did I just ask?"}));
  ASSERT_EQ(second.exit_code, 0) << second.err;
  const JsonTurns resumed = ParseNdjson(second.out);
  ExpectWellFormedTurns(resumed, 1);
  EXPECT_EQ(resumed.Of("session")[0].value("conversation_id", ""), conversation);
  EXPECT_FALSE(resumed.Of("session")[0].value("conversation_created", false));

  const testing::CommandResult listed =
      testing::RunCommand(Cli({"--json", "conversations", "list"}));
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  const json list = json::parse(listed.out);
  ASSERT_EQ(list["conversations"].size(), 1u) << listed.out;
  EXPECT_EQ(list["conversations"][0]["id"], conversation);
  // proto3 JSON writes 64-bit integers as strings.
  EXPECT_EQ(list["conversations"][0]["message_count"], "4")
      << "two turns, each a question and a reply";

  // The services believe no identity they are merely told: without a key
  // they trust, the same listing is refused.
  const testing::CommandResult told =
      testing::RunCommand(Cli({"--json", "conversations", "list"}, /*signed_calls=*/false));
  EXPECT_NE(told.exit_code, 0);
  EXPECT_THAT(told.err, HasSubstr("caller assertion missing")) << told.err;
  EXPECT_THAT(told.out, Not(HasSubstr(conversation)));
}

TEST_F(CliEndToEndTest, SessionRunsEachLineAsATurnOfOneConversationUntilQuit) {
  const testing::CommandResult run = testing::RunCommand(
      Chat(true, {}), "list my agents\n\n  what can you do?  \n/quit\nthis is never sent\n");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const JsonTurns turns = ParseNdjson(run.out);
  ExpectWellFormedTurns(turns, 2);
  const std::string conversation = turns.Of("session")[0].value("conversation_id", "");
  EXPECT_EQ(turns.Of("session")[1].value("conversation_id", ""), conversation);

  // The readable session names the conversation so it can be resumed; end
  // of input ends it like /quit.
  const testing::CommandResult resumed =
      testing::RunCommand(Chat(false, {"--conversation", conversation}), "and now?\n");
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_THAT(resumed.out, HasSubstr("omniforge: "));
  EXPECT_THAT(resumed.err,
              HasSubstr("resume it with: omniforge chat --conversation " + conversation + "\n"));
  const testing::CommandResult shown =
      testing::RunCommand(Cli({"conversations", "show", conversation}));
  ASSERT_EQ(shown.exit_code, 0) << shown.err;
  EXPECT_THAT(shown.out, HasSubstr("6 messages"));
  EXPECT_THAT(shown.out, HasSubstr("user: and now?"));
  EXPECT_THAT(shown.out, Not(HasSubstr("never sent")));
}

TEST_F(CliEndToEndTest, ActionsShowsTheTrailOfTheCallersOwnConversationOnly) {
  const testing::CommandResult hello = testing::RunCommand(Chat(true, {"hello"}));
  ASSERT_EQ(hello.exit_code, 0) << hello.err;
  const std::string conversation =
      ParseNdjson(hello.out).Of("session").at(0).value("conversation_id", "");
  ASSERT_FALSE(conversation.empty());
  auto actions = [&](const std::vector<std::string>& args, const std::string& key) {
    std::vector<std::string> argv = {OMNIFORGE_CLI_BIN};
    argv.insert(argv.end(), args.begin(), args.end());
    argv.insert(argv.end(), {"--chat-server", stack_->orchestrator().address()});
    if (!key.empty()) argv.insert(argv.end(), {"--api-key", key});
    return testing::RunCommand(argv);
  };
  const std::string& mine = (*keys_)[user_];

  const testing::CommandResult plain = actions({"actions", conversation}, mine);
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  EXPECT_EQ(plain.out, "no approval decisions in this conversation\n");
  const testing::CommandResult json_out =
      actions({"--json", "actions", conversation, "--limit", "500"}, mine);
  ASSERT_EQ(json_out.exit_code, 0) << json_out.err;
  EXPECT_EQ(json_out.out, "{}\n");

  const testing::CommandResult other_user =
      actions({"actions", conversation}, (*keys_)[(user_ + 1) % kUsers]);
  EXPECT_EQ(other_user.exit_code, 1);
  EXPECT_EQ(other_user.out, "");
  EXPECT_THAT(other_user.err, HasSubstr("error: NOT_FOUND: "));
  EXPECT_THAT(other_user.err, HasSubstr("[CONVERSATION_NOT_FOUND]"));
  const testing::CommandResult too_many =
      actions({"actions", conversation, "--limit", "501"}, mine);
  EXPECT_EQ(too_many.exit_code, 1);
  EXPECT_THAT(too_many.err, HasSubstr("error: INVALID_ARGUMENT: limit"));
  EXPECT_THAT(too_many.err, HasSubstr("[FIELD_INVALID]"));
  const testing::CommandResult keyless = actions({"actions", conversation}, "");
  EXPECT_EQ(keyless.exit_code, 2);
  EXPECT_THAT(keyless.err, HasSubstr("an API key is needed"));
}

TEST_F(CliEndToEndTest, BadApiKeyFailsWithUnauthenticatedAndNoEvents) {
  const testing::CommandResult run =
      testing::RunCommand(Chat(true, {"list my agents"}, "ofk_000000000000_not-a-real-key"));
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_EQ(run.out, "");
  EXPECT_THAT(run.err, HasSubstr("error: UNAUTHENTICATED: "));
  EXPECT_THAT(run.err, HasSubstr("[API_KEY_INVALID]"));

  std::vector<std::string> without_key = Chat(false, {"hello"});
  without_key.erase(without_key.begin() + 4, without_key.begin() + 6);  // --api-key KEY
  const testing::CommandResult missing = testing::RunCommand(without_key);
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_THAT(missing.err, HasSubstr("an API key is needed"));
}

TEST_F(CliEndToEndTest, PipedOutputIsPlainLinesWithoutEscapes) {
  const testing::CommandResult run =
      testing::RunCommand(Chat(false, {"list my agents"}), "", {"TERM=xterm-256color"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_THAT(run.out, Not(HasSubstr("\033")));
  EXPECT_THAT(run.out, HasSubstr("· conversation "));
  EXPECT_THAT(run.out, HasSubstr("· thinking: "));
  EXPECT_THAT(run.out, HasSubstr("→ list_agents {}"));
  EXPECT_THAT(run.out, HasSubstr("← list_agents ok ("));
  EXPECT_THAT(run.out, HasSubstr("\nomniforge: "));
  EXPECT_THAT(run.out, HasSubstr("· done in "));
}

TEST_F(CliEndToEndTest, ATerminalGetsColourAndTheSpinnerUnlessNoColorIsSet) {
  const testing::CommandResult styled =
      testing::RunInTerminal(Chat(false, {"list my agents"}), {"TERM=xterm-256color"});
  ASSERT_EQ(styled.exit_code, 0) << styled.out;
  EXPECT_THAT(styled.out, HasSubstr("\033[1momniforge:\033[0m "));
  EXPECT_THAT(styled.out, HasSubstr("thinking: Reading what you asked"));
  EXPECT_THAT(styled.out, HasSubstr("\r\033[K")) << "the spinner line is cleared";

  const testing::CommandResult plain = testing::RunInTerminal(
      Chat(false, {"list my agents"}), {"TERM=xterm-256color", "NO_COLOR=1"});
  ASSERT_EQ(plain.exit_code, 0) << plain.out;
  EXPECT_THAT(plain.out, Not(HasSubstr("\033")));
  EXPECT_THAT(plain.out, HasSubstr("· thinking: Reading what you asked"));
}

TEST_F(CliEndToEndTest, OnATerminalTheSessionPromptsAndSaysHowToResume) {
  const testing::CommandResult run = testing::RunInTerminal(
      Chat(false, {}), {"TERM=xterm-256color", "NO_COLOR=1"}, "list my agents\n\x04");
  ASSERT_EQ(run.exit_code, 0) << run.out;
  EXPECT_THAT(run.out, HasSubstr("omniforge chat: one message per line"));
  EXPECT_THAT(run.out, HasSubstr("you> "));
  EXPECT_THAT(run.out, HasSubstr("· done in "));
  EXPECT_THAT(run.out, HasSubstr("resume it with: omniforge chat --conversation "));
}

TEST_F(CliEndToEndTest, ARiskyActionShowsWhatWhoAndTheRiskThenCancelKeepsEverything) {
  const testing::CommandResult seeded = testing::RunCommand(Cli(
      {"tools", "invoke", "create_agent",
       R"({"name": "invoice-chaser", "description": "Reminds customers about overdue invoices"})"}));
  ASSERT_EQ(seeded.exit_code, 0) << seeded.err;

  const testing::CommandResult asked =
      testing::RunCommand(Chat(false, {}), "delete invoice-chaser\ncancel\n");
  ASSERT_EQ(asked.exit_code, 0) << asked.err;
  EXPECT_THAT(asked.out, HasSubstr("⚠ waiting for your approval: "));
  EXPECT_THAT(asked.out, HasSubstr("    action:   delete_agent "));
  EXPECT_THAT(asked.out, HasSubstr("    affects:  invoice-chaser\n"));
  EXPECT_THAT(asked.out, HasSubstr("    risk:     high — "));
  EXPECT_THAT(asked.out, HasSubstr("; waiting for your answer\n"));

  const testing::CommandResult agents =
      testing::RunCommand(Cli({"tools", "invoke", "list_agents", "{}"}));
  ASSERT_EQ(agents.exit_code, 0) << agents.err;
  EXPECT_THAT(agents.out, HasSubstr("\"invoice-chaser\""));
}

TEST_F(CliEndToEndTest, ApproveAndRejectSendTheDecisionForExactlyThePreviewedAction) {
  const testing::CommandResult seeded = testing::RunCommand(
      Cli({"tools", "invoke", "create_agent", R"({"name": "old-reports", "description": "Old"})"}));
  ASSERT_EQ(seeded.exit_code, 0) << seeded.err;
  auto preview_of = [](const JsonTurns& turns) {
    const std::vector<json> previews = turns.Of("preview");
    return previews.empty() ? json::object() : previews.back();
  };
  const testing::CommandResult asked = testing::RunCommand(Chat(true, {"delete old-reports"}));
  ASSERT_EQ(asked.exit_code, 0) << asked.err;
  const JsonTurns first = ParseNdjson(asked.out);
  const json preview = preview_of(first);
  ASSERT_TRUE(preview.contains("action_id")) << asked.out;
  const std::string conversation = first.Of("session").at(0)["conversation_id"];
  const std::string action = preview["action_id"];

  // --reject drops it; the agent stays.
  const testing::CommandResult rejected =
      testing::RunCommand(Chat(false, {"--conversation", conversation, "--reject", action}));
  ASSERT_EQ(rejected.exit_code, 0) << rejected.err;
  EXPECT_THAT(rejected.out, HasSubstr("Nothing was changed"));
  EXPECT_THAT(testing::RunCommand(Cli({"tools", "invoke", "list_agents", "{}"})).out,
              HasSubstr("\"old-reports\""));

  // Previewed again, --approve with its id deletes it.
  const testing::CommandResult again =
      testing::RunCommand(Chat(true, {"--conversation", conversation, "delete old-reports"}));
  ASSERT_EQ(again.exit_code, 0) << again.err;
  const std::string second = preview_of(ParseNdjson(again.out))["action_id"];
  ASSERT_NE(second, action);
  // The rejected id approves nothing.
  const testing::CommandResult stale =
      testing::RunCommand(Chat(false, {"--conversation", conversation, "--approve", action}));
  ASSERT_EQ(stale.exit_code, 0) << stale.err;
  EXPECT_THAT(stale.out, HasSubstr("Nothing ran"));
  EXPECT_THAT(testing::RunCommand(Cli({"tools", "invoke", "list_agents", "{}"})).out,
              HasSubstr("\"old-reports\""));
  const testing::CommandResult approved =
      testing::RunCommand(Chat(false, {"--conversation", conversation, "--approve", second}));
  ASSERT_EQ(approved.exit_code, 0) << approved.err;
  EXPECT_THAT(approved.out, HasSubstr("delete_agent"));
  EXPECT_THAT(testing::RunCommand(Cli({"tools", "invoke", "list_agents", "{}"})).out,
              Not(HasSubstr("\"old-reports\"")));

  // Without a conversation the decision cannot name a preview: refused.
  EXPECT_EQ(testing::RunCommand(Chat(false, {"--approve", second})).exit_code, 2);
}

}  // namespace
}  // namespace omniforge
