// The model an executor agent talks to in tests: the fake provider
// (libs/llm/testing, OpenAI wire format) behind the real LLM client, as the
// service makes it, with prices so that runs record cost.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "libs/core/config.h"
#include "libs/llm/llm_config.h"
#include "libs/llm/llm_factory.h"
#include "libs/llm/testing/fake_provider.h"

namespace omniforge::executor::testing {

struct FakeModel {
  std::unique_ptr<llm::testing::FakeLlmServer> server;
  std::unique_ptr<llm::LlmClient> client;
  std::unique_ptr<llm::ChatModel> model;  // profile "balanced": fake/small
};

// The fake provider answering by `rules`; the model "small" costs $2 per
// million input tokens and $8 per million output tokens.
inline FakeModel OnFakeProvider(std::vector<llm::testing::FakeRule> rules) {
  FakeModel out;
  auto fake = llm::testing::FakeLlmServer::Start(std::move(rules));
  EXPECT_TRUE(fake.ok()) << fake.status();
  if (!fake.ok()) return out;
  out.server = std::move(*fake);
  auto reader = core::ConfigReader::FromString(
      "llm:\n  retry:\n    max_attempts: 1\n  providers:\n    fake:\n      api: openai\n"
      "      base_url: " +
          out.server->openai_base_url() +
          "\n      prices:\n        small: \"2.00 0.50 8.00\"\n  profiles:\n    balanced: "
          "[fake/small]\n",
      [](const std::string&) { return std::optional<std::string>(); });
  EXPECT_TRUE(reader.ok()) << reader.status();
  auto config = llm::ReadLlmConfig(*reader);
  EXPECT_TRUE(config.ok()) << config.status();
  auto client = llm::MakeLlmClient(*config, nullptr);
  EXPECT_TRUE(client.ok()) << client.status();
  if (!client.ok()) return out;
  out.client = std::move(*client);
  out.model = out.client->ForProfile("balanced");
  return out;
}

}  // namespace omniforge::executor::testing
