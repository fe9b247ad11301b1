// The agent runtime: one run of one of a user's agents, as an executor
// agent (ExecutorAgent) given the agent's instructions and only the tools
// of its grant. With a model (an AgentFactory) the model carries the run
// out; without one (local mode) LocalDialogue runs the agent's declared
// steps in order. Every tool call with its result, the output, the tokens
// and cost are recorded with the run, which ends succeeded, partial (some
// of its work done, the error says what was not) or failed. A run cannot
// ask: a question from its agent ends it with what was done. Limits: the
// agent's timeout, its number of tool calls and its cost per run.
// No gRPC and no SQL here: the runs are kept by a RunStore.
#pragma once

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "libs/core/clock.h"
#include "services/executor/src/dialogue.h"
#include "services/executor/src/tool_runtime.h"

namespace omniforge::executor {

// An agent as a run needs it.
struct AgentDefinition {
  std::string id;
  std::string name;
  std::string description;
  std::string instructions;
  std::string status;              // "active" or "paused"
  std::string kind;                // config.kind: digest, monitor, report, triage or empty
  std::vector<std::string> tools;  // the grant: every tool a run may call
  std::vector<PlannedCall> steps;  // what a run without a model does
  int max_tool_calls = 10;
  std::chrono::seconds timeout{120};
  double max_cost_usd = 0.5;
  // Where each run's output goes besides the run record (`deliver`): the
  // tool (one of the grant; empty: nowhere), its arguments (a JSON object's
  // text) and the argument the output fills.
  std::string deliver_tool;
  std::string deliver_arguments_json = "{}";
  std::string deliver_field = "text";
};

inline constexpr int kMaxAgentToolCalls = 50;
inline constexpr int kMaxAgentTimeoutSeconds = 3600;

// How a run ended, as stored.
struct RunOutcome {
  std::string status;       // "succeeded", "partial" or "failed"
  std::string error;        // why it failed or what was left undone
  std::string output_json;  // {"summary": ..., "results": [...]}
  // [{"tool", "arguments", "result", "is_error", "duration_ms"}]
  std::string tool_calls_json = "[]";
  int64_t tokens = 0;
  double cost_usd = 0;
};

// How long a run of `agent` may stay running before it counts as
// abandoned (its executor stopped): its timeout and a minute.
inline std::chrono::seconds RunLease(const AgentDefinition& agent) {
  return agent.timeout + std::chrono::seconds(60);
}

// Why and when a run started.
struct RunStart {
  std::string trigger = "manual";       // or "schedule"
  std::optional<core::TimePoint> slot;  // a scheduled run's slot
  std::string input_json = "{}";
};

// Where runs are kept. Thread-safe.
class RunStore {
 public:
  virtual ~RunStore() = default;
  // The agent `ref` (id or name) of `who`; nullopt when there is none.
  virtual absl::StatusOr<std::optional<AgentDefinition>> LoadAgent(const core::Identity& who,
                                                                   const std::string& ref) = 0;
  // Records a run that starts now (status running); its id.
  virtual absl::StatusOr<std::string> StartRun(const core::Identity& who,
                                               const AgentDefinition& agent,
                                               const RunStart& start) = 0;
  // Marks run `run_id` (still running) as started now, leased for `lease`;
  // false when it is no longer running (failed as abandoned meanwhile).
  virtual absl::StatusOr<bool> BeginRun(const core::Identity& who, const std::string& run_id,
                                        std::chrono::seconds lease) = 0;
  // Ends run `run_id` if it is still running; the run as get_run shows it
  // ({"run": {...}} JSON).
  virtual absl::StatusOr<std::string> FinishRun(const core::Identity& who,
                                                const std::string& run_id,
                                                const RunOutcome& outcome) = 0;
};

class AgentRunner final {
 public:
  // `model_agents` makes the executor agent of a run with a model; empty
  // in local mode. At most `max_runs_per_tenant` runs of one tenant run at
  // once: another waits for one to end, within its own time limits, and
  // fails saying so if none does. Everything given must outlive the runner.
  AgentRunner(RunStore& store, const ToolRuntime& runtime, AgentFactory model_agents,
              const core::Clock& clock, int max_runs_per_tenant = 4)
      : store_(store),
        runtime_(runtime),
        model_agents_(std::move(model_agents)),
        clock_(clock),
        max_runs_per_tenant_(max_runs_per_tenant) {
    StartMetrics();
  }

  // Runs `agent` of `who` now and waits for the end, as run `run_id`
  // (StartRun's), within the agent's timeout and `not_after` (a caller's
  // deadline). Returns the stored run; errors only when the store fails.
  absl::StatusOr<std::string> Run(const core::Identity& who, const AgentDefinition& agent,
                                  const std::string& run_id, const std::string& input_json,
                                  std::chrono::system_clock::time_point not_after =
                                      std::chrono::system_clock::time_point::max());

  // What a run does and how it ends, without storing it (Run stores it).
  RunOutcome Execute(const core::Identity& who, const AgentDefinition& agent,
                     const std::string& run_id, const std::string& input_json,
                     std::chrono::system_clock::time_point not_after =
                         std::chrono::system_clock::time_point::max());

  RunStore& store() { return store_; }

 private:
  // Makes the run counters, at 0.
  static void StartMetrics();
  // Takes one of the tenant's run slots, waiting until `until`; false when
  // none freed.
  bool Enter(const std::string& tenant, std::chrono::system_clock::time_point until);
  void Leave(const std::string& tenant);

  RunStore& store_;
  const ToolRuntime& runtime_;
  AgentFactory model_agents_;
  const core::Clock& clock_;
  const int max_runs_per_tenant_;
  std::mutex mu_;
  std::condition_variable freed_;
  std::map<std::string, int> running_;  // by tenant
};

// Whether `tool` manages agents (runs, creates, changes, pauses, resumes or
// deletes them) or the user's settings and notices: never granted to an
// agent's run, so a run can neither start runs nor widen any agent's grant,
// nor move the user's schedules or hide a failure from them.
bool IsNeverGranted(std::string_view tool);

// The assignment a run of `agent` is: its instructions as the task, its
// tools as the step's (writes approved: they are the user's grant), its
// steps as the planned calls, its tool-call limit as the turns, and the
// run's id as the key of its writes.
Assignment AssignmentFor(const AgentDefinition& agent, const std::string& run_id,
                         const std::string& input_json);

// The output of a local run: for every list a step returned, its items
// ("- Write the announcement (open, due 2026-12-01)"), under a heading
// naming the agent; what a digest, report or monitor shows a person.
std::string LocalRunSummary(const AgentDefinition& agent, const std::string& results_json);

}  // namespace omniforge::executor
