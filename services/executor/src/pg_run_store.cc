#include "services/executor/src/pg_run_store.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "libs/core/ids.h"
#include "libs/seal/sealed_json.h"
#include "services/executor/src/platform_handlers.h"

namespace omniforge::executor {

AgentDefinition DefinitionFromRow(const nlohmann::json& a) {
  AgentDefinition d;
  d.id = a.value("id", "");
  d.name = a.value("name", "");
  d.description = a.value("description", "");
  d.instructions = a.value("instructions", "");
  d.status = a.value("status", "active");
  if (const auto config = a.find("config"); config != a.end() && config->is_object()) {
    if (const auto kind = config->find("kind"); kind != config->end() && kind->is_string()) {
      d.kind = kind->get<std::string>();
    }
  }
  for (const auto& tool : a.value("tools", nlohmann::json::array())) {
    if (tool.is_string()) d.tools.push_back(tool.get<std::string>());
  }
  for (const auto& step : a.value("steps", nlohmann::json::array())) {
    if (!step.is_object() || !step.contains("tool")) continue;
    d.steps.push_back(
        {step.value("tool", ""), step.value("arguments", nlohmann::json::object()).dump()});
  }
  if (const auto deliver = a.find("deliver"); deliver != a.end() && deliver->is_object()) {
    d.deliver_tool = deliver->value("tool", "");
    d.deliver_arguments_json = deliver->value("arguments", nlohmann::json::object()).dump();
    d.deliver_field = deliver->value("field", "text");
  }
  const nlohmann::json limits = a.value("limits", nlohmann::json::object());
  const int calls = limits.value("max_tool_calls", d.max_tool_calls);
  if (calls >= 1 && calls <= kMaxAgentToolCalls) d.max_tool_calls = calls;
  const int timeout = limits.value("timeout_s", static_cast<int>(d.timeout.count()));
  if (timeout >= 1 && timeout <= kMaxAgentTimeoutSeconds) d.timeout = std::chrono::seconds(timeout);
  const double cost = limits.value("max_cost_usd", d.max_cost_usd);
  if (cost >= 0) d.max_cost_usd = cost;
  return d;
}

absl::StatusOr<nlohmann::ordered_json> PgRunStore::Opened(pqxx::work& tx, const std::string& tenant,
                                                          const char* json_text) {
  nlohmann::ordered_json doc = nlohmann::ordered_json::parse(json_text);
  absl::Status opened = seal::OpenStrings(
      doc, [&](int key_id) { return keys_.KeyById(tx, tenant, key_id); },
      platform::PlatformAd(tenant));
  if (!opened.ok()) return opened;
  return doc;
}

absl::StatusOr<std::optional<AgentDefinition>> PgRunStore::LoadAgent(const core::Identity& who,
                                                                     const std::string& ref) {
  std::optional<AgentDefinition> agent;
  absl::Status status =
      pg::WithTenantTransaction(pool_, who.tenant_id, [&](pqxx::work& tx) -> absl::Status {
        pqxx::result r = tx.exec_params(
            absl::StrCat("SELECT to_jsonb(a)::text FROM platform.agents a WHERE a.tenant_id = $1 "
                         "AND a.user_id = $2 AND ",
                         platform::ByIdOrName(ref, 3, "a.")),
            who.tenant_id, who.user_id, ref);
        if (r.empty()) return absl::OkStatus();
        auto row = Opened(tx, who.tenant_id, r[0][0].c_str());
        if (!row.ok()) return row.status();
        agent = DefinitionFromRow(nlohmann::json(*row));
        return absl::OkStatus();
      });
  if (!status.ok()) return status;
  return agent;
}

absl::StatusOr<std::string> PgRunStore::StartRun(const core::Identity& who,
                                                 const AgentDefinition& agent,
                                                 const RunStart& start) {
  const std::string id = core::NewUuid();
  auto key = keys_.ActiveKey(who.tenant_id);
  if (!key.ok()) return key.status();
  const platform::SealingScope sealing(*key, platform::PlatformAd(who.tenant_id));
  const std::string input = platform::SealedStrings(start.input_json);
  absl::Status status =
      pg::WithTenantTransaction(pool_, who.tenant_id, [&](pqxx::work& tx) -> absl::Status {
        tx.exec_params(
            "INSERT INTO platform.runs (tenant_id, id, user_id, agent_id, agent_name, status, "
            "input, trigger, slot, lease_until) VALUES ($1, $2::uuid, $3, $4::uuid, $5, "
            "'running', $6::jsonb, $7, to_timestamp($8::double precision / 1e6), now() + "
            "make_interval(secs => $9))",
            who.tenant_id, id, who.user_id, agent.id, agent.name, input, start.trigger,
            start.slot ? std::optional<int64_t>(core::MicrosOf(*start.slot)) : std::nullopt,
            static_cast<double>(RunLease(agent).count()));
        return absl::OkStatus();
      });
  if (!status.ok()) return status;
  return id;
}

absl::StatusOr<bool> PgRunStore::BeginRun(const core::Identity& who, const std::string& run_id,
                                          std::chrono::seconds lease) {
  bool running = false;
  absl::Status status =
      pg::WithTenantTransaction(pool_, who.tenant_id, [&](pqxx::work& tx) -> absl::Status {
        running = !tx.exec_params(
                         "UPDATE platform.runs SET started_at = now(), lease_until = "
                         "now() + make_interval(secs => $4) WHERE tenant_id = $1 AND "
                         "user_id = $2 AND id = $3::uuid AND status = 'running' "
                         "RETURNING 1",
                         who.tenant_id, who.user_id, run_id, static_cast<double>(lease.count()))
                       .empty();
        return absl::OkStatus();
      });
  if (!status.ok()) return status;
  return running;
}

absl::StatusOr<std::string> PgRunStore::FinishRun(const core::Identity& who,
                                                  const std::string& run_id,
                                                  const RunOutcome& outcome) {
  std::string run;
  auto key = keys_.ActiveKey(who.tenant_id);
  if (!key.ok()) return key.status();
  const platform::SealingScope sealing(*key, platform::PlatformAd(who.tenant_id));
  const std::string error = platform::Sealed(outcome.error);
  const std::string output = platform::SealedStrings(outcome.output_json);
  const std::string tool_calls = platform::SealedStrings(outcome.tool_calls_json);
  absl::Status status =
      pg::WithTenantTransaction(pool_, who.tenant_id, [&](pqxx::work& tx) -> absl::Status {
        pqxx::result r = tx.exec_params(
            "UPDATE platform.runs r SET status = $4, error = $5, output = $6::jsonb, tool_calls = "
            "$7::jsonb, tokens = $8, cost_usd = $9, finished_at = now() WHERE r.tenant_id = $1 "
            "AND r.user_id = $2 AND r.id = $3::uuid AND r.status = 'running' RETURNING "
            "jsonb_build_object('run', "
            "to_jsonb(r) - 'tenant_id' - 'user_id')::text",
            who.tenant_id, who.user_id, run_id, outcome.status, error, output, tool_calls,
            static_cast<int64_t>(std::min<int64_t>(outcome.tokens, INT32_MAX)), outcome.cost_usd);
        if (r.empty()) {
          return absl::FailedPreconditionError(absl::StrCat(
              "run ", run_id, " is not running (it ended, or was failed as abandoned)"));
        }
        auto opened = Opened(tx, who.tenant_id, r[0][0].c_str());
        if (!opened.ok()) return opened.status();
        run = opened->dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
        return absl::OkStatus();
      });
  if (!status.ok()) return status;
  return run;
}

}  // namespace omniforge::executor
