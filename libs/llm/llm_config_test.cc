#include "libs/llm/llm_config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>

namespace omniforge::llm {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

core::ConfigReader::EnvLookup FakeEnv(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](const std::string& name) -> std::optional<std::string> {
    const auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

// Reads `yaml` with `env` as the whole environment; `finish` gets the
// reader's Finish() status.
absl::StatusOr<LlmConfig> Read(const std::string& yaml, std::map<std::string, std::string> env,
                               absl::Status* finish = nullptr) {
  const core::ConfigReader::EnvLookup lookup = FakeEnv(std::move(env));
  absl::StatusOr<core::ConfigReader> reader = core::ConfigReader::FromString(yaml, lookup);
  EXPECT_TRUE(reader.ok()) << reader.status();
  absl::StatusOr<LlmConfig> config = ReadLlmConfig(*reader, lookup);
  const absl::Status finished = reader->Finish();
  if (finish != nullptr) {
    *finish = finished;
  } else {
    EXPECT_TRUE(finished.ok()) << finished;
  }
  return config;
}

constexpr char kFullConfig[] = R"(
llm:
  default_timeout_ms: 90000
  retry: {max_attempts: 4, initial_backoff_ms: 100, max_backoff_ms: 5000, multiplier: 3}
  breaker: {failure_threshold: 7, open_ms: 15000}
  providers:
    openai:
      api: openai
      api_key_env: TEST_OPENAI_KEY
      headers: {OpenAI-Organization: org-1}
      request_timeout_ms: 60000
      prices:
        gpt-4.1: "2.00 0.50 8.00"
        gpt-4.1-mini: "0.4 0.1 1.6"
    claude:
      api: anthropic
      api_key_env: TEST_ANTHROPIC_KEY
      default_max_tokens: 8192
      prices:
        claude-sonnet-4-5: "3 0.3 15 3.75"
    local:
      api: openai
      base_url: http://127.0.0.1:11434/v1/
  profiles:
    speed: [openai/gpt-4.1-mini, local/meta-llama/Llama-3.1-8B]
    balanced: [openai/gpt-4.1, claude/claude-sonnet-4-5]
    quality: [claude/claude-opus-4-1]
    summaries: [local/qwen2.5:7b]
)";

const std::map<std::string, std::string> kKeys = {{"TEST_OPENAI_KEY", "sk-openai-test"},
                                                  {"TEST_ANTHROPIC_KEY", "sk-ant-test\n"}};

TEST(LlmConfigTest, ReadsAFullConfig) {
  absl::StatusOr<LlmConfig> config = Read(kFullConfig, kKeys);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_TRUE(config->enabled());
  EXPECT_EQ(config->default_timeout_ms, 90000);
  EXPECT_EQ(config->retry.max_attempts, 4);
  EXPECT_EQ(config->retry.initial_backoff_micros, 100'000);
  EXPECT_EQ(config->retry.max_backoff_micros, 5'000'000);
  EXPECT_EQ(config->retry.multiplier, 3);
  EXPECT_EQ(config->breaker.failure_threshold, 7);
  EXPECT_EQ(config->breaker.open_micros, 15'000'000);

  ASSERT_EQ(config->providers.size(), 3u);
  const ProviderConfig& openai = config->providers.at("openai");
  EXPECT_EQ(openai.api, ProviderApi::kOpenAi);
  EXPECT_EQ(openai.base_url, "https://api.openai.com/v1");
  EXPECT_EQ(openai.api_key, "sk-openai-test");
  EXPECT_EQ(openai.headers, (std::map<std::string, std::string>{{"OpenAI-Organization", "org-1"}}));
  EXPECT_EQ(openai.request_timeout_ms, 60000);
  EXPECT_EQ(openai.prices.at("gpt-4.1"), (Price{2.0, 0.5, 8.0}));
  EXPECT_EQ(openai.prices.at("gpt-4.1-mini"), (Price{0.4, 0.1, 1.6}));
  const ProviderConfig& claude = config->providers.at("claude");
  EXPECT_EQ(claude.api, ProviderApi::kAnthropic);
  EXPECT_EQ(claude.prices.at("claude-sonnet-4-5"),
            (Price{3, 0.3, 15, std::optional<double>(3.75)}));
  EXPECT_EQ(openai.prices.at("gpt-4.1").cache_write_input_per_mtok, std::nullopt);
  EXPECT_EQ(claude.base_url, "https://api.anthropic.com");
  EXPECT_EQ(claude.api_key, "sk-ant-test");
  EXPECT_EQ(claude.default_max_tokens, 8192);
  EXPECT_EQ(claude.anthropic_version, "2023-06-01");
  const ProviderConfig& local = config->providers.at("local");
  EXPECT_EQ(local.base_url, "http://127.0.0.1:11434/v1");
  EXPECT_EQ(local.api_key, "");
  // OpenAI's reasoning models reject max_tokens; compatible servers may know
  // only it.
  EXPECT_EQ(openai.max_tokens_field, OpenAiTokenLimitField::kMaxCompletionTokens);
  EXPECT_EQ(local.max_tokens_field, OpenAiTokenLimitField::kMaxTokens);

  EXPECT_THAT(config->profiles.at("speed"),
              ElementsAre(ModelTarget{"openai", "gpt-4.1-mini"},
                          ModelTarget{"local", "meta-llama/Llama-3.1-8B"}));
  EXPECT_THAT(
      config->profiles.at("balanced"),
      ElementsAre(ModelTarget{"openai", "gpt-4.1"}, ModelTarget{"claude", "claude-sonnet-4-5"}));
  EXPECT_THAT(config->profiles.at("quality"),
              ElementsAre(ModelTarget{"claude", "claude-opus-4-1"}));
  EXPECT_THAT(config->profiles.at("summaries"), ElementsAre(ModelTarget{"local", "qwen2.5:7b"}));

  const PriceTable prices = config->Prices();
  EXPECT_EQ(prices.Find("openai", "gpt-4.1"), (Price{2.0, 0.5, 8.0}));
  EXPECT_FALSE(prices.Find("claude", "gpt-4.1").has_value());
}

TEST(LlmConfigTest, EmptySectionIsLocalMode) {
  for (const char* yaml : {"", "llm:\n", "llm:\n  providers:\n  profiles:\n"}) {
    absl::StatusOr<LlmConfig> config = Read(yaml, {});
    ASSERT_TRUE(config.ok()) << config.status();
    EXPECT_FALSE(config->enabled()) << yaml;
    EXPECT_TRUE(config->profiles.empty()) << yaml;
  }
}

TEST(LlmConfigTest, UnknownKeysAreRejectedByFinish) {
  absl::Status finish;
  absl::StatusOr<LlmConfig> config = Read(R"(
llm:
  retyr: {max_attempts: 2}
  providers:
    local: {api: openai, base_url: "http://h/v1", api_kye_env: X}
)",
                                          {}, &finish);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_THAT(finish.message(), HasSubstr("llm.retyr"));
  EXPECT_THAT(finish.message(), HasSubstr("llm.providers.local.api_kye_env"));
}

TEST(LlmConfigTest, SemanticErrorsNameTheKey) {
  absl::Status finish;
  absl::StatusOr<LlmConfig> config = Read(R"(
llm:
  retry: {multiplier: 0.5}
  providers:
    a: {api: gemini}
    b: {api: openai, base_url: "ftp://h", max_tokens_field: max_output_tokens}
    c:
      api: anthropic
      prices: {claude-x.1: "3 0.3"}
    Bad.Name: {api: openai}
  profiles:
    speed: [a/m, nowhere/m, "b", "c/"]
)",
                                          {}, &finish);
  EXPECT_THAT(finish.message(), HasSubstr("llm.providers.Bad.Name: a key here cannot contain '.'"));
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument);
  const std::string message(config.status().message());
  EXPECT_THAT(message, HasSubstr("llm.retry.multiplier: 0.5 is outside [1, 100]"));
  EXPECT_THAT(message, HasSubstr("llm.providers.a.api: unknown api \"gemini\""));
  EXPECT_THAT(message, HasSubstr("llm.providers.b.base_url: \"ftp://h\" is not an http(s) URL"));
  EXPECT_THAT(message, HasSubstr("llm.providers.b.max_tokens_field: unknown field "
                                 "\"max_output_tokens\""));
  EXPECT_THAT(message, HasSubstr("llm.providers.c.prices.claude-x.1: \"3 0.3\" is not"));
  EXPECT_THAT(message, HasSubstr("llm.profiles.speed: \"nowhere/m\" names unknown provider"));
  EXPECT_THAT(message, HasSubstr("llm.profiles.speed: \"b\" is not provider/model"));
  EXPECT_THAT(message, HasSubstr("llm.profiles.speed: \"c/\" is not provider/model"));
}

