// The config loader (libs/core/config.h): ConfigReader::FromString on the
// input, then every key reachable from the top read as each type a service
// asks for (string, integer, double, bool, list, map, keys), with an
// environment that overrides some of them, and Finish(). A bad value is an
// error Finish() reports, never a crash; Finish() after reading every key
// reports nothing unknown.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "fuzz/fuzz_check.h"
#include "libs/core/config.h"

namespace {

using omniforge::core::ConfigReader;

// Deep enough for every real configuration (providers.<name>.models...).
constexpr int kMaxWalkDepth = 6;

std::optional<std::string> FakeEnvironment(const std::string& name) {
  if (name.ends_with("_PORT")) return "8080";
  if (name.ends_with("_LIST")) return "a, b,,c";
  if (name.ends_with("_MAP")) return "k1=v1,k2=v2";
  return std::nullopt;
}

void Walk(ConfigReader& config, const std::string& path, int depth) {
  for (const std::string& key : config.Keys(path)) {
    std::string child = path;
    if (!child.empty()) child += '.';
    child += key;
    if (depth < kMaxWalkDepth) Walk(config, child, depth + 1);
    switch (child.size() % 6) {
      case 0:
        config.String(child, "fallback");
        break;
      case 1:
        config.Int(child, 7, -1000, 1000);
        break;
      case 2:
        config.Double(child, 0.5);
        break;
      case 3:
        config.Bool(child, false);
        break;
      case 4:
        config.StringList(child, {"x"});
        break;
      default:
        config.StringMap(child);
        break;
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto config = ConfigReader::FromString(text, FakeEnvironment);
  if (!config.ok()) {
    OMNIFORGE_FUZZ_CHECK(absl::IsInvalidArgument(config.status()));
    return 0;
  }
  Walk(*config, "", 0);
  config->Int("server.port", 1, 1, 65535);
  config->StringList("server.allowed_list", {});
  const absl::Status finished = config->Finish();
  OMNIFORGE_FUZZ_CHECK(finished.ok() || absl::IsInvalidArgument(finished));
  ConfigReader::EnvName(text);
  return 0;
}
