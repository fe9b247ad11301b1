// The sandbox tools' logic on the in-memory store, at a fixed "now"
// (Tuesday 2026-11-24 10:00 in Europe/Paris, so "tomorrow" is 2026-11-25):
// the seed,
// contacts with two Johns, free slots, a booking that conflicts and the
// alternatives it proposes, drafts previewed then sent, and bad input
// refused with every problem named and nothing changed.
#include "services/sandbox/src/sandbox_tools.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "services/sandbox/src/memory_store.h"
#include "services/sandbox/src/sandbox_time.h"
#include "services/sandbox/tests/fixed_clock.h"

namespace omniforge::sandbox {
namespace {

using ::testing::HasSubstr;
using Json = nlohmann::json;

core::TimePoint Parse(const std::string& text) { return *ParseRfc3339("t", text); }

class SandboxToolsTest : public ::testing::Test {
 protected:
  SandboxToolsTest() {
    absl::LoadTimeZone("Europe/Paris", &zone_);
    tools_ = std::make_unique<SandboxTools>(store_, clock_, zone_, "acme", *ParseDomains("all"),
                                            [this] { return "id-" + std::to_string(++next_id_); });
  }

  // The structured result of a call that must succeed.
  Json Ok(const std::string& tool, const Json& args) {
    auto result = tools_->Call(tool, args);
    EXPECT_TRUE(result.ok()) << result.status();
    if (!result.ok()) return Json();
    EXPECT_FALSE(result->is_error) << result->text;
    EXPECT_EQ(Json::parse(result->text), result->structured);
    return result->structured;
  }

  // The error object of a call that must fail as a tool error.
  Json Error(const std::string& tool, const Json& args) {
    auto result = tools_->Call(tool, args);
    EXPECT_TRUE(result.ok()) << result.status();
    if (!result.ok()) return Json();
    EXPECT_TRUE(result->is_error) << result->text;
    EXPECT_EQ(result->text, result->structured["error"]["message"]);
    return result->structured["error"];
  }

