#include "services/executor/src/agent_runner.h"

#include <algorithm>
#include <array>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "libs/core/metrics.h"
#include "services/executor/src/local_dialogue.h"

namespace omniforge::executor {
namespace {

using Json = nlohmann::json;

// A tool's result as stored with the run: at most this many bytes.
constexpr size_t kStoredResultBytes = size_t{16} * 1024;
constexpr size_t kListedItems = 20;

std::string Dump(const Json& json) {
  return json.dump(-1, ' ', false, Json::error_handler_t::replace);
}

Json StoredResult(const std::string& text) {
  if (text.size() <= kStoredResultBytes) {
    Json parsed = Json::parse(text, nullptr, false);
    if (!parsed.is_discarded()) return parsed;
  }
  return {{"truncated", text.size() > kStoredResultBytes},
          {"text", text.substr(0, kStoredResultBytes)}};
}

// Gathers what the run's executor agent reports.
struct RunLog {
  Json calls = Json::array();
  std::optional<DialogueEvent> final;
  std::string question;
  int64_t tokens = 0;
  double cost_usd = 0;

  void Take(DialogueEvent e) {
    for (const llm::UsageRecord& call : e.model_calls) {
      tokens += call.tokens.prompt_tokens + call.tokens.completion_tokens;
      cost_usd += call.cost_usd;
    }
    switch (e.kind) {
      case DialogueEvent::Kind::kProgress:
        if (!e.tool_name.empty()) {
          calls.push_back(
              {{"tool", e.tool_name},
               {"arguments", StoredResult(e.arguments_json.empty() ? "{}" : e.arguments_json)}});
        }
        break;
      case DialogueEvent::Kind::kPartialResult:
        Attach(e.partial);
        break;
      case DialogueEvent::Kind::kQuestion:
        question = e.question;
        break;
      default:
        final = std::move(e);
    }
  }

  // The result goes to the last call of its tool that has none yet; a
  // refused call (no progress event) is a call of its own.
  void Attach(const PartialResult& partial) {
    for (auto it = calls.rbegin(); it != calls.rend(); ++it) {
      if ((*it)["tool"] == partial.tool_name && !it->contains("result")) {
        (*it)["result"] = StoredResult(partial.result_json);
        (*it)["is_error"] = partial.is_error;
        return;
      }
    }
    calls.push_back({{"tool", partial.tool_name},
                     {"result", StoredResult(partial.result_json)},
                     {"is_error", partial.is_error}});
  }

