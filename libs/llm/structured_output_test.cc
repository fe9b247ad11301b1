#include "libs/llm/structured_output.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "libs/llm/client_test_fakes.h"

namespace omniforge::llm {
namespace {

using ::testing::HasSubstr;

constexpr char kEntitiesSchema[] = R"({
  "type": "object",
  "properties": {
    "entities": {
      "type": "array",
      "items": {
        "type": "object",
        "properties": {
          "name": {"type": "string"},
          "type": {"enum": ["person", "place"]},
          "confidence": {"type": "number"},
          "mentions": {"type": "integer"}
        },
        "required": ["name", "type"],
        "additionalProperties": false
      }
    },
    "note": {"type": ["string", "null"]}
  },
  "required": ["entities"]
})";

std::string ErrorOf(std::string_view json, std::string_view schema = kEntitiesSchema) {
  const absl::Status status = ValidateJsonAgainstSchema(json, schema);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << json;
  return std::string(status.message());
}

TEST(ValidateJsonTest, AcceptsAMatchingDocument) {
  EXPECT_TRUE(ValidateJsonAgainstSchema(
                  R"({"entities":[{"name":"Ada","type":"person","confidence":0.9,"mentions":2}],
                      "note":null})",
                  kEntitiesSchema)
                  .ok());
  EXPECT_TRUE(ValidateJsonAgainstSchema(R"({"entities":[],"note":"x"})", kEntitiesSchema).ok());
}

// A model's output nested past the limit is refused before the validator
// (recursive) walks it.
TEST(ValidateJsonTest, OutputNestedTooDeepIsRefusedBeforeItIsWalked) {
  const std::string deep =
      R"({"entities":[],"note":)" + std::string(50000, '[') + std::string(50000, ']') + "}";
  EXPECT_EQ(ErrorOf(deep), "$: JSON nested more than 64 levels deep (the limit)");
}

TEST(ValidateJsonTest, EnumMismatchNamesThePathAndTheOptions) {
  EXPECT_EQ(ErrorOf(R"({"entities":[{"name":"Ada","type":"person"},{"name":"B","type":"foo"}]})"),
            R"($.entities[1].type: "foo" is not one of ["person","place"])");
}

TEST(ValidateJsonTest, ShortenedValuesAreCutBetweenCharacters) {
  // Shown as JSON text, the value's "é" would straddle the 80-byte cut.
  const std::string value = std::string(78, 'a') + "\u00e9zzz";
  EXPECT_EQ(
      ErrorOf(R"({"entities":[{"name":"Ada","type":")" + value + R"("}]})"),
      "$.entities[0].type: \"" + std::string(78, 'a') + R"(... is not one of ["person","place"])");
}

TEST(ValidateJsonTest, MissingRequiredAndWrongTypes) {
  EXPECT_EQ(ErrorOf(R"({"entity":[]})"), R"($: missing required property "entities")");
  EXPECT_EQ(ErrorOf(R"({"entities":{}})"), "$.entities: expected array, got object");
  EXPECT_EQ(ErrorOf(R"({"entities":[{"type":"place"}]})"),
            R"($.entities[0]: missing required property "name")");
  EXPECT_EQ(ErrorOf(R"({"entities":[],"note":5})"), "$.note: expected string or null, got integer");
  EXPECT_EQ(ErrorOf(R"([1])"), "$: expected object, got array");
}

TEST(ValidateJsonTest, IntegerAcceptsWholeFloatsOnly) {
  EXPECT_TRUE(ValidateJsonAgainstSchema(
                  R"({"entities":[{"name":"a","type":"place","mentions":2.0}]})", kEntitiesSchema)
                  .ok());
  EXPECT_EQ(ErrorOf(R"({"entities":[{"name":"a","type":"place","mentions":2.5}]})"),
            "$.entities[0].mentions: expected integer, got number");
  EXPECT_TRUE(ValidateJsonAgainstSchema(
                  R"({"entities":[{"name":"a","type":"place","confidence":1}]})", kEntitiesSchema)
                  .ok());
}

