#include "common/utf8.h"

#include <gtest/gtest.h>

namespace carve {
namespace {

TEST(FirstInvalidUtf8, AcceptsAsciiAndEveryWellFormedLength) {
  EXPECT_EQ(FirstInvalidUtf8(""), std::nullopt);
  EXPECT_EQ(FirstInvalidUtf8("node-a"), std::nullopt);
  EXPECT_EQ(FirstInvalidUtf8("\xC3\xA9"), std::nullopt);          // U+00E9
  EXPECT_EQ(FirstInvalidUtf8("\xE2\x82\xAC"), std::nullopt);      // U+20AC
  EXPECT_EQ(FirstInvalidUtf8("\xF0\x9F\x98\x80"), std::nullopt);  // U+1F600
  EXPECT_EQ(FirstInvalidUtf8("\xF4\x8F\xBF\xBF"), std::nullopt);  // U+10FFFF
}

TEST(FirstInvalidUtf8, NamesTheOffsetOfTheFirstBadByte) {
  EXPECT_EQ(FirstInvalidUtf8("ml.p\x93"
                             "4d"),
            4u);                                        // a stray continuation byte
  EXPECT_EQ(FirstInvalidUtf8("ab\xC3"), 2u);            // truncated sequence
  EXPECT_EQ(FirstInvalidUtf8("\xC0\xAF"), 0u);          // overlong '/'
  EXPECT_EQ(FirstInvalidUtf8("\xE0\x80\xAF"), 0u);      // overlong, three bytes
  EXPECT_EQ(FirstInvalidUtf8("x\xED\xA0\x80"), 1u);     // a UTF-16 surrogate
  EXPECT_EQ(FirstInvalidUtf8("\xF4\x90\x80\x80"), 0u);  // past U+10FFFF
  EXPECT_EQ(FirstInvalidUtf8("\xFF"), 0u);
  EXPECT_EQ(FirstInvalidUtf8("\xC3\xA9\xE2\x28\xA1"), 2u);  // bad second byte
}

TEST(FirstNonTextByte, StopsAtControlCharactersAndBadUtf8Alike) {
  EXPECT_EQ(FirstNonTextByte("key: value\r\n\tmore"), std::nullopt);
  EXPECT_EQ(FirstNonTextByte(std::string_view("VL\0X", 4)), 2u);
  EXPECT_EQ(FirstNonTextByte("a\x17" "b"), 1u);
  EXPECT_EQ(FirstNonTextByte("ab\x7f"), 2u);
  EXPECT_EQ(FirstNonTextByte("\xff then \x01"), 0u);  // whichever comes first
  EXPECT_EQ(FirstNonTextByte("\xC3\xA9 ok"), std::nullopt);
}

TEST(FitUtf8, CutsLongTextAtACharacterBoundaryAndSaysSo) {
  EXPECT_EQ(FitUtf8("short", 10), "short");
  EXPECT_EQ(FitUtf8("0123456789", 10), "0123456789");
  EXPECT_EQ(FitUtf8("0123456789ab", 10), "0123456...");
  // U+20AC is three bytes: a cut after byte 7 falls inside the third euro sign.
  const std::string euros = "\xE2\x82\xAC\xE2\x82\xAC\xE2\x82\xAC\xE2\x82\xAC";
  const std::string fit = FitUtf8(euros, 10);
  EXPECT_EQ(fit, "\xE2\x82\xAC\xE2\x82\xAC...");
  EXPECT_EQ(FirstInvalidUtf8(fit), std::nullopt);
  EXPECT_EQ(FitUtf8(std::string(5000, 'x'), 1024).size(), 1024u);
  EXPECT_EQ(FitUtf8("abcdef", 2), "..");
}

}  // namespace
}  // namespace carve
