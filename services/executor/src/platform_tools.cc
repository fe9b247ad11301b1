#include "services/executor/src/platform_tools.h"

#include <map>
#include <stdexcept>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "libs/core/call_deadline.h"
#include "libs/core/ids.h"
#include "libs/seal/sealed_json.h"
#include "libs/seal/sealed_text.h"
#include "services/executor/src/platform_handlers.h"

namespace omniforge::executor {
namespace platform {
namespace {

size_t CountChars(std::string_view s) {
  size_t n = 0;
  for (char c : s) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

bool HasControl(std::string_view s) {
  for (char c : s) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) return true;
  }
  return false;
}

// The tenant key and binding of the write running on this thread.
struct Sealing {
  const seal::DataKey* key = nullptr;
  std::string ad;
};
thread_local Sealing current_sealing;

const Sealing& CurrentSealing() {
  if (current_sealing.key == nullptr) {
    // A handler is always run by PlatformTools, which sets it.
    throw std::logic_error("a platform write ran without a SealingScope");
  }
  return current_sealing;
}

}  // namespace

SealingScope::SealingScope(const seal::DataKey& key, std::string ad)
    : previous_key_(current_sealing.key), previous_ad_(std::move(current_sealing.ad)) {
  current_sealing = Sealing{&key, std::move(ad)};
}

SealingScope::~SealingScope() { current_sealing = Sealing{previous_key_, std::move(previous_ad_)}; }

std::string Sealed(const std::string& text) {
  if (text.empty()) return {};
  const Sealing& s = CurrentSealing();
  return seal::SealText(*s.key, text, s.ad);
}

std::optional<std::string> Sealed(const std::optional<std::string>& text) {
  if (!text.has_value()) return std::nullopt;
  return Sealed(*text);
}

std::string SealedStrings(const std::string& json_text) {
  nlohmann::ordered_json doc =
      nlohmann::ordered_json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return json_text;  // not JSON: the statement refuses it
  const Sealing& s = CurrentSealing();
  seal::SealStrings(doc, *s.key, s.ad);
  return doc.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::optional<std::string> SealedStrings(const std::optional<std::string>& json_text) {
  if (!json_text.has_value()) return std::nullopt;
  return SealedStrings(*json_text);
}

std::string PlatformAd(const std::string& tenant) { return "platform|" + tenant; }

std::string Filtered(const std::string& json_text, const ReadPlan::Filter& filter) {
  nlohmann::ordered_json doc = nlohmann::ordered_json::parse(json_text);
  const std::string query = absl::AsciiStrToLower(filter.query);
  auto matches = [&](const nlohmann::ordered_json& item, const char* field) {
    auto it = item.find(field);
    return it != item.end() && it->is_string() &&
           absl::StrContains(absl::AsciiStrToLower(it->get<std::string>()), query);
  };
  nlohmann::ordered_json kept = nlohmann::ordered_json::array();
  for (const nlohmann::ordered_json& item : doc[filter.list]) {
    if (static_cast<int>(kept.size()) == filter.limit) break;
    if (matches(item, "name") || matches(item, "description")) kept.push_back(item);
  }
  doc["count"] = kept.size();
  doc[filter.list] = std::move(kept);
  return doc.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

void Args::Fail(const std::string& field, const std::string& problem) {
  problems_.push_back(absl::StrCat("$.", field, ": ", problem));
}

std::optional<std::string> Args::OptionalText(const char* field, size_t min_chars,
                                              size_t max_chars) {
  auto it = json_.find(field);
  if (it == json_.end()) return std::nullopt;
  std::string value = it->get<std::string>();
  if (value.find('\0') != std::string::npos) {
    Fail(field, "must not contain NUL characters");
    return value;
  }
  const size_t n = CountChars(value);
  if (n < min_chars || n > max_chars) {
    Fail(field,
         min_chars > 0
             ? absl::StrCat("must be ", min_chars, " to ", max_chars, " characters (got ", n, ")")
             : absl::StrCat("must be at most ", max_chars, " characters (got ", n, ")"));
  }
  return value;
}

std::string Args::Text(const char* field, size_t min_chars, size_t max_chars) {
  return OptionalText(field, min_chars, max_chars).value_or("");
}

std::optional<std::string> Args::OptionalName(const char* field, size_t max_chars) {
  auto value = OptionalText(field, 1, max_chars);
  if (!value.has_value()) return value;
  std::string trimmed(absl::StripAsciiWhitespace(*value));
  if (trimmed.empty()) {
    Fail(field, "must not be blank");
  } else if (HasControl(trimmed)) {
    Fail(field, "must not contain control characters");
  }
  return trimmed;
}

std::string Args::Name(const char* field, size_t max_chars) {
  return OptionalName(field, max_chars).value_or("");
}

std::string Args::Uuid(const char* field) {
  std::string value = Text(field, 1, 64);
  if (!value.empty() && !core::IsUuid(value)) {
    Fail(field, absl::StrCat("'", value, "' is not an id (a UUID)"));
  }
  return value;
}

int Args::Limit(const char* field, int fallback) {
  auto it = json_.find(field);
  return it == json_.end() ? fallback : it->get<int>();
}

std::optional<std::string> Args::JsonText(const char* field) const {
  auto it = json_.find(field);
  if (it == json_.end()) return std::nullopt;
  return it->dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

absl::Status Args::status() const {
  if (problems_.empty()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrJoin(problems_, "; "));
}

std::string JsonObject(std::initializer_list<std::pair<const char*, std::string>> fields) {
  std::string out = "{";
  for (const auto& [key, value] : fields) {
    if (out.size() > 1) out += ",";
    absl::StrAppend(&out, "\"", key, "\":", value);
  }
  out += "}";
  return out;
}

std::string ByIdOrName(const std::string& ref, int n, const char* alias) {
  return core::IsUuid(ref) ? absl::StrCat(alias, "id = $", n, "::uuid")
                           : absl::StrCat("lower(", alias, "name) = lower($", n, ")");
}

}  // namespace platform

namespace {

const std::map<std::string, platform::ReadHandler, std::less<>>& Reads() {
  static const auto* reads = new std::map<std::string, platform::ReadHandler, std::less<>>{
      {"list_agents", platform::ListAgents},
      {"get_agent", platform::GetAgent},
      {"list_skills", platform::ListSkills},
      {"list_runs", platform::ListRuns},
      {"get_run", platform::GetRun},
      {"search_projects", platform::SearchProjects},
      {"get_project_details", platform::GetProjectDetails},
      {"list_tasks", platform::ListTasks},
      {"list_project_templates", platform::ListProjectTemplates},
      {"get_settings", platform::GetSettings},
  };
  return *reads;
}

const std::map<std::string, platform::WriteHandler, std::less<>>& Writes() {
  static const auto* writes = new std::map<std::string, platform::WriteHandler, std::less<>>{
      {"create_agent", platform::CreateAgent},
      {"update_agent", platform::UpdateAgent},
      {"pause_agent", platform::PauseAgent},
      {"resume_agent", platform::ResumeAgent},
      {"delete_agent", platform::DeleteAgent},
      {"create_skill", platform::CreateSkill},
      {"create_project", platform::CreateProject},
      {"update_task", platform::UpdateTask},
      {"create_project_template", platform::CreateProjectTemplate},
      {"create_context_document", platform::CreateContextDocument},
      {"update_settings", platform::UpdateSettings},
      {"mark_notices_seen", platform::MarkNoticesSeen},
  };
  return *writes;
}

// Milliseconds until `deadline`, at most `cap`; 0 or less when it passed.
int64_t MillisLeft(std::chrono::system_clock::time_point deadline, int64_t cap) {
  if (deadline == std::chrono::system_clock::time_point::max()) return cap;
  const int64_t left = std::chrono::duration_cast<std::chrono::milliseconds>(
                           deadline - std::chrono::system_clock::now())
                           .count();
  return std::min(left, cap);
}

}  // namespace

absl::StatusOr<std::vector<ToolSpec>> PlatformTools::ListTools() { return PlatformToolSpecs(); }

absl::StatusOr<ToolResult> PlatformTools::Invoke(const ToolCall& call) {
  absl::StatusOr<ToolResult> result = InvokeSealed(call);
  if (!result.ok()) return result;
  if (absl::Status opened = OpenResult(call.who.tenant_id, *result); !opened.ok()) return opened;
  return result;
}

absl::Status PlatformTools::OpenResult(const std::string& tenant, ToolResult& result) {
  if (result.json.find("ofs1:") == std::string::npos) return absl::OkStatus();  // nothing sealed
  // Ordered: the result reads as the tool wrote it, members in their order.
  nlohmann::ordered_json doc =
      nlohmann::ordered_json::parse(result.json, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return absl::InternalError("a tool's result is not JSON");
  absl::Status opened = seal::OpenStrings(
      doc, [&](int key_id) { return keys_.Key(tenant, key_id); }, platform::PlatformAd(tenant));
  if (!opened.ok()) return opened;
  result.json = doc.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return absl::OkStatus();
}

absl::StatusOr<ToolResult> PlatformTools::InvokeSealed(const ToolCall& call) {
  if (call.deadline <= std::chrono::system_clock::now()) {
    return absl::DeadlineExceededError("the call's deadline passed before the tool ran");
  }
  if (auto read = Reads().find(call.tool_name); read != Reads().end()) {
    return RunRead(read->second, call);
  }
  if (call.tool_name == "run_agent") return platform::RunAgent(runner_, call);
  auto write = Writes().find(call.tool_name);
  if (write == Writes().end()) {
    return absl::NotFoundError(absl::StrCat("no built-in tool named '", call.tool_name, "'"));
  }
  absl::StatusOr<ToolResult> result;
  core::ScopedCallDeadline scope(call.deadline);
  auto key = keys_.ActiveKey(call.who.tenant_id);
  if (!key.ok()) return key.status();
  const platform::SealingScope sealing(*key, platform::PlatformAd(call.who.tenant_id));
  absl::Status status =
      pg::WithTenantTransaction(pool_, call.who.tenant_id, [&](pqxx::work& tx) -> absl::Status {
        result = write->second(tx, call, clock_.Now());
        if (!result.ok()) return result.status();
        // A business failure changed nothing worth keeping: roll it back.
        return result->is_error ? absl::CancelledError("") : absl::OkStatus();
      });
  if (absl::IsCancelled(status) && result.ok()) return result;
  if (!status.ok()) return status;
  return result;
}

// One round trip: the statement timeout capped at the caller's deadline and
// the call of the tool's read function (which sets the tenant for
// row-level security) travel in one simple-protocol message, which
// PostgreSQL runs as one implicit transaction (so both settings end with
// it) and times per statement.
absl::StatusOr<ToolResult> PlatformTools::RunRead(platform::ReadHandler handler,
                                                  const ToolCall& call) {
  for (int attempt = 0;; ++attempt) {
    const int64_t timeout_ms = MillisLeft(call.deadline, pool_.options().statement_timeout_ms);
    if (timeout_ms <= 0) {
      return absl::DeadlineExceededError("the call's deadline passed before the database work");
    }
    auto lease = pool_.Acquire();
    if (!lease.ok()) return lease.status();
    try {
      const platform::Quote quote(lease->conn());
      auto plan = handler(quote, call);
      if (!plan.ok()) return plan.status();
      pqxx::nontransaction tx(lease->conn());
      pqxx::result r = tx.exec(absl::StrCat("SELECT set_config('statement_timeout', '", timeout_ms,
                                            "', true); ", plan->sql));
      if (r.empty() || r[0][0].is_null()) {
        return ToolResult::Error("not_found", plan->not_found_message);
      }
      ToolResult result{r[0][0].c_str(), false};
      if (plan->filter.has_value()) {
        if (absl::Status opened = OpenResult(call.who.tenant_id, result); !opened.ok()) {
          return opened;
        }
        result.json = platform::Filtered(result.json, *plan->filter);
      }
      return result;
    } catch (const pqxx::broken_connection& e) {
      lease->Discard();
      if (attempt > 0) return pg::StatusFromException(e);
    } catch (const std::exception& e) {
      if (!lease->conn().is_open()) lease->Discard();
      return pg::StatusFromException(e);
    }
  }
}

}  // namespace omniforge::executor
