// The bad-input corpus (tests/bad_input/corpus/*.json, described in the
// README there): requests to every RPC of every service, kept as data, each
// with the caller that sends it and the gRPC status it must get. This file
// reads the cases and builds each request's bytes: the request's JSON
// mapping parsed into the RPC's input type (found by the descriptor pool),
// then the case's generators applied through reflection (raw bytes, long
// text, deep JSON, unknown enum numbers, long lists), which JSON cannot
// spell. It knows nothing of gRPC channels.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "google/protobuf/descriptor.h"

namespace omniforge::testing::bad_input {

struct Case {
  std::string file;     // the corpus file's name, e.g. "conversation.json"
  std::string name;     // unique within the corpus
  std::string service;  // full name, e.g. "omniforge.conversation.v1.ConversationService"
  std::string rpc;      // method name, e.g. "AppendMessage"
  std::string caller;   // who sends it (the test's caller names)
  std::string request;  // the serialized request
  int code = 0;         // the expected grpc::StatusCode
  std::string message;  // a substring the status message must hold ("": any)
  // For an expected OK: a substring of the response's JSON mapping.
  std::string response_contains;

  std::string Method() const { return "/" + service + "/" + rpc; }
};

// Reads every *.json file of `dir` (sorted by name). `${NAME}` in a case's
// request, generators or message is replaced by `values["NAME"]` first.
// Returns INVALID_ARGUMENT naming the file and case for anything malformed:
// an unknown service, RPC, field, status code or generator, a placeholder
// without a value, a case name used twice.
absl::StatusOr<std::vector<Case>> LoadCorpus(const std::filesystem::path& dir,
                                             const std::map<std::string, std::string>& values);

// The gRPC status code named `name` ("INVALID_ARGUMENT"), or -1.
int StatusCodeByName(const std::string& name);
// The name of `code` ("INVALID_ARGUMENT").
std::string StatusCodeName(int code);

}  // namespace omniforge::testing::bad_input
