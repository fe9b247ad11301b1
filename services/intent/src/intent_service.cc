#include "services/intent/src/intent_service.h"

#include "absl/strings/str_cat.h"
#include "libs/core/clock.h"
#include "libs/core/logging.h"
#include "libs/llm/errors.h"
#include "libs/llm/recorded_calls.h"
#include "services/intent/src/action_details.h"
#include "services/intent/src/clarify.h"
#include "services/intent/src/email_request.h"
#include "services/intent/src/keywords.h"
#include "services/intent/src/meeting_request.h"
#include "services/intent/src/reply.h"

namespace omniforge::intent {
namespace {

std::string_view SourceName(Source source) {
  switch (source) {
    case Source::kFastPath:
      return "fast_path";
    case Source::kLocalModel:
      return "local_model";
    case Source::kLlm:
      return "llm";
    case Source::kKeywordFallback:
      return "keyword_fallback";
  }
  return "unknown";
}

absl::Status TooLarge(const std::string& what, size_t size, size_t limit) {
  return absl::InvalidArgumentError(
      absl::StrCat(what, " is ", size, " bytes; the limit is ", limit));
}

// What is pending: at most max_pending_actions actions of at most
// max_turn_bytes each (summary and settings), max_catalog_items options.
absl::Status ValidatePending(const PendingContext& pending, const IntentLimits& limits) {
  if (pending.actions.size() > limits.max_pending_actions) {
    return absl::InvalidArgumentError(absl::StrCat("pending.actions has ", pending.actions.size(),
                                                   " actions; the limit is ",
                                                   limits.max_pending_actions));
  }
  for (size_t i = 0; i < pending.actions.size(); ++i) {
    const PendingActionRef& action = pending.actions[i];
    size_t bytes = action.id.size() + action.tool.size() + action.summary.size();
    for (const std::string& target : action.targets) bytes += target.size();
    for (const auto& [key, value] : action.settings) bytes += key.size() + value.size();
    if (bytes > limits.max_turn_bytes) {
      return TooLarge(absl::StrCat("pending.actions[", i, "]"), bytes, limits.max_turn_bytes);
    }
  }
  if (pending.options.size() > limits.max_catalog_items) {
    return absl::InvalidArgumentError(
        absl::StrCat("pending.question.options has ", pending.options.size(),
                     " options; the limit is ", limits.max_catalog_items));
  }
  for (size_t i = 0; i < pending.options.size(); ++i) {
    if (pending.options[i].size() > limits.max_description_bytes) {
      return TooLarge(absl::StrCat("pending.question.options[", i, "]"), pending.options[i].size(),
                      limits.max_description_bytes);
    }
  }
  if (pending.resumable_goal.size() > limits.max_turn_bytes) {
    return TooLarge("pending.resumable_goal", pending.resumable_goal.size(), limits.max_turn_bytes);
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateIntentRequest(const IntentRequest& request, const IntentLimits& limits) {
  if (request.message.size() > limits.max_message_bytes) {
    return TooLarge("message", request.message.size(), limits.max_message_bytes);
  }
  if (request.history.size() > limits.max_history_turns) {
    return absl::InvalidArgumentError(absl::StrCat(
        "history has ", request.history.size(), " turns; the limit is ", limits.max_history_turns,
        " (send the recent window, e.g. from GetContextWindow)"));
  }
  for (size_t i = 0; i < request.history.size(); ++i) {
    if (request.history[i].content.size() > limits.max_turn_bytes) {
      return TooLarge(absl::StrCat("history[", i, "].content"), request.history[i].content.size(),
                      limits.max_turn_bytes);
    }
  }
  for (const auto* items : {&request.agents, &request.skills}) {
    const char* kind = items == &request.agents ? "available_agents" : "available_skills";
    if (items->size() > limits.max_catalog_items) {
      return absl::InvalidArgumentError(absl::StrCat(
          kind, " has ", items->size(), " items; the limit is ", limits.max_catalog_items));
    }
    for (size_t i = 0; i < items->size(); ++i) {
      const CatalogItem& item = (*items)[i];
      if (item.name.empty()) {
        return absl::InvalidArgumentError(absl::StrCat(kind, "[", i, "].name is empty"));
      }
      if (item.name.size() > limits.max_name_bytes) {
        return TooLarge(absl::StrCat(kind, "[", i, "].name"), item.name.size(),
                        limits.max_name_bytes);
      }
      if (item.description.size() > limits.max_description_bytes) {
        return TooLarge(absl::StrCat(kind, "[", i, "].description"), item.description.size(),
                        limits.max_description_bytes);
      }
    }
  }
  return ValidatePending(request.pending, limits);
}

IntentService::IntentService(const LocalAnalyzer& local, llm::ChatModel* llm,
                             LlmLayerOptions llm_options, IntentLimits limits,
                             core::MetricsRegistry& metrics)
    : local_(local), llm_(llm), llm_options_(llm_options), limits_(limits) {
  for (Source source :
       {Source::kFastPath, Source::kLocalModel, Source::kLlm, Source::kKeywordFallback}) {
    for (Action action : kAllActions) {
      analyses_[static_cast<int>(source)][static_cast<int>(action)] = &metrics.GetCounter(
          "omniforge_intent_analyses_total", "Intent analyses by the layer that answered.",
          {{"source", std::string(SourceName(source))},
           {"action", std::string(ActionLabel(action))}});
    }
  }
  latency_ = &metrics.GetHistogram("omniforge_intent_analysis_seconds",
                                   "Time to analyse one message, LLM calls included.", {},
                                   {0.0001, 0.0005, 0.001, 0.005, 0.05, 0.5, 1, 2, 5, 10});
  llm_failures_ = &metrics.GetCounter("omniforge_intent_llm_failures_total",
                                      "LLM intent calls that failed and fell back to keywords.");
}

absl::StatusOr<LocalResult> IntentService::AnalyzeLocally(const IntentRequest& request) const {
  if (absl::Status status = ValidateIntentRequest(request, limits_); !status.ok()) return status;
  LocalResult local = local_.Analyze(request);
  // As in local mode: what the local layers found stands.
  if (request.local_only) local.needs_llm = false;
  return local;
}

IntentAnalysis IntentService::Finish(const IntentRequest& request, LocalResult local,
                                     int64_t start_micros) const {
  IntentAnalysis analysis;
  if (!WillCallLlm(local)) {
    analysis = std::move(local.analysis);
  } else {
    // This request's model calls, and only its own, whatever else runs.
    llm::RecordedCalls model_calls;
    absl::StatusOr<IntentAnalysis> answer =
        AnalyzeWithLlm(*llm_, request, local, llm_options_, &model_calls);
    if (answer.ok()) {
      analysis = *std::move(answer);
    } else {
      llm_failures_->Inc();
      core::LogWarn(
          "intent LLM call failed; using the keyword fallback",
          {{"error_kind", std::string(llm::ErrorKindName(llm::ErrorKindOf(answer.status())))},
           {"error", std::string(answer.status().message())}});
      analysis = KeywordFallback(request, local, answer.status());
    }
    analysis.model_calls = model_calls.Take();
  }
  ApplyClarification(request, analysis);
  ApplyActionDetails(request, analysis);
  ApplyMeetingRequest(request, analysis);
  ApplyEmailRequest(request, analysis);
  analysis.reply = ReadReply(request, analysis);
  analysis.latency_ms = static_cast<double>(core::NowMicros() - start_micros) / 1000.0;
  core::LogDebug("intent analysed", {{"source", std::string(SourceName(analysis.source))},
                                     {"action", std::string(ActionLabel(analysis.action))},
                                     {"rule", std::string(local.rule)},
                                     {"llm_reason", local.llm_reason},
                                     {"confidence", absl::StrCat(analysis.confidence)}});
  Record(analysis);
  return analysis;
}

absl::StatusOr<IntentAnalysis> IntentService::Analyze(const IntentRequest& request) const {
  const int64_t start = core::NowMicros();
  auto local = AnalyzeLocally(request);
  if (!local.ok()) return local.status();
  return Finish(request, *std::move(local), start);
}

IntentAnalysis IntentService::KeywordFallback(const IntentRequest& request,
                                              const LocalResult& local,
                                              const absl::Status& llm_error) const {
  IntentAnalysis a = local.analysis;
  a.source = Source::kKeywordFallback;
  const std::string failure =
      absl::StrCat("The LLM could not be used (",
                   std::string(llm::ErrorKindName(llm::ErrorKindOf(llm_error))), "); ");
  // A reference the rules resolved is better than any keyword.
  if (a.reference != Reference::kNone) {
    a.reasoning = failure + "kept the answer resolved from the conversation. " + a.reasoning;
    return a;
  }
  std::optional<KeywordMatch> match = ClassifyByKeywords(request.message);
  if (match && match->action != a.action) {
    a.alternative = a.action;
    a.action = match->action;
    a.confidence = std::min(0.5f, 0.3f + 0.1f * static_cast<float>(match->hits));
    a.reasoning =
        absl::StrCat(failure, "keywords point to ", std::string(ActionPhrase(match->action)), ".");
  } else if (match) {
    a.reasoning = absl::StrCat(failure, "keywords agree with the local model: ",
                               std::string(ActionPhrase(match->action)), ".");
  } else {
    a.reasoning = failure + "no keyword matched; kept the local model's answer. " + a.reasoning;
  }
  a.is_ambiguous = a.is_ambiguous || a.confidence < local_.options().low_confidence;
  if (a.is_ambiguous && a.clarifying_question.empty()) {
    a.clarifying_question = ClarifyingQuestion(a.action, a.alternative, a.entities);
  }
  return a;
}

void IntentService::Record(const IntentAnalysis& analysis) const {
  analyses_[static_cast<int>(analysis.source)][static_cast<int>(analysis.action)]->Inc();
  latency_->Observe(analysis.latency_ms / 1000.0);
}

}  // namespace omniforge::intent
