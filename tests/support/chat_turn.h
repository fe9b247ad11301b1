// One chat turn as a client sees it, for the end-to-end tests of the public
// API: StreamChat's events in order and the status the stream ended with,
// with the questions tests ask of them (the answer shown, the tools called,
// the preview, the errors). StreamTurn sends a request the way a gateway
// does: the API key as a bearer token, a deadline, and any more metadata.
#pragma once

#include <grpcpp/client_context.h>
#include <grpcpp/support/sync_stream.h>

#include <chrono>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "omniforge/orchestrator/v1/chat_service.grpc.pb.h"

namespace omniforge::testing {

struct ChatTurn {
  using Event = ::omniforge::orchestrator::v1::ChatEvent;

  grpc::Status status;
  std::vector<Event> events;

  // The events of one kind, in order.
  std::vector<Event> Of(Event::EventCase kind) const {
    std::vector<Event> out;
    for (const Event& e : events) {
      if (e.event_case() == kind) out.push_back(e);
    }
    return out;
  }
  // The position of the first event of `kind`; -1 when there is none.
  int IndexOf(Event::EventCase kind) const {
    for (size_t i = 0; i < events.size(); ++i) {
      if (events[i].event_case() == kind) return static_cast<int>(i);
    }
    return -1;
  }
  // The first event (the session) and the last (done). The caller checks
  // that the turn has events.
  const ::omniforge::orchestrator::v1::SessionEvent& session() const {
    return events.front().session();
  }
  const ::omniforge::orchestrator::v1::DoneEvent& done() const { return events.back().done(); }
  std::string conversation_id() const { return session().conversation_id(); }
  // The turn ended with its work done (not waiting on the user).
  bool final() const { return !events.empty() && events.back().done().is_final(); }
  // Every text delta joined, restarts included (see ShownAnswer for the
  // answer as a client shows it).
  std::string text() const {
    std::string joined;
    for (const Event& e : Of(Event::kText)) joined += e.text().delta();
    return joined;
  }
  // The last preview of the turn, if any.
  std::optional<::omniforge::orchestrator::v1::PreviewEvent> preview() const {
    const std::vector<Event> previews = Of(Event::kPreview);
    if (previews.empty()) return std::nullopt;
    return previews.back().preview();
  }
  // The tools the turn called, in order.
  std::vector<std::string> tools_called() const {
    std::vector<std::string> names;
    for (const Event& e : Of(Event::kToolCall)) names.push_back(e.tool_call().tool_name());
    return names;
  }
  std::vector<::omniforge::orchestrator::v1::ErrorEvent> errors() const {
    std::vector<::omniforge::orchestrator::v1::ErrorEvent> out;
    for (const Event& e : Of(Event::kError)) out.push_back(e.error());
    return out;
  }
};

// Reads the rest of a turn's stream into `turn` and finishes the call.
inline void ReadToEnd(grpc::ClientReaderInterface<ChatTurn::Event>& reader, ChatTurn& turn) {
  ChatTurn::Event event;
  while (reader.Read(&event)) turn.events.push_back(event);
  turn.status = reader.Finish();
}

// A context as a gateway sends it: `api_key` as the bearer token, a
// deadline `timeout` from now, and `metadata` (name, value) pairs.
inline void PrepareChatContext(
    grpc::ClientContext& context, const std::string& api_key,
    std::chrono::seconds timeout = std::chrono::seconds(60),
    const std::vector<std::pair<std::string, std::string>>& metadata = {}) {
  context.AddMetadata("authorization", "Bearer " + api_key);
  for (const auto& [name, value] : metadata) context.AddMetadata(name, value);
  context.set_deadline(std::chrono::system_clock::now() + timeout);
}

// One whole turn: `request` sent through `stub` as PrepareChatContext says.
inline ChatTurn StreamTurn(::omniforge::orchestrator::v1::ChatService::StubInterface& stub,
                           const ::omniforge::orchestrator::v1::StreamChatRequest& request,
                           const std::string& api_key,
                           const std::vector<std::pair<std::string, std::string>>& metadata = {},
                           std::chrono::seconds timeout = std::chrono::seconds(60)) {
  grpc::ClientContext context;
  PrepareChatContext(context, api_key, timeout, metadata);
  ChatTurn turn;
  ReadToEnd(*stub.StreamChat(&context, request), turn);
  return turn;
}

}  // namespace omniforge::testing
