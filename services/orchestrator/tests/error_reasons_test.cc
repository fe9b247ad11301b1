// The reasons docs/api.md ("Errors") lists are exactly the ones the code
// can send: the ErrorInfo reasons of core::ErrorReasons (with their gRPC
// status and retryable flag) and the reason and retryable flag of every
// ChatErrorCode's error event.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>

#include "libs/core/error_catalog.h"
#include "services/orchestrator/turn/error_kinds.h"

namespace omniforge::orchestrator {
namespace {

namespace pb = ::omniforge::orchestrator::v1;

std::string ApiDoc() {
  std::ifstream in(std::string(OMNIFORGE_SOURCE_DIR) + "/docs/api.md");
  EXPECT_TRUE(in.good()) << "docs/api.md";
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Rows of the reasons table: reason -> "STATUS yes|no".
std::map<std::string, std::string> DocumentedReasons(const std::string& doc) {
  static const std::regex row(
      R"(^\| `([A-Z][A-Z0-9_]*)` \| `([A-Z_]+)` \| [^|]+ \| (yes|no) \| [^|]+ \|$)");
  std::map<std::string, std::string> rows;
  std::istringstream lines(doc);
  for (std::string line; std::getline(lines, line);) {
    std::smatch match;
    if (std::regex_match(line, match, row)) {
      EXPECT_TRUE(rows.emplace(match[1], match[2].str() + " " + match[3].str()).second)
          << "listed twice: " << match[1];
    }
  }
  return rows;
}

// Rows of the error event table: ChatErrorCode -> "REASON yes|no".
std::map<std::string, std::string> DocumentedEvents(const std::string& doc) {
  static const std::regex row(
      R"(^\| `(CHAT_ERROR_CODE_[A-Z_]+)` \| `([A-Z][A-Z0-9_]*)` \| (yes|no) \| .+ \|$)");
  std::map<std::string, std::string> rows;
  std::istringstream lines(doc);
  for (std::string line; std::getline(lines, line);) {
    std::smatch match;
    if (std::regex_match(line, match, row)) rows[match[1]] = match[2].str() + " " + match[3].str();
  }
  return rows;
}

std::string YesNo(bool value) { return value ? "yes" : "no"; }

TEST(ErrorReasonsTest, TheDocumentedReasonsAreTheOnesTheCodeSends) {
  std::map<std::string, std::string> in_code;
  for (const core::ErrorReasonEntry& entry : core::ErrorReasons()) {
    in_code[std::string(entry.reason)] =
        absl::StatusCodeToString(entry.code) + " " + YesNo(entry.retryable);
  }
  EXPECT_EQ(DocumentedReasons(ApiDoc()), in_code);
}

TEST(ErrorReasonsTest, EveryChatErrorCodeHasADocumentedReasonAndRetryableFlag) {
  std::map<std::string, std::string> in_code;
  const google::protobuf::EnumDescriptor* codes = pb::ChatErrorCode_descriptor();
  for (int i = 0; i < codes->value_count(); ++i) {
    const auto code = static_cast<pb::ChatErrorCode>(codes->value(i)->number());
    if (code == pb::CHAT_ERROR_CODE_UNSPECIFIED) continue;
    bool found = false;
    for (const ErrorEventReason& entry : ErrorEventReasons()) {
      if (entry.code != code) continue;
      found = true;
      in_code[codes->value(i)->name()] = std::string(entry.reason) + " " + YesNo(entry.retryable);
    }
    EXPECT_TRUE(found) << codes->value(i)->name() << " has no reason";
  }
  EXPECT_EQ(DocumentedEvents(ApiDoc()), in_code);
}

}  // namespace
}  // namespace omniforge::orchestrator
