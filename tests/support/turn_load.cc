#include "tests/support/turn_load.h"

#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>

#include <map>
#include <set>
#include <thread>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace omniforge::testing {
namespace {

namespace pb = ::omniforge::orchestrator::v1;
using Clock = std::chrono::steady_clock;

}  // namespace

bool Acknowledged(const ChatTurn& turn) {
  return turn.status.ok() && !turn.events.empty() && turn.events.back().has_done();
}

LoadClient::LoadClient(std::string address, std::string key, std::string prefix,
                       LoadOptions options)
    : address_(std::move(address)),
      key_(std::move(key)),
      prefix_(std::move(prefix)),
      options_(std::move(options)) {
  Connect();
}

void LoadClient::Run(const std::atomic<bool>& stop, std::latch& ready) {
  const auto wanted = static_cast<size_t>(options_.conversations);
  for (size_t i = 0; i < wanted; ++i) Send("", "open-" + std::to_string(i));
  ready.count_down();
  for (size_t n = 0; !stop.load(); ++n) {
    if (conversations_.size() < wanted) break;  // could not open one
    Send(conversations_[n % wanted], std::to_string(n));
    std::this_thread::sleep_for(options_.think_time);
  }
}

std::vector<TurnRecord> LoadClient::turns() const {
  absl::MutexLock lock(&mu_);
  return turns_;
}

size_t LoadClient::turn_count() const {
  absl::MutexLock lock(&mu_);
  return turns_.size();
}

void LoadClient::Send(const std::string& conversation, const std::string& n) {
  TurnRecord record{.conversation = conversation,
                    .turn_id = absl::StrCat(prefix_, "-", n),
                    .message = options_.messages[turns_count_++ % options_.messages.size()],
                    .first_started = Clock::now()};
  pb::StreamChatRequest request;
  request.set_conversation_id(conversation);
  request.set_turn_id(record.turn_id);
  request.set_message(record.message);
  for (const auto give_up = Clock::now() + options_.retry_for; !record.acknowledged;) {
    if (record.attempts > 0) {
      if (Clock::now() >= give_up) break;
      std::this_thread::sleep_for(options_.retry_pause);
    }
    ++record.attempts;
    record.started = Clock::now();
    const ChatTurn turn = StreamTurn(*stub_, request, key_, {}, options_.turn_deadline);
    record.ended = Clock::now();
    record.acknowledged = Acknowledged(turn);
    // A new channel connects at once; the old one would wait out gRPC's
    // reconnect backoff (seconds), which is the client's, not the server's.
    if (turn.status.error_code() == grpc::StatusCode::UNAVAILABLE) Connect();
    if (!record.acknowledged) continue;
    record.normal = turn.errors().empty() && !turn.done().assistant_message_id().empty() &&
                    !turn.session().replayed();
    if (conversation.empty() && !turn.session().conversation_id().empty()) {
      record.conversation = turn.session().conversation_id();
      conversations_.push_back(record.conversation);
    }
  }
  absl::MutexLock lock(&mu_);
  turns_.push_back(std::move(record));
}

void LoadClient::Connect() {
  stub_ =
      pb::ChatService::NewStub(grpc::CreateChannel(address_, grpc::InsecureChannelCredentials()));
}

absl::StatusOr<std::vector<pb::Message>> Stored(pb::ChatService::Stub& stub, const std::string& key,
                                                const std::string& conversation) {
  std::vector<pb::Message> messages;
  pb::ListMessagesResponse page;
  do {
    grpc::ClientContext context;
    PrepareChatContext(context, key, std::chrono::seconds(10));
    pb::ListMessagesRequest request;
    request.set_conversation_id(conversation);
    request.set_limit(500);
    if (!messages.empty()) request.set_before_seq(messages.front().seq());
    page.Clear();
    const grpc::Status status = stub.ListMessages(&context, request, &page);
    if (!status.ok()) {
      return absl::Status(static_cast<absl::StatusCode>(status.error_code()),
                          "ListMessages: " + status.error_message());
    }
    messages.insert(messages.begin(), page.messages().begin(), page.messages().end());
  } while (page.has_more() && page.messages_size() > 0);
  return messages;
}

void Tally(const std::vector<const TurnRecord*>& sent, const std::vector<pb::Message>& stored,
           TurnCounts& counts) {
  std::map<std::pair<std::string, int>, int> copies;  // (turn_id, role) -> messages
  for (const pb::Message& m : stored) ++copies[{m.turn_id(), m.role()}];
  int duplicated = 0;
  int lost = 0;
  for (const auto& [what, n] : copies) duplicated += n - 1;
  // The acknowledged turns' messages as they should be stored, and as they are.
  std::set<std::string> acknowledged;
  std::vector<std::pair<std::string, int>> expected;
  for (const TurnRecord* turn : sent) {
    if (!turn->acknowledged) continue;
    acknowledged.insert(turn->turn_id);
    expected.emplace_back(turn->turn_id, pb::ROLE_USER);
    expected.emplace_back(turn->turn_id, pb::ROLE_ASSISTANT);
    const bool whole = copies[{turn->turn_id, pb::ROLE_USER}] > 0 &&
                       copies[{turn->turn_id, pb::ROLE_ASSISTANT}] > 0;
    lost += whole ? 0 : 1;
  }
  std::vector<std::pair<std::string, int>> order;
  for (const pb::Message& m : stored) {
    if (acknowledged.contains(m.turn_id())) order.emplace_back(m.turn_id(), m.role());
  }
  counts.duplicated += duplicated;
  counts.lost += lost;
  if (lost > 0 || duplicated > 0) return;  // counted already; the order is moot
  std::set<std::string> misplaced;         // turns with a message out of its place
  for (size_t i = 0; i < expected.size() && i < order.size(); ++i) {
    if (order[i] != expected[i]) misplaced.insert(expected[i].first);
  }
  counts.reordered += static_cast<int>(misplaced.size());
}

bool WaitForStored(pb::ChatService::Stub& stub,
                   const std::vector<std::unique_ptr<LoadClient>>& clients,
                   const std::vector<TurnRecord>& turns, std::chrono::seconds timeout) {
  size_t expected = 0;
  for (const TurnRecord& turn : turns) expected += turn.acknowledged ? 2 : 0;
  for (const auto give_up = Clock::now() + timeout; Clock::now() < give_up;) {
    size_t stored = 0;
    for (const auto& client : clients) {
      for (const std::string& conversation : client->conversations()) {
        const absl::StatusOr<std::vector<pb::Message>> messages =
            Stored(stub, client->key(), conversation);
        stored += messages.ok() ? messages->size() : 0;
      }
    }
    if (stored >= expected) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return false;
}

}  // namespace omniforge::testing
