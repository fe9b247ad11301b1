// An OTLP/HTTP collector on loopback for tests: accepts POST /v1/traces
// (JSON) and keeps every span it received. Thread-safe.
#pragma once

#include <httplib.h>

#include <chrono>
#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

namespace omniforge::trace::testing {

// nlohmann::json's move is noexcept but checks its invariant, which
// clang-tidy reads as a possible throw.
// NOLINTNEXTLINE(bugprone-exception-escape)
struct ReceivedSpan {
  std::string service;  // the resource's service.name
  std::string trace_id;
  std::string span_id;
  std::string parent_span_id;  // empty: a root span
  std::string name;
  int kind = 0;
  nlohmann::json attributes;  // {"key": "value"}
  int status_code = 0;
};

class FakeCollector final {
 public:
  FakeCollector() {
    server_.Post("/v1/traces", [this](const httplib::Request& request, httplib::Response& reply) {
      auto body = nlohmann::json::parse(request.body, nullptr, false);
      if (body.is_discarded() || request.get_header_value("Content-Type") != "application/json") {
        reply.status = 400;
        return;
      }
      Keep(body);
      reply.set_content("{}", "application/json");
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ~FakeCollector() {
    server_.stop();
    thread_.join();
  }
  FakeCollector(const FakeCollector&) = delete;
  FakeCollector& operator=(const FakeCollector&) = delete;

  std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(port_); }

  std::vector<ReceivedSpan> spans() const {
    std::lock_guard lock(mu_);
    return spans_;
  }

  // Waits up to `timeout` until `done(spans)` holds; the spans then.
  std::vector<ReceivedSpan> WaitFor(
      const std::function<bool(const std::vector<ReceivedSpan>&)>& done,
      std::chrono::milliseconds timeout) const {
    const auto until = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      std::vector<ReceivedSpan> now = spans();
      if (done(now) || std::chrono::steady_clock::now() >= until) return now;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }

 private:
  void Keep(const nlohmann::json& body) {
    std::lock_guard lock(mu_);
    for (const auto& resource : body.value("resourceSpans", nlohmann::json::array())) {
      std::string service;
      for (const auto& a : resource["resource"].value("attributes", nlohmann::json::array())) {
        if (a["key"] == "service.name") service = a["value"]["stringValue"];
      }
      for (const auto& scope : resource.value("scopeSpans", nlohmann::json::array())) {
        for (const auto& s : scope.value("spans", nlohmann::json::array())) {
          ReceivedSpan span{service,
                            s["traceId"],
                            s["spanId"],
                            s.value("parentSpanId", ""),
                            s["name"],
                            s["kind"],
                            nlohmann::json::object(),
                            s["status"].value("code", 0)};
          for (const auto& a : s.value("attributes", nlohmann::json::array())) {
            span.attributes[a["key"].get<std::string>()] = a["value"]["stringValue"];
          }
          spans_.push_back(std::move(span));
        }
      }
    }
  }

  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
  mutable std::mutex mu_;
  std::vector<ReceivedSpan> spans_;
};

}  // namespace omniforge::trace::testing