  bool AnyDone() const {
    return std::any_of(calls.begin(), calls.end(), [](const Json& call) {
      return call.contains("result") && !call.value("is_error", true);
    });
  }
};

// Words for an item of a list a step returned: its name or title and what
// else a person would want beside it.
std::string ItemLine(const Json& item) {
  if (!item.is_object()) return Dump(item);
  std::string line;
  for (const char* field : {"title", "name", "agent_name", "subject", "id"}) {
    if (item.contains(field) && item[field].is_string()) {
      line = item[field].get<std::string>();
      break;
    }
  }
  std::vector<std::string> details;
  for (const char* field : {"status", "assignee", "due_date", "priority", "schedule"}) {
    if (item.contains(field) && item[field].is_string() &&
        !item[field].get<std::string>().empty()) {
      details.push_back(absl::StrCat(std::string(field) == "due_date" ? "due " : "",
                                     item[field].get<std::string>()));
    }
  }
  if (!details.empty()) absl::StrAppend(&line, " (", absl::StrJoin(details, ", "), ")");
  return line;
}

void AppendList(std::string& out, const std::string& key, const Json& list) {
  std::string noun = absl::StrReplaceAll(key, {{"_", " "}});
  if (list.size() == 1 && noun.size() > 1 && noun.back() == 's') noun.pop_back();
  absl::StrAppend(&out, "\n", list.size(), " ", noun, list.empty() ? "." : ":");
  size_t shown = 0;
  for (const Json& item : list) {
    if (shown++ == kListedItems) break;
    absl::StrAppend(&out, "\n- ", ItemLine(item));
  }
  if (list.size() > kListedItems) {
    absl::StrAppend(&out, "\n- ... and ", list.size() - kListedItems, " more");
  }
}

// The message of a tool's error result ({"error": {"message": ...}}), or
// the result itself.
std::string ErrorOf(const std::string& result_json) {
  const Json result = Json::parse(result_json, nullptr, false);
  if (result.is_object() && result.contains("error") && result["error"].is_object() &&
      result["error"].contains("message") && result["error"]["message"].is_string()) {
    return result["error"]["message"].get<std::string>();
  }
  return result_json.substr(0, 300);
}

// Sends a run's output where the agent says (`deliver`): one call of its
// tool, with the run's calls; why it did not go, or nullopt.
std::optional<std::string> Deliver(const ToolRuntime& runtime, const core::Identity& who,
                                   const AgentDefinition& agent, const std::string& run_id,
                                   const std::string& output,
                                   std::chrono::system_clock::time_point deadline, Json& calls) {
  const std::string& tool = agent.deliver_tool;
  const std::string why = absl::StrCat("the output was not delivered with ", tool, ": ");
  if (std::find(agent.tools.begin(), agent.tools.end(), tool) == agent.tools.end() ||
      IsNeverGranted(tool)) {
    return absl::StrCat(why, "it is not among the agent's tools");
  }
  Json arguments = Json::parse(agent.deliver_arguments_json, nullptr, false);
  if (!arguments.is_object()) arguments = Json::object();
  arguments[agent.deliver_field] = output;
  const auto started = std::chrono::steady_clock::now();
  absl::StatusOr<InvokeOutcome> sent = runtime.Invoke(
      who, {tool, Dump(arguments), absl::StrCat("run:", run_id, ":deliver")}, deadline);
  Json call = {{"tool", tool}, {"arguments", arguments}, {"delivery", true}};
  call["duration_ms"] = std::chrono::duration_cast<std::chrono::milliseconds>(
                            std::chrono::steady_clock::now() - started)
                            .count();
  std::optional<std::string> error;
  if (!sent.ok()) {
    error = std::string(sent.status().message());
    call["result"] = {{"error", {{"message", *error}}}};
  } else {
    call["result"] = StoredResult(sent->result_json);
    if (sent->is_error) error = ErrorOf(sent->result_json);
  }
  call["is_error"] = error.has_value();
  calls.push_back(std::move(call));
  if (error) return why + *error;
  return std::nullopt;
}

// Why a run of `agent` cannot start: with a model, no tools granted (an
// empty list would let the model's agent read every tool); without one, no
// steps.
std::optional<std::string> CannotRun(const AgentDefinition& agent, const Assignment& assignment,
                                     bool with_model) {
  if (with_model && assignment.allowed_tools.empty()) {
    return absl::StrCat("the agent '", agent.name,
                        "' has no tools granted: give it the tools a run may use");
  }
  if (!with_model && agent.steps.empty()) {
    return absl::StrCat("the agent '", agent.name,
                        "' has no steps to run without a model: give it steps (tools and "
                        "their arguments) or configure an LLM provider");
  }
  return std::nullopt;
}

}  // namespace

std::string LocalRunSummary(const AgentDefinition& agent, const std::string& results_json) {
  const Json results = Json::parse(results_json, nullptr, false);
  std::string out = agent.name;
  if (!agent.description.empty()) absl::StrAppend(&out, ": ", agent.description);
  if (!results.is_object() || !results.contains("results")) return out;
  for (const Json& ran : results["results"]) {
    const Json& result = ran.contains("result") ? ran["result"] : Json();
    if (!result.is_object()) continue;
    bool listed = false;
    for (const auto& [key, value] : result.items()) {
      if (value.is_array()) {
        AppendList(out, key, value);
        listed = true;
      }
    }
    for (const char* thing : {"project", "agent", "task", "document"}) {
      if (!listed && result.contains(thing) && result[thing].is_object()) {
        absl::StrAppend(&out, "\n", thing, ": ", ItemLine(result[thing]));
        listed = true;
      }
    }
    if (!listed) absl::StrAppend(&out, "\n", ran.value("tool", "step"), ": done");
  }
  return out;
}

bool IsNeverGranted(std::string_view tool) {
  static constexpr std::string_view kTools[] = {
      "run_agent",    "create_agent", "update_agent",    "pause_agent",
      "resume_agent", "delete_agent", "update_settings", "mark_notices_seen"};
  return std::find(std::begin(kTools), std::end(kTools), tool) != std::end(kTools);
}

Assignment AssignmentFor(const AgentDefinition& agent, const std::string& run_id,
                         const std::string& input_json) {
  Assignment a;
  a.task = !agent.instructions.empty() ? agent.instructions
           : !agent.description.empty()
               ? agent.description
               : absl::StrCat("Do the work of the agent '", agent.name, "'.");
  a.goal = absl::StrCat("A run of the agent '", agent.name, "'",
                        agent.description.empty() ? "" : ": ", agent.description);
  for (const std::string& tool : agent.tools) {
    if (!IsNeverGranted(tool)) a.allowed_tools.push_back(tool);
  }
  a.writes_approved = true;  // the grant: the user approved these tools with the agent
  a.max_turns = std::clamp(agent.max_tool_calls, 1, kMaxAgentToolCalls);
  a.inputs_json = input_json;
  a.idempotency_key = absl::StrCat("run:", run_id);
  a.tool_calls = agent.steps;
  return a;
}

RunOutcome AgentRunner::Execute(const core::Identity& who, const AgentDefinition& agent,
                                const std::string& run_id, const std::string& input_json,
                                std::chrono::system_clock::time_point not_after) {
  RunOutcome out;
  Assignment assignment = AssignmentFor(agent, run_id, input_json);
  if (std::optional<std::string> why = CannotRun(agent, assignment, model_agents_ != nullptr)) {
    out.status = "failed";
    out.error = *std::move(why);
    out.output_json = Dump({{"summary", out.error}});
    return out;
  }
  const auto started = clock_.Now();
  const auto deadline = std::min(not_after, std::chrono::system_clock::now() + agent.timeout);
  RunLog log;
  ExecutorAgent* self = nullptr;
  bool over_budget = false;
  EventSink sink = [&](DialogueEvent e) {
    log.Take(std::move(e));
    if (log.cost_usd > agent.max_cost_usd && self != nullptr) {
      over_budget = true;
      self->RequestCancel();
    }
  };
  std::unique_ptr<ExecutorAgent> executor =
      model_agents_ ? model_agents_(who, deadline, sink)
                    : std::make_unique<LocalDialogue>(runtime_, who, deadline, sink);
  self = executor.get();
  executor->Start(std::move(assignment));
  if (!executor->finished()) {  // waiting for an answer no one gives
    executor->RequestCancel();
    executor->ApplyCancel();
  }
  out.tool_calls_json = Dump(log.calls);
  out.tokens = log.tokens;
  out.cost_usd = log.cost_usd;
  const bool timed_out = std::chrono::system_clock::now() >= deadline;
  const double seconds = std::chrono::duration<double>(clock_.Now() - started).count();
  if (log.final.has_value() && log.final->kind == DialogueEvent::Kind::kComplete) {
    out.status = log.final->partial_success ? "partial" : "succeeded";
    const std::string summary =
        model_agents_ ? log.final->summary : LocalRunSummary(agent, log.final->result_json);
    Json output = {{"summary", summary},
                   {"result", StoredResult(log.final->result_json)},
                   {"limitations", log.final->limitations}};
    if (log.final->partial_success) out.error = absl::StrJoin(log.final->limitations, "; ");
    if (!agent.deliver_tool.empty()) {
      if (auto undelivered = Deliver(runtime_, who, agent, run_id, summary, deadline, log.calls)) {
        out.status = "partial";  // the work was done; the output did not go
        out.error = out.error.empty() ? *undelivered : absl::StrCat(out.error, "; ", *undelivered);
      } else {
        output["delivered_with"] = agent.deliver_tool;
      }
      out.tool_calls_json = Dump(log.calls);
    }
    out.output_json = Dump(output);
    return out;
  }
  out.status = log.AnyDone() ? "partial" : "failed";
  if (!log.question.empty()) {
    out.error = absl::StrCat("the agent needed an answer a run cannot give: ", log.question);
  } else if (over_budget) {
    out.error = absl::StrFormat("stopped at its cost limit of $%.4g per run (spent $%.4g)",
                                agent.max_cost_usd, log.cost_usd);
  } else if (timed_out) {
    out.error = absl::StrCat("timed out after ", static_cast<int64_t>(seconds), " s (its limit is ",
                             agent.timeout.count(), " s)",
                             log.final ? absl::StrCat(": ", log.final->message) : "");
  } else {
    out.error = log.final ? log.final->message : "the run ended without a result";
  }
  out.output_json =
      Dump({{"summary", absl::StrCat(agent.name, ": ", out.error)}, {"seconds", seconds}});
  return out;
}

bool AgentRunner::Enter(const std::string& tenant, std::chrono::system_clock::time_point until) {
  std::unique_lock<std::mutex> lock(mu_);
  if (!freed_.wait_until(lock, until, [&] { return running_[tenant] < max_runs_per_tenant_; })) {
    return false;
  }
  ++running_[tenant];
  return true;
}

void AgentRunner::Leave(const std::string& tenant) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (--running_[tenant] == 0) running_.erase(tenant);
  }
  freed_.notify_all();
}

