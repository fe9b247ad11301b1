// The official openai npm SDK (tests/node/openai_fidelity.mjs) against the
// fake: when the SDK's own stream helpers assemble exactly what the rule
// scripted, the fake's SSE is shaped the way real clients expect.
#include <gtest/gtest.h>
#include <stdio.h>  // NOLINT(modernize-deprecated-headers): POSIX popen, not <cstdio>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "libs/llm/testing/fake_provider.h"

namespace omniforge::llm::testing {
namespace {

using nlohmann::json;

constexpr char kApiKey[] = "sk-fidelity-0123456789";
constexpr char kWeatherArgs[] =
    R"({"city":"Zürich \"Altstadt\"","day":"2024-05-01","extra":{"nested":[1,{"deep":"日本 \\ end"}]}})";
constexpr char kTimeArgs[] = R"({"tz":"Europe/Zurich"})";

// Runs `command`; its stdout and stderr together, and whether it exited 0.
std::pair<std::string, bool> RunCommand(const std::string& command) {
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return {"popen failed", false};
  std::string output;
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof(buffer), pipe)) > 0) output.append(buffer, n);
  const int status = pclose(pipe);
  return {output, WIFEXITED(status) && WEXITSTATUS(status) == 0};
}

void ExpectScriptedToolCalls(const json& summary) {
  const json& message = summary["message"];
  EXPECT_EQ(message["role"], "assistant");
  EXPECT_TRUE(message["content"].is_null());
  ASSERT_EQ(message["tool_calls"].size(), 2u) << message;
  const json& weather = message["tool_calls"][0];
  EXPECT_EQ(weather["id"], "call_weather_01");
  EXPECT_EQ(weather["type"], "function");
  EXPECT_EQ(weather["function"]["name"], "get_weather");
  EXPECT_EQ(weather["function"]["arguments"], kWeatherArgs);
  const json& time = message["tool_calls"][1];
  EXPECT_EQ(time["id"], "call_time_02");
  EXPECT_EQ(time["function"]["name"], "get_time");
  EXPECT_EQ(time["function"]["arguments"], kTimeArgs);
  EXPECT_EQ(summary["finish_reason"], "tool_calls");
  EXPECT_EQ(summary["model"], "gpt-fidelity");
  const json& usage = summary["usage"];
  EXPECT_EQ(usage["prompt_tokens"], 321);
  EXPECT_EQ(usage["completion_tokens"], 45);
  EXPECT_EQ(usage["total_tokens"], 366);
  EXPECT_EQ(usage["prompt_tokens_details"]["cached_tokens"], 300);
}

TEST(FakeFidelityTest, OpenAiSdkAssemblesTheScriptedToolCallsAndUsage) {
  if (std::system("command -v node >/dev/null 2>&1") != 0) {
    GTEST_SKIP() << "node is not on PATH: the openai SDK fidelity check needs Node.js";
  }
  const std::filesystem::path dir = std::filesystem::path(OMNIFORGE_SOURCE_DIR) / "tests" / "node";
  ASSERT_TRUE(std::filesystem::exists(dir / "node_modules" / "openai" / "package.json"))
      << "tests/node/node_modules is missing: run `npm ci --prefix tests/node` "
         "(scripts/deps.sh does it when node and npm are installed)";

  FakeRule rule;
  rule.reply.tool_calls = {{"call_weather_01", "get_weather", kWeatherArgs},
                           {"call_time_02", "get_time", kTimeArgs}};
  rule.reply.usage = FakeUsage{321, 45, 300};
  FakeOptions options;
  options.api_key = kApiKey;
  auto fake = FakeLlmServer::Start({rule}, options);
  ASSERT_TRUE(fake.ok()) << fake.status();

  const auto [output, ok] = RunCommand("node '" + (dir / "openai_fidelity.mjs").string() + "' '" +
                                       (*fake)->openai_base_url() + "' '" + kApiKey + "'");
  ASSERT_TRUE(ok) << output;
  const json result = json::parse(output, nullptr, false);
  ASSERT_FALSE(result.is_discarded()) << output;

  SCOPED_TRACE("streamed");
  ExpectScriptedToolCalls(result["stream"]);
  // The SDK JSON.parses the arguments of strict tools once a call is done.
  EXPECT_EQ(result["stream"]["message"]["tool_calls"][0]["function"]["parsed_arguments"],
            json::parse(kWeatherArgs));
  EXPECT_GT(result["stream"]["chunks"].get<int>(), 20);
  SCOPED_TRACE("plain");
  ExpectScriptedToolCalls(result["plain"]);

  const auto requests = (*fake)->Requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_TRUE(requests[0].stream);
  EXPECT_EQ(json::parse(requests[0].body)["stream_options"]["include_usage"], true);
  EXPECT_FALSE(requests[1].stream);
  EXPECT_EQ(requests[1].headers.at("authorization"), std::string("Bearer ") + kApiKey);
}

}  // namespace
}  // namespace omniforge::llm::testing
