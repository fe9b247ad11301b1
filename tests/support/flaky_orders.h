// The order-tracking scenario of the fault-injection benchmark and tests:
// a user asks where an order is, the planner model (the fake provider) calls
// the MCP tool orders__lookup_order of tests/node/flaky_mcp_server.mjs over
// Streamable HTTP, and answers from its result. Faults are injected at each
// layer a turn crosses: the model's HTTP answer (429, 503), its stream
// (cut, an error event) and the MCP server (HTTP 503 and 429, a tool's
// rate_limited error). Each fault is temporary: it hits one call once.
#pragma once

#include <array>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "libs/llm/testing/fake_provider.h"
#include "omniforge/orchestrator/v1/chat_service.pb.h"

namespace omniforge::testing {

enum class OrderFault {
  kNone,
  kModel429,          // the first planner call: HTTP 429, Retry-After: 0
  kModel503,          // the planner call after the tool result: HTTP 503
  kModelCutBefore,    // the first planner call's stream cut before any output
  kModelStreamError,  // the first planner call's stream ends in an error event
  kModelCutMid,       // the answer's stream cut after some text was sent
  kMcpHttp503,        // the MCP server answers the tool call HTTP 503
  kMcpHttp429,        // ... HTTP 429
  kMcpRateLimited,    // the tool reports {"error": {"code": "rate_limited"}}
};

inline constexpr std::array<OrderFault, 8> kOrderFaults = {
    OrderFault::kModel429,         OrderFault::kModel503,      OrderFault::kModelCutBefore,
    OrderFault::kModelStreamError, OrderFault::kModelCutMid,   OrderFault::kMcpHttp503,
    OrderFault::kMcpHttp429,       OrderFault::kMcpRateLimited};

inline std::string_view OrderFaultName(OrderFault fault) {
  switch (fault) {
    case OrderFault::kNone:
      return "none";
    case OrderFault::kModel429:
      return "model_429";
    case OrderFault::kModel503:
      return "model_503";
    case OrderFault::kModelCutBefore:
      return "model_cut_before_output";
    case OrderFault::kModelStreamError:
      return "model_stream_error";
    case OrderFault::kModelCutMid:
      return "model_cut_mid_answer";
    case OrderFault::kMcpHttp503:
      return "mcp_http_503";
    case OrderFault::kMcpHttp429:
      return "mcp_http_429";
    case OrderFault::kMcpRateLimited:
      return "mcp_rate_limited";
  }
  return "?";
}

// The MCP server's name for a fault it injects (flaky_mcp_server.mjs);
// empty for the model's faults.
inline std::string_view McpFaultKind(OrderFault fault) {
  switch (fault) {
    case OrderFault::kMcpHttp503:
      return "http_503";
    case OrderFault::kMcpHttp429:
      return "http_429";
    case OrderFault::kMcpRateLimited:
      return "rate_limited";
    default:
      return "";
  }
}

// Order `n`'s id: "o0017".
inline std::string OrderId(int n) {
  char id[16];
  std::snprintf(id, sizeof id, "o%04d", n);
  return id;
}

// What the user asks about order `id`.
inline std::string OrderQuestion(const std::string& id) { return "where is my order " + id + "?"; }

// What the model answers once the lookup's result is in.
inline constexpr char kOrderAnswer[] =
    "Your order has shipped with Parcelway and should arrive on 2 December.";

// The executor's config: the flaky server at `url` (its read-only tool runs
// without asking).
inline std::string FlakyOrdersExecutorConfig(const std::string& url) {
  return "mcp:\n  servers:\n    orders:\n      transport: http\n      url: " + url +
         "\n      trust: read_hints\n      timeout_ms: 10000\n";
}

// The model's rules for order `id`, its fault's rule first when the fault
// is the model's: asked about the order, it calls orders__lookup_order.
inline std::vector<llm::testing::FakeRule> OrderTurnRules(const std::string& id, OrderFault fault) {
  using llm::testing::FakeFault;
  using llm::testing::FakeRule;
  FakeRule call;
  call.match.operation = "planner_stream";
  call.match.last_user_contains = "order " + id + "?";
  call.match.last_is_tool_result = false;
  call.reply.tool_calls = {{"", "orders__lookup_order", R"({"order_id":")" + id + "\"}"}};
  std::vector<FakeRule> rules;
  FakeRule faulty = call;
  faulty.times = 1;
  switch (fault) {
    case OrderFault::kModel429:
      faulty.fault = {.kind = FakeFault::Kind::kStatus, .status = 429, .retry_after = "0"};
      break;
    case OrderFault::kModelCutBefore:
      faulty.fault = {.kind = FakeFault::Kind::kCutStream, .after_deltas = 0};
      break;
    case OrderFault::kModelStreamError:
      faulty.fault = {.kind = FakeFault::Kind::kStreamError, .after_deltas = 0};
      break;
    case OrderFault::kModel503:
    case OrderFault::kModelCutMid:
      faulty.match.last_is_tool_result = true;
      faulty.reply = {.text = kOrderAnswer};
      faulty.fault = fault == OrderFault::kModel503
                         ? FakeFault{.kind = FakeFault::Kind::kStatus, .status = 503}
                         : FakeFault{.kind = FakeFault::Kind::kCutStream, .after_deltas = 3};
      break;
    default:
      break;
  }
  if (faulty.fault.kind != FakeFault::Kind::kNone) rules.push_back(std::move(faulty));
  rules.push_back(std::move(call));
  return rules;
}

// The model's answer after any lookup: the last rule.
inline llm::testing::FakeRule OrderAnswerRule() {
  llm::testing::FakeRule answer;
  answer.match.operation = "planner_stream";
  answer.match.last_is_tool_result = true;
  answer.reply.text = kOrderAnswer;
  return answer;
}

// The answer as the user is shown it: a turn's text events joined, a
// restart (the model's stream broke off) replacing what came before it.
inline std::string ShownAnswer(const std::vector<orchestrator::v1::ChatEvent>& events) {
  std::string shown;
  for (const orchestrator::v1::ChatEvent& e : events) {
    if (!e.has_text()) continue;
    if (e.text().restart()) shown.clear();
    shown += e.text().delta();
  }
  return shown;
}

// Whether the turn's last orders__lookup_order result reached the model
// without an error.
inline bool LookedUpOrder(const std::vector<orchestrator::v1::ChatEvent>& events) {
  bool ok = false;
  for (const orchestrator::v1::ChatEvent& e : events) {
    if (e.has_tool_result() && e.tool_result().tool_name() == "orders__lookup_order") {
      ok = !e.tool_result().is_error();
    }
  }
  return ok;
}

}  // namespace omniforge::testing