namespace {

// The kinds runs are counted by (config is free-form: the rest is "other")
// and the statuses a run ends with.
const std::set<std::string, std::less<>>& RunKinds() {
  static const auto* const kinds =
      new std::set<std::string, std::less<>>{"digest", "monitor", "report", "triage"};
  return *kinds;
}
constexpr std::array<const char*, 3> kRunStatuses = {"succeeded", "partial", "failed"};

core::Counter& RunsStarted(const std::string& kind) {
  return core::MetricsRegistry::Global().GetCounter("omniforge_agent_runs_started_total",
                                                    "Runs of users' agents started, by kind.",
                                                    {{"kind", kind}});
}

core::Counter& RunsEnded(const std::string& kind, const std::string& status) {
  return core::MetricsRegistry::Global().GetCounter(
      "omniforge_agent_runs_total", "Runs of users' agents ended, by kind and status.",
      {{"kind", kind}, {"status", status}});
}

core::Counter& RunCost() {
  return core::MetricsRegistry::Global().GetCounter("omniforge_agent_run_cost_usd_total",
                                                    "Model cost of agents' runs, USD.");
}

}  // namespace

void AgentRunner::StartMetrics() {
  // Every series at 0 from the start, so dashboards and rate() see them
  // before the first run ends.
  std::vector<std::string> kinds(RunKinds().begin(), RunKinds().end());
  kinds.emplace_back("other");
  for (const std::string& kind : kinds) {
    RunsStarted(kind);
    for (const char* status : kRunStatuses) RunsEnded(kind, status);
  }
  RunCost();
}

