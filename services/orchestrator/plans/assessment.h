// How well a piece of work did, judged from its evidence, and what the
// planner does next.
//
// Assess scores a step, a plan or a turn from 0 to 100 with the seed's
// weights: the data asked for (40 points), the priority entities the
// results cover (20), the tool work that succeeded, as sure as the executor
// was of it (20), and how clear the request was (20). The verdict follows
// the score: COMPLETE from 90, PARTIAL from 50, BLOCKED below. The reasons
// are the limitations in plain words: what cost points, and what the
// executor said it could not do or check. Decide turns the assessment into
// the planner's next move between iterations: CONTINUE, REVISE_PLAN or
// EXIT, with a cap of 10 iterations; WordsForThePlanner says what each move
// asks of a model planner.
//
// Pure functions and value types: no I/O, thread-safe.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace omniforge::orchestrator {

// The seed's weights: they add up to 100.
inline constexpr int kDataPoints = 40;
inline constexpr int kEntityPoints = 20;
inline constexpr int kToolPoints = 20;
inline constexpr int kClarityPoints = 20;
// The lowest scores of COMPLETE and of PARTIAL.
inline constexpr int kCompleteFrom = 90;
inline constexpr int kPartialFrom = 50;
// The planner's iterations at most, and the re-plans of one piece of work.
inline constexpr int kMaxIterations = 10;
inline constexpr int kMaxRevisions = 2;
// An assessment names at most this many reasons (the rest are counted).
inline constexpr size_t kMaxReasons = 8;

enum class Verdict { kComplete, kPartial, kBlocked };

// How much of one thing asked for the results hold.
enum class Presence { kFound, kPartial, kMissing };

// One thing asked for (an output, an entity) and whether the results hold it.
struct Finding {
  std::string name;
  Presence presence = Presence::kMissing;
};

// One piece of tool work (a step's dialogue with its executor agent, a tool
// call of a turn) and how it went.
struct ToolWork {
  // Names the work in reasons ("step 2"); empty for the work assessed alone.
  std::string label;
  int calls = 0;
  int failed_calls = 0;
  // Why the work ended without its result; empty when it got one.
  std::string failure;
  // The executor's own confidence in its result, 0 to 1, when it said.
  std::optional<double> confidence;
};

// What a step, a plan or a turn produced, as the assessment reads it.
struct Evidence {
  // Data: the outputs asked for (a plan's requested outputs, a step's
  // expected output) and how much of each the results hold. None asked:
  // full points.
  std::vector<Finding> outputs;
  // Entities: the priority entities the work was to cover, and whether its
  // results name them. None asked: full points.
  std::vector<Finding> entities;
  // Tools: every piece of work that ran; its share of calls that succeeded
  // (none when it failed), times the executor's confidence. None ran: full
  // points.
  std::vector<ToolWork> work;
  // Clarity: how sure the reading of the user's request was (1 when not
  // known), whether it could be read several ways (at most half the
  // points), and questions still waiting for the user (no points).
  std::optional<double> intent_confidence;
  bool ambiguous = false;
  std::vector<std::string> open_questions;
  // What the executor said it could not do or check, in its words.
  std::vector<std::string> limitations;
};

// The points of each part, rounded; they add up to the score.
struct AssessmentParts {
  int data = 0;
  int entities = 0;
  int tools = 0;
  int clarity = 0;
};

struct Assessment {
  int score = 0;  // 0 to 100
  Verdict verdict = Verdict::kBlocked;
  // The limitations in plain words: each part that lost a point says why,
  // then the executor's own limitations; at most kMaxReasons.
  std::vector<std::string> reasons;
  AssessmentParts parts;
  // What the assessment was made from (a plan's is built from its steps').
  Evidence evidence;
};

// The assessment of `evidence` (see the top of the file).
Assessment Assess(const Evidence& evidence);

// COMPLETE from 90, PARTIAL from 50, BLOCKED below.
Verdict VerdictFor(int score);

enum class NextMove { kContinue, kRevisePlan, kExit };

// Where the planner's loop stands when it decides.
struct LoopState {
  // Iterations done so far, the one just assessed included (from 1).
  int iteration = 1;
  // Times the work was re-planned so far.
  int revisions = 0;
  // Work is left to do (steps not run yet).
  bool work_left = false;
};

struct Decision {
  NextMove move = NextMove::kExit;
  std::string reason;  // in words, for the planner's context and the user
};

// The next move after `last`, in this order: a question waiting for the
// user, or `max_iterations` reached, is EXIT; BLOCKED is REVISE_PLAN until
// kMaxRevisions re-plans were made, then EXIT; PARTIAL with an output asked
// for that is missing altogether (MissesAnOutput) is REVISE_PLAN once, when
// no re-plan was made yet: work that could still be done, tried another
// way; otherwise CONTINUE while work is left, EXIT (done) when none is.
Decision Decide(const Assessment& last, const LoopState& loop, int max_iterations = kMaxIterations);

// True when an output the work was asked for is missing altogether (not
// merely partial).
bool MissesAnOutput(const Assessment& assessment);

// What a move asks of a model planner, in words of the platform's own (no
// tool output): CONTINUE goes on or answers, REVISE_PLAN tries another way
// or asks the user, EXIT answers now without tools.
std::string WordsForThePlanner(NextMove move);

// "complete", "partial", "blocked"; "continue", "revise_plan", "exit".
std::string VerdictName(Verdict verdict);
std::optional<Verdict> ParseVerdict(std::string_view name);
std::string NextMoveName(NextMove move);

// The assessment as JSON and back: score, verdict, reasons, parts and the
// evidence. Lenient: missing or mistyped fields read as their defaults;
// nullopt when `json` is not an object with a known verdict.
nlohmann::json AssessmentToJson(const Assessment& assessment);
std::optional<Assessment> AssessmentFromJson(const nlohmann::json& json);

// The assessment for a planner: score, verdict, reasons (no evidence).
nlohmann::json AssessmentSummaryJson(const Assessment& assessment);

}  // namespace omniforge::orchestrator
