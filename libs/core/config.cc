#include "libs/core/config.h"

#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <string_view>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "libs/core/files.h"
#include "libs/core/logging.h"

namespace omniforge::core {
namespace {

std::optional<std::string> GetEnv(const std::string& name) {
  const char* value = std::getenv(name.c_str());
  if (value == nullptr) return std::nullopt;
  return std::string(value);
}

std::vector<std::string> SplitPath(const std::string& path) { return absl::StrSplit(path, '.'); }

// std::string_view helpers: this abseil's string_view is its own type.
std::string_view Trim(std::string_view s) {
  while (!s.empty() && absl::ascii_isspace(static_cast<unsigned char>(s.front()))) {
    s.remove_prefix(1);
  }
  while (!s.empty() && absl::ascii_isspace(static_cast<unsigned char>(s.back()))) {
    s.remove_suffix(1);
  }
  return s;
}

const char* NodeKind(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Map:
      return "a map";
    case YAML::NodeType::Sequence:
      return "a list";
    case YAML::NodeType::Scalar:
      return "a scalar";
    default:
      return "nothing";
  }
}

// A configuration has some hundreds of values, a few levels deep. An alias
// counts as the values it stands for: a few lines of aliases of aliases
// stand for billions, and an alias inside its own anchor (`a: &a [*a]`)
// makes a loop; walking either would never end.
constexpr size_t kMaxConfigValues = 100'000;
constexpr int kMaxConfigDepth = 64;

// yaml-cpp keeps every occurrence of a repeated key and lookups see only the
// first, so a later override in the same file would be silently ignored.
// `visited` counts the values walked, aliases expanded; `depth` is `node`'s.
absl::Status CheckDuplicateKeys(const YAML::Node& node, const std::string& prefix, size_t& visited,
                                int depth) {
  if (++visited > kMaxConfigValues) {
    return absl::InvalidArgumentError(absl::StrCat(
        "config: more than ", kMaxConfigValues,
        " values, counting each alias as the values it stands for (aliases of aliases?)"));
  }
  if (depth > kMaxConfigDepth) {
    return absl::InvalidArgumentError(absl::StrCat("config: ", prefix, ": nested more than ",
                                                   kMaxConfigDepth,
                                                   " levels deep (an alias inside itself?)"));
  }
  if (node.IsSequence()) {
    for (const YAML::Node& item : node) {
      if (absl::Status s = CheckDuplicateKeys(item, prefix, visited, depth + 1); !s.ok()) return s;
    }
    return absl::OkStatus();
  }
  if (!node.IsMap()) return absl::OkStatus();
  std::set<std::string> seen;
  for (const auto& kv : node) {
    const std::string key = kv.first.Scalar();
    const std::string path = prefix.empty() ? key : absl::StrCat(prefix, ".", key);
    if (!seen.insert(key).second) {
      return absl::InvalidArgumentError(absl::StrCat("config: ", path, ": duplicate key"));
    }
    if (absl::Status s = CheckDuplicateKeys(kv.second, path, visited, depth + 1); !s.ok()) {
      return s;
    }
  }
  return absl::OkStatus();
}

bool ParseInt(std::string_view text, int64_t& out) {
  text = Trim(text);
  if (!text.empty() && text.front() == '+') text.remove_prefix(1);
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && end == text.data() + text.size() && !text.empty();
}

bool ParseDouble(std::string_view text, double& out) {
  text = Trim(text);
  if (!text.empty() && text.front() == '+') text.remove_prefix(1);
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  // inf and nan parse but are never a meaningful setting.
  return ec == std::errc() && end == text.data() + text.size() && !text.empty() &&
         std::isfinite(out);
}

bool ParseBool(std::string_view text, bool& out) {
  std::string v(Trim(text));
  absl::AsciiStrToLower(&v);
  if (v == "true" || v == "1" || v == "yes") {
    out = true;
    return true;
  }
  if (v == "false" || v == "0" || v == "no") {
    out = false;
    return true;
  }
  return false;
}

// Comma-separated items, each trimmed; empty items are dropped so that a
// trailing comma or an empty variable means "no items".
std::vector<std::string> SplitList(std::string_view text) {
  std::vector<std::string> items;
  while (true) {
    const size_t comma = text.find(',');
    const std::string_view item = Trim(text.substr(0, comma));
    if (!item.empty()) items.emplace_back(item);
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  return items;
}

}  // namespace

struct ConfigReader::State {
  YAML::Node root;
  EnvLookup env;
  // Paths the program read; a known path covers its whole subtree.
  std::set<std::string> known;
  // Maps whose keys the program listed: known themselves, but each child
  // still has to be read to count as known.
  std::set<std::string> listed;
  std::vector<std::string> errors;

