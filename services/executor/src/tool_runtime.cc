#include "services/executor/src/tool_runtime.h"

#include <sodium.h>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "libs/core/call_deadline.h"
#include "libs/core/json_depth.h"
#include "libs/core/text.h"
#include "libs/llm/structured_output.h"
#include "libs/trace/span.h"

namespace omniforge::executor {

std::string HashArguments(const std::string& canonical_json) {
  unsigned char digest[16];
  crypto_generichash(digest, sizeof digest,
                     reinterpret_cast<const unsigned char*>(canonical_json.data()),
                     canonical_json.size(), nullptr, 0);
  return absl::BytesToHexString(
      absl::string_view(reinterpret_cast<const char*>(digest), sizeof digest));
}

namespace {

// A name the caller sent is quoted back in an error at most this long.
constexpr size_t kMaxQuotedNameBytes = 200;

int64_t MicrosSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() -
                                                               start)
      .count();
}

const std::string kNoArguments = "{}";

}  // namespace

InvokeOutcome ToolRuntime::Capped(std::string json, bool is_error) const {
  InvokeOutcome out;
  out.is_error = is_error;
  if (json.size() <= options_.max_result_bytes) {
    out.result_json = std::move(json);
    return out;
  }
  // Keep the start of the text, cut at a UTF-8 boundary, so the model sees
  // what the result looked like and knows it was cut.
  nlohmann::json capped = {
      {"truncated", true},
      {"original_bytes", json.size()},
      {"text", std::string(core::Utf8Prefix(json, options_.max_result_bytes / 2))}};
  out.result_json = capped.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  out.truncated = true;
  return out;
}

absl::StatusOr<InvokeOutcome> ToolRuntime::Invoke(
    const core::Identity& who, const InvokeRequest& request,
    std::chrono::system_clock::time_point deadline) const {
  trace::ScopedSpan span("tool.call");
  span.span().SetAttribute("tool.name", request.tool_name);
  absl::StatusOr<InvokeOutcome> outcome = InvokeInSpan(who, request, deadline);
  if (!outcome.ok()) {
    span.span().SetError(outcome.status().ToString());
  } else if (outcome->is_error) {
    span.span().SetError("the tool reported an error");
  }
  return outcome;
}

absl::StatusOr<InvokeOutcome> ToolRuntime::InvokeInSpan(
    const core::Identity& who, const InvokeRequest& request,
    std::chrono::system_clock::time_point deadline) const {
  if (request.tool_name.empty()) {
    return absl::InvalidArgumentError("tool_name: required (ListTools lists the tools)");
  }
  auto entry = catalog_.Find(request.tool_name);
  if (!entry.has_value()) {
    // The name is quoted back shortened: it is the caller's, of any length.
    const std::string named = core::Shortened(request.tool_name, kMaxQuotedNameBytes);
    if (auto why = catalog_.WhyAbsent(request.tool_name)) {
      return absl::FailedPreconditionError(
          absl::StrCat("tool_name: '", named, "' is not available: ", *why));
    }
    return absl::NotFoundError(
        absl::StrCat("tool_name: no tool named '", named, "' (ListTools lists the tools)"));
  }
  if (request.arguments_json.size() > options_.max_argument_bytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("arguments_json: ", request.arguments_json.size(),
                     " bytes, more than the limit of ", options_.max_argument_bytes));
  }
  if (request.idempotency_key.size() > options_.max_idempotency_key_bytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "idempotency_key: more than ", options_.max_idempotency_key_bytes, " characters"));
  }
  if (absl::Status deep = core::CheckJsonDepth("arguments_json", request.arguments_json);
      !deep.ok()) {
    return deep;
  }
  ToolCall call{who, request.tool_name, nlohmann::json::object(), deadline};
  const std::string& text = request.arguments_json.empty() ? kNoArguments : request.arguments_json;
  call.arguments = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!call.arguments.is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "arguments_json: the arguments of ", request.tool_name,
        call.arguments.is_discarded() ? " are not valid JSON" : " must be a JSON object"));
  }
  if (absl::Status valid = llm::ValidateJsonAgainstSchema(text, entry->spec.parameters_schema);
      !valid.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("arguments_json: invalid arguments for ",
                                                   request.tool_name, ": ", valid.message()));
  }
  if (deadline <= std::chrono::system_clock::now()) {
    return absl::DeadlineExceededError("the call's deadline passed before the tool ran");
  }

  std::optional<InvocationKey> key;
  if (!request.idempotency_key.empty()) {
    if (ledger_ == nullptr) {
      return absl::FailedPreconditionError("idempotency keys are not available on this executor");
    }
    key = InvocationKey{who, request.idempotency_key, request.tool_name,
                        HashArguments(call.arguments.dump(
                            -1, ' ', false, nlohmann::json::error_handler_t::replace))};
    auto claimed = ledger_->Claim(*key, deadline);
    if (!claimed.ok()) return claimed.status();
    if (claimed->has_value()) {
      const RecordedResult& recorded = **claimed;
      InvokeOutcome out;
      out.result_json = recorded.json;
      out.is_error = recorded.is_error;
      out.truncated = recorded.truncated;
      out.duration_us = recorded.duration_us;
      out.risk = entry->spec.risk;
      out.deduplicated = true;
      return out;
    }
  }

  return RunAndRecord(*entry, call, key);
}

absl::StatusOr<InvokeOutcome> ToolRuntime::RunAndRecord(
    const ToolCatalog::Entry& entry, const ToolCall& call,
    const std::optional<InvocationKey>& key) const {
  const auto tool_start = std::chrono::steady_clock::now();
  absl::StatusOr<ToolResult> result;
  {
    core::ScopedCallDeadline scope(call.deadline);
    result = entry.provider->Invoke(call);
  }
  if (!result.ok()) {
    // No result to replay: a retry with the key runs the tool.
    if (key.has_value()) (void)ledger_->Release(*key);
    return result.status();
  }
  InvokeOutcome out = Capped(std::move(result->json), result->is_error);
  out.risk = entry.spec.risk;
  out.duration_us = MicrosSince(tool_start);
  if (key.has_value()) {
    // The tool ran: a failure to record is reported, so the caller knows a
    // retry with this key may run it again.
    absl::Status recorded =
        ledger_->Complete(*key, {out.result_json, out.is_error, out.truncated, out.duration_us});
    if (!recorded.ok()) {
      return absl::Status(
          recorded.code(),
          absl::StrCat("the tool ran but its result could not be recorded: ", recorded.message()));
    }
  }
  return out;
}

}  // namespace omniforge::executor
