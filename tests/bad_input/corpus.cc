#include "tests/bad_input/corpus.h"

#include <google/protobuf/message.h>
#include <google/protobuf/stubs/logging.h>
#include <google/protobuf/util/json_util.h>

#include <algorithm>
#include <array>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace omniforge::testing::bad_input {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;
using Json = nlohmann::json;

constexpr std::array<const char*, 17> kCodeNames = {
    "OK",
    "CANCELLED",
    "UNKNOWN",
    "INVALID_ARGUMENT",
    "DEADLINE_EXCEEDED",
    "NOT_FOUND",
    "ALREADY_EXISTS",
    "PERMISSION_DENIED",
    "RESOURCE_EXHAUSTED",
    "FAILED_PRECONDITION",
    "ABORTED",
    "OUT_OF_RANGE",
    "UNIMPLEMENTED",
    "INTERNAL",
    "UNAVAILABLE",
    "DATA_LOSS",
    "UNAUTHENTICATED",
};

absl::Status Malformed(const std::string& where, const std::string& what) {
  return absl::InvalidArgumentError(where + ": " + what);
}

// `text` with every ${NAME} replaced by its value.
absl::StatusOr<std::string> Substitute(const std::string& text,
                                       const std::map<std::string, std::string>& values) {
  std::string out;
  size_t at = 0;
  for (size_t open; (open = text.find("${", at)) != std::string::npos;) {
    const size_t close = text.find('}', open);
    if (close == std::string::npos) return absl::InvalidArgumentError("unclosed ${");
    const std::string name = text.substr(open + 2, close - open - 2);
    auto value = values.find(name);
    if (value == values.end()) return absl::InvalidArgumentError("no value for ${" + name + "}");
    out += text.substr(at, open - at) + value->second;
    at = close + 1;
  }
  return out + text.substr(at);
}

// Bytes from hex digits, spaces allowed between them.
absl::StatusOr<std::string> FromHex(std::string hex) {
  hex.erase(std::remove(hex.begin(), hex.end(), ' '), hex.end());
  if (hex.size() % 2 != 0 || !std::all_of(hex.begin(), hex.end(), absl::ascii_isxdigit)) {
    return absl::InvalidArgumentError("not hex digits: " + hex);
  }
  return absl::HexStringToBytes(hex);
}

// The field a dotted path ends at ("decision.arguments_json",
// "history.0.content": a number indexes the repeated field before it, the
// index one past the end adds an element), and the message holding it.
struct FieldRef {
  Message* message = nullptr;
  const FieldDescriptor* field = nullptr;
};

absl::StatusOr<FieldRef> Resolve(Message& root, const std::string& path) {
  std::vector<std::string> parts = absl::StrSplit(path, '.');
  Message* message = &root;
  for (size_t i = 0; i < parts.size(); ++i) {
    const FieldDescriptor* field = message->GetDescriptor()->FindFieldByName(parts[i]);
    if (field == nullptr) return absl::InvalidArgumentError("no field " + parts[i]);
    if (i + 1 == parts.size()) return FieldRef{message, field};
    if (field->cpp_type() != FieldDescriptor::CPPTYPE_MESSAGE) {
      return absl::InvalidArgumentError(parts[i] + " is not a message");
    }
    const Reflection& reflection = *message->GetReflection();
    if (!field->is_repeated()) {
      message = reflection.MutableMessage(message, field);
      continue;
    }
    int index = 0;
    if (++i == parts.size() || !absl::SimpleAtoi(parts[i], &index) || index < 0 ||
        index > reflection.FieldSize(*message, field)) {
      return absl::InvalidArgumentError(parts[i - 1] + " needs an index up to its size");
    }
    if (i + 1 == parts.size()) return absl::InvalidArgumentError("path ends at an index");
    message = index == reflection.FieldSize(*message, field)
                  ? reflection.AddMessage(message, field)
                  : reflection.MutableRepeatedMessage(message, field, index);
  }
  return absl::InvalidArgumentError("empty path");
}