  // One raw value for a path: the environment variable wins over the file.
  struct Raw {
    std::optional<std::string> env;  // Set when the variable is.
    std::optional<YAML::Node> node;  // Set when the file has a value.
    std::string source;              // For messages: "" or " (from $VAR)".
  };

  void AddError(const std::string& path, const std::string& what, const std::string& source) {
    std::string message = absl::StrCat(path, ": ", what, source);
    for (const std::string& e : errors) {
      if (e == message) return;
    }
    errors.push_back(std::move(message));
  }

  // Records `path` as known and finds its value, if any. A non-map where the
  // path needs a map (e.g. `database: 5` when reading database.pool_size) is
  // an error; a null is treated as absent, so an emptied section is fine.
  Raw Lookup(const std::string& path) {
    known.insert(path);
    Raw raw;
    const std::string var = EnvName(path);
    raw.env = env(var);
    if (raw.env.has_value()) {
      raw.source = absl::StrCat(" (from $", var, ")");
      return raw;
    }
    raw.node = FileNode(path);
    return raw;
  }

  // The file's non-null value at `path`, if any.
  std::optional<YAML::Node> FileNode(const std::string& path) {
    YAML::Node current(root);
    std::string walked;
    for (const std::string& part : SplitPath(path)) {
      if (current.IsNull()) return std::nullopt;
      if (!current.IsMap()) {
        AddError(walked, absl::StrCat("expected a map, got ", NodeKind(current)), "");
        return std::nullopt;
      }
      walked = walked.empty() ? part : absl::StrCat(walked, ".", part);
      // Through a const reference: yaml-cpp's non-const operator[] inserts.
      const YAML::Node& parent = current;
      YAML::Node child = parent[part];
      if (!child.IsDefined()) return std::nullopt;
      // reset(), not operator=: assignment would overwrite the parent's
      // value in the tree instead of rebinding `current`.
      current.reset(child);
    }
    if (current.IsNull()) return std::nullopt;
    return current;
  }

  // The scalar text of a raw value, or nullopt (with an error when the file
  // holds a map or list there).
  std::optional<std::string> Scalar(const std::string& path, const Raw& raw, const char* expected) {
    if (raw.env.has_value()) return raw.env;
    if (!raw.node.has_value()) return std::nullopt;
    if (!raw.node->IsScalar()) {
      AddError(path, absl::StrCat("expected ", expected, ", got ", NodeKind(*raw.node)),
               raw.source);
      return std::nullopt;
    }
    return raw.node->Scalar();
  }

  static bool AnyBelow(const std::set<std::string>& paths, const std::string& path) {
    const std::string subtree = path + ".";
    const auto below = paths.lower_bound(subtree);
    return below != paths.end() && below->starts_with(subtree);
  }