TEST(LlmConfigTest, MaxTokensFieldCanBeChosen) {
  absl::StatusOr<LlmConfig> config = Read(R"(
llm:
  providers:
    openai: {api: openai, max_tokens_field: max_tokens}
    vllm: {api: openai, base_url: "http://vllm:8000/v1", max_tokens_field: max_completion_tokens}
    explicit_port: {api: openai, base_url: "https://api.openai.com:443/v1"}
)",
                                          {});
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->providers.at("openai").max_tokens_field, OpenAiTokenLimitField::kMaxTokens);
  EXPECT_EQ(config->providers.at("vllm").max_tokens_field,
            OpenAiTokenLimitField::kMaxCompletionTokens);
  EXPECT_EQ(config->providers.at("explicit_port").max_tokens_field,
            OpenAiTokenLimitField::kMaxCompletionTokens);
}

TEST(LlmConfigTest, ProviderNamesMustBePlain) {
  absl::Status finish;
  absl::StatusOr<LlmConfig> config =
      Read("llm:\n  providers:\n    OpenAI: {api: openai}\n", {}, &finish);
  EXPECT_THAT(config.status().message(),
              HasSubstr("llm.providers.OpenAI: a provider name must match [a-z0-9_-]+"));
}

TEST(LlmConfigTest, EnvironmentOverridesKeysAndProfiles) {
  absl::StatusOr<LlmConfig> config =
      Read(kFullConfig, {{"TEST_OPENAI_KEY", "k"},
                         {"TEST_ANTHROPIC_KEY", "k"},
                         {"OMNIFORGE_LLM_PROVIDERS_OPENAI_BASE_URL", "http://proxy:8080/v1"},
                         {"OMNIFORGE_LLM_RETRY_MAX_ATTEMPTS", "2"},
                         {"OMNIFORGE_LLM_PROFILES_SPEED", "local/llama3.2:3b,openai/gpt-4.1"}});
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->providers.at("openai").base_url, "http://proxy:8080/v1");
  EXPECT_EQ(config->retry.max_attempts, 2);
  EXPECT_THAT(config->profiles.at("speed"),
              ElementsAre(ModelTarget{"local", "llama3.2:3b"}, ModelTarget{"openai", "gpt-4.1"}));
}

class ApiKeyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // One file per test and process: ctest runs these tests side by side.
    path_ = ::testing::TempDir() + "/omniforge_llm_config_test_key_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name() + "_" +
            std::to_string(::getpid());
    std::ofstream(path_) << "  sk-from-file\n";
  }
  void TearDown() override { std::filesystem::remove(path_); }

  std::string Yaml(const std::string& key_settings) {
    return "llm:\n  providers:\n    p:\n      api: openai\n" + key_settings;
  }

  std::string path_;
};

TEST_F(ApiKeyTest, FromTheNamedVariable) {
  absl::StatusOr<LlmConfig> config =
      Read(Yaml("      api_key_env: MY_KEY\n      api_key_file: " + path_ + "\n"),
           {{"MY_KEY", "sk-from-env"}});
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->providers.at("p").api_key, "sk-from-env");
}

TEST_F(ApiKeyTest, FromTheFileWhenTheVariableIsUnset) {
  absl::StatusOr<LlmConfig> config =
      Read(Yaml("      api_key_env: MY_KEY\n      api_key_file: " + path_ + "\n"), {});
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->providers.at("p").api_key, "sk-from-file");
}

TEST_F(ApiKeyTest, MissingSourcesAreErrorsThatNeverShowAKey) {
  absl::StatusOr<LlmConfig> unset = Read(Yaml("      api_key_env: MY_KEY\n"), {});
  EXPECT_THAT(unset.status().message(),
              HasSubstr("llm.providers.p.api_key_env: $MY_KEY is unset or empty"));

  absl::StatusOr<LlmConfig> no_file =
      Read(Yaml("      api_key_file: /nonexistent/omniforge/key\n"), {});
  EXPECT_THAT(no_file.status().message(), HasSubstr("llm.providers.p.api_key_file: "));

  std::ofstream(path_) << "\n";
  absl::StatusOr<LlmConfig> empty = Read(Yaml("      api_key_file: " + path_ + "\n"), {});
  EXPECT_THAT(empty.status().message(), HasSubstr("the key file is empty"));

  // A good key next to a bad setting: the error names keys, not the secret.
  absl::StatusOr<LlmConfig> other =
      Read(Yaml("      api_key_env: MY_KEY\n      base_url: nope\n"), {{"MY_KEY", "sk-secret"}});
  EXPECT_THAT(other.status().message(), Not(HasSubstr("sk-secret")));
}

}  // namespace
}  // namespace omniforge::llm
