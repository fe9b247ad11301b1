#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "libs/llm/testing/fake_provider.h"

namespace omniforge::llm::testing {
namespace {

using ::testing::HasSubstr;

TEST(ParseFakeScriptTest, ReadsEveryField) {
  const auto rules = ParseFakeScript(R"({"rules": [
    {"match": {"api": "anthropic", "operation": "summarize", "model": "m",
               "last_user_contains": "weather", "last_user_regex": "^hi",
               "tool_offered": "get_weather", "last_is_tool_result": true},
     "times": 2,
     "reply": {"text": "Hello",
               "tool_calls": [{"id": "call_1", "name": "get_weather",
                               "arguments": {"city": "Zürich", "days": [1, 2]}},
                              {"name": "get_time", "arguments": "{\"tz\": \"UTC\"}"}],
               "json": {"title": "x"},
               "usage": {"prompt": 10, "completion": 5, "cached": 2},
               "finish_reason": "length"},
     "fault": {"kind": "status", "status": 429, "retry_after": "3", "body": "slow down",
               "hang_ms": 5, "after_deltas": 2},
     "chunk_chars": 7, "first_byte_delay_ms": 11, "chunk_delay_ms": 13, "one_write": true},
    {}
  ]})");
  ASSERT_TRUE(rules.ok()) << rules.status();
  ASSERT_EQ(rules->size(), 2u);
  const FakeRule& rule = (*rules)[0];
  EXPECT_EQ(rule.match.api, "anthropic");
  EXPECT_EQ(rule.match.operation, "summarize");
  EXPECT_EQ(rule.match.model, "m");
  EXPECT_EQ(rule.match.last_user_contains, "weather");
  EXPECT_EQ(rule.match.last_user_regex, "^hi");
  EXPECT_EQ(rule.match.tool_offered, "get_weather");
  EXPECT_EQ(rule.match.last_is_tool_result, true);
  EXPECT_EQ(rule.times, 2);
  EXPECT_EQ(rule.reply.text, "Hello");
  ASSERT_EQ(rule.reply.tool_calls.size(), 2u);
  EXPECT_EQ(rule.reply.tool_calls[0].id, "call_1");
  EXPECT_EQ(rule.reply.tool_calls[0].name, "get_weather");
  // Objects are serialised compactly; strings are the JSON text verbatim.
  EXPECT_EQ(rule.reply.tool_calls[0].arguments_json, R"({"city":"Zürich","days":[1,2]})");
  EXPECT_EQ(rule.reply.tool_calls[1].id, "");
  EXPECT_EQ(rule.reply.tool_calls[1].arguments_json, R"({"tz": "UTC"})");
  EXPECT_EQ(rule.reply.json, R"({"title":"x"})");
  ASSERT_TRUE(rule.reply.usage.has_value());
  EXPECT_EQ(rule.reply.usage->prompt_tokens, 10);
  EXPECT_EQ(rule.reply.usage->completion_tokens, 5);
  EXPECT_EQ(rule.reply.usage->cached_tokens, 2);
  EXPECT_EQ(rule.reply.finish_reason, "length");
  EXPECT_EQ(rule.fault.kind, FakeFault::Kind::kStatus);
  EXPECT_EQ(rule.fault.status, 429);
  EXPECT_EQ(rule.fault.retry_after, "3");
  EXPECT_EQ(rule.fault.body, "slow down");
  EXPECT_EQ(rule.fault.hang_ms, 5);
  EXPECT_EQ(rule.fault.after_deltas, 2);
  EXPECT_EQ(rule.chunk_chars, 7);
  EXPECT_EQ(rule.first_byte_delay_ms, 11);
  EXPECT_EQ(rule.chunk_delay_ms, 13);
  EXPECT_TRUE(rule.one_write);

  const FakeRule& defaults = (*rules)[1];
  EXPECT_EQ(defaults.times, -1);
  EXPECT_EQ(defaults.fault.kind, FakeFault::Kind::kNone);
  EXPECT_EQ(defaults.chunk_chars, 4);
  EXPECT_FALSE(defaults.one_write);
  EXPECT_FALSE(defaults.reply.usage.has_value());
  EXPECT_FALSE(defaults.reply.json.has_value());
}

