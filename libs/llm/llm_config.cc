#include "libs/llm/llm_config.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "libs/core/files.h"

namespace omniforge::llm {
namespace {

constexpr char kSection[] = "llm";
// Always read so that the environment can define them without the file.
constexpr const char* kStandardProfiles[] = {"speed", "balanced", "quality"};

std::optional<std::string> GetEnv(const std::string& name) {
  const char* value = std::getenv(name.c_str());
  if (value == nullptr) return std::nullopt;
  return std::string(value);
}

// Provider and profile names become parts of config paths and environment
// variable names, so they stay plain.
bool IsValidName(const std::string& name) {
  if (name.empty()) return false;
  for (const char c : name) {
    if (!absl::ascii_islower(static_cast<unsigned char>(c)) &&
        !absl::ascii_isdigit(static_cast<unsigned char>(c)) && c != '_' && c != '-') {
      return false;
    }
  }
  return true;
}

std::optional<Price> ParsePrice(const std::string& text) {
  const std::vector<std::string> parts =
      absl::StrSplit(text, absl::ByAnyChar(" \t"), absl::SkipWhitespace());
  if (parts.size() != 3 && parts.size() != 4) return std::nullopt;
  double values[4];
  for (size_t i = 0; i < parts.size(); ++i) {
    if (!absl::SimpleAtod(parts[i], &values[i]) || !std::isfinite(values[i]) || values[i] < 0) {
      return std::nullopt;
    }
  }
  Price price{values[0], values[1], values[2]};
  if (parts.size() == 4) price.cache_write_input_per_mtok = values[3];
  return price;
}

// Whether `base_url` points at OpenAI's own API, not a compatible server.
bool IsOpenAiItself(const std::string& base_url) {
  const size_t scheme = base_url.find("://");
  const size_t start = scheme == std::string::npos ? 0 : scheme + 3;
  const std::string host = base_url.substr(start, base_url.find_first_of("/:", start) - start);
  return absl::AsciiStrToLower(host) == "api.openai.com";
}

std::string Trimmed(std::string text) {
  absl::StripAsciiWhitespace(&text);
  return text;
}

class LlmConfigReader final {
 public:
  LlmConfigReader(core::ConfigReader& reader, core::ConfigReader::EnvLookup env)
      : reader_(reader), env_(std::move(env)) {}

  absl::StatusOr<LlmConfig> Read() {
    LlmConfig config;
    config.default_timeout_ms =
        reader_.Int(Key("default_timeout_ms"), config.default_timeout_ms, 1, 3'600'000);
    ReadRetry(config.retry);
    ReadBreaker(config.breaker);
    for (const std::string& name : reader_.Keys(Key("providers"))) {
      if (!IsValidName(name)) {
        Fail(Key("providers.", name), "a provider name must match [a-z0-9_-]+");
        continue;
      }
      config.providers[name] = ReadProvider(Key("providers.", name));
    }
    std::vector<std::string> profile_names(std::begin(kStandardProfiles),
                                           std::end(kStandardProfiles));
    for (const std::string& name : reader_.Keys(Key("profiles"))) {
      if (!IsValidName(name)) {
        Fail(Key("profiles.", name), "a profile name must match [a-z0-9_-]+");
      } else if (std::find(profile_names.begin(), profile_names.end(), name) ==
                 profile_names.end()) {
        profile_names.push_back(name);
      }
    }
    for (const std::string& name : profile_names) {
      const std::string path = Key("profiles.", name);
      const std::vector<std::string> entries = reader_.StringList(path, {});
      if (entries.empty()) continue;
      std::vector<ModelTarget> chain;
      for (const std::string& entry : entries) {
        const size_t slash = entry.find('/');
        if (slash == std::string::npos || slash == 0 || slash + 1 == entry.size()) {
          Fail(path, absl::StrCat("\"", entry, "\" is not provider/model"));
          continue;
        }
        ModelTarget target{entry.substr(0, slash), entry.substr(slash + 1)};
        if (config.providers.count(target.provider) == 0) {
          Fail(path,
               absl::StrCat("\"", entry, "\" names unknown provider \"", target.provider, "\""));
          continue;
        }
        chain.push_back(std::move(target));
      }
      config.profiles[name] = std::move(chain);
    }
    if (!errors_.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("config: ", absl::StrJoin(errors_, "; config: ")));
    }
    return config;
  }

 private:
  template <typename... Parts>
  static std::string Key(const Parts&... parts) {
    return absl::StrCat(kSection, ".", parts...);
  }

  void Fail(const std::string& path, const std::string& what) {
    errors_.push_back(absl::StrCat(path, ": ", what));
  }

