// Stage 7, Compose: the reply's words (the model's streamed answer, or the
// move's reply and the tools' results in words), the previews of what waits
// for the user's approval, the question that tells the user how to answer,
// and the note of a flow set aside. Emits the previews and the text.
#include "libs/core/text.h"
#include "services/orchestrator/approvals/preview.h"
#include "services/orchestrator/turn/turn_pass.h"

namespace omniforge::orchestrator {

// The reply before the tools that run now add their results.
void TurnPass::ChooseText() {
  if (!text_sent_) text_ = move_.reply;
  if (planned_.answered && !text_sent_ && text_.empty()) text_ = plan_words_;
  if (planned_.answered && !text_sent_ && !previews_.empty()) {
    // The model wrote no text.
    text_ = "Here is what I would do:";
    for (const PendingAction& action : previews_) text_ += " " + action.summary;
  }
  if (listed_.empty()) listed_ = move_.listed_agents;
}

void TurnPass::Compose() {
  if (control_.cancelled() && !cancel_reported_ && !suspended_) {
    emit_.Error(pb::CHAT_ERROR_CODE_CANCELLED, "the turn was cancelled", /*fatal=*/true);
  }
  const bool asks_about_failure = AsksAboutFailure();
  waiting_ =
      !suspended_ && (!pending_after_.empty() || move_.clarifying || plan_held_.has_value() ||
                      plan_carried_.has_value() || asks_about_failure);
  ShowPreviews();
  if (asks_about_failure) AskAboutFailure();
  if (waiting_) emit_.State(pb::AGENT_STATE_WAITING_ON_USER, "Waiting for your answer");
  if (planned_.answered && plan_held_ && plan_held_->status == PlanStatus::kPendingReview) {
    Ask(kPlanReviewQuestion);  // the model presented its draft: how to answer
  }
  if (planned_.answered && !previews_.empty()) Ask(ApprovalQuestion(previews_));
  if (suspended_) {
    Ask("(Set aside for your new message; say \"continue\" to pick it up again.)");
    ContextBox::Add(box_.blockers, "suspended by a newer message");
    emit_.State(pb::AGENT_STATE_SUSPENDED, "Set aside for your newer message; its state is saved");
  }
  // A cancelled turn is not read: its notices wait for the next.
  if (!control_.cancelled()) TellNotices();
  if (!text_sent_) {
    emit_.Next().mutable_text()->set_delta(text_);
    emit_.Send();
  }
}

// What happened to the user's agents since they were last told (a
// scheduled run that failed, slots missed): an event each, and the words
// before the reply's own (after it when the model's text went out already).
void TurnPass::TellNotices() {
  if (notices_.empty()) return;
  notices_told_ = true;
  std::string words;
  for (const pb::NoticeEvent& notice : notices_) {
    *emit_.Next().mutable_notice() = notice;
    emit_.Send();
    words += (words.empty() ? "" : "\n") + notice.message();
  }
  words += "\nAsk \"did " + notices_.front().agent_name() + " run ok?\" to see its runs.";
  if (!text_sent_) {
    text_ = words + (text_.empty() ? "" : "\n\n" + text_);
    return;
  }
  text_ += "\n\n" + words;
  emit_.Next().mutable_text()->set_delta("\n\n" + words);
  emit_.Send();
}

void TurnPass::ShowPreviews() {
  for (const PendingAction& action : previews_) {
    FillPreview(action, *emit_.Next().mutable_preview());
    emit_.Send();
    ContextBox::Add(box_.progress, "drafted " + action.tool);
    ContextBox::Add(box_.blockers, "waiting for the user's approval: " + action.summary);
    ContextBox::Add(box_.next, "run " + action.tool + " once approved");
  }
  if (!previews_.empty()) return;
  if (move_.clarifying) {
    ContextBox::Add(box_.progress, "asked: " + core::Shortened(text_, 200));
    ContextBox::Add(box_.blockers, "waiting for the user's answer");
    ContextBox::Add(box_.next, "continue with the answer");
  } else if (gate_) {
    for (const PendingAction& action : gate_->approved) {
      ContextBox::Add(box_.progress, "approved " + action.tool);
    }
  }
}

// Adds `words` on a line of their own; streamed at once when the model's
// text went out already.
void TurnPass::Ask(const std::string& words) {
  const std::string ask = (text_.empty() ? "" : "\n") + words;
  text_ += ask;
  if (text_sent_) {
    emit_.Next().mutable_text()->set_delta(ask);
    emit_.Send();
  }
}

}  // namespace omniforge::orchestrator
