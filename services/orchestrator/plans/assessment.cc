#include "services/orchestrator/plans/assessment.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace omniforge::orchestrator {
namespace {

int Points(int weight, double share) {
  return static_cast<int>(std::lround(weight * std::clamp(share, 0.0, 1.0)));
}

int Percent(double share) {
  return static_cast<int>(std::lround(100 * std::clamp(share, 0.0, 1.0)));
}

// The share of the findings the results hold (a partial one counts half);
// 1 when nothing was asked.
double Held(const std::vector<Finding>& findings) {
  if (findings.empty()) return 1;
  double held = 0;
  for (const Finding& f : findings) {
    if (f.presence == Presence::kFound) held += 1;
    if (f.presence == Presence::kPartial) held += 0.5;
  }
  return held / static_cast<double>(findings.size());
}

// How well one piece of work went, 0 to 1.
double WorkShare(const ToolWork& work) {
  if (!work.failure.empty()) return 0;
  double share = 1;
  if (work.calls > 0) {
    share = static_cast<double>(work.calls - std::clamp(work.failed_calls, 0, work.calls)) /
            static_cast<double>(work.calls);
  }
  if (work.confidence.has_value()) share *= std::clamp(*work.confidence, 0.0, 1.0);
  return share;
}

double ToolShare(const std::vector<ToolWork>& work) {
  if (work.empty()) return 1;
  double sum = 0;
  for (const ToolWork& w : work) sum += WorkShare(w);
  return sum / static_cast<double>(work.size());
}

double ClarityShare(const Evidence& e) {
  if (!e.open_questions.empty()) return 0;
  double share = std::clamp(e.intent_confidence.value_or(1.0), 0.0, 1.0);
  if (e.ambiguous) share = std::min(share, 0.5);
  return share;
}

void DataReasons(const Evidence& e, std::vector<std::string>& out) {
  for (const Finding& f : e.outputs) {
    if (f.presence == Presence::kMissing) out.push_back(absl::StrCat("no result for: ", f.name));
    if (f.presence == Presence::kPartial) out.push_back(absl::StrCat("only part of: ", f.name));
  }
}

void EntityReasons(const Evidence& e, std::vector<std::string>& out) {
  std::vector<std::string> missing, partial;
  for (const Finding& f : e.entities) {
    if (f.presence == Presence::kMissing) missing.push_back(f.name);
    if (f.presence == Presence::kPartial) partial.push_back(f.name);
  }
  if (!missing.empty()) {
    out.push_back(absl::StrCat("nothing found about: ", absl::StrJoin(missing, ", ")));
  }
  if (!partial.empty()) {
    out.push_back(absl::StrCat("only a little found about: ", absl::StrJoin(partial, ", ")));
  }
}

void ToolReasons(const Evidence& e, std::vector<std::string>& out) {
  for (const ToolWork& w : e.work) {
    if (WorkShare(w) >= 1) continue;
    const std::string who = w.label.empty() ? "" : absl::StrCat(w.label, ": ");
    if (!w.failure.empty()) {
      out.push_back(absl::StrCat(who, w.failure));
      continue;
    }
    if (w.failed_calls > 0) {
      out.push_back(absl::StrCat(who, w.failed_calls, " of ", w.calls, " tool calls failed"));
    }
    if (w.confidence.has_value() && *w.confidence < 1) {
      out.push_back(
          absl::StrCat(who, "the executor was ", Percent(*w.confidence), "% sure of its result"));
    }
  }
}

void ClarityReasons(const Evidence& e, std::vector<std::string>& out) {
  for (const std::string& q : e.open_questions) {
    out.push_back(absl::StrCat("waiting for your answer: ", q));
  }
  if (!e.open_questions.empty()) return;
  if (e.ambiguous) {
    out.emplace_back("the request could be read more than one way");
  } else if (e.intent_confidence.has_value() && *e.intent_confidence < 1) {
    out.push_back(absl::StrCat("the request was understood with ", Percent(*e.intent_confidence),
                               "% confidence"));
  }
}

std::vector<std::string> Capped(std::vector<std::string> reasons) {
  if (reasons.size() <= kMaxReasons) return reasons;
  const size_t more = reasons.size() - (kMaxReasons - 1);
  reasons.resize(kMaxReasons - 1);
  reasons.push_back(absl::StrCat("and ", more, " more"));
  return reasons;
}

std::string PresenceName(Presence p) {
  switch (p) {
    case Presence::kFound:
      return "found";
    case Presence::kPartial:
      return "partial";
    case Presence::kMissing:
      break;
  }
  return "missing";
}

Presence ParsePresence(const std::string& name) {
  if (name == "found") return Presence::kFound;
  if (name == "partial") return Presence::kPartial;
  return Presence::kMissing;
}

nlohmann::json FindingsToJson(const std::vector<Finding>& findings) {
  nlohmann::json out = nlohmann::json::array();
  for (const Finding& f : findings) {
    out.push_back({{"name", f.name}, {"presence", PresenceName(f.presence)}});
  }
  return out;
}

std::vector<std::string> StringsOf(const nlohmann::json& json) {
  std::vector<std::string> out;
  if (!json.is_array()) return out;
  for (const nlohmann::json& s : json) {
    if (s.is_string()) out.push_back(s.get<std::string>());
  }
  return out;
}

std::optional<double> NumberOf(const nlohmann::json& json, const char* key) {
  auto it = json.find(key);
  if (it == json.end() || !it->is_number()) return std::nullopt;
  return it->get<double>();
}

std::string StringOf(const nlohmann::json& json, const char* key) {
  auto it = json.find(key);
  return it != json.end() && it->is_string() ? it->get<std::string>() : "";
}

int IntOf(const nlohmann::json& json, const char* key) {
  auto it = json.find(key);
  return it != json.end() && it->is_number() ? it->get<int>() : 0;
}

std::vector<Finding> FindingsFromJson(const nlohmann::json& json) {
  std::vector<Finding> out;
  if (!json.is_array()) return out;
  for (const nlohmann::json& f : json) {
    if (!f.is_object()) continue;
    out.push_back({StringOf(f, "name"), ParsePresence(StringOf(f, "presence"))});
  }
  return out;
}

nlohmann::json EvidenceToJson(const Evidence& e) {
  nlohmann::json work = nlohmann::json::array();
  for (const ToolWork& w : e.work) {
    nlohmann::json item = {{"label", w.label},
                           {"calls", w.calls},
                           {"failed_calls", w.failed_calls},
                           {"failure", w.failure}};
    if (w.confidence.has_value()) item["confidence"] = *w.confidence;
    work.push_back(std::move(item));
  }
  nlohmann::json out = {{"outputs", FindingsToJson(e.outputs)},
                        {"entities", FindingsToJson(e.entities)},
                        {"work", work},
                        {"ambiguous", e.ambiguous},
                        {"open_questions", e.open_questions},
                        {"limitations", e.limitations}};
  if (e.intent_confidence.has_value()) out["intent_confidence"] = *e.intent_confidence;
  return out;
}

Evidence EvidenceFromJson(const nlohmann::json& json) {
  Evidence e;
  if (!json.is_object()) return e;
  e.outputs = FindingsFromJson(json.value("outputs", nlohmann::json()));
  e.entities = FindingsFromJson(json.value("entities", nlohmann::json()));
  for (const nlohmann::json& w : json.value("work", nlohmann::json::array())) {
    if (!w.is_object()) continue;
    e.work.push_back({StringOf(w, "label"), IntOf(w, "calls"), IntOf(w, "failed_calls"),
                      StringOf(w, "failure"), NumberOf(w, "confidence")});
  }
  e.intent_confidence = NumberOf(json, "intent_confidence");
  auto ambiguous = json.find("ambiguous");
  e.ambiguous = ambiguous != json.end() && ambiguous->is_boolean() && ambiguous->get<bool>();
  e.open_questions = StringsOf(json.value("open_questions", nlohmann::json()));
  e.limitations = StringsOf(json.value("limitations", nlohmann::json()));
  return e;
}

}  // namespace