TEST(ValidateJsonTest, AdditionalPropertiesFalseRejectsExtras) {
  EXPECT_EQ(ErrorOf(R"({"entities":[{"name":"a","type":"place","age":3}]})"),
            R"($.entities[0]: unexpected property "age")");
  // Not set at the top level: extras are fine there.
  EXPECT_TRUE(ValidateJsonAgainstSchema(R"({"entities":[],"extra":1})", kEntitiesSchema).ok());
}

TEST(ValidateJsonTest, AdditionalPropertiesSchemaAppliesToExtras) {
  constexpr char kSchema[] = R"({"type":"object","additionalProperties":{"type":"integer"}})";
  EXPECT_TRUE(ValidateJsonAgainstSchema(R"({"a":1,"b":2})", kSchema).ok());
  EXPECT_EQ(ErrorOf(R"({"a":1,"odd key":"x"})", kSchema),
            R"($["odd key"]: expected integer, got string)");
}

TEST(ValidateJsonTest, ReportsSeveralProblemsAtOnce) {
  const std::string message = ErrorOf(R"({"entities":[{"name":1,"type":"x"}]})");
  EXPECT_THAT(message, HasSubstr("$.entities[0].name: expected string, got integer"));
  EXPECT_THAT(message, HasSubstr(R"($.entities[0].type: "x" is not one of)"));
}

TEST(ValidateJsonTest, AnyOfConstAndBooleanSchemas) {
  constexpr char kSchema[] = R"({"anyOf":[{"type":"string"},{"const":42}]})";
  EXPECT_TRUE(ValidateJsonAgainstSchema(R"("x")", kSchema).ok());
  EXPECT_TRUE(ValidateJsonAgainstSchema("42", kSchema).ok());
  EXPECT_EQ(ErrorOf("41", kSchema), "$: 41 matches none of the anyOf alternatives");
  EXPECT_TRUE(ValidateJsonAgainstSchema("[1]", "true").ok());
  EXPECT_EQ(ErrorOf(R"({"a":1})", R"({"properties":{"a":false}})"),
            "$.a: no value is allowed here");
}

TEST(ValidateJsonTest, RejectsTextThatIsNotJsonAndBadSchemas) {
  EXPECT_THAT(ErrorOf("{not json"), HasSubstr("$: not valid JSON"));
  EXPECT_THAT(ErrorOf("{}", "{oops"), HasSubstr("schema"));
  EXPECT_THAT(ErrorOf("{}", "[1]"), HasSubstr("schema"));
}

TEST(StripJsonFenceTest, StripsOnlyAWholeFence) {
  EXPECT_EQ(StripJsonFence("```json\n{\"a\":1}\n```"), "{\"a\":1}");
  EXPECT_EQ(StripJsonFence("  ```\n[1]\n```\n"), "[1]");
  EXPECT_EQ(StripJsonFence(" {\"a\":1} \n"), "{\"a\":1}");
  EXPECT_EQ(StripJsonFence("Here: ```json\n{}\n```"), "Here: ```json\n{}\n```");
}

class CompleteStructuredTest : public ::testing::Test {
 protected:
  ChatRequest Request() {
    ChatRequest request;
    request.messages.push_back(ChatMessage{.role = Role::kUser, .content = "find entities"});
    request.response_format = ResponseFormat{.name = "entities", .schema = kEntitiesSchema};
    return request;
  }

  FakeClock clock_;
  FakeChatModel model_{&clock_};
};

TEST_F(CompleteStructuredTest, ValidAnswerIsReturnedAsIs) {
  model_.PushAnswer("```json\n{\"entities\":[]}\n```");
  absl::StatusOr<StructuredResult> result = CompleteStructured(model_, Request(), {});
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->json, R"({"entities":[]})");
  EXPECT_FALSE(result->repaired);
  EXPECT_EQ(model_.calls(), 1u);
}

