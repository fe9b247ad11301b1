// Structured output: getting JSON that matches a schema out of a model, with
// a local schema check and one repair round, because even providers that
// enforce schemas (OpenAI strict mode) do not do so for every model or
// every schema, and OpenAI-compatible local servers often ignore it.
#pragma once

#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "libs/llm/chat.h"
#include "libs/llm/chat_model.h"

namespace omniforge::llm {

// Checks `json_text` against the JSON Schema `schema_json`. Supported: type
// (object, array, string, number, integer, boolean, null, or a list of
// them), enum, const, minimum, maximum, required, properties, additionalProperties (false or
// a schema), items (one schema), anyOf, and boolean schemas. Other keywords
// ($ref, pattern, minLength, ...) are not checked. Returns INVALID_ARGUMENT
// when the text is not JSON, when the schema is not a JSON schema, or with
// every mismatch (up to a few), each naming its JSON path, e.g.
// `$.entities[0].type: "foo" is not one of ["person","place"]`.
absl::Status ValidateJsonAgainstSchema(std::string_view json_text, std::string_view schema_json);

// The JSON inside a Markdown code fence (```json ... ``` or ``` ... ```) when
// the whole of `text` is one; otherwise `text` with surrounding whitespace
// trimmed.
std::string_view StripJsonFence(std::string_view text);

struct StructuredResult {
  std::string json;  // valid against the schema, fence stripped
  // The answer that passed; when repaired, its usage is the sum of both calls.
  ChatResponse response;
  bool repaired = false;
};

// Calls `model` with `request` (which must have response_format) and
// validates the answer's content against response_format.schema. An answer
// that does not validate gets one repair call: the conversation plus the
// bad answer and a user message quoting the validation error, asking for the
// corrected JSON only. Errors: kInvalidRequest without response_format or
// with a schema that is not JSON; the model's own errors; kInvalidOutput
// (naming the validation error) when the repaired answer is still invalid.
// Both calls share `context` and so its deadline.
absl::StatusOr<StructuredResult> CompleteStructured(ChatModel& model, ChatRequest request,
                                                    const CallContext& context);

}  // namespace omniforge::llm
