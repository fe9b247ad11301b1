#include "libs/core/text.h"

#include <gtest/gtest.h>

#include <string>

namespace omniforge::core {
namespace {

TEST(Utf8Test, AcceptsWellFormedText) {
  EXPECT_TRUE(IsValidUtf8(""));
  EXPECT_TRUE(IsValidUtf8("plain ascii"));
  EXPECT_TRUE(IsValidUtf8(std::string("nul\0inside", 10)));
  EXPECT_TRUE(IsValidUtf8("\xC2\x80"));          // U+0080, smallest 2-byte
  EXPECT_TRUE(IsValidUtf8("caf\xC3\xA9"));       // é
  EXPECT_TRUE(IsValidUtf8("\xE0\xA0\x80"));      // U+0800, smallest 3-byte
  EXPECT_TRUE(IsValidUtf8("\xED\x9F\xBF"));      // U+D7FF, below surrogates
  EXPECT_TRUE(IsValidUtf8("\xEE\x80\x80"));      // U+E000, above surrogates
  EXPECT_TRUE(IsValidUtf8("\xEF\xBF\xBD"));      // U+FFFD
  EXPECT_TRUE(IsValidUtf8("\xF0\x90\x80\x80"));  // U+10000
  EXPECT_TRUE(IsValidUtf8("\xF0\x9F\x98\x80"));  // emoji
  EXPECT_TRUE(IsValidUtf8("\xF4\x8F\xBF\xBF"));  // U+10FFFF
}

TEST(Utf8Test, RejectsOverlongs) {
  EXPECT_FALSE(IsValidUtf8("\xC0\x80"));
  EXPECT_FALSE(IsValidUtf8("\xC1\xBF"));
  EXPECT_FALSE(IsValidUtf8("\xE0\x80\x80"));
  EXPECT_FALSE(IsValidUtf8("\xE0\x9F\xBF"));
  EXPECT_FALSE(IsValidUtf8("\xF0\x80\x80\x80"));
  EXPECT_FALSE(IsValidUtf8("\xF0\x8F\xBF\xBF"));
}

TEST(Utf8Test, RejectsSurrogatesAndOutOfRange) {
  EXPECT_FALSE(IsValidUtf8("\xED\xA0\x80"));      // U+D800
  EXPECT_FALSE(IsValidUtf8("\xED\xBF\xBF"));      // U+DFFF
  EXPECT_FALSE(IsValidUtf8("\xF4\x90\x80\x80"));  // U+110000
  EXPECT_FALSE(IsValidUtf8("\xF5\x80\x80\x80"));
  EXPECT_FALSE(IsValidUtf8("\xFF"));
}

TEST(Utf8Test, RejectsTruncatedAndStrayBytes) {
  EXPECT_FALSE(IsValidUtf8("\xC3"));
  EXPECT_FALSE(IsValidUtf8("ok\xE2\x82"));
  EXPECT_FALSE(IsValidUtf8("\xF0\x9F\x98"));
  EXPECT_FALSE(IsValidUtf8("\x80"));
  EXPECT_FALSE(
      IsValidUtf8("a\xBF"
                  "b"));
  EXPECT_FALSE(IsValidUtf8("\xC3\x28"));  // Lead then ASCII.
  EXPECT_FALSE(IsValidUtf8("\xE2\x82\x28"));
}

TEST(SafeTokenTest, AcceptsTheAllowedAlphabet) {
  EXPECT_TRUE(IsSafeToken("user-42"));
  EXPECT_TRUE(IsSafeToken("svc.gateway:prod@eu_1"));
  EXPECT_TRUE(IsSafeToken(std::string(128, 'a')));
}

TEST(SafeTokenTest, RejectsEmptyTooLongAndOtherBytes) {
  EXPECT_FALSE(IsSafeToken(""));
  EXPECT_FALSE(IsSafeToken(std::string(129, 'a')));
  EXPECT_FALSE(IsSafeToken("abcd", 3));
  EXPECT_TRUE(IsSafeToken("abc", 3));
  EXPECT_FALSE(IsSafeToken("a b"));
  EXPECT_FALSE(IsSafeToken("a/b"));
  EXPECT_FALSE(IsSafeToken("a\nb"));
  EXPECT_FALSE(IsSafeToken("caf\xC3\xA9"));
  EXPECT_FALSE(IsSafeToken(std::string("a\0b", 3)));
}

}  // namespace
}  // namespace omniforge::core
