// How `omniforge chat` shows a turn's events: readable lines for a pipe or a
// file, the same with colour and a spinner line for a person at a terminal,
// or one JSON object per event (NDJSON) for scripts.
#pragma once

#include <mutex>
#include <ostream>
#include <string>

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
  // Everything below requires mu_.
  void ClearSpinner();
  void DrawSpinner();
  void CloseText();
  void Line(const std::string& style, const std::string& text);
  void ShowPreview(const orchestrator::v1::PreviewEvent& preview);
  void ShowPlan(const std::string& heading, const orchestrator::v1::Plan& plan);
  std::string Styled(const std::string& style, const std::string& text) const;

  std::ostream& out_;
  const ChatOutput mode_;
  std::mutex mu_;
  std::string spinner_label_;  // empty: no spinner
  bool spinner_drawn_ = false;
  size_t frame_ = 0;
  bool text_open_ = false;  // an answer line is being written
};

}  // namespace omniforge::cli