absl::StatusOr<std::string> AgentRunner::Run(const core::Identity& who,
                                             const AgentDefinition& agent,
                                             const std::string& run_id,
                                             const std::string& input_json,
                                             std::chrono::system_clock::time_point not_after) {
  // The kind as a label only when it is one of the four (config is free-form).
  const std::string kind = RunKinds().contains(agent.kind) ? agent.kind : "other";
  RunsStarted(kind).Inc();
  const auto wait_until = std::min(not_after, std::chrono::system_clock::now() + agent.timeout);
  RunOutcome outcome;
  if (!Enter(who.tenant_id, wait_until)) {
    outcome.status = "failed";
    outcome.error = absl::StrCat("the workspace already runs ", max_runs_per_tenant_,
                                 " agents at once (its limit) and none ended in time");
    outcome.output_json = Dump({{"summary", outcome.error}});
  } else {
    absl::StatusOr<bool> begun = store_.BeginRun(who, run_id, RunLease(agent));
    if (!begun.ok() || !*begun) {
      Leave(who.tenant_id);
      if (!begun.ok()) return begun.status();
      return absl::FailedPreconditionError(
          absl::StrCat("run ", run_id, " is no longer running (it was failed as abandoned)"));
    }
    outcome = Execute(who, agent, run_id, input_json, not_after);
    Leave(who.tenant_id);
  }
  RunsEnded(kind, outcome.status).Inc();
  RunCost().Inc(outcome.cost_usd);
  return store_.FinishRun(who, run_id, outcome);
}

}  // namespace omniforge::executor