TEST(ParseFakeScriptTest, EveryFaultKindHasAName) {
  const auto rules = ParseFakeScript(R"({"rules": [
    {"fault": {"kind": "none"}}, {"fault": {"kind": "hang"}},
    {"fault": {"kind": "malformed_json"}}, {"fault": {"kind": "cut_stream"}},
    {"fault": {"kind": "invalid_structured_output"}}, {"fault": {"kind": "stream_error"}}]})");
  ASSERT_TRUE(rules.ok()) << rules.status();
  std::vector<FakeFault::Kind> kinds;
  for (const FakeRule& rule : *rules) kinds.push_back(rule.fault.kind);
  EXPECT_THAT(kinds, ::testing::ElementsAre(
                         FakeFault::Kind::kNone, FakeFault::Kind::kHang,
                         FakeFault::Kind::kMalformedJson, FakeFault::Kind::kCutStream,
                         FakeFault::Kind::kInvalidStructuredOutput, FakeFault::Kind::kStreamError));
}

TEST(ParseFakeScriptTest, AnEmptyScriptHasNoRules) {
  const auto rules = ParseFakeScript("{}");
  ASSERT_TRUE(rules.ok());
  EXPECT_TRUE(rules->empty());
}

TEST(ParseFakeScriptTest, RejectsMalformedScriptsNamingTheKey) {
  struct Case {
    const char* script;
    const char* message;
  };
  const Case cases[] = {
      {"not json", "not valid JSON"},
      {"[]", "<root>: must be an object"},
      {R"({"rule": []})", "<root>.rule: unknown key"},
      {R"({"rules": {}})", "rules: must be an array"},
      {R"({"rules": [{"match": {"last_user": "x"}}]})", "rules[0].match.last_user: unknown key"},
      {R"({"rules": [{}, {"times": "1"}]})", "rules[1].times: must be an integer"},
      {R"({"rules": [{"fault": {"kind": "explode"}}]})", "rules[0].fault.kind: must be one of"},
      {R"({"rules": [{"reply": {"tool_calls": [{"arguments": {}}]}}]})",
       "rules[0].reply.tool_calls[0].name: required"},
      {R"({"rules": [{"reply": {"usage": {"prompt": 1.5}}}]})",
       "rules[0].reply.usage.prompt: must be an integer"},
      {R"({"rules": [{"match": {"last_is_tool_result": "yes"}}]})",
       "rules[0].match.last_is_tool_result: must be true or false"},
      {R"({"rules": [{"chunk_chars": 99999999999}]})", "rules[0].chunk_chars: out of range"},
      {R"({"rules": [{"one_write": 1}]})", "rules[0].one_write: must be true or false"},
  };
  for (const Case& c : cases) {
    const auto rules = ParseFakeScript(c.script);
    EXPECT_EQ(rules.status().code(), absl::StatusCode::kInvalidArgument) << c.script;
    EXPECT_THAT(std::string(rules.status().message()), HasSubstr(c.message)) << c.script;
  }
}

TEST(ParseFakeScriptTest, ValuesAreCheckedWhenTheServerStarts) {
  const auto rules = ParseFakeScript(R"({"rules": [{"match": {"last_user_regex": "("}}]})");
  ASSERT_TRUE(rules.ok());
  const auto server = FakeLlmServer::Start(*rules);
  EXPECT_EQ(server.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(server.status().message()), HasSubstr("rule 0: bad last_user_regex"));

  // One write cannot be paced.
  const auto paced = ParseFakeScript(R"({"rules": [{"one_write": true, "chunk_delay_ms": 5}]})");
  ASSERT_TRUE(paced.ok());
  const auto refused = FakeLlmServer::Start(*paced);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(refused.status().message()),
              HasSubstr("one_write needs chunk_delay_ms 0"));
}

}  // namespace
}  // namespace omniforge::llm::testing
