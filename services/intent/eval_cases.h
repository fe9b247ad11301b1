// The labelled follow-up and clarify-or-proceed sets of data/*.jsonl
// (docs/intent.md, `make intent-eval`): reading their cases, the request a
// case makes of AnalyzeIntent, scoring an analysis against the case's
// `expect`, and the tallies per category that omniforge-intent-eval and the
// end-to-end measurement (understanding_e2e_test) print. No gRPC: whoever
// asks the service, directly or through StreamChat, passes its answer in.
// Nothing here is shared between threads; a tally belongs to one caller.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "omniforge/intent/v1/intent_service.pb.h"

namespace omniforge::intent::eval {

// One line of a set. `expect` holds what the set states; a field it leaves
// out is empty (or nullopt).
struct LabelledCase {
  struct Agent {
    std::string name;
    std::string description;
  };
  struct Turn {
    bool assistant = false;
    std::string content;
  };
  struct Expect {
    std::string action_type;  // without ACTION_TYPE_; "" when a clarify case asks
    std::string agent_name;
    std::string corrected_value;
    std::optional<bool> summary_worthy;
    bool clarify = false;
    std::vector<std::string> missing;  // slots, lower case
  };

  std::string id;
  std::string category;  // the id up to its last dash
  std::vector<Agent> agents;
  std::vector<Turn> history;
  std::string message;
  Expect expect;
};

// Reads a JSON-lines file of cases. NOT_FOUND when it cannot be read,
// INVALID_ARGUMENT when a line is not JSON or lacks `message` or `expect`.
absl::StatusOr<std::vector<LabelledCase>> ReadCases(const std::string& path);

// The request the case makes: its message, agents and history.
v1::AnalyzeIntentRequest RequestOf(const LabelledCase& c);

// Whether a case's id has a number with no letter (e.g. "ordinal-001"): the
// cases of a set as first written.
bool IsOlderCase(const LabelledCase& c);

// An analysis in a line, for comparing two answers to one case: action,
// agent_name, corrected_value, summary_worthy, and whether it asks.
std::string AnswerOf(const v1::IntentAnalysis& got);

// Whether a set's misses may be printed: never for a held-out set (or the
// probe, measured as a whole), which is only ever shown per category.
enum class Split { kDev, kHoldout };

// Right and total cases per category, in category order.
using CategoryCounts = std::map<std::string, std::pair<int, int>>;

// Prints one `  <category> <right> / <total>  <share>` line per category.
void PrintCategories(const CategoryCounts& by_category);

// The follow-up score: a case is right when the action matches, agent_name
// matches (absent when none is expected), corrected_value contains the
// expected value (any case) where one is expected and summary_worthy
// matches where it is expected.
class FollowupTally final {
 public:
  // Scores and counts one case; returns whether it is right.
  bool Add(const LabelledCase& c, const v1::IntentAnalysis& got);
  // The set's figures as omniforge-intent-eval prints them (`path` names
  // the set), with the misses and the service's reasoning for kDev.
  void Print(const std::string& path, Split split) const;

  int right() const { return all_ok_; }
  int total() const { return n_; }
  double accuracy() const { return n_ == 0 ? 0.0 : static_cast<double>(all_ok_) / n_; }
  // The share right of the older cases alone (IsOlderCase).
  double older_accuracy() const {
    return older_ == 0 ? 0.0 : static_cast<double>(older_ok_) / older_;
  }
  const CategoryCounts& by_category() const { return by_category_; }

 private:
  int n_ = 0, action_ok_ = 0, agent_ok_ = 0, all_ok_ = 0;
  int corrected_expected_ = 0, corrected_ok_ = 0, summary_expected_ = 0, summary_ok_ = 0;
  int older_ = 0, older_ok_ = 0;
  CategoryCounts by_category_;
  std::vector<std::string> misses_;
};

// The clarify-or-proceed score: a case is right when clarification.needed
// equals `clarify` and, when proceeding, the action (and agent_name where
// expected) matches. Missing-slot recall: the share of the cases that
// should ask whose clarification lists one of the expected slots.
class ClarifyTally final {
 public:
  // Scores and counts one case; returns whether it is right.
  bool Add(const LabelledCase& c, const v1::IntentAnalysis& got);
  // The set's figures as omniforge-intent-eval prints them, with the
  // misses for kDev.
  void Print(const std::string& path, Split split) const;

  int right() const { return ok_total_; }
  int total() const { return n_; }
  double accuracy() const { return n_ == 0 ? 0.0 : static_cast<double>(ok_total_) / n_; }
  double missing_slot_recall() const {
    return should_ask_ == 0 ? 0.0 : static_cast<double>(slot_found_) / should_ask_;
  }
  const CategoryCounts& by_category() const { return by_category_; }

 private:
  int n_ = 0, ok_total_ = 0, should_ask_ = 0, asked_right_ = 0, slot_found_ = 0;
  int should_proceed_ = 0, proceeded_right_ = 0;
  CategoryCounts by_category_;
  std::vector<std::string> misses_;
};

}  // namespace omniforge::intent::eval
