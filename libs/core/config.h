// Service configuration: one YAML file, every key overridable from the
// environment, unknown keys rejected.
//
// A service declares its keys by reading them through ConfigReader; after the
// last read, Finish() fails if the YAML held a key nobody asked for (a typo
// must not silently fall back to a default). The environment variable for a
// key is OMNIFORGE_ followed by the dotted path upper-cased with dots turned
// into underscores: `database.pool_size` -> OMNIFORGE_DATABASE_POOL_SIZE.
// Precedence: environment, then the file, then the default.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace omniforge::core {

// Reads typed values by dotted path. Not thread-safe; used at start-up only.
class ConfigReader final {
 public:
  using EnvLookup = std::function<std::optional<std::string>(const std::string&)>;

  // Parses `yaml_text` (may be empty). `env` defaults to getenv.
  // Returns INVALID_ARGUMENT on a YAML syntax error.
  static absl::StatusOr<ConfigReader> FromString(const std::string& yaml_text,
                                                 EnvLookup env = nullptr);
  // Reads the file at `path`; NOT_FOUND when it does not exist.
  static absl::StatusOr<ConfigReader> FromFile(const std::string& path, EnvLookup env = nullptr);

  ConfigReader(ConfigReader&&) noexcept;
  ConfigReader& operator=(ConfigReader&&) noexcept;
  ~ConfigReader();

  // Each getter records the key as known. A value of the wrong type, or one
  // outside [min, max], is recorded as an error reported by Finish().
  std::string String(const std::string& path, const std::string& fallback);
  int64_t Int(const std::string& path, int64_t fallback, int64_t min = INT64_MIN,
              int64_t max = INT64_MAX);
  double Double(const std::string& path, double fallback);
  bool Bool(const std::string& path, bool fallback);
  // A list of strings; in the environment, a comma-separated value.
  std::vector<std::string> StringList(const std::string& path,
                                      const std::vector<std::string>& fallback);
  // A map of string to string under `path` (e.g. per-tenant settings); the
  // children are known keys. Environment: `k1=v1,k2=v2`.
  std::map<std::string, std::string> StringMap(const std::string& path);
  // The keys of the map at `path`, in file order, for sections whose children
  // are named by the user (e.g. one entry per provider). Read from the file
  // only: the environment can override values below the keys but not add
  // keys. Listing does not make the children known: the caller reads each
  // one's keys, and Finish() reports whatever it did not read. Absent or null
  // gives no keys; a scalar or list there, or a key containing '.' (it could
  // not be addressed by a dotted path), is an error reported by Finish().
  std::vector<std::string> Keys(const std::string& path);

  // Returns INVALID_ARGUMENT listing every unknown key and every bad value
  // seen so far, or OK.
  absl::Status Finish() const;

  // The environment variable name for a dotted path.
  static std::string EnvName(const std::string& path);

  // Of `names` (environment variable names), those that look like a
  // configuration key (OMNIFORGE_..., not OMNIFORGE_CONFIG) but name none the
  // program has read: a misspelt or misplaced variable that would otherwise
  // change nothing, silently. Call after the last read.
  std::vector<std::string> UnknownEnvironment(const std::vector<std::string>& names) const;
  // The names of this process's environment variables.
  static std::vector<std::string> EnvironmentNames();
  // Logs a warning naming `unknown` (UnknownEnvironment's result) when
  // there are any; after logging is set up.
  static void WarnUnknownEnvironment(const std::vector<std::string>& unknown);

 private:
  struct State;
  explicit ConfigReader(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace omniforge::core