absl::Status SetString(const FieldRef& ref, const std::string& value) {
  if (ref.field->cpp_type() != FieldDescriptor::CPPTYPE_STRING) {
    return absl::InvalidArgumentError(ref.field->name() + " is not a string or bytes field");
  }
  const Reflection& reflection = *ref.message->GetReflection();
  if (ref.field->is_repeated()) {
    reflection.AddString(ref.message, ref.field, value);
  } else {
    reflection.SetString(ref.message, ref.field, value);
  }
  return absl::OkStatus();
}

absl::Status SetEnumNumber(const FieldRef& ref, int number) {
  if (ref.field->cpp_type() != FieldDescriptor::CPPTYPE_ENUM) {
    return absl::InvalidArgumentError(ref.field->name() + " is not an enum field");
  }
  const Reflection& reflection = *ref.message->GetReflection();
  if (ref.field->is_repeated()) {
    reflection.AddEnumValue(ref.message, ref.field, number);
  } else {
    reflection.SetEnumValue(ref.message, ref.field, number);
  }
  return absl::OkStatus();
}

// Adds `count` copies of `element` (a JSON mapping for a message, the text
// for a string) to a repeated field.
absl::Status Append(const FieldRef& ref, const Json& element, int count) {
  if (!ref.field->is_repeated())
    return absl::InvalidArgumentError(ref.field->name() + " is single");
  const Reflection& reflection = *ref.message->GetReflection();
  for (int i = 0; i < count; ++i) {
    if (ref.field->cpp_type() == FieldDescriptor::CPPTYPE_STRING) {
      reflection.AddString(ref.message, ref.field, element.get<std::string>());
      continue;
    }
    if (ref.field->cpp_type() != FieldDescriptor::CPPTYPE_MESSAGE) {
      return absl::InvalidArgumentError(ref.field->name() + " holds neither messages nor text");
    }
    auto status = google::protobuf::util::JsonStringToMessage(
        element.dump(), reflection.AddMessage(ref.message, ref.field));
    if (!status.ok()) return absl::InvalidArgumentError(std::string(status.message()));
  }
  return absl::OkStatus();
}

// `{"a":` `levels` times, then 1 and the closing braces: JSON nested
// `levels` + 1 deep (the number counts as a level).
std::string NestedJson(int levels) {
  std::string text;
  for (int i = 0; i < levels; ++i) text += R"({"a":)";
  return text + "1" + std::string(levels, '}');
}

// Applies one generator (see the corpus README) to `request`.
absl::Status Generate(const Json& spec, Message& request) {
  auto ref = Resolve(request, spec.at("field").get<std::string>());
  if (!ref.ok()) return ref.status();
  const std::string prefix = spec.value("prefix", "");
  const std::string suffix = spec.value("suffix", "");
  const int count = spec.value("count", 1);
  if (spec.contains("hex")) {
    auto bytes = FromHex(spec["hex"].get<std::string>());
    if (!bytes.ok()) return bytes.status();
    return SetString(*ref, prefix + *bytes + suffix);
  }
  if (spec.contains("repeat")) {
    std::string text = prefix;
    for (int i = 0; i < count; ++i) text += spec["repeat"].get<std::string>();
    return SetString(*ref, text + suffix);
  }
  if (spec.contains("nest")) return SetString(*ref, prefix + NestedJson(spec["nest"]) + suffix);
  if (spec.contains("nest_arrays")) {
    const int levels = spec["nest_arrays"].get<int>();
    return SetString(*ref, prefix + std::string(levels, '[') + std::string(levels, ']') + suffix);
  }
  if (spec.contains("enum")) return SetEnumNumber(*ref, spec["enum"].get<int>());
  if (spec.contains("append")) return Append(*ref, spec["append"], count);
  return absl::InvalidArgumentError(
      "a generator needs hex, repeat, nest, nest_arrays, enum or append");
}