  void CollectUnknown(const YAML::Node& node, const std::string& prefix,
                      std::vector<std::string>& unknown) const {
    for (const auto& kv : node) {
      const std::string path =
          prefix.empty() ? kv.first.Scalar() : absl::StrCat(prefix, ".", kv.first.Scalar());
      if (known.count(path) > 0) continue;
      if (listed.count(path) > 0) {
        if (kv.second.IsMap()) CollectUnknown(kv.second, path, unknown);
        continue;
      }
      if (!AnyBelow(known, path) && !AnyBelow(listed, path)) {
        unknown.push_back(path);
        continue;
      }
      // The program read keys below this one: look for stray siblings. A
      // non-map here was already reported by Lookup.
      if (kv.second.IsMap()) CollectUnknown(kv.second, path, unknown);
    }
  }
};

ConfigReader::ConfigReader(std::unique_ptr<State> state) : state_(std::move(state)) {}
ConfigReader::ConfigReader(ConfigReader&&) noexcept = default;
ConfigReader& ConfigReader::operator=(ConfigReader&&) noexcept = default;
ConfigReader::~ConfigReader() = default;

absl::StatusOr<ConfigReader> ConfigReader::FromString(const std::string& yaml_text, EnvLookup env) {
  auto state = std::make_unique<State>();
  try {
    state->root = YAML::Load(yaml_text);
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("config: ", e.what()));
  }
  if (!state->root.IsNull() && !state->root.IsMap()) {
    return absl::InvalidArgumentError(
        absl::StrCat("config: the top level must be a map, got ", NodeKind(state->root)));
  }
  size_t visited = 0;
  if (absl::Status s = CheckDuplicateKeys(state->root, "", visited, 0); !s.ok()) return s;
  state->env = env ? std::move(env) : EnvLookup(GetEnv);
  return ConfigReader(std::move(state));
}

absl::StatusOr<ConfigReader> ConfigReader::FromFile(const std::string& path, EnvLookup env) {
  const std::string where = absl::StrCat("config: ", path);
  absl::StatusOr<std::string> text = ReadFile(path);
  if (!text.ok()) {
    return absl::Status(text.status().code(), absl::StrCat("config: ", text.status().message()));
  }
  absl::StatusOr<ConfigReader> reader = FromString(*text, std::move(env));
  if (!reader.ok()) {
    return absl::Status(
        reader.status().code(),
        absl::StrCat(where, ": ", absl::StripPrefix(reader.status().message(), "config: ")));
  }
  return reader;
}

std::string ConfigReader::String(const std::string& path, const std::string& fallback) {
  const State::Raw raw = state_->Lookup(path);
  return state_->Scalar(path, raw, "a string").value_or(fallback);
}

int64_t ConfigReader::Int(const std::string& path, int64_t fallback, int64_t min, int64_t max) {
  const State::Raw raw = state_->Lookup(path);
  const std::optional<std::string> text = state_->Scalar(path, raw, "an integer");
  if (!text.has_value()) return fallback;
  int64_t value = 0;
  if (!ParseInt(*text, value)) {
    state_->AddError(path, absl::StrCat("expected an integer, got \"", *text, "\""), raw.source);
    return fallback;
  }
  if (value < min || value > max) {
    state_->AddError(path, absl::StrCat(value, " is outside [", min, ", ", max, "]"), raw.source);
    return fallback;
  }
  return value;
}

double ConfigReader::Double(const std::string& path, double fallback) {
  const State::Raw raw = state_->Lookup(path);
  const std::optional<std::string> text = state_->Scalar(path, raw, "a number");
  if (!text.has_value()) return fallback;
  double value = 0;
  if (!ParseDouble(*text, value)) {
    state_->AddError(path, absl::StrCat("expected a number, got \"", *text, "\""), raw.source);
    return fallback;
  }
  return value;
}

bool ConfigReader::Bool(const std::string& path, bool fallback) {
  const State::Raw raw = state_->Lookup(path);
  const std::optional<std::string> text = state_->Scalar(path, raw, "a boolean");
  if (!text.has_value()) return fallback;
  bool value = false;
  if (!ParseBool(*text, value)) {
    state_->AddError(path, absl::StrCat("expected true/false/yes/no/1/0, got \"", *text, "\""),
                     raw.source);
    return fallback;
  }
  return value;
}

std::vector<std::string> ConfigReader::StringList(const std::string& path,
                                                  const std::vector<std::string>& fallback) {
  const State::Raw raw = state_->Lookup(path);
  if (raw.env.has_value()) return SplitList(*raw.env);
  if (!raw.node.has_value()) return fallback;
  const YAML::Node& list = *raw.node;
  if (!list.IsSequence()) {
    state_->AddError(path, absl::StrCat("expected a list, got ", NodeKind(list)), raw.source);
    return fallback;
  }
  std::vector<std::string> items;
  for (size_t i = 0; i < list.size(); ++i) {
    const YAML::Node item = list[i];
    if (!item.IsScalar()) {
      state_->AddError(absl::StrCat(path, "[", i, "]"),
                       absl::StrCat("expected a string, got ", NodeKind(item)), raw.source);
      return fallback;
    }
    items.push_back(item.Scalar());
  }
  return items;
}