  void ReadRetry(RetryPolicy& retry) {
    retry.max_attempts =
        static_cast<int>(reader_.Int(Key("retry.max_attempts"), retry.max_attempts, 1, 20));
    retry.initial_backoff_micros = reader_.Int(Key("retry.initial_backoff_ms"),
                                               retry.initial_backoff_micros / 1000, 0, 600'000) *
                                   1000;
    retry.max_backoff_micros =
        reader_.Int(Key("retry.max_backoff_ms"), retry.max_backoff_micros / 1000, 0, 3'600'000) *
        1000;
    retry.multiplier = reader_.Double(Key("retry.multiplier"), retry.multiplier);
    if (retry.multiplier < 1 || retry.multiplier > 100) {
      Fail(Key("retry.multiplier"), absl::StrCat(retry.multiplier, " is outside [1, 100]"));
    }
  }

  void ReadBreaker(CircuitBreakerOptions& breaker) {
    breaker.failure_threshold = static_cast<int>(
        reader_.Int(Key("breaker.failure_threshold"), breaker.failure_threshold, 1, 10'000));
    breaker.open_micros =
        reader_.Int(Key("breaker.open_ms"), breaker.open_micros / 1000, 1, 86'400'000) * 1000;
  }

  ProviderConfig ReadProvider(const std::string& path) {
    ProviderConfig provider;
    const std::string api = reader_.String(path + ".api", "");
    if (api == "openai") {
      provider.api = ProviderApi::kOpenAi;
    } else if (api == "anthropic") {
      provider.api = ProviderApi::kAnthropic;
    } else if (api.empty()) {
      Fail(path + ".api", "required: openai or anthropic");
    } else {
      Fail(path + ".api", absl::StrCat("unknown api \"", api, "\" (expected openai or anthropic)"));
    }
    const std::string default_url = provider.api == ProviderApi::kAnthropic
                                        ? "https://api.anthropic.com"
                                        : "https://api.openai.com/v1";
    provider.base_url = reader_.String(path + ".base_url", default_url);
    while (provider.base_url.ends_with('/')) provider.base_url.pop_back();
    if (!provider.base_url.starts_with("http://") && !provider.base_url.starts_with("https://")) {
      Fail(path + ".base_url", absl::StrCat("\"", provider.base_url, "\" is not an http(s) URL"));
    }
    provider.api_key_env = reader_.String(path + ".api_key_env", "");
    provider.api_key_file = reader_.String(path + ".api_key_file", "");
    provider.api_key = ResolveKey(path, provider);
    provider.headers = reader_.StringMap(path + ".headers");
    provider.connect_timeout_ms =
        reader_.Int(path + ".connect_timeout_ms", provider.connect_timeout_ms, 1, 600'000);
    provider.request_timeout_ms =
        reader_.Int(path + ".request_timeout_ms", provider.request_timeout_ms, 1, 3'600'000);
    provider.default_max_tokens = static_cast<int32_t>(
        reader_.Int(path + ".default_max_tokens", provider.default_max_tokens, 1, 10'000'000));
    const std::string field =
        reader_.String(path + ".max_tokens_field",
                       IsOpenAiItself(provider.base_url) ? "max_completion_tokens" : "max_tokens");
    if (field == "max_completion_tokens") {
      provider.max_tokens_field = OpenAiTokenLimitField::kMaxCompletionTokens;
    } else if (field != "max_tokens") {
      Fail(path + ".max_tokens_field",
           absl::StrCat("unknown field \"", field,
                        "\" (expected max_tokens or max_completion_tokens)"));
    }
    provider.anthropic_version =
        reader_.String(path + ".anthropic_version", provider.anthropic_version);
    for (const auto& [model, text] : reader_.StringMap(path + ".prices")) {
      const std::optional<Price> price = ParsePrice(text);
      if (!price.has_value()) {
        Fail(absl::StrCat(path, ".prices.", model),
             absl::StrCat("\"", text,
                          "\" is not \"input cached_input output [cache_write_input]\" (USD per "
                          "million tokens)"));
        continue;
      }
      provider.prices[model] = *price;
    }
    return provider;
  }

  // The key from the variable named by api_key_env, else from api_key_file.
  // Messages name the variable or file, never the key.
  std::string ResolveKey(const std::string& path, const ProviderConfig& provider) {
    if (!provider.api_key_env.empty()) {
      std::string key = Trimmed(env_(provider.api_key_env).value_or(""));
      if (!key.empty()) return key;
      if (provider.api_key_file.empty()) {
        Fail(path + ".api_key_env", absl::StrCat("$", provider.api_key_env,
                                                 " is unset or empty and no api_key_file is "
                                                 "configured"));
        return "";
      }
    }
    if (provider.api_key_file.empty()) return "";
    absl::StatusOr<std::string> contents = core::ReadFile(provider.api_key_file);
    if (!contents.ok()) {
      Fail(path + ".api_key_file", std::string(contents.status().message()));
      return "";
    }
    std::string key = Trimmed(*std::move(contents));
    if (key.empty()) Fail(path + ".api_key_file", "the key file is empty");
    return key;
  }

  core::ConfigReader& reader_;
  const core::ConfigReader::EnvLookup env_;
  std::vector<std::string> errors_;
};

}  // namespace

PriceTable LlmConfig::Prices() const {
  PriceTable table;
  for (const auto& [provider_name, provider] : providers) {
    for (const auto& [model, price] : provider.prices) table.Set(provider_name, model, price);
  }
  return table;
}

absl::StatusOr<LlmConfig> ReadLlmConfig(core::ConfigReader& reader,
                                        const core::ConfigReader::EnvLookup& env) {
  return LlmConfigReader(reader, env ? env : core::ConfigReader::EnvLookup(GetEnv)).Read();
}

}  // namespace omniforge::llm
