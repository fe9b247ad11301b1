// An in-process MCP transport for unit tests: every message the client
// sends goes to a script that plays the server and answers through Deliver,
// on the sending thread (like HTTP) or from another thread (like stdio).
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "libs/mcp/transport.h"
#include "nlohmann/json.hpp"

namespace omniforge::mcp::testing {

class ScriptedTransport final : public McpTransport {
 public:
  // Plays the server: sees each message the client sends (parsed) and
  // returns the status Send returns.
  using Script = std::function<absl::Status(const nlohmann::json& message, ScriptedTransport& t)>;

  explicit ScriptedTransport(Script script, bool answers_within_send = false)
      : script_(std::move(script)), answers_within_send_(answers_within_send) {}

  // A script for the lifecycle: answers initialize with `protocol_version`,
  // ping with {}, and hands every other request to `other`.
  static Script Server(Script other, std::string protocol_version = "2025-06-18") {
    return [other = std::move(other), protocol_version](const nlohmann::json& message,
                                                        ScriptedTransport& t) -> absl::Status {
      const std::string method = message.value("method", "");
      if (method == "initialize") {
        t.Deliver({{"jsonrpc", "2.0"},
                   {"id", message["id"]},
                   {"result",
                    {{"protocolVersion", protocol_version},
                     {"capabilities", {{"tools", {{"listChanged", true}}}}},
                     {"serverInfo", {{"name", "scripted"}, {"version", "1.0"}}}}}});
        return absl::OkStatus();
      }
      if (method == "ping") {
        t.Deliver(
            {{"jsonrpc", "2.0"}, {"id", message["id"]}, {"result", nlohmann::json::object()}});
        return absl::OkStatus();
      }
      if (method == "notifications/initialized" || method == "notifications/cancelled" ||
          !message.contains("method")) {
        return absl::OkStatus();
      }
      return other(message, t);
    };
  }

  absl::Status Open(TransportHandlers handlers, uint64_t epoch) override {
    std::lock_guard lock(mu_);
    ++opens_;
    if (!open_error_.ok()) return open_error_;
    handlers_ = std::move(handlers);
    epoch_ = epoch;
    open_ = true;
    return absl::OkStatus();
  }

  absl::Status Send(std::string_view message, const SendOptions& options) override {
    nlohmann::json parsed = nlohmann::json::parse(message);
    {
      std::lock_guard lock(mu_);
      if (!open_ || options.epoch != epoch_) return absl::UnavailableError("scripted: not open");
      sent_.push_back(parsed);
      if (options.is_initialize) ++initializes_;
      cv_.notify_all();
    }
    return script_(parsed, *this);
  }

  void SetProtocolVersion(const std::string& version) override {
    std::lock_guard lock(mu_);
    protocol_version_ = version;
  }
  bool AnswersWithinSend() const override { return answers_within_send_; }
  void Close() override {
    std::lock_guard lock(mu_);
    open_ = false;
    ++closes_;
  }
  std::string Describe() const override { return "scripted"; }

  // Hands a message to the client as if the server had sent it.
  void Deliver(const nlohmann::json& message) {
    TransportHandlers handlers;
    {
      std::lock_guard lock(mu_);
      if (!open_) return;
      handlers = handlers_;
    }
    handlers.on_message(message.dump());
  }

  // The connection ends as if the server process had died.
  void Drop(const std::string& reason) {
    TransportHandlers handlers;
    {
      std::lock_guard lock(mu_);
      if (!open_) return;
      open_ = false;
      handlers = handlers_;
    }
    handlers.on_closed(absl::UnavailableError(reason));
  }

  // Waits until the client has sent a message matching `predicate`;
  // returns it.
  std::optional<nlohmann::json> WaitForMessage(
      const std::function<bool(const nlohmann::json&)>& predicate,
      std::chrono::milliseconds timeout = std::chrono::seconds(5)) {
    std::unique_lock lock(mu_);
    std::optional<nlohmann::json> found;
    cv_.wait_for(lock, timeout, [&] {
      for (const nlohmann::json& message : sent_) {
        if (predicate(message)) {
          found = message;
          return true;
        }
      }
      return false;
    });
    return found;
  }

  // Waits until the client has sent a message with `method`; returns it.
  std::optional<nlohmann::json> WaitForSent(
      const std::string& method, std::chrono::milliseconds timeout = std::chrono::seconds(5)) {
    return WaitForMessage(
        [&method](const nlohmann::json& message) { return message.value("method", "") == method; },
        timeout);
  }

  std::vector<nlohmann::json> sent() const {
    std::lock_guard lock(mu_);
    return sent_;
  }
  int opens() const {
    std::lock_guard lock(mu_);
    return opens_;
  }
  int initializes() const {
    std::lock_guard lock(mu_);
    return initializes_;
  }
  std::string protocol_version() const {
    std::lock_guard lock(mu_);
    return protocol_version_;
  }
  void FailOpens(absl::Status status) {
    std::lock_guard lock(mu_);
    open_error_ = std::move(status);
  }

 private:
  const Script script_;
  const bool answers_within_send_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  TransportHandlers handlers_;
  uint64_t epoch_ = 0;
  bool open_ = false;
  int opens_ = 0;
  int closes_ = 0;
  int initializes_ = 0;
  absl::Status open_error_;
  std::string protocol_version_;
  std::vector<nlohmann::json> sent_;
};

}  // namespace omniforge::mcp::testing