std::map<std::string, std::string> ConfigReader::StringMap(const std::string& path) {
  const State::Raw raw = state_->Lookup(path);
  std::map<std::string, std::string> out;
  if (raw.env.has_value()) {
    for (const std::string& item : SplitList(*raw.env)) {
      const size_t eq = item.find('=');
      if (eq == std::string::npos) {
        state_->AddError(path, absl::StrCat("expected key=value, got \"", item, "\""), raw.source);
        return {};
      }
      const std::string_view view(item);
      out[std::string(Trim(view.substr(0, eq)))] = std::string(Trim(view.substr(eq + 1)));
    }
    return out;
  }
  if (!raw.node.has_value()) return out;
  const YAML::Node& map = *raw.node;
  if (!map.IsMap()) {
    state_->AddError(path, absl::StrCat("expected a map, got ", NodeKind(map)), raw.source);
    return out;
  }
  for (const auto& kv : map) {
    if (!kv.second.IsScalar()) {
      state_->AddError(absl::StrCat(path, ".", kv.first.Scalar()),
                       absl::StrCat("expected a string, got ", NodeKind(kv.second)), raw.source);
      return {};
    }
    out[kv.first.Scalar()] = kv.second.Scalar();
  }
  return out;
}

std::vector<std::string> ConfigReader::Keys(const std::string& path) {
  state_->listed.insert(path);
  const std::optional<YAML::Node> node = state_->FileNode(path);
  if (!node.has_value()) return {};
  if (!node->IsMap()) {
    state_->AddError(path, absl::StrCat("expected a map, got ", NodeKind(*node)), "");
    return {};
  }
  std::vector<std::string> keys;
  for (const auto& kv : *node) {
    const std::string key = kv.first.Scalar();
    if (key.find('.') != std::string::npos) {
      const std::string child = absl::StrCat(path, ".", key);
      state_->AddError(child, "a key here cannot contain '.'", "");
      // Reported once, as the error above, not again as an unknown key.
      state_->known.insert(child);
      continue;
    }
    keys.push_back(key);
  }
  return keys;
}

absl::Status ConfigReader::Finish() const {
  std::vector<std::string> problems = state_->errors;
  std::vector<std::string> unknown;
  if (state_->root.IsMap()) state_->CollectUnknown(state_->root, "", unknown);
  if (!unknown.empty()) {
    problems.push_back(absl::StrCat("unknown keys: ", absl::StrJoin(unknown, ", ")));
  }
  if (problems.empty()) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("config: ", absl::StrJoin(problems, "; config: ")));
}

std::vector<std::string> ConfigReader::UnknownEnvironment(
    const std::vector<std::string>& names) const {
  std::set<std::string> known;
  for (const std::string& path : state_->known) known.insert(EnvName(path));
  std::vector<std::string> unknown;
  for (const std::string& name : names) {
    if (name.starts_with("OMNIFORGE_") && name != "OMNIFORGE_CONFIG" && !known.contains(name)) {
      unknown.push_back(name);
    }
  }
  return unknown;
}

std::vector<std::string> ConfigReader::EnvironmentNames() {
  std::vector<std::string> names;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    const std::string_view text(*entry);
    names.emplace_back(text.substr(0, text.find('=')));
  }
  return names;
}

void ConfigReader::WarnUnknownEnvironment(const std::vector<std::string>& unknown) {
  if (unknown.empty()) return;
  LogWarn("environment variables name no configuration key of this service; they change nothing",
          {{"variables", absl::StrJoin(unknown, ",")}});
}

std::string ConfigReader::EnvName(const std::string& path) {
  std::string name = "OMNIFORGE_";
  for (const char c : path) {
    name += c == '.' ? '_' : absl::ascii_toupper(static_cast<unsigned char>(c));
  }
  return name;
}

}  // namespace omniforge::core
