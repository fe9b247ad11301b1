#include "libs/llm/openai_chunk_reader.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "libs/llm/errors.h"
#include "libs/llm/openai_wire.h"

namespace omniforge::llm::wire_internal {
namespace {

using ::omniforge::llm::ErrorKindOf;
using ::omniforge::llm::LlmErrorKind;

TEST(OpenAiChunkReaderTest, ReadsTheFieldsTheDecoderUses) {
  OpenAiChunk chunk;
  ASSERT_TRUE(ReadOpenAiChunk(
      R"({"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-x",
          "system_fingerprint":"fp","choices":[{"index":0,"delta":{"content":"a\"b\n\u00e9",
          "tool_calls":[{"index":1,"id":"call_1","type":"function",
          "function":{"name":"f","arguments":"{\"x\""}}]},"logprobs":{"content":[[{}]]},
          "finish_reason":"tool_calls"},{"index":2,"delta":{"refusal":"no"}}],
          "usage":{"prompt_tokens":9,"completion_tokens":4,
          "prompt_tokens_details":{"cached_tokens":2,"audio_tokens":0}}})",
      chunk));
  EXPECT_EQ(chunk.id, "chatcmpl-1");
  EXPECT_EQ(chunk.model, "gpt-x");
  ASSERT_TRUE(chunk.usage.has_value());
  EXPECT_EQ(*chunk.usage, (TokenUsage{9, 4, 2}));
  ASSERT_EQ(chunk.choices.size(), 2u);
  EXPECT_EQ(chunk.choices[0].index, 0);
  EXPECT_EQ(chunk.choices[0].content, "a\"b\n\xC3\xA9");
  EXPECT_EQ(chunk.choices[0].finish_reason, "tool_calls");
  ASSERT_EQ(chunk.choices[0].tool_calls.size(), 1u);
  EXPECT_EQ(chunk.choices[0].tool_calls[0].index, 1);
  EXPECT_EQ(chunk.choices[0].tool_calls[0].id, "call_1");
  EXPECT_EQ(chunk.choices[0].tool_calls[0].name, "f");
  EXPECT_EQ(chunk.choices[0].tool_calls[0].arguments, "{\"x\"");
  EXPECT_EQ(chunk.choices[1].index, 2);
  EXPECT_TRUE(chunk.choices[1].refusal);
}

TEST(OpenAiChunkReaderTest, WrongTypesReadAsAbsentLikeTheDocumentDecoder) {
  OpenAiChunk chunk;
  ASSERT_TRUE(ReadOpenAiChunk(
      R"({"id":5,"usage":null,"choices":[{"index":1.5,"finish_reason":null,
          "delta":{"content":null,"tool_calls":[{"index":"0","function":"x"}]}}]})",
      chunk));
  EXPECT_EQ(chunk.id, "");
  EXPECT_FALSE(chunk.usage.has_value());
  ASSERT_EQ(chunk.choices.size(), 1u);
  EXPECT_EQ(chunk.choices[0].index, 0);
  EXPECT_EQ(chunk.choices[0].content, "");
  ASSERT_EQ(chunk.choices[0].tool_calls.size(), 1u);
  EXPECT_EQ(chunk.choices[0].tool_calls[0].index, std::nullopt);
  EXPECT_TRUE(ReadOpenAiChunk(R"({"choices":null,"error":null})", chunk));
}

TEST(OpenAiChunkReaderTest, UnusualChunksAreLeftToTheDocumentDecoder) {
  const std::vector<std::string> unusual = {
      "",
      "not json",
      R"([])",
      R"("text")",
      R"({"choices":[]} trailing)",
      R"({"error":{"message":"boom"}})",
      R"({"error":"boom"})",
      R"({"choices":{}})",
      R"({"choices":[1]})",
      R"({"choices":[{"delta":"x"}]})",
      R"({"choices":[{"delta":{"tool_calls":{}}}]})",
      R"({"choices":[{"delta":{"tool_calls":[null]}}]})",
      R"({"choices":[{"delta":{"tool_calls":[{"function":{"arguments":{"a":1}}}]}}]})",
      R"({"id":"a","id":"b"})",
      "{\"choices\":[{\"delta\":{\"content\":\"\xFF\"}}]}",
  };
  for (const std::string& text : unusual) {
    OpenAiChunk chunk;
    EXPECT_FALSE(ReadOpenAiChunk(text, chunk)) << text;
  }
}

// The decoder answers the same whichever way a chunk is read: the unusual
// ones above still decode (or fail) as they always did.
TEST(OpenAiChunkReaderTest, DecoderFallsBackForUnusualChunks) {
  OpenAiStreamDecoder decoder;
  std::vector<StreamDelta> deltas;
  ASSERT_TRUE(decoder
                  .Consume(R"({"choices":[{"delta":{"tool_calls":[{"index":0,"id":"c",
                    "function":{"name":"f","arguments":{"a":1}}}]}}]})",
                           &deltas)
                  .ok());
  ASSERT_EQ(deltas.size(), 1u);
  EXPECT_EQ(deltas[0].arguments_fragment, R"({"a":1})");
  deltas.clear();
  absl::Status error = decoder.Consume(R"({"error":{"message":"boom"}})", &deltas);
  EXPECT_EQ(ErrorKindOf(error), LlmErrorKind::kServerError);
  EXPECT_THAT(error.message(), ::testing::HasSubstr("boom"));
  EXPECT_EQ(ErrorKindOf(decoder.Consume(R"({"choices":[1]})", &deltas)),
            LlmErrorKind::kBadResponse);
  EXPECT_TRUE(deltas.empty());
}

}  // namespace
}  // namespace omniforge::llm::wire_internal
