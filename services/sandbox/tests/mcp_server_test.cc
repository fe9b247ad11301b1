// The MCP stdio layer on its own: the handshake and version negotiation,
// ping, tools/list, tools/call results and errors, notifications, batches
// and malformed lines, all answered without crashing.
#include "services/sandbox/src/mcp_server.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sstream>

#include "services/sandbox/src/memory_store.h"
#include "services/sandbox/src/sandbox_time.h"
#include "services/sandbox/tests/fixed_clock.h"

namespace omniforge::sandbox {
namespace {

using ::testing::HasSubstr;
using Json = nlohmann::json;

class McpLineServerTest : public ::testing::Test {
 protected:
  // The one answer to `line`.
  Json Answer(const std::string& line) {
    const std::vector<std::string> answers = server_.HandleLine(line);
    EXPECT_EQ(answers.size(), 1u) << line;
    return answers.empty() ? Json() : Json::parse(answers[0]);
  }

  testing::FixedClock clock_{*ParseRfc3339("t", "2026-11-28T10:00:00Z")};
  MemorySandboxStore store_;
  SandboxTools tools_{store_, clock_, absl::UTCTimeZone(), "acme", *ParseDomains("contacts")};
  McpLineServer server_{tools_, "omniforge-sandbox-contacts", "1.2.3", "practice contacts"};
};

TEST_F(McpLineServerTest, InitializeAgreesOnAVersionBothSpeak) {
  const Json older = Answer(
      R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2024-11-05",)"
      R"("capabilities":{},"clientInfo":{"name":"t","version":"1"}}})");
  EXPECT_EQ(older["id"], 1);
  EXPECT_EQ(older["result"]["protocolVersion"], "2024-11-05");
  EXPECT_EQ(older["result"]["serverInfo"]["name"], "omniforge-sandbox-contacts");
  EXPECT_EQ(older["result"]["capabilities"]["tools"]["listChanged"], false);
  const Json future = Answer(
      R"({"jsonrpc":"2.0","id":"x","method":"initialize","params":{"protocolVersion":"2099-01-01"}})");
  EXPECT_EQ(future["id"], "x");
  EXPECT_EQ(future["result"]["protocolVersion"], "2025-06-18");
  EXPECT_TRUE(
      server_.HandleLine(R"({"jsonrpc":"2.0","method":"notifications/initialized"})").empty());
  EXPECT_EQ(Answer(R"({"jsonrpc":"2.0","id":2,"method":"ping"})")["result"], Json::object());
}

TEST_F(McpLineServerTest, ToolsAreListedAndCalled) {
  const Json list = Answer(R"({"jsonrpc":"2.0","id":3,"method":"tools/list"})");
  ASSERT_EQ(list["result"]["tools"].size(), 3u);
  EXPECT_EQ(list["result"]["tools"][0]["name"], "find_contacts");
  EXPECT_TRUE(list["result"]["tools"][0]["annotations"]["readOnlyHint"]);

  const Json call =
      Answer(R"({"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"find_contacts",)"
             R"("arguments":{"query":"John"}}})");
  EXPECT_FALSE(call["result"]["isError"]);
  EXPECT_EQ(call["result"]["structuredContent"]["matches"].size(), 2u);
  EXPECT_EQ(Json::parse(call["result"]["content"][0]["text"].get<std::string>()),
            call["result"]["structuredContent"]);

  const Json failed =
      Answer(R"({"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"add_contact",)"
             R"("arguments":{"name":"X"}}})");
  EXPECT_TRUE(failed["result"]["isError"]);
  EXPECT_EQ(failed["result"]["content"][0]["text"], "email: required");
  EXPECT_EQ(failed["result"]["structuredContent"]["error"]["code"], "invalid_argument");
}

TEST_F(McpLineServerTest, BadRequestsGetJsonRpcErrors) {
  EXPECT_EQ(Answer("{not json")["error"]["code"], -32700);
  EXPECT_EQ(Answer(R"({"jsonrpc":"2.0","id":6,"method":"resources/list"})")["error"]["code"],
            -32601);
  const Json unknown =
      Answer(R"({"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"create_event"}})");
  EXPECT_EQ(unknown["error"]["code"], -32602);
  EXPECT_THAT(unknown["error"]["message"].get<std::string>(), HasSubstr("Unknown tool"));
  EXPECT_EQ(
      Answer(
          R"({"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":5}})")["error"]["code"],
      -32602);
  const Json odd =
      Answer(R"({"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"find_contacts",)"
             R"("arguments":["not","an","object"]}})");
  EXPECT_TRUE(odd["result"]["isError"]);
  EXPECT_EQ(Answer(std::string(kMaxLineBytes + 1, ' '))["error"]["code"], -32600);
}

TEST_F(McpLineServerTest, ABatchIsAnsweredPerRequestAndServeStopsAtTheEnd) {
  std::istringstream in(
      R"([{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"n"},)"
      R"({"jsonrpc":"2.0","id":2,"method":"ping"}])"
      "\n\r\n"
      R"({"jsonrpc":"2.0","id":3,"method":"ping"})"
      "\r\n");
  std::ostringstream out;
  server_.Serve(in, out);
  std::istringstream lines(out.str());
  std::vector<Json> answers;
  for (std::string line; std::getline(lines, line);) answers.push_back(Json::parse(line));
  ASSERT_EQ(answers.size(), 3u);
  EXPECT_EQ(answers[0]["id"], 1);
  EXPECT_EQ(answers[2]["id"], 3);
}

}  // namespace
}  // namespace omniforge::sandbox
