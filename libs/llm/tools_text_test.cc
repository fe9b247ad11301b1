#include "libs/llm/tools_text.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "libs/llm/anthropic_wire.h"
#include "libs/llm/errors.h"
#include "libs/llm/openai_wire.h"

namespace omniforge::llm {
namespace {

using wire_internal::ToolsTextMemo;

std::vector<ToolSpec> Catalog() {
  return {{"list_agents", "The user's agents", R"({"type":"object"})"},
          {"run_agent", "Run an agent", R"({"type":"object","required":["name"]})"}};
}

TEST(ToolsTextMemoTest, AnEqualListIsEncodedOnceAndAnyDifferenceIsEncodedAgain) {
  ToolsTextMemo memo;
  int encodes = 0;
  auto encode_names = [&](const std::vector<ToolSpec>& tools) {
    return [&encodes, &tools](std::string& out) {
      ++encodes;
      for (const ToolSpec& tool : tools) out += tool.name + ":" + tool.parameters_schema + ";";
      return absl::OkStatus();
    };
  };
  const std::vector<ToolSpec> catalog = Catalog();
  std::string first = "[", again = "[";
  ASSERT_TRUE(memo.AppendTo(first, catalog, encode_names(catalog)).ok());
  const std::vector<ToolSpec> copy = Catalog();  // equal, not the same object
  ASSERT_TRUE(memo.AppendTo(again, copy, encode_names(copy)).ok());
  EXPECT_EQ(encodes, 1);
  EXPECT_EQ(first, again);
  EXPECT_EQ(first,
            R"([list_agents:{"type":"object"};run_agent:{"type":"object","required":["name"]};)");

  // The same names with another schema, description or order are other lists.
  std::vector<ToolSpec> schema = Catalog();
  schema[1].parameters_schema = R"({"type":"object","required":["agent"]})";
  std::vector<ToolSpec> description = Catalog();
  description[0].description = "Every agent";
  std::vector<ToolSpec> order = {Catalog()[1], Catalog()[0]};
  std::vector<ToolSpec> fewer = {Catalog()[0]};
  for (const auto* list : {&schema, &description, &order, &fewer}) {
    std::string out;
    ASSERT_TRUE(memo.AppendTo(out, *list, encode_names(*list)).ok());
  }
  EXPECT_EQ(encodes, 5);
  std::string with_new_schema;
  ASSERT_TRUE(memo.AppendTo(with_new_schema, schema, encode_names(schema)).ok());
  EXPECT_EQ(encodes, 5);
  EXPECT_NE(with_new_schema.find(R"("required":["agent"])"), std::string::npos);
}

TEST(ToolsTextMemoTest, AFailedEncodingIsNotKept) {
  ToolsTextMemo memo;
  int encodes = 0;
  auto failing = [&](std::string&) {
    ++encodes;
    return absl::InvalidArgumentError("bad schema");
  };
  std::string out;
  EXPECT_EQ(memo.AppendTo(out, Catalog(), failing).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(memo.AppendTo(out, Catalog(), failing).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(encodes, 2);
}

TEST(ToolsTextMemoTest, OnlyTheLastListsAreKept) {
  ToolsTextMemo memo(2);
  int encodes = 0;
  auto encode = [&](std::string& out) {
    ++encodes;
    out += "x";
    return absl::OkStatus();
  };
  std::vector<std::vector<ToolSpec>> lists(3, Catalog());
  lists[1][0].name = "b";
  lists[2][0].name = "c";
  std::string out;
  for (const auto& list : lists) ASSERT_TRUE(memo.AppendTo(out, list, encode).ok());
  ASSERT_EQ(encodes, 3);
  ASSERT_TRUE(memo.AppendTo(out, lists[2], encode).ok());
  EXPECT_EQ(encodes, 3);
  ASSERT_TRUE(memo.AppendTo(out, lists[0], encode).ok());  // the oldest went
  EXPECT_EQ(encodes, 4);
}

// Through the encoders: a request body always carries the tools it was
// given, whatever was encoded before, and a bad schema is always refused.
TEST(ToolsTextMemoTest, EveryRequestCarriesItsOwnToolsInBothWireFormats) {
  for (bool openai : {true, false}) {
    SCOPED_TRACE(openai ? "openai" : "anthropic");
    auto encode = [openai](const ChatRequest& request) {
      return openai ? EncodeOpenAiRequest(request, /*stream=*/true)
                    : EncodeAnthropicRequest(request, /*stream=*/true);
    };
    ChatRequest request;
    request.model = "m";
    request.max_tokens = 100;
    request.messages = {{.role = Role::kUser, .content = "hi"}};
    request.tools = Catalog();
    absl::StatusOr<std::string> first = encode(request);
    ASSERT_TRUE(first.ok()) << first.status();
    absl::StatusOr<std::string> second = encode(request);
    ASSERT_TRUE(second.ok()) << second.status();
    EXPECT_EQ(*first, *second);

    request.tools[1].parameters_schema = R"({"type":"object","required":["agent_name"]})";
    absl::StatusOr<std::string> changed = encode(request);
    ASSERT_TRUE(changed.ok()) << changed.status();
    const nlohmann::json body = nlohmann::json::parse(*changed);
    const nlohmann::json& run = body["tools"][1];
    const nlohmann::json& schema = openai ? run["function"]["parameters"] : run["input_schema"];
    EXPECT_EQ(schema["required"], nlohmann::json::array({"agent_name"}));

    request.tools[1].parameters_schema = "[not an object";
    for (int i = 0; i < 2; ++i) {
      absl::StatusOr<std::string> bad = encode(request);
      ASSERT_FALSE(bad.ok());
      EXPECT_EQ(ErrorKindOf(bad.status()), LlmErrorKind::kInvalidRequest);
    }
  }
}

}  // namespace
}  // namespace omniforge::llm