  absl::TimeZone zone_;
  testing::FixedClock clock_{Parse("2026-11-24T10:00:00+01:00")};
  MemorySandboxStore store_;
  int next_id_ = 0;
  std::unique_ptr<SandboxTools> tools_;
};

TEST_F(SandboxToolsTest, ListsEachDomainsToolsWithSchemasAndHints) {
  std::map<std::string, Json> tools;
  for (const Json& tool : tools_->ListTools()) tools[tool["name"]] = tool;
  ASSERT_EQ(tools.size(), 11u);
  EXPECT_EQ(tools["find_contacts"]["inputSchema"]["required"], Json::array({"query"}));
  EXPECT_TRUE(tools["find_contacts"]["annotations"]["readOnlyHint"]);
  EXPECT_TRUE(tools["find_free_slots"]["annotations"]["readOnlyHint"]);
  EXPECT_FALSE(tools["create_event"]["annotations"]["readOnlyHint"]);
  EXPECT_FALSE(tools["create_event"]["annotations"]["destructiveHint"]);
  EXPECT_FALSE(tools["send_message"]["annotations"]["destructiveHint"]);
  EXPECT_TRUE(tools["delete_event"]["annotations"]["destructiveHint"]);
  EXPECT_EQ(tools["create_event"]["inputSchema"]["additionalProperties"], false);

  SandboxTools calendar(store_, clock_, zone_, "acme", *ParseDomains("calendar"));
  EXPECT_EQ(calendar.ListTools().size(), 4u);
  EXPECT_FALSE(calendar.Call("find_contacts", {{"query", "x"}}).ok());
  EXPECT_FALSE(ParseDomains("fax").has_value());
}

TEST_F(SandboxToolsTest, AFirstNameThatTwoContactsShareAsksWhichOne) {
  const Json johns = Ok("find_contacts", {{"query", "john"}});
  ASSERT_EQ(johns["matches"].size(), 2u);
  EXPECT_EQ(johns["matches"][0]["name"], "John Doe");
  EXPECT_EQ(johns["matches"][1]["name"], "John Smith");
  EXPECT_TRUE(johns["ambiguous"]);
  EXPECT_EQ(johns["question"],
            "Which john do you mean: John Doe (john.doe@example.net) or John Smith "
            "(john.smith@example.com)?");
  EXPECT_EQ(johns["confidence"], 0.5);

  const Json smith = Ok("find_contacts", {{"query", "John Smith"}});
  ASSERT_EQ(smith["matches"].size(), 1u);
  EXPECT_EQ(smith["matches"][0]["email"], "john.smith@example.com");
  EXPECT_FALSE(smith["ambiguous"]);
  EXPECT_FALSE(smith.contains("question"));
  EXPECT_EQ(Ok("find_contacts", {{"query", "sarah"}})["matches"][0]["email"],
            "sarah.chen@example.com");
  EXPECT_EQ(Ok("find_contacts", {{"query", "nobody"}})["matches"].size(), 0u);
}

TEST_F(SandboxToolsTest, AddedContactsAreFoundAndEmailsStayUnique) {
  const Json added =
      Ok("add_contact", {{"name", "Ana Lima"}, {"email", "Ana@Example.com"}, {"phone", "+55"}});
  EXPECT_EQ(added["contact"]["email"], "ana@example.com");
  EXPECT_EQ(Ok("find_contacts", {{"query", "ana"}})["matches"].size(), 1u);
  EXPECT_EQ(Ok("list_contacts", Json::object())["total"], 6);
  EXPECT_EQ(Error("add_contact", {{"name", "Ana"}, {"email", "ana@example.com"}})["code"],
            "already_exists");
  EXPECT_EQ(Error("add_contact", {{"name", "Bad"}, {"email", "not-an-address"}})["code"],
            "invalid_argument");
}

TEST_F(SandboxToolsTest, FreeSlotsAvoidYourEventsAndTheAttendeesBusyTime) {
  const Json free =
      Ok("find_free_slots", {{"attendees", {"sarah.chen@example.com", "john.smith@example.com"}},
                             {"duration_minutes", 30},
                             {"window_start", "2026-11-25T12:00:00+01:00"},
                             {"window_end", "2026-11-25T18:00:00+01:00"}});
  // John Smith 13:00-14:00, the design review 14:00-15:00, Sarah 15:00-15:30.
  std::vector<std::string> starts;
  for (const Json& slot : free["slots"]) starts.push_back(slot["start"]);
  EXPECT_EQ(starts,
            (std::vector<std::string>{"2026-11-25T12:00:00+01:00", "2026-11-25T12:30:00+01:00",
                                      "2026-11-25T15:30:00+01:00", "2026-11-25T16:00:00+01:00",
                                      "2026-11-25T16:30:00+01:00"}));
  EXPECT_EQ(free["busy"].size(), 3u);
  EXPECT_EQ(free["time_zone"], "Europe/Paris");
  EXPECT_EQ(free["attendees_without_calendar"], Json::array());

  const Json stranger = Ok("find_free_slots", {{"attendees", {"who@else.example"}},
                                               {"duration_minutes", 60},
                                               {"window_start", "2026-11-25T14:00:00+01:00"},
                                               {"window_end", "2026-11-25T17:00:00+01:00"}});
  EXPECT_EQ(stranger["attendees_without_calendar"], Json::array({"who@else.example"}));
  EXPECT_THAT(stranger["limitations"][0].get<std::string>(), HasSubstr("who@else.example"));
  EXPECT_EQ(stranger["slots"][0]["start"], "2026-11-25T15:00:00+01:00");
}

TEST_F(SandboxToolsTest, FreeSlotsAreWithinWorkingHoursOnWeekdays) {
  // Friday to Monday noon: nothing before 09:00, after 18:00 or at the weekend.
  const Json free = Ok("find_free_slots", {{"duration_minutes", 60},
                                           {"window_start", "2026-11-27T00:00:00+01:00"},
                                           {"window_end", "2026-11-30T12:00:00+01:00"},
                                           {"max_results", 20}});
  std::vector<std::string> starts;
  for (const Json& slot : free["slots"]) starts.push_back(slot["start"]);
  ASSERT_EQ(starts.size(), 12u) << free.dump();
  EXPECT_EQ(starts.front(), "2026-11-27T09:00:00+01:00");
  EXPECT_EQ(starts[8], "2026-11-27T17:00:00+01:00");
  EXPECT_EQ(starts[9], "2026-11-30T09:00:00+01:00");
  EXPECT_EQ(starts.back(), "2026-11-30T11:00:00+01:00");
  // A weekend alone has none.
  EXPECT_EQ(Ok("find_free_slots", {{"duration_minutes", 30},
                                   {"window_start", "2026-11-28T00:00:00+01:00"},
                                   {"window_end", "2026-11-30T00:00:00+01:00"}})["slots"]
                .size(),
            0u);
}

TEST_F(SandboxToolsTest, AlternativesSkipTheWeekend) {
  const Json day = {{"title", "Offsite"},
                    {"start", "2026-11-27T09:00:00+01:00"},
                    {"end", "2026-11-27T18:00:00+01:00"}};
  Ok("create_event", day);
  const Json error = Error("create_event", day);
  std::vector<std::string> starts;
  for (const Json& slot : error["alternatives"]) starts.push_back(slot["start"]);
  EXPECT_EQ(starts,
            (std::vector<std::string>{"2026-11-30T09:00:00+01:00", "2026-12-01T09:00:00+01:00",
                                      "2026-12-02T09:00:00+01:00"}));
}

TEST_F(SandboxToolsTest, ABookingThatConflictsIsRefusedWithAlternatives) {
  const Json args = {{"title", "Call with Sarah and John"},
                     {"start", "2026-11-25T14:00:00+01:00"},
                     {"end", "2026-11-25T14:30:00+01:00"},
                     {"attendees", {"sarah.chen@example.com", "john.smith@example.com"}}};
  const Json error = Error("create_event", args);
  EXPECT_EQ(error["code"], "conflict");
  ASSERT_EQ(error["conflicts"]["events"].size(), 1u);
  EXPECT_EQ(error["conflicts"]["events"][0]["title"], "Design review");
  EXPECT_EQ(error["conflicts"]["busy"].size(), 0u);
  std::vector<std::string> starts;
  for (const Json& slot : error["alternatives"]) starts.push_back(slot["start"]);
  EXPECT_EQ(starts,
            (std::vector<std::string>{"2026-11-25T12:30:00+01:00", "2026-11-25T15:30:00+01:00",
                                      "2026-11-25T16:00:00+01:00"}));
  EXPECT_THAT(error["message"].get<std::string>(), HasSubstr("Design review"));
  EXPECT_THAT(error["message"].get<std::string>(), HasSubstr("2026-11-25T15:30:00+01:00"));
  // Nothing was booked.
  const Json day = Ok("list_events", {{"start", "2026-11-25T00:00:00+01:00"},
                                      {"end", "2026-11-26T00:00:00+01:00"}});
  EXPECT_EQ(day["events"].size(), 2u);

  Json moved = args;
  moved["start"] = error["alternatives"][1]["start"];
  moved["end"] = error["alternatives"][1]["end"];
  const Json booked = Ok("create_event", moved);
  EXPECT_EQ(booked["event"]["start"], "2026-11-25T15:30:00+01:00");
  EXPECT_EQ(booked["event"]["attendees"].size(), 2u);
  // Now that time is taken too.
  EXPECT_EQ(Error("create_event", moved)["code"], "conflict");
}

TEST_F(SandboxToolsTest, AnAttendeesBusyTimeIsAConflictToo) {
  const Json error = Error("create_event", {{"title", "Sync"},
                                            {"start", "2026-11-25T13:00:00+01:00"},
                                            {"end", "2026-11-25T13:30:00+01:00"},
                                            {"attendees", {"john.smith@example.com"}}});
  ASSERT_EQ(error["conflicts"]["busy"].size(), 1u);
  EXPECT_EQ(error["conflicts"]["busy"][0]["who"], "john.smith@example.com");
  // The nearest free half hours before it (14:00 is the design review).
  std::vector<std::string> starts;
  for (const Json& slot : error["alternatives"]) starts.push_back(slot["start"]);
  EXPECT_EQ(starts,
            (std::vector<std::string>{"2026-11-25T11:30:00+01:00", "2026-11-25T12:00:00+01:00",
                                      "2026-11-25T12:30:00+01:00"}));
}

TEST_F(SandboxToolsTest, EventsAreDeletedById) {
  const Json deleted = Ok("delete_event", {{"event_id", "event-design-review"}});
  EXPECT_EQ(deleted["deleted"]["title"], "Design review");
  EXPECT_EQ(Error("delete_event", {{"event_id", "event-design-review"}})["code"], "not_found");
}

TEST_F(SandboxToolsTest, ADraftIsSentWithItsOwnContentOnce) {
  const Json content = {{"to", {"sarah.chen@example.com"}},
                        {"subject", "Tomorrow"},
                        {"body", "Shall we move the review?"}};
  const Json draft = Ok("draft_message", content);
  const std::string id = draft["draft_id"];
  EXPECT_THAT(draft["preview"].get<std::string>(),
              HasSubstr("To: sarah.chen@example.com\nSubject: Tomorrow\n\nShall"));
  EXPECT_EQ(Ok("list_drafts", Json::object())["drafts"].size(), 1u);

  // The draft must say what the call says (the call is what the user approves).
  Json changed = content;
  changed["draft_id"] = id;
  changed["body"] = "Something else";
  EXPECT_EQ(Error("send_message", changed)["code"], "failed_precondition");
  changed["body"] = content["body"];
  changed["to"] = {"sarah.chen@example.com", "john.smith@example.com"};
  EXPECT_EQ(Error("send_message", changed)["code"], "failed_precondition");
  EXPECT_EQ(Error("send_message", {{"draft_id", id}})["code"], "invalid_argument");

  Json by_draft = content;
  by_draft["draft_id"] = id;
  const Json sent = Ok("send_message", by_draft);
  EXPECT_EQ(sent["message"]["id"], id);
  EXPECT_EQ(sent["message"]["folder"], "sent");
  EXPECT_EQ(sent["message"]["sent_at"], "2026-11-24T10:00:00+01:00");
  EXPECT_EQ(Ok("list_drafts", Json::object())["drafts"].size(), 0u);
  EXPECT_EQ(Error("send_message", by_draft)["code"], "failed_precondition");
  by_draft["draft_id"] = "nope";
  EXPECT_EQ(Error("send_message", by_draft)["code"], "not_found");

  const Json found = Ok("search_messages", {{"query", "MOVE THE REVIEW"}});
  ASSERT_EQ(found["messages"].size(), 1u);
  EXPECT_EQ(found["messages"][0]["id"], id);
}

TEST_F(SandboxToolsTest, AMessageIsSentFromItsContentWithoutADraft) {
  const Json sent =
      Ok("send_message",
         {{"to", {"john.doe@example.net"}}, {"subject", "Hello"}, {"body", "Hi John"}});
  EXPECT_EQ(sent["message"]["to"], Json::array({"john.doe@example.net"}));
  EXPECT_EQ(sent["message"]["folder"], "sent");
  EXPECT_EQ(Ok("list_drafts", Json::object())["drafts"].size(), 0u);
  EXPECT_EQ(
      Error("send_message", {{"to", {"john.doe@example.net"}}, {"subject", "No body"}})["code"],
      "invalid_argument");
  // The seeded mailbox is searchable.
  EXPECT_EQ(Ok("search_messages", {{"query", "contract"}})["messages"][0]["from"],
            "john.smith@example.com");
}

TEST_F(SandboxToolsTest, MailGoesOnlyToContacts) {
  const Json draft =
      Ok("draft_message",
         {{"to", {"sarah.chen@example.com", "x@y.example"}}, {"subject", "Hi"}, {"body", "Hello"}});
  EXPECT_EQ(draft["limitations"], Json::array({"not in your contacts: x@y.example"}));
  const Json refused = Error(
      "send_message",
      {{"to", {"sarah.chen@example.com", "x@y.example"}}, {"subject", "Hi"}, {"body", "Hello"}});
  EXPECT_EQ(refused["code"], "failed_precondition");
  EXPECT_EQ(refused["outside_contacts"], Json::array({"x@y.example"}));
  EXPECT_EQ(Ok("search_messages", {{"query", "Hello"}})["messages"].size(), 0u);

  Ok("add_contact", {{"name", "X"}, {"email", "x@y.example"}});
  Ok("send_message",
     {{"to", {"sarah.chen@example.com", "x@y.example"}}, {"subject", "Hi"}, {"body", "Hello"}});
}

TEST(StoreFailureTest, OnlyAnUnreachableOrSlowDatabaseIsUnavailable) {
  auto code = [](const absl::Status& status) {
    return StoreFailure(status).structured["error"]["code"].get<std::string>();
  };
  EXPECT_EQ(code(absl::UnavailableError("connection refused")), "unavailable");
  EXPECT_EQ(code(absl::DeadlineExceededError("statement timeout")), "unavailable");
  EXPECT_EQ(code(absl::InternalError("column does not exist")), "internal");
  EXPECT_EQ(code(absl::PermissionDeniedError("permission denied for schema")), "internal");
  EXPECT_EQ(code(absl::NotFoundError("no event")), "not_found");
}

TEST_F(SandboxToolsTest, BadInputNamesEveryProblemAndChangesNothing) {
  const Json error = Error("create_event", {{"title", ""},
                                            {"start", "tomorrow at two"},
                                            {"end", "2026-11-25T14:30:00"},
                                            {"attendees", {"Sarah"}}});
  EXPECT_EQ(error["code"], "invalid_argument");
  const std::string message = error["message"];
  EXPECT_THAT(message, HasSubstr("title: must not be blank"));
  EXPECT_THAT(message, HasSubstr("start: expected an RFC 3339 time"));
  EXPECT_THAT(message, HasSubstr("end: expected an RFC 3339 time"));
  EXPECT_THAT(message, HasSubstr("\"Sarah\" is not an email address"));

  EXPECT_THAT(Error("create_event", {{"title", "x"},
                                     {"start", "2026-11-25T15:00:00+01:00"},
                                     {"end", "2026-11-25T14:00:00+01:00"}})["message"]
                  .get<std::string>(),
              HasSubstr("end: must be after start"));
  EXPECT_THAT(Error("create_event", {{"title", "x"},
                                     {"start", "2026-11-23T15:00:00+01:00"},
                                     {"end", "2026-11-23T16:00:00+01:00"}})["message"]
                  .get<std::string>(),
              HasSubstr("start: in the past"));
  EXPECT_THAT(Error("draft_message",
                    {{"to", {"a@b.example"}}, {"subject", std::string(301, 's')}})["message"]
                  .get<std::string>(),
              HasSubstr("subject: at most 300 bytes"));
  EXPECT_THAT(Error("list_events", {{"start", "2026-11-25T00:00:00Z"}, {"color", "red"}})["message"]
                  .get<std::string>(),
              HasSubstr("unknown argument(s) color"));
  EXPECT_EQ(Error("find_free_slots", {{"window_start", 5}})["code"], "invalid_argument");
  EXPECT_EQ(Error("find_contacts", Json::array())["code"], "invalid_argument");
  EXPECT_EQ(Ok("list_drafts", Json::object())["drafts"].size(), 0u);
}

TEST_F(SandboxToolsTest, TheSeedIsPlacedRelativeToTodayAndStoredOnce) {
  const Json day = Ok("list_events", {{"start", "2026-11-25T00:00:00+01:00"},
                                      {"end", "2026-11-26T00:00:00+01:00"}});
  ASSERT_EQ(day["events"].size(), 2u);
  EXPECT_EQ(day["events"][1]["start"], "2026-11-25T14:00:00+01:00");
  // A day later, a new tenant's seed moves with the clock; acme's stays.
  clock_.Set(Parse("2026-11-25T10:00:00+01:00"));
  SandboxTools other(store_, clock_, zone_, "globex", *ParseDomains("calendar"));
  const Json later = other
                         .Call("list_events", {{"start", "2026-11-26T00:00:00+01:00"},
                                               {"end", "2026-11-27T00:00:00+01:00"}})
                         ->structured;
  EXPECT_EQ(later["events"][1]["start"], "2026-11-26T14:00:00+01:00");
  EXPECT_EQ(Ok("list_events", {{"start", "2026-11-26T00:00:00+01:00"},
                               {"end", "2026-11-27T00:00:00+01:00"}})["events"]
                .size(),
            1u);  // acme's 1:1 with Priya, seeded the day before
}

}  // namespace
}  // namespace omniforge::sandbox
