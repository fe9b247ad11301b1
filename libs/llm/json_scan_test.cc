#include "libs/llm/json_scan.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace omniforge::llm::wire_internal {
namespace {

// Rebuilds the value from the scanner's events, so a test can compare it
// with what nlohmann's parser makes of the same text.
// NOLINTNEXTLINE(bugprone-exception-escape): ~nlohmann::json may allocate (not ours)
class DocumentBuilder final {
 public:
  bool null() { return Put(nullptr); }
  bool boolean(bool value) { return Put(value); }
  bool number_integer(int64_t value) { return Put(value); }
  bool number_unsigned(uint64_t value) { return Put(value); }
  bool number_float(double value, const std::string&) { return Put(value); }
  bool string(std::string& value) { return Put(value); }
  bool key(std::string& name) {
    key_ = name;
    return true;
  }
  bool start_object(size_t) {
    Open(nlohmann::json::object());
    return true;
  }
  bool start_array(size_t) {
    Open(nlohmann::json::array());
    return true;
  }
  bool end_object() { return Close(); }
  bool end_array() { return Close(); }

  const nlohmann::json& root() const { return root_; }

 private:
  bool Put(nlohmann::json value) {
    if (stack_.empty()) {
      root_ = std::move(value);
    } else if (stack_.back()->is_object()) {
      (*stack_.back())[key_] = std::move(value);
    } else {
      stack_.back()->push_back(std::move(value));
    }
    return true;
  }
  void Open(nlohmann::json container) {
    if (stack_.empty()) {
      root_ = std::move(container);
      stack_.push_back(&root_);
    } else if (stack_.back()->is_object()) {
      nlohmann::json& slot = (*stack_.back())[key_];
      slot = std::move(container);
      stack_.push_back(&slot);
    } else {
      stack_.back()->push_back(std::move(container));
      stack_.push_back(&stack_.back()->back());
    }
  }
  bool Close() {
    stack_.pop_back();
    return true;
  }

  nlohmann::json root_;
  std::vector<nlohmann::json*> stack_;
  std::string key_;
};

bool Scan(std::string_view text, nlohmann::json* value = nullptr) {
  DocumentBuilder builder;
  std::string scratch;
  const bool ok = ScanJson(text, builder, scratch);
  if (ok && value != nullptr) *value = builder.root();
  return ok;
}

TEST(JsonScanTest, ReadsWhatAParserReads) {
  const std::vector<std::string> texts = {
      R"({"id":"chatcmpl-1","choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null}]})",
      R"( { "a" : [ 1 , -2 , 3.5 , -0.25e+2 , 1E3 , true , false , null , { } , [ ] ] } )",
      R"("esc \" \\ \/ \b \f \n \r \t \u00e9 \u20AC \ud83d\ude00 \u0000")",
      "\"caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80\"",
      R"([[[[[[[[]]]]]]]])",
      "0",
      "-0",
      "18446744073709551615",
      "-9223372036854775808",
      R"({"":""})",
      "\t\r\n[1]\n",
  };
  for (const std::string& text : texts) {
    nlohmann::json scanned;
    ASSERT_TRUE(Scan(text, &scanned)) << text;
    EXPECT_EQ(scanned, nlohmann::json::parse(text)) << text;
  }
}

TEST(JsonScanTest, RejectsWhatAParserRejects) {
  const std::vector<std::string> texts = {
      "",
      " ",
      "{",
      "}",
      "[1,]",
      R"({"a":1,})",
      R"({"a" 1})",
      R"({a:1})",
      R"({"a":1}{})",
      "[1] x",
      "01",
      "-",
      "1.",
      ".5",
      "1e",
      "1e+",
      "+1",
      "tru",
      "nul",
      "True",
      "\"open",
      "\"tab\there\"",
      R"("bad \x escape")",
      R"("short \u12")",
      R"("lone low \udc00")",
      R"("lone high \ud83d")",
      R"("high then text \ud83dx")",
      "\"\xFF\"",
      "\"\xC0\xAF\"",          // overlong '/'
      "\"\xED\xA0\x80\"",      // an encoded surrogate
      "\"\xF4\x90\x80\x80\"",  // above U+10FFFF
      "\"\xE2\x82\"",          // cut sequence
      "[1 2]",
      "'single'",
  };
  for (const std::string& text : texts) {
    EXPECT_FALSE(nlohmann::json::accept(text)) << "test premise: " << text;
    EXPECT_FALSE(Scan(text)) << text;
  }
}

TEST(JsonScanTest, LeavesValidTextItDoesNotConvertToAFullParser) {
  EXPECT_FALSE(Scan("18446744073709551616"));  // beyond 64 bits
  EXPECT_FALSE(Scan("-9223372036854775809"));
  EXPECT_FALSE(
      Scan(std::string(kMaxJsonScanDepth + 1, '[') + std::string(kMaxJsonScanDepth + 1, ']')));
  EXPECT_TRUE(Scan(std::string(kMaxJsonScanDepth, '[') + std::string(kMaxJsonScanDepth, ']')));
}

TEST(JsonScanTest, TellsAJsonObjectFromEverythingElse) {
  EXPECT_TRUE(ScansAsJsonObject(R"({"type":"object","properties":{"a":{"enum":[1,2.5,null]}}})"));
  EXPECT_TRUE(ScansAsJsonObject(" \n{}\t"));
  for (const char* other : {"", "   ", "[]", "\"{}\"", "{", "{} {}", "{\"a\":}", "{'a':1}",
                            "{\"a\":\"\xff\"}", "nul"}) {
    EXPECT_FALSE(ScansAsJsonObject(other)) << other;
    EXPECT_FALSE(nlohmann::json::accept(other) && nlohmann::json::parse(other).is_object())
        << other;
  }
}

// Every text one edit away from a real chunk: wherever the scanner accepts,
// nlohmann's parser accepts and reads the same value.
TEST(JsonScanTest, NeverAcceptsWhatAParserRejectsNearARealChunk) {
  const std::string chunk =
      R"({"id":"chatcmpl-9","object":"chat.completion.chunk","created":17,"model":"m",)"
      R"("choices":[{"index":0,"delta":{"content":"a\"\u00e9","tool_calls":[{"index":0,)"
      R"("function":{"arguments":"{\"x\":1}"}}]},"finish_reason":null}],)"
      R"("usage":{"prompt_tokens":9,"completion_tokens":-4,"cost":0.5}})";
  const std::string replacements = "{}[]\":,\\0-.eE+u \x01\x80\xC3";
  int accepted = 0, checked = 0;
  auto check = [&](const std::string& text) {
    ++checked;
    nlohmann::json scanned;
    if (!Scan(text, &scanned)) return;
    ++accepted;
    ASSERT_TRUE(nlohmann::json::accept(text)) << text;
    EXPECT_EQ(scanned, nlohmann::json::parse(text)) << text;
  };
  for (size_t i = 0; i < chunk.size(); ++i) {
    std::string deleted = chunk;
    deleted.erase(i, 1);
    check(deleted);
    for (char r : replacements) {
      std::string replaced = chunk;
      replaced[i] = r;
      check(replaced);
      std::string inserted = chunk;
      inserted.insert(i, 1, r);
      check(inserted);
    }
  }
  EXPECT_GT(accepted, 0);
  EXPECT_GT(checked, accepted);
}

}  // namespace
}  // namespace omniforge::llm::wire_internal