Verdict VerdictFor(int score) {
  if (score >= kCompleteFrom) return Verdict::kComplete;
  if (score >= kPartialFrom) return Verdict::kPartial;
  return Verdict::kBlocked;
}

Assessment Assess(const Evidence& evidence) {
  Assessment a;
  a.evidence = evidence;
  a.parts.data = Points(kDataPoints, Held(evidence.outputs));
  a.parts.entities = Points(kEntityPoints, Held(evidence.entities));
  a.parts.tools = Points(kToolPoints, ToolShare(evidence.work));
  a.parts.clarity = Points(kClarityPoints, ClarityShare(evidence));
  a.score = a.parts.data + a.parts.entities + a.parts.tools + a.parts.clarity;
  a.verdict = VerdictFor(a.score);
  std::vector<std::string> reasons;
  if (a.parts.data < kDataPoints) DataReasons(evidence, reasons);
  if (a.parts.entities < kEntityPoints) EntityReasons(evidence, reasons);
  if (a.parts.tools < kToolPoints) ToolReasons(evidence, reasons);
  if (a.parts.clarity < kClarityPoints) ClarityReasons(evidence, reasons);
  reasons.insert(reasons.end(), evidence.limitations.begin(), evidence.limitations.end());
  a.reasons = Capped(std::move(reasons));
  return a;
}

