#include "services/orchestrator/storage/pg_plan_store.h"

#include <optional>
#include <pqxx/pqxx>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "libs/core/ids.h"
#include "libs/seal/sealed_text.h"

namespace omniforge::orchestrator {
namespace {

std::string Dump(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::optional<std::string> NullIfEmpty(const std::string& s) {
  if (s.empty()) return std::nullopt;
  return s;
}

std::optional<int64_t> NullIfZero(int64_t micros) {
  if (micros == 0) return std::nullopt;
  return micros;
}

nlohmann::json AnswersToJson(const std::vector<StepAnswer>& answers) {
  nlohmann::json out = nlohmann::json::array();
  for (const StepAnswer& a : answers) {
    out.push_back({{"question", a.question}, {"answer", a.answer}, {"answered_by", a.answered_by}});
  }
  return out;
}

nlohmann::json QuestionToJson(const std::optional<PendingQuestion>& q) {
  if (!q.has_value()) return nullptr;
  return {{"step_id", q->step_id}, {"question", q->question}, {"options", q->options}};
}

constexpr char kPlans[] = "orchestration.plans";
constexpr char kSteps[] = "orchestration.plan_steps";

// A step's row in the sealed columns' associated data.
std::string StepRow(const std::string& plan_id, const std::string& step_id) {
  return plan_id + "/" + step_id;
}

// A step's assessment for its jsonb column: score and verdict in the clear
// (SQL can read them), the rest (reasons and evidence: words of the user,
// the model and the tools) sealed as `detail`; SQL NULL when there is none.
std::optional<std::string> SealedAssessment(const seal::RowSealer& seal,
                                            const std::optional<Assessment>& assessment) {
  if (!assessment.has_value()) return std::nullopt;
  return Dump({{"score", assessment->score},
               {"verdict", VerdictName(assessment->verdict)},
               {"detail", nlohmann::json::parse(
                              seal.Json("assessment", Dump(AssessmentToJson(*assessment))))}});
}

void InsertSteps(pqxx::work& tx, const seal::DataKey& key, const Plan& plan) {
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const PlanStep& s = plan.steps[i];
    const nlohmann::json definition = StepsToJson({s})[0];
    const seal::RowSealer seal(key, kSteps, plan.tenant_id, StepRow(plan.id, s.id));
    tx.exec_params(
        "INSERT INTO orchestration.plan_steps (tenant_id, plan_id, step_id, position, "
        "description, tools, needs_executor, depends_on, expected_output, tool_calls, status, "
        "result_summary, result, error, answers, dialogue_conversation_id, attempts, "
        "started_at, finished_at, assessment) "
        "VALUES ($1, $2, $3, $4, $5, $6::jsonb, $7, $8::jsonb, $9, $10::jsonb, $11, $12, "
        "$13::jsonb, $14, $15::jsonb, $16, $17, to_timestamp($18::double precision / 1000000), "
        "to_timestamp($19::double precision / 1000000), $20::jsonb)",
        plan.tenant_id, plan.id, s.id, static_cast<int>(i), seal.Text("description", s.description),
        Dump(definition["tools"]), s.needs_executor, Dump(definition["depends_on"]),
        seal.Text("expected_output", s.expected_output),
        seal.Json("tool_calls", Dump(definition["tool_calls"])), StepStatusName(s.status),
        seal.Text("result_summary", s.result_summary), seal.Json("result", Dump(s.result)),
        seal.Text("error", s.error), seal.Json("answers", Dump(AnswersToJson(s.answers))),
        s.dialogue_conversation_id, s.attempts, NullIfZero(s.started_micros),
        NullIfZero(s.finished_micros), SealedAssessment(seal, s.assessment));
  }
}

std::vector<std::string> Strings(const std::string& json_text) {
  const auto parsed = nlohmann::json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (!parsed.is_array()) return {};
  std::vector<std::string> out;
  for (const auto& item : parsed) {
    if (item.is_string()) out.push_back(item.get<std::string>());
  }
  return out;
}

nlohmann::json Parsed(const std::string& json_text, const nlohmann::json& otherwise) {
  auto parsed = nlohmann::json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  return parsed.is_discarded() ? otherwise : parsed;
}

// The plan row's columns from `objective` on, sealed with `key`.
struct SealedPlanColumns {
  SealedPlanColumns(const seal::DataKey& key, const Plan& plan) {
    const seal::RowSealer seal(key, kPlans, plan.tenant_id, plan.id);
    objective = seal.Text("objective", plan.objective);
    requested_outputs = seal.Json("requested_outputs", Dump(plan.requested_outputs));
    priority_entities = seal.Json("priority_entities", Dump(plan.priority_entities));
    review_notes = seal.Text("review_notes", plan.review_notes);
    if (plan.pending_question.has_value()) {
      pending_question = seal.Json("pending_question", Dump(QuestionToJson(plan.pending_question)));
    }
    summary = seal.Text("summary", plan.summary);
  }
  std::string objective, requested_outputs, priority_entities, review_notes, summary;
  std::optional<std::string> pending_question;  // SQL NULL when there is none
};

std::optional<Assessment> OpenedAssessment(seal::RowOpener& open, const std::string& stored) {
  const nlohmann::json column = Parsed(stored, nullptr);
  if (!column.is_object()) return std::nullopt;
  auto detail = column.find("detail");
  if (detail == column.end()) return AssessmentFromJson(column);
  return AssessmentFromJson(Parsed(open.Json("assessment", Dump(*detail)), nullptr));
}

// A step's row (the columns Get selects), its sealed columns opened.
absl::StatusOr<PlanStep> StepOfRow(seal::KeyRing& keys, pqxx::work& tx, const std::string& tenant,
                                   const std::string& plan_id, const pqxx::row& s) {
  PlanStep step;
  step.id = s[0].as<std::string>();
  seal::RowOpener open_step(keys, tx, kSteps, tenant, StepRow(plan_id, step.id));
  step.description = open_step.Text("description", s[1].as<std::string>());
  step.tools = Strings(s[2].as<std::string>());
  step.needs_executor = s[3].as<bool>();
  step.depends_on = Strings(s[4].as<std::string>());
  step.expected_output = open_step.Text("expected_output", s[5].as<std::string>());
  for (const auto& call : Parsed(open_step.Json("tool_calls", s[6].as<std::string>(), "[]"),
                                 nlohmann::json::array())) {
    step.tool_calls.push_back(
        {call.value("tool", ""), call.value("arguments", nlohmann::json::object())});
  }
  step.status = ParseStepStatus(s[7].as<std::string>()).value_or(StepStatus::kPending);
  step.result_summary = open_step.Text("result_summary", s[8].as<std::string>());
  step.result =
      Parsed(open_step.Json("result", s[9].as<std::string>(), "{}"), nlohmann::json::object());
  step.error = open_step.Text("error", s[10].as<std::string>());
  for (const auto& a :
       Parsed(open_step.Json("answers", s[11].as<std::string>(), "[]"), nlohmann::json::array())) {
    step.answers.push_back(
        {a.value("question", ""), a.value("answer", ""), a.value("answered_by", "")});
  }
  step.dialogue_conversation_id = s[12].as<std::string>();
  step.attempts = s[13].as<int>();
  step.started_micros = s[14].as<int64_t>();
  step.finished_micros = s[15].as<int64_t>();
  step.assessment = OpenedAssessment(open_step, s[16].as<std::string>());
  if (!open_step.status().ok()) return open_step.status();
  return step;
}

}  // namespace

absl::Status PgPlanStore::Create(const Plan& plan) {
  auto key = keys_.ActiveKey(plan.tenant_id);
  if (!key.ok()) return key.status();
  const SealedPlanColumns sealed(*key, plan);
  return pg::WithTenantTransaction(pool_, plan.tenant_id, [&](pqxx::work& tx) {
    tx.exec_params(
        "INSERT INTO orchestration.plans (tenant_id, id, user_id, conversation_id, objective, "
        "context_type, entity_id, execution_mode, status, requested_outputs, priority_entities, "
        "writes_approved, review_verdict, review_notes, pending_question, summary) "
        "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10::jsonb, $11::jsonb, $12, $13, $14, "
        "$15::jsonb, $16)",
        plan.tenant_id, plan.id, plan.user_id, NullIfEmpty(plan.conversation_id), sealed.objective,
        ContextTypeName(plan.context_type), plan.entity_id, ExecutionModeName(plan.mode),
        PlanStatusName(plan.status), sealed.requested_outputs, sealed.priority_entities,
        plan.writes_approved,
        plan.review_verdict.has_value()
            ? std::optional<std::string>(ReviewVerdictName(*plan.review_verdict))
            : std::nullopt,
        sealed.review_notes, sealed.pending_question, sealed.summary);
    InsertSteps(tx, *key, plan);
    return absl::OkStatus();
  });
}

absl::StatusOr<std::optional<std::string>> PgPlanStore::LatestUnfinished(
    const core::Identity& who, const std::string& conversation_id) {
  if (!core::IsUuid(conversation_id)) return std::optional<std::string>();
  std::optional<std::string> id;
  absl::Status status = pg::WithTenantTransaction(pool_, who.tenant_id, [&](pqxx::work& tx) {
    pqxx::result rows = tx.exec_params(
        "SELECT id::text FROM orchestration.plans "
        "WHERE tenant_id = $1 AND conversation_id = $2 AND user_id = $3 "
        "AND status IN ('approved', 'running') ORDER BY created_at DESC LIMIT 1",
        who.tenant_id, conversation_id, who.user_id);
    if (!rows.empty()) id = rows[0][0].as<std::string>();
    return absl::OkStatus();
  });
  if (!status.ok()) return status;
  return id;
}

absl::StatusOr<int> PgPlanStore::Forget(const core::Identity& who,
                                        const std::string& conversation_id) {
  if (!core::IsUuid(conversation_id)) return 0;
  int forgotten = 0;
  absl::Status status = pg::WithTenantTransaction(pool_, who.tenant_id, [&](pqxx::work& tx) {
    tx.exec_params(
        "DELETE FROM orchestration.plan_steps s USING orchestration.plans p "
        "WHERE s.tenant_id = $1 AND p.tenant_id = $1 AND s.plan_id = p.id "
        "AND p.conversation_id = $2 AND p.user_id = $3",
        who.tenant_id, conversation_id, who.user_id);
    forgotten = static_cast<int>(
        tx.exec_params("DELETE FROM orchestration.plans "
                       "WHERE tenant_id = $1 AND conversation_id = $2 AND user_id = $3",
                       who.tenant_id, conversation_id, who.user_id)
            .affected_rows());
    return absl::OkStatus();
  });
  if (!status.ok()) return status;
  return forgotten;
}

absl::StatusOr<Plan> PgPlanStore::Get(const core::Identity& who, const std::string& plan_id) {
  if (!core::IsUuid(plan_id)) return absl::NotFoundError("no plan " + plan_id);
  Plan plan;
  absl::Status status = pg::WithTenantTransaction(pool_, who.tenant_id, [&](pqxx::work& tx) {
    pqxx::result rows = tx.exec_params(
        "SELECT coalesce(conversation_id::text, ''), objective, context_type, entity_id, "
        "execution_mode, status, requested_outputs::text, priority_entities::text, "
        "writes_approved, coalesce(review_verdict, ''), review_notes, "
        "coalesce(pending_question::text, 'null'), summary "
        "FROM orchestration.plans WHERE tenant_id = $1 AND id = $2 AND user_id = $3",
        who.tenant_id, plan_id, who.user_id);
    if (rows.empty()) return absl::NotFoundError("no plan " + plan_id);
    const pqxx::row r = rows[0];
    plan.id = plan_id;
    plan.tenant_id = who.tenant_id;
    plan.user_id = who.user_id;
    plan.conversation_id = r[0].as<std::string>();
    seal::RowOpener open(keys_, tx, kPlans, who.tenant_id, plan_id);
    plan.objective = open.Text("objective", r[1].as<std::string>());
    plan.context_type = ParseContextType(r[2].as<std::string>())
                            .value_or(::omniforge::intent::v1::CONTEXT_TYPE_GLOBAL);
    plan.entity_id = r[3].as<std::string>();
    plan.mode = ParseExecutionMode(r[4].as<std::string>()).value_or(ExecutionMode::kAutoExecute);
    plan.status = ParsePlanStatus(r[5].as<std::string>()).value_or(PlanStatus::kFailed);
    plan.requested_outputs = Strings(open.Json("requested_outputs", r[6].as<std::string>()));
    plan.priority_entities = Strings(open.Json("priority_entities", r[7].as<std::string>()));
    plan.writes_approved = r[8].as<bool>();
    plan.review_verdict = ParseReviewVerdict(r[9].as<std::string>());
    plan.review_notes = open.Text("review_notes", r[10].as<std::string>());
    if (const auto q = Parsed(open.Json("pending_question", r[11].as<std::string>()), nullptr);
        q.is_object()) {
      plan.pending_question = PendingQuestion{q.value("step_id", ""), q.value("question", ""),
                                              q.value("options", std::vector<std::string>{})};
    }
    plan.summary = open.Text("summary", r[12].as<std::string>());
    if (!open.status().ok()) return open.status();

    pqxx::result steps = tx.exec_params(
        "SELECT step_id, description, tools::text, needs_executor, depends_on::text, "
        "expected_output, tool_calls::text, status, result_summary, result::text, error, "
        "answers::text, dialogue_conversation_id, attempts, "
        "coalesce((extract(epoch FROM started_at) * 1000000)::bigint, 0), "
        "coalesce((extract(epoch FROM finished_at) * 1000000)::bigint, 0), "
        "coalesce(assessment::text, 'null') "
        "FROM orchestration.plan_steps WHERE tenant_id = $1 AND plan_id = $2 ORDER BY position",
        who.tenant_id, plan_id);
    for (const pqxx::row& s : steps) {
      auto step = StepOfRow(keys_, tx, who.tenant_id, plan_id, s);
      if (!step.ok()) return step.status();
      plan.steps.push_back(*std::move(step));
    }
    return absl::OkStatus();
  });
  if (!status.ok()) return status;
  return plan;
}

absl::Status PgPlanStore::Update(const Plan& plan, std::initializer_list<PlanStatus> from,
                                 bool replace_steps) {
  std::vector<std::string> allowed;
  for (PlanStatus s : from) allowed.emplace_back(PlanStatusName(s));
  auto key = keys_.ActiveKey(plan.tenant_id);
  if (!key.ok()) return key.status();
  const SealedPlanColumns sealed(*key, plan);
  return pg::WithTenantTransaction(pool_, plan.tenant_id, [&](pqxx::work& tx) {
    pqxx::result current = tx.exec_params(
        "SELECT status FROM orchestration.plans WHERE tenant_id = $1 AND id = $2 AND user_id = $3 "
        "FOR UPDATE",
        plan.tenant_id, plan.id, plan.user_id);
    if (current.empty()) return absl::NotFoundError("no plan " + plan.id);
    const std::string stored = current[0][0].as<std::string>();
    if (std::find(allowed.begin(), allowed.end(), stored) == allowed.end()) {
      return absl::FailedPreconditionError(absl::StrCat("plan ", plan.id, " is ", stored,
                                                        "; this needs it to be ",
                                                        absl::StrJoin(allowed, " or ")));
    }
    tx.exec_params(
        "UPDATE orchestration.plans SET status = $3, writes_approved = $4, review_verdict = $5, "
        "review_notes = $6, pending_question = $7::jsonb, summary = $8, updated_at = now() "
        "WHERE tenant_id = $1 AND id = $2",
        plan.tenant_id, plan.id, PlanStatusName(plan.status), plan.writes_approved,
        plan.review_verdict.has_value()
            ? std::optional<std::string>(ReviewVerdictName(*plan.review_verdict))
            : std::nullopt,
        sealed.review_notes, sealed.pending_question, sealed.summary);
    if (replace_steps) {
      tx.exec_params("DELETE FROM orchestration.plan_steps WHERE tenant_id = $1 AND plan_id = $2",
                     plan.tenant_id, plan.id);
      InsertSteps(tx, *key, plan);
    }
    return absl::OkStatus();
  });
}

absl::Status PgPlanStore::UpdateStep(const Plan& plan, const PlanStep& step) {
  auto key = keys_.ActiveKey(plan.tenant_id);
  if (!key.ok()) return key.status();
  const seal::RowSealer seal(*key, kSteps, plan.tenant_id, StepRow(plan.id, step.id));
  return pg::WithTenantTransaction(pool_, plan.tenant_id, [&](pqxx::work& tx) {
    pqxx::result updated = tx.exec_params(
        "UPDATE orchestration.plan_steps SET status = $4, result_summary = $5, "
        "result = $6::jsonb, error = $7, answers = $8::jsonb, dialogue_conversation_id = $9, "
        "attempts = $10, started_at = to_timestamp($11::double precision / 1000000), "
        "finished_at = to_timestamp($12::double precision / 1000000), "
        "assessment = $13::jsonb "
        "WHERE tenant_id = $1 AND plan_id = $2 AND step_id = $3",
        plan.tenant_id, plan.id, step.id, StepStatusName(step.status),
        seal.Text("result_summary", step.result_summary), seal.Json("result", Dump(step.result)),
        seal.Text("error", step.error), seal.Json("answers", Dump(AnswersToJson(step.answers))),
        step.dialogue_conversation_id, step.attempts, NullIfZero(step.started_micros),
        NullIfZero(step.finished_micros), SealedAssessment(seal, step.assessment));
    if (updated.affected_rows() == 0) {
      return absl::NotFoundError(absl::StrCat("no step ", step.id, " in plan ", plan.id));
    }
    return absl::OkStatus();
  });
}

}  // namespace omniforge::orchestrator
