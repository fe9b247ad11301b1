// How `omniforge chat` shows a turn's events: readable lines for a pipe or a
// file, the same with colour and a spinner line for a person at a terminal,
// or one JSON object per event (NDJSON) for scripts.
#pragma once

#include <ostream>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "omniforge/orchestrator/v1/chat_service.pb.h"

namespace omniforge::cli {

enum class ChatOutput {
  kPlain,     // one line per step, no escape sequences
  kTerminal,  // colour, a spinner with the agent's state, answer streamed in place
  kJson,      // one JSON object per event and line
};

// kJson when asked for; kTerminal only when stdout is a terminal and
// NO_COLOR is unset (`no_color` is its value, nullptr when unset; any value,
// even empty, turns colour off as no-color.org asks); kPlain otherwise.
ChatOutput ChooseChatOutput(bool json, bool stdout_is_terminal, const char* no_color);

// Renders the events of turns to `out`. The spinner shows the latest agent
// state until something else is printed; the answer's text deltas are written
// as they arrive, on one "omniforge: " line. Thread-safe: Tick is called from
// a timer thread while Show runs on the reading thread.
class ChatView final {
 public:
  ChatView(std::ostream& out, ChatOutput mode) : out_(out), mode_(mode) {}
  ChatView(const ChatView&) = delete;
  ChatView& operator=(const ChatView&) = delete;

  ChatOutput mode() const { return mode_; }

  // Shows one event of the running turn.
  void Show(const orchestrator::v1::ChatEvent& event);
  // Advances the spinner one frame (terminal only; nothing while it is off).
  void Tick();
  // Ends the turn's output: the spinner is cleared and an open answer line
  // finished. Call it also when the stream broke off.
  void EndTurn();

 private:
  void ClearSpinner() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void DrawSpinner() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void CloseText() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Line(const std::string& style, const std::string& text) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ShowSession(const orchestrator::v1::SessionEvent& session)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ShowAgentState(const orchestrator::v1::AgentStateEvent& state)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Writes an answer delta, opening the "omniforge: " line when it is the first.
  void ShowText(const std::string& delta, bool restart) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ShowPreview(const orchestrator::v1::PreviewEvent& preview)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ShowPlan(const std::string& heading, const orchestrator::v1::Plan& plan)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ShowPlanReview(const orchestrator::v1::PlanReviewEvent& review)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ShowStepComplete(const orchestrator::v1::StepCompleteEvent& step)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::string Styled(const std::string& style, const std::string& text) const;

  std::ostream& out_;
  const ChatOutput mode_;
  absl::Mutex mu_;
  std::string spinner_label_ ABSL_GUARDED_BY(mu_);  // empty: no spinner
  bool spinner_drawn_ ABSL_GUARDED_BY(mu_) = false;
  size_t frame_ ABSL_GUARDED_BY(mu_) = 0;
  bool text_open_ ABSL_GUARDED_BY(mu_) = false;  // an answer line is being written
};

}  // namespace omniforge::cli
