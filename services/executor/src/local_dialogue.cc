#include "services/executor/src/local_dialogue.h"

#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "libs/core/ids.h"

namespace omniforge::executor {
namespace {

// What a tool's result holds, in a few words, for the step's summary: the
// lists it returned with their size and first names ("3 tasks (Write the
// announcement, ...)"), the items it named ("project 'Harbor'"), whether it
// created something.
std::string DescribeToolResult(const std::string& tool, const nlohmann::json& result) {
  if (!result.is_object()) return tool;
  std::vector<std::string> parts;
  for (const auto& [key, value] : result.items()) {
    if (value.is_array()) {
      std::vector<std::string> names;
      for (const nlohmann::json& item : value) {
        if (!item.is_object() || names.size() == 3) continue;
        for (const char* field : {"name", "title"}) {
          if (item.contains(field) && item[field].is_string()) {
            names.push_back(item[field].get<std::string>());
            break;
          }
        }
      }
      std::string noun = absl::StrReplaceAll(key, {{"_", " "}});
      if (value.size() == 1 && noun.size() > 1 && noun.back() == 's') noun.pop_back();
      std::string part = absl::StrCat(value.size(), " ", noun);
      if (!names.empty()) {
        absl::StrAppend(&part, " (", absl::StrJoin(names, ", "),
                        value.size() > names.size() ? ", ..." : "", ")");
      }
      parts.push_back(std::move(part));
    } else if (value.is_object()) {
      for (const char* field : {"name", "title"}) {
        if (value.contains(field) && value[field].is_string()) {
          parts.push_back(absl::StrCat(key, " '", value[field].get<std::string>(), "'"));
          break;
        }
      }
    }
  }
  const auto created = result.find("created");
  const bool made = created != result.end() && created->is_boolean() && created->get<bool>();
  if (parts.empty()) return made ? tool + ": done" : tool;
  return absl::StrCat(tool, ": ", made ? "created " : "", absl::StrJoin(parts, ", "));
}

constexpr size_t kMaxTaskChars = 10000;
constexpr size_t kMaxPlannedCalls = 20;

// The argument fields that name something by id or name, and how to find
// candidates for a name: the read tool, its arguments and the result list.
struct NameLookup {
  const char* field;
  const char* noun;
  const char* tool;
  const char* list;
  bool has_query;
};
constexpr NameLookup kLookups[] = {
    {"project", "project", "search_projects", "projects", true},
    {"agent", "agent", "list_agents", "agents", false},
    {"template", "project template", "list_project_templates", "templates", true},
};

std::string Dump(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

bool Retryable(const absl::Status& s) {
  return absl::IsUnavailable(s) || absl::IsDeadlineExceeded(s) || absl::IsAborted(s) ||
         absl::IsResourceExhausted(s);
}

}  // namespace

std::optional<std::pair<DialogueError, std::string>> CheckAssignment(const ToolCatalog& catalog,
                                                                     const Assignment& a,
                                                                     bool require_planned_calls) {
  auto invalid = [](std::string message) {
    return std::make_pair(DialogueError::kInvalidAssignment, std::move(message));
  };
  if (absl::StripAsciiWhitespace(a.task).empty() || a.task.size() > kMaxTaskChars) {
    return invalid(absl::StrCat("task: must be 1 to ", kMaxTaskChars, " characters"));
  }
  if (a.max_turns < 0 || a.max_turns > kMaxTurnsLimit) {
    return invalid(
        absl::StrCat("max_turns: must be 0 (default ", kDefaultMaxTurns, ") to ", kMaxTurnsLimit));
  }
  const std::set<std::string> allowed(a.allowed_tools.begin(), a.allowed_tools.end());
  for (const std::string& name : allowed) {
    if (!catalog.Find(name).has_value()) {
      return invalid(absl::StrCat("allowed_tools: no tool named '", name, "'"));
    }
  }
  if (a.tool_calls.empty() && require_planned_calls) {
    return invalid(
        "tool_calls: without an LLM the executor runs the step's planned tool calls, and none "
        "were given");
  }
  if (a.tool_calls.size() > kMaxPlannedCalls) {
    return invalid(absl::StrCat("tool_calls: at most ", kMaxPlannedCalls, " calls per step"));
  }
  for (size_t i = 0; i < a.tool_calls.size(); ++i) {
    const PlannedCall& call = a.tool_calls[i];
    const std::string where = absl::StrCat("tool_calls[", i, "]: ");
    const auto entry = catalog.Find(call.tool_name);
    if (!entry.has_value()) {
      return invalid(absl::StrCat(where, "no tool named '", call.tool_name, "'"));
    }
    if (allowed.empty() ? entry->spec.risk != ToolRisk::kRead : !allowed.contains(call.tool_name)) {
      return invalid(absl::StrCat(where, "'", call.tool_name,
                                  "' is not among the allowed tools (none given: read-only "
                                  "tools)"));
    }
    if (entry->spec.risk != ToolRisk::kRead && !a.writes_approved) {
      return std::make_pair(DialogueError::kWriteNotApproved,
                            absl::StrCat(where, "'", call.tool_name, "' is a ",
                                         std::string(ToolRiskName(entry->spec.risk)),
                                         " tool and this step's writes were not approved"));
    }
    const auto args = nlohmann::json::parse(
        call.arguments_json.empty() ? std::string("{}") : call.arguments_json, nullptr, false);
    if (!args.is_object()) {
      return invalid(absl::StrCat(where, "arguments_json must be a JSON object"));
    }
  }
  return std::nullopt;
}

bool LocalDialogue::CheckCancel() {
  if (!cancel_requested_) return false;
  Fail(DialogueError::kCancelled, "the planner cancelled the step");
  return true;
}

bool LocalDialogue::ApplyCancel() {
  if (finished_ || !cancel_requested_ || (started_ && !pending_.has_value())) return false;
  return CheckCancel();
}

bool LocalDialogue::UseTurn() {
  const int max_turns = assignment_.max_turns == 0 ? kDefaultMaxTurns : assignment_.max_turns;
  if (turns_ >= max_turns) {
    Fail(DialogueError::kMaxTurns,
         absl::StrCat("the step reached its limit of ", max_turns, " turns after ", records_.size(),
                      " tool calls; the partial results are attached"));
    return false;
  }
  ++turns_;
  return true;
}

void LocalDialogue::Start(Assignment assignment) {
  started_ = true;
  assignment_ = std::move(assignment);
  if (auto problem = CheckAssignment(runtime_.catalog(), assignment_); problem.has_value()) {
    Fail(problem->first, problem->second);
    return;
  }
  for (const PlannedCall& call : assignment_.tool_calls) {
    arguments_.push_back(nlohmann::json::parse(call.arguments_json.empty() ? std::string("{}")
                                                                           : call.arguments_json));
  }
  write_keys_ = StepWriteKeys(assignment_.idempotency_key);
  Run();
}

void LocalDialogue::Run() {
  while (!finished_ && next_ < assignment_.tool_calls.size()) {
    if (CheckCancel() || !RunCall()) return;
  }
  if (finished_) return;
  std::vector<std::string> described;
  for (const nlohmann::json& ran : results_) {
    described.push_back(DescribeToolResult(ran.value("tool", ""), ran["result"]));
  }
  DialogueEvent e;
  e.kind = DialogueEvent::Kind::kComplete;
  e.summary = absl::StrCat(
      absl::StrJoin(described, "; "),
      questions_ > 0 ? absl::StrCat(" (after ", questions_, " clarification(s) from the planner)")
                     : "",
      ".");
  e.result_json = Dump({{"results", results_}});
  e.confidence = questions_ > 0 ? 0.9 : 1.0;
  e.limitations = limitations_;
  e.tool_calls = records_;
  Emit(std::move(e));
}

bool LocalDialogue::RunCall() {
  if (!UseTurn()) return false;
  const PlannedCall& planned = assignment_.tool_calls[next_];
  const nlohmann::json& args = arguments_[next_];
  const auto entry = runtime_.catalog().Find(planned.tool_name);
  const ToolRisk risk = entry.has_value() ? entry->spec.risk : ToolRisk::kRead;
  // The bounds a model's calls pass. A valid assignment's planned calls
  // pass them (a write's names are not resolved under
  // approved_targets_only), so this refuses only what cannot happen.
  if (auto refusal = CheckStepCall(assignment_, planned.tool_name, risk, args);
      refusal.has_value()) {
    partials_.push_back(
        {planned.tool_name, ToolResult::Error(refusal->code(), refusal->message).json, true, risk});
    Fail(refusal->reason == CallRefusal::Reason::kNotAllowed ? DialogueError::kInvalidAssignment
                                                             : DialogueError::kWriteNotApproved,
         absl::StrCat(planned.tool_name, ": ", refusal->message));
    return false;
  }
  DialogueEvent progress;
  progress.kind = DialogueEvent::Kind::kProgress;
  progress.message = absl::StrCat("Calling ", planned.tool_name);
  progress.tool_name = planned.tool_name;
  progress.arguments_json = Dump(args);
  progress.fraction =
      static_cast<double>(next_) / static_cast<double>(assignment_.tool_calls.size());
  Emit(progress);

  // A write's key is its place among the step's writes that ran: a re-run
  // step replays them in order, and a write retried with a resolved name
  // (its first try's not_found is recorded) is the next write.
  const std::string arguments = Dump(args);
  auto outcome =
      runtime_.Invoke(who_, {planned.tool_name, arguments, write_keys_.KeyFor(risk)}, deadline_);
  write_keys_.Ran(risk, outcome.status());
  if (!outcome.ok()) {
    records_.push_back({planned.tool_name, arguments, true, 0});
    nlohmann::json error = {
        {"error",
         {{"code", absl::AsciiStrToLower(absl::StatusCodeToString(outcome.status().code()))},
          {"message", outcome.status().message()}}}};
    partials_.push_back({planned.tool_name, Dump(error), true, risk});
    Fail(DialogueError::kToolFailed,
         absl::StrCat(planned.tool_name, " failed: ", outcome.status().message()),
         Retryable(outcome.status()));
    return false;
  }
  records_.push_back({planned.tool_name, arguments, outcome->is_error, outcome->duration_us});
  if (outcome->is_error) {
    const auto result = nlohmann::json::parse(outcome->result_json, nullptr, false);
    const std::string code =
        result.is_object() && result.contains("error") ? result["error"].value("code", "") : "";
    // Under approved_targets_only a write runs only on the names approved:
    // another target would be a write the user did not see.
    if (code == "not_found" && (risk == ToolRisk::kRead || !assignment_.approved_targets_only)) {
      for (const NameLookup& lookup : kLookups) {
        auto it = args.find(lookup.field);
        if (it != args.end() && it->is_string() && !core::IsUuid(it->get<std::string>())) {
          return ResolveName(lookup.field, it->get<std::string>());
        }
      }
    }
    partials_.push_back({planned.tool_name, outcome->result_json, true, risk});
    const std::string message = result.is_object() && result.contains("error")
                                    ? result["error"].value("message", outcome->result_json)
                                    : outcome->result_json;
    Fail(DialogueError::kToolFailed, absl::StrCat(planned.tool_name, ": ", message));
    return false;
  }
  PartialResult partial{planned.tool_name, outcome->result_json, false, risk};
  partials_.push_back(partial);
  results_.push_back({{"tool", planned.tool_name},
                      {"result", nlohmann::json::parse(outcome->result_json, nullptr, false)}});
  DialogueEvent event;
  event.kind = DialogueEvent::Kind::kPartialResult;
  event.partial = std::move(partial);
  Emit(std::move(event));
  ++next_;
  return true;
}

bool LocalDialogue::ResolveName(const std::string& field, const std::string& name) {
  // RunCall passes one of kLookups' fields.
  const NameLookup* lookup = &kLookups[0];
  for (const NameLookup& l : kLookups) {
    if (field == l.field) lookup = &l;
  }
  nlohmann::json search = nlohmann::json::object();
  if (lookup->has_query) search["query"] = name;
  search["limit"] = 200;
  auto found = runtime_.Invoke(who_, {lookup->tool, Dump(search), ""}, deadline_);
  if (!found.ok() || found->is_error) {
    Fail(DialogueError::kToolFailed,
         absl::StrCat("could not look up ", lookup->noun, " '", name, "': ",
                      found.ok() ? found->result_json : std::string(found.status().message())),
         !found.ok() && Retryable(found.status()));
    return false;
  }
  records_.push_back({lookup->tool, Dump(search), false, found->duration_us});
  std::vector<std::pair<std::string, std::string>> matches;
  const auto listed = nlohmann::json::parse(found->result_json, nullptr, false);
  for (const auto& item : listed.value(lookup->list, nlohmann::json::array())) {
    const std::string candidate = item.value("name", "");
    if (lookup->has_query ||
        absl::StrContains(absl::AsciiStrToLower(candidate), absl::AsciiStrToLower(name))) {
      matches.emplace_back(candidate, item.value("id", ""));
    }
  }
  if (matches.size() == 1) {
    arguments_[next_][field] = matches[0].second;
    DialogueEvent progress;
    progress.kind = DialogueEvent::Kind::kProgress;
    progress.message = absl::StrCat("No ", lookup->noun, " is called '", name, "'; using '",
                                    matches[0].first, "'");
    Emit(std::move(progress));
    limitations_.push_back(absl::StrCat("'", name, "' was taken to mean the ", lookup->noun, " '",
                                        matches[0].first, "'"));
    return true;
  }
  if (matches.empty()) {
    const std::string message = absl::StrCat("no ", lookup->noun, " matches '", name, "'");
    partials_.push_back({assignment_.tool_calls[next_].tool_name,
                         ToolResult::Error("not_found", message).json, true, ToolRisk::kRead});
    Fail(DialogueError::kToolFailed, message);
    return false;
  }
  if (!UseTurn()) return false;
  ++questions_;
  pending_ = Pending{absl::StrCat("q", turns_), field, std::move(matches)};
  DialogueEvent question;
  question.kind = DialogueEvent::Kind::kQuestion;
  question.question_id = pending_->question_id;
  std::vector<std::string> names;
  for (const auto& [option, id] : pending_->options) names.push_back(option);
  question.question = absl::StrCat("Several ", lookup->noun, "s match '", name,
                                   "': which one did you mean? ", absl::StrJoin(names, ", "));
  question.options = std::move(names);
  Emit(std::move(question));
  return false;
}

void LocalDialogue::Answer(const std::string& question_id, const std::string& answer) {
  if (finished_) return;
  if (!pending_.has_value()) {
    ProtocolError("a clarification arrived but no question is pending");
    return;
  }
  if (question_id != pending_->question_id) {
    ProtocolError(absl::StrCat("the clarification answers question '", question_id,
                               "' but the pending question is '", pending_->question_id, "'"));
    return;
  }
  if (ApplyCancel()) return;
  const std::string text(absl::StripAsciiWhitespace(answer));
  std::optional<std::string> chosen;
  int number = 0;
  if (absl::SimpleAtoi(text, &number) && number >= 1 &&
      number <= static_cast<int>(pending_->options.size())) {
    chosen = pending_->options[static_cast<size_t>(number - 1)].second;
  }
  for (const auto& [option, id] : pending_->options) {
    if (absl::EqualsIgnoreCase(option, text) || id == text) chosen = id;
  }
  if (!chosen.has_value()) {
    if (!UseTurn()) return;
    std::vector<std::string> names;
    for (const auto& [option, id] : pending_->options) names.push_back(option);
    pending_->question_id = absl::StrCat("q", turns_);
    DialogueEvent question;
    question.kind = DialogueEvent::Kind::kQuestion;
    question.question_id = pending_->question_id;
    question.question = absl::StrCat(
        "'", text, "' is not one of the options; which one: ", absl::StrJoin(names, ", "), "?");
    question.options = std::move(names);
    Emit(std::move(question));
    return;
  }
  arguments_[next_][pending_->field] = *chosen;
  pending_.reset();
  Run();
}

}  // namespace omniforge::executor