Decision Decide(const Assessment& last, const LoopState& loop, int max_iterations) {
  const std::string first_reason = last.reasons.empty() ? "" : ": " + last.reasons.front();
  if (!last.evidence.open_questions.empty()) {
    return {NextMove::kExit,
            absl::StrCat("waiting for the user's answer: ", last.evidence.open_questions.front())};
  }
  if (loop.iteration >= max_iterations) {
    return {NextMove::kExit, absl::StrCat("reached the limit of ", max_iterations,
                                          " iterations (score ", last.score, ")")};
  }
  if (last.verdict == Verdict::kBlocked) {
    if (loop.revisions < kMaxRevisions) {
      return {NextMove::kRevisePlan, absl::StrCat("blocked (score ", last.score, ")", first_reason,
                                                  "; re-plan what is left")};
    }
    return {NextMove::kExit,
            absl::StrCat("still blocked after ", loop.revisions, " re-plans", first_reason)};
  }
  if (last.verdict == Verdict::kPartial && loop.revisions == 0 && MissesAnOutput(last)) {
    return {NextMove::kRevisePlan, absl::StrCat("partial (score ", last.score, ")", first_reason,
                                                "; try once more another way")};
  }
  if (loop.work_left) {
    return {NextMove::kContinue, absl::StrCat(VerdictName(last.verdict), " (score ", last.score,
                                              "); go on with the work left")};
  }
  return {NextMove::kExit, absl::StrCat("the work is done: ", VerdictName(last.verdict), " (score ",
                                        last.score, ")")};
}

bool MissesAnOutput(const Assessment& assessment) {
  return std::any_of(assessment.evidence.outputs.begin(), assessment.evidence.outputs.end(),
                     [](const Finding& f) { return f.presence == Presence::kMissing; });
}

std::string WordsForThePlanner(NextMove move) {
  switch (move) {
    case NextMove::kContinue:
      return "go on: call the tools the request still needs, or answer the user when the "
             "results are enough";
    case NextMove::kRevisePlan:
      return "the last results fall short: try another approach (another tool or other "
             "arguments, not the same call again), or ask the user";
    case NextMove::kExit:
      break;
  }
  return "stop: no more tool calls. Answer the user now with what was done, and say plainly "
         "what was not done and why";
}

std::string VerdictName(Verdict verdict) {
  switch (verdict) {
    case Verdict::kComplete:
      return "complete";
    case Verdict::kPartial:
      return "partial";
    case Verdict::kBlocked:
      break;
  }
  return "blocked";
}

std::optional<Verdict> ParseVerdict(std::string_view name) {
  if (name == "complete") return Verdict::kComplete;
  if (name == "partial") return Verdict::kPartial;
  if (name == "blocked") return Verdict::kBlocked;
  return std::nullopt;
}

std::string NextMoveName(NextMove move) {
  switch (move) {
    case NextMove::kContinue:
      return "continue";
    case NextMove::kRevisePlan:
      return "revise_plan";
    case NextMove::kExit:
      break;
  }
  return "exit";
}

nlohmann::json AssessmentSummaryJson(const Assessment& a) {
  return {{"score", a.score}, {"verdict", VerdictName(a.verdict)}, {"reasons", a.reasons}};
}

nlohmann::json AssessmentToJson(const Assessment& a) {
  nlohmann::json out = AssessmentSummaryJson(a);
  out["parts"] = {{"data", a.parts.data},
                  {"entities", a.parts.entities},
                  {"tools", a.parts.tools},
                  {"clarity", a.parts.clarity}};
  out["evidence"] = EvidenceToJson(a.evidence);
  return out;
}

std::optional<Assessment> AssessmentFromJson(const nlohmann::json& json) {
  if (!json.is_object()) return std::nullopt;
  auto verdict = json.find("verdict");
  if (verdict == json.end() || !verdict->is_string()) return std::nullopt;
  std::optional<Verdict> parsed = ParseVerdict(verdict->get<std::string>());
  if (!parsed.has_value()) return std::nullopt;
  Assessment a;
  a.verdict = *parsed;
  a.score = IntOf(json, "score");
  a.reasons = StringsOf(json.value("reasons", nlohmann::json()));
  const nlohmann::json parts = json.value("parts", nlohmann::json::object());
  if (parts.is_object()) {
    a.parts = {IntOf(parts, "data"), IntOf(parts, "entities"), IntOf(parts, "tools"),
               IntOf(parts, "clarity")};
  }
  a.evidence = EvidenceFromJson(json.value("evidence", nlohmann::json()));
  return a;
}

}  // namespace omniforge::orchestrator
