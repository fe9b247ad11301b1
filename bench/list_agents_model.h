// The planner model of the chat benchmarks (chat_bench, fairness_bench):
// asked "list my agents", it calls list_agents; given the tool's result, it
// answers. At once, streamed in the real wire format: an answer that is
// ready at once leaves in one write, as the events of a finished answer
// would (the client still parses every event).
#pragma once

#include <vector>

#include "libs/llm/testing/fake_provider.h"

namespace omniforge::bench {

inline std::vector<llm::testing::FakeRule> ListAgentsModelRules() {
  llm::testing::FakeRule call;
  call.match.operation = "planner_stream";
  call.match.last_is_tool_result = false;
  call.reply.tool_calls = {{"", "list_agents", "{}"}};
  llm::testing::FakeRule answer;
  answer.match.operation = "planner_stream";
  answer.match.last_is_tool_result = true;
  answer.reply.text = "You have no agents yet: none is listed for your account.";
  call.one_write = answer.one_write = true;
  return {call, answer};
}

}  // namespace omniforge::bench