// The request bytes of a case: `raw_hex`, or `request` and `set` applied
// to the method's input type.
absl::StatusOr<std::string> BuildRequest(const Descriptor& type, const Json& json) {
  if (json.contains("raw_hex")) return FromHex(json["raw_hex"].get<std::string>());
  std::unique_ptr<Message> request(
      google::protobuf::MessageFactory::generated_factory()->GetPrototype(&type)->New());
  const std::string mapping = json.value("request", Json::object()).dump();
  auto parsed = google::protobuf::util::JsonStringToMessage(mapping, request.get());
  if (!parsed.ok()) return absl::InvalidArgumentError("request: " + std::string(parsed.message()));
  for (const Json& spec : json.value("set", Json::array())) {
    absl::Status status = Generate(spec, *request);
    if (!status.ok())
      return absl::InvalidArgumentError("set " + spec.dump() + ": " +
                                        std::string(status.message()));
  }
  // Invalid UTF-8 in a string field is serialized as it is, on purpose.
  const google::protobuf::LogSilencer quiet;
  return request->SerializeAsString();
}

absl::StatusOr<Case> ReadCase(const std::string& file, const std::string& service,
                              const Json& json) {
  Case c;
  c.file = file;
  c.service = service;
  c.name = json.at("name").get<std::string>();
  c.rpc = json.at("rpc").get<std::string>();
  c.caller = json.at("caller").get<std::string>();
  c.message = json.value("message", "");
  c.response_contains = json.value("response_contains", "");
  c.code = StatusCodeByName(json.at("code").get<std::string>());
  if (c.code < 0) return absl::InvalidArgumentError("unknown code " + json["code"].dump());
  const auto* service_type =
      google::protobuf::DescriptorPool::generated_pool()->FindServiceByName(service);
  if (service_type == nullptr) return absl::InvalidArgumentError("unknown service " + service);
  const auto* method = service_type->FindMethodByName(c.rpc);
  if (method == nullptr) return absl::InvalidArgumentError("unknown rpc " + c.rpc);
  auto request = BuildRequest(*method->input_type(), json);
  if (!request.ok()) return request.status();
  c.request = *std::move(request);
  return c;
}

absl::Status ReadFile(const std::filesystem::path& path,
                      const std::map<std::string, std::string>& values, std::vector<Case>& cases) {
  const std::string file = path.filename().string();
  std::stringstream text;
  text << std::ifstream(path).rdbuf();
  auto substituted = Substitute(text.str(), values);
  if (!substituted.ok()) return Malformed(file, std::string(substituted.status().message()));
  Json json;
  try {
    json = Json::parse(*substituted, nullptr, true, /*ignore_comments=*/true);
    const std::string service = json.at("service").get<std::string>();
    for (const Json& one : json.at("cases")) {
      auto c = ReadCase(file, service, one);
      if (!c.ok()) return Malformed(file + " " + one.value("name", "?"), c.status().ToString());
      cases.push_back(*std::move(c));
    }
  } catch (const Json::exception& e) {
    return Malformed(file, e.what());
  }
  return absl::OkStatus();
}

}  // namespace

int StatusCodeByName(const std::string& name) {
  auto found = std::find(kCodeNames.begin(), kCodeNames.end(), name);
  return found == kCodeNames.end() ? -1 : static_cast<int>(found - kCodeNames.begin());
}

std::string StatusCodeName(int code) {
  return code >= 0 && code < static_cast<int>(kCodeNames.size()) ? kCodeNames.at(code)
                                                                 : absl::StrCat("code ", code);
}

absl::StatusOr<std::vector<Case>> LoadCorpus(const std::filesystem::path& dir,
                                             const std::map<std::string, std::string>& values) {
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() == ".json") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  std::vector<Case> cases;
  for (const auto& path : files) {
    if (absl::Status status = ReadFile(path, values, cases); !status.ok()) return status;
  }
  std::set<std::string> names;
  for (const Case& c : cases) {
    if (!names.insert(c.name).second) return Malformed(c.file, "case name used twice: " + c.name);
  }
  return cases;
}

}  // namespace omniforge::testing::bad_input
