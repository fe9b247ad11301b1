// Turns across replicas. A newer message or a CancelTurn may reach another
// replica than the one running the turn; the bus carries what the replicas
// need to tell each other: a turn started or ended (with the id of the flow
// it set aside when it was suspended), and requests to suspend or cancel
// the turns of a conversation. Signals carry ids only, never a word of the
// user's: conversations are named by a digest of tenant, user and
// conversation id (never by the ids themselves), and a flow set aside by
// its id, its state being in the flow store where the suspended turn saved
// it (the turn that goes on reads it there).
//
// Publishing never waits for the network: signals are queued and sent in the
// background, and a signal that cannot be sent is dropped (a turn then runs
// on as it would with one replica). Implementations are thread-safe.
#pragma once

#include <functional>
#include <optional>
#include <string>

namespace omniforge::orchestrator {

struct TurnSignal {
  enum class Kind { kStarted, kEnded, kSuspend, kCancel };
  Kind kind = Kind::kStarted;
  // The conversation (TurnConversationDigest).
  std::string conversation;
  // kStarted, kEnded, kCancel: the turn (kCancel: empty for any turn of the
  // conversation); kSuspend: the new turn, which is spared (a retry of it).
  std::string turn_id;
  // kEnded: the id of the flow the turn set aside when a newer message
  // suspended it (its state is in the flow store); empty when it set none
  // aside.
  std::string set_aside_flow_id;
};

class TurnBus {
 public:
  virtual ~TurnBus() = default;
  // Sends `signal` to the other replicas.
  virtual void Publish(const TurnSignal& signal) = 0;
  // Where other replicas' signals go (never this replica's own), called on
  // the bus's thread. Set before the first Publish; an empty function
  // unsubscribes, and once Subscribe returns no signal reaches the old one.
  virtual void Subscribe(std::function<void(const TurnSignal&)> on_signal) = 0;
};

// The name of a conversation on the bus: a digest of who owns it and its id.
std::string TurnConversationDigest(const std::string& tenant_id, const std::string& user_id,
                                   const std::string& conversation_id);

// A signal as text (JSON of its ids, a few hundred bytes), with the replica
// it comes from.
std::string TurnSignalToText(const TurnSignal& signal, const std::string& origin);
// nullopt for text that is not a signal: not JSON, an unknown kind, no
// conversation, or a conversation, turn, flow or origin that is not an id (a digest
// of 32 hex digits; 1..128 characters of [A-Za-z0-9._:@-]). A signal of an
// older version naming the suspended flow whole reads as its id alone.
// `origin` receives the sender.
std::optional<TurnSignal> TurnSignalFromText(const std::string& text, std::string* origin);

}  // namespace omniforge::orchestrator