TEST_F(CompleteStructuredTest, InvalidAnswerIsRepairedOnce) {
  model_.PushAnswer(R"({"entities":[{"name":"Ada","type":"human"}]})",
                    {.prompt_tokens = 10, .completion_tokens = 5, .cached_tokens = 0});
  model_.PushAnswer(R"({"entities":[{"name":"Ada","type":"person"}]})",
                    {.prompt_tokens = 30, .completion_tokens = 6, .cached_tokens = 4});
  absl::StatusOr<StructuredResult> result = CompleteStructured(model_, Request(), {});
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_TRUE(result->repaired);
  EXPECT_EQ(result->json, R"({"entities":[{"name":"Ada","type":"person"}]})");
  EXPECT_EQ(result->response.usage,
            (TokenUsage{.prompt_tokens = 40, .completion_tokens = 11, .cached_tokens = 4}));

  const std::vector<ChatRequest> requests = model_.requests();
  ASSERT_EQ(requests.size(), 2u);
  const std::vector<ChatMessage>& messages = requests[1].messages;
  ASSERT_EQ(messages.size(), 3u);
  EXPECT_EQ(messages[0], requests[0].messages[0]);
  EXPECT_EQ(messages[1].role, Role::kAssistant);
  EXPECT_EQ(messages[1].content, R"({"entities":[{"name":"Ada","type":"human"}]})");
  EXPECT_EQ(messages[2].role, Role::kUser);
  EXPECT_THAT(messages[2].content, HasSubstr(R"($.entities[0].type: "human" is not one of)"));
  EXPECT_THAT(messages[2].content, HasSubstr("only the corrected JSON"));
  EXPECT_TRUE(requests[1].response_format.has_value());
}

TEST_F(CompleteStructuredTest, InvalidTwiceIsInvalidOutput) {
  model_.PushAnswer("Sure! Here are the entities.");
  model_.PushAnswer(R"({"entities":"none"})");
  absl::StatusOr<StructuredResult> result = CompleteStructured(model_, Request(), {});
  EXPECT_EQ(ErrorKindOf(result.status()), LlmErrorKind::kInvalidOutput);
  EXPECT_THAT(result.status().message(), HasSubstr("$.entities: expected array, got string"));
  EXPECT_EQ(model_.calls(), 2u);
}

TEST_F(CompleteStructuredTest, ModelErrorsPassThrough) {
  model_.PushError(LlmErrorKind::kRateLimited);
  EXPECT_EQ(ErrorKindOf(CompleteStructured(model_, Request(), {}).status()),
            LlmErrorKind::kRateLimited);
}

TEST_F(CompleteStructuredTest, NeedsAResponseFormatWithAJsonSchema) {
  ChatRequest request = Request();
  request.response_format.reset();
  EXPECT_EQ(ErrorKindOf(CompleteStructured(model_, request, {}).status()),
            LlmErrorKind::kInvalidRequest);
  request.response_format = ResponseFormat{.name = "x", .schema = "{not json"};
  EXPECT_EQ(ErrorKindOf(CompleteStructured(model_, request, {}).status()),
            LlmErrorKind::kInvalidRequest);
  EXPECT_EQ(model_.calls(), 0u);
}

TEST(ValidateJsonTest, NumbersOutsideMinimumOrMaximumAreRejected) {
  const std::string schema = R"({"type":"object","properties":{
      "confidence":{"type":"number","minimum":0,"maximum":1}}})";
  EXPECT_TRUE(ValidateJsonAgainstSchema(R"({"confidence":0})", schema).ok());
  EXPECT_TRUE(ValidateJsonAgainstSchema(R"({"confidence":1})", schema).ok());
  absl::Status high = ValidateJsonAgainstSchema(R"({"confidence":1.5})", schema);
  EXPECT_THAT(high.message(), HasSubstr("$.confidence: 1.5 is more than the maximum 1"));
  absl::Status low = ValidateJsonAgainstSchema(R"({"confidence":-0.1})", schema);
  EXPECT_THAT(low.message(), HasSubstr("$.confidence: -0.1 is less than the minimum 0"));
}

}  // namespace
}  // namespace omniforge::llm
