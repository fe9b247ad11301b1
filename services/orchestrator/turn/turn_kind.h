// The kinds of chat turn. The turn's stages read the kind instead of
// re-deriving it from the flow's state.
#pragma once

namespace omniforge::orchestrator {

enum class TurnKind {
  kFresh,   // a request that starts a flow (or goes on with one it does not answer)
  kAnswer,  // an answer to the flow's own clarifying question
  kReply,   // a reply to a pending action or to the flow's plan (words or a decision)
  kResume,  // asks to resume a flow a newer message suspended
  kRetry,   // a retried turn_id whose user message was stored already
};

inline const char* TurnKindName(TurnKind kind) {
  switch (kind) {
    case TurnKind::kFresh:
      return "fresh";
    case TurnKind::kAnswer:
      return "answer";
    case TurnKind::kReply:
      return "reply";
    case TurnKind::kResume:
      return "resume";
    case TurnKind::kRetry:
      return "retry";
  }
  return "fresh";
}

}  // namespace omniforge::orchestrator
