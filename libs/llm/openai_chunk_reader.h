// Internal to omniforge_llm_wire: a streamed OpenAI chat.completion.chunk
// read without building a JSON document. A stream carries one chunk per few
// characters of the answer, and building and freeing a document for each
// cost more CPU than libcurl spends reading the whole stream; this reader
// walks the text once (json_scan.h) and keeps only what the stream decoder
// uses.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "libs/llm/chat.h"

namespace omniforge::llm::wire_internal {

struct OpenAiChunkToolCall {
  std::optional<int64_t> index;  // the wire `index`, when an integer
  std::string id;
  std::string name;
  std::string arguments;  // the JSON text fragment; "" when absent or null
};

struct OpenAiChunkChoice {
  int64_t index = 0;  // 0 unless an integer says otherwise (as IntMember reads it)
  std::string finish_reason;
  std::string content;
  bool refusal = false;  // a non-empty delta.refusal
  std::vector<OpenAiChunkToolCall> tool_calls;
};

struct OpenAiChunk {
  std::string id;
  std::string model;
  std::optional<TokenUsage> usage;  // set when `usage` is an object
  std::vector<OpenAiChunkChoice> choices;
};

// Reads `data` into `chunk` (reset first). Strings of the wrong type read as
// empty and integers of the wrong type as absent, as the document-based
// decoder reads them. Returns false, `chunk` then unspecified, for anything
// out of the ordinary: text that is not a JSON object, a non-null `error`,
// `choices` / `delta` / `tool_calls` or their elements of an unexpected
// type, arguments sent as JSON values rather than text, a repeated key. The
// caller decodes such a chunk from a document instead, which gives the exact
// error or value.
bool ReadOpenAiChunk(std::string_view data, OpenAiChunk& chunk);

}  // namespace omniforge::llm::wire_internal
