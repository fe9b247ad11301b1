#include "libs/llm/sse.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace omniforge::llm {

// Readable failures; found by gtest through argument-dependent lookup.
void PrintTo(const SseEvent& event, std::ostream* os) {
  *os << "{" << event.type << ", \"" << event.data << "\"}";
}

namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

std::vector<SseEvent> ParseChunks(const std::vector<std::string>& chunks) {
  std::vector<SseEvent> events;
  SseParser parser([&](const SseEvent& event) {
    events.push_back(event);
    return true;
  });
  for (const std::string& chunk : chunks) parser.Feed(chunk);
  return events;
}

std::vector<SseEvent> Parse(const std::string& stream) { return ParseChunks({stream}); }

// Exercises every rule at once: line ending styles, comments, event types,
// multi-line data, ignored fields, and an event without data.
constexpr char kSample[] =
    ": keep-alive comment\r\n"
    "event: message_start\r\n"
    "data: {\"type\":\"message_start\"}\r\n"
    "\r\n"
    "data: first line\n"
    "data:second line\n"
    "id: 7\n"
    "retry: 1000\n"
    "\n"
    "event: ping\r"
    "\r"
    "data: after a type-only event\r"
    "\r"
    "event: done\r\n"
    "data: [DONE]\r\n"
    "\r\n";

TEST(SseParserTest, ParsesSample) {
  EXPECT_THAT(Parse(kSample), ElementsAre(SseEvent{"message_start", "{\"type\":\"message_start\"}"},
                                          SseEvent{"message", "first line\nsecond line"},
                                          SseEvent{"message", "after a type-only event"},
                                          SseEvent{"done", "[DONE]"}));
}

TEST(SseParserTest, SplitAtEveryBytePositionGivesIdenticalEvents) {
  const std::string stream = kSample;
  const std::vector<SseEvent> whole = Parse(stream);
  for (size_t cut = 0; cut <= stream.size(); ++cut) {
    EXPECT_EQ(ParseChunks({stream.substr(0, cut), stream.substr(cut)}), whole) << "cut at " << cut;
  }
  std::vector<std::string> bytes;
  for (char c : stream) bytes.emplace_back(1, c);
  EXPECT_EQ(ParseChunks(bytes), whole);
}

TEST(SseParserTest, LfCrlfAndCrLineEndingsAreEquivalent) {
  const std::vector<SseEvent> expected = {{"delta", "a\nb"}, {"message", "c"}};
  EXPECT_EQ(Parse("event: delta\ndata: a\ndata: b\n\ndata: c\n\n"), expected);
  EXPECT_EQ(Parse("event: delta\r\ndata: a\r\ndata: b\r\n\r\ndata: c\r\n\r\n"), expected);
  EXPECT_EQ(Parse("event: delta\rdata: a\rdata: b\r\rdata: c\r\r"), expected);
}

TEST(SseParserTest, LfAfterCrInTheNextChunkEndsNoSecondLine) {
  // Were the LF read as an empty line, "a" and "b" would be two events.
  EXPECT_THAT(ParseChunks({"data: a\r", "\ndata: b\r\n\r\n"}),
              ElementsAre(SseEvent{"message", "a\nb"}));
}

TEST(SseParserTest, FieldValueRules) {
  EXPECT_THAT(Parse("data:  two spaces\n\n"), ElementsAre(SseEvent{"message", " two spaces"}));
  EXPECT_THAT(Parse("data:no space\n\n"), ElementsAre(SseEvent{"message", "no space"}));
  EXPECT_THAT(Parse("data: a: b\n\n"), ElementsAre(SseEvent{"message", "a: b"}));
  // A bare "data" line is a data field with an empty value.
  EXPECT_THAT(Parse("data\ndata: x\n\n"), ElementsAre(SseEvent{"message", "\nx"}));
  EXPECT_THAT(Parse("data:\n\n"), ElementsAre(SseEvent{"message", ""}));
}

TEST(SseParserTest, CommentsAndUnknownFieldsAreIgnored) {
  EXPECT_THAT(Parse(":comment\n: another\nfoo: bar\ndata: x\n:trailing\n\n"),
              ElementsAre(SseEvent{"message", "x"}));
}

TEST(SseParserTest, EventWithoutDataIsNotDispatchedAndItsTypeDoesNotLeak) {
  EXPECT_THAT(Parse("event: ping\n\ndata: x\n\n"), ElementsAre(SseEvent{"message", "x"}));
  EXPECT_THAT(Parse(": only a comment\n\n"), IsEmpty());
}

TEST(SseParserTest, IncompleteEventAtTheEndIsNotDispatched) {
  EXPECT_THAT(Parse("data: complete\n\ndata: cut"), ElementsAre(SseEvent{"message", "complete"}));
  EXPECT_THAT(Parse("data: complete\n\ndata: no blank line\n"),
              ElementsAre(SseEvent{"message", "complete"}));
}

TEST(SseParserTest, LeadingByteOrderMarkIsSkipped) {
  EXPECT_THAT(ParseChunks({"\xEF\xBB",
                           "\xBF"
                           "event: e\ndata: x\n\n"}),
              ElementsAre(SseEvent{"e", "x"}));
}

TEST(SseParserTest, CallbackReturningFalseStopsTheParser) {
  std::vector<std::string> seen;
  SseParser parser([&](const SseEvent& event) {
    seen.push_back(event.data);
    return false;
  });
  EXPECT_FALSE(parser.Feed("data: 1\n\ndata: 2\n\n"));
  EXPECT_FALSE(parser.Feed("data: 3\n\n"));
  EXPECT_THAT(seen, ElementsAre("1"));
}

TEST(SseParserTest, LastEventIdIsTheIdOfTheLastDispatchedEvent) {
  std::vector<std::string> ids_seen_in_callback;
  SseParser parser([&](const SseEvent&) {
    ids_seen_in_callback.push_back(parser.last_event_id());
    return true;
  });
  EXPECT_EQ(parser.last_event_id(), "");
  EXPECT_EQ(parser.retry_ms(), -1);
  parser.Feed("id: a1\ndata: x\n\ndata: y\n\n");
  // An event without an id keeps the last one.
  EXPECT_THAT(ids_seen_in_callback, ElementsAre("a1", "a1"));
  // An id on an event without data (a resumption point) counts too.
  parser.Feed("id: p2\ndata: \n\n");
  EXPECT_EQ(parser.last_event_id(), "p2");
  // The id of an event cut off before its blank line was never received.
  parser.Feed("id: b3\ndata: z\n");
  EXPECT_EQ(parser.last_event_id(), "p2");
  parser.Feed("\n");
  EXPECT_EQ(parser.last_event_id(), "b3");
  // An empty id resets it; an id containing NUL is ignored.
  parser.Feed("id\ndata: w\n\n");
  EXPECT_EQ(parser.last_event_id(), "");
  parser.Feed(std::string("id: bad\0id\ndata: v\n\n", 20));
  EXPECT_EQ(parser.last_event_id(), "");
}

TEST(SseParserTest, RetryTakesOnlyDigits) {
  SseParser parser([](const SseEvent&) { return true; });
  parser.Feed("retry: 1500\n\n");
  EXPECT_EQ(parser.retry_ms(), 1500);
  parser.Feed("retry: 2s\nretry: -1\nretry:\n\n");
  EXPECT_EQ(parser.retry_ms(), 1500);
  parser.Feed("retry: 99999999999999\n\n");
  EXPECT_EQ(parser.retry_ms(), 3'600'000);
}

}  // namespace
}  // namespace omniforge::llm
