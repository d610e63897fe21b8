#include "common/base64.h"

#include <gtest/gtest.h>

namespace carve {
namespace {

// RFC 4648 section 10's test vectors, both ways.
TEST(Base64, MatchesTheRfcVectors) {
  const std::pair<const char*, const char*> vectors[] = {{"", ""},
                                                         {"f", "Zg=="},
                                                         {"fo", "Zm8="},
                                                         {"foo", "Zm9v"},
                                                         {"foob", "Zm9vYg=="},
                                                         {"fooba", "Zm9vYmE="},
                                                         {"foobar", "Zm9vYmFy"}};
  for (const auto& [plain, coded] : vectors) {
    EXPECT_EQ(Base64Encode(plain), coded);
    EXPECT_EQ(Base64Decode(coded), std::optional<std::string>(plain)) << coded;
  }
}

TEST(Base64, RoundTripsEveryByteValue) {
  std::string all;
  for (int i = 0; i < 256; ++i) all.push_back(static_cast<char>(i));
  EXPECT_EQ(Base64Decode(Base64Encode(all)), all);
}

TEST(Base64, RefusesUnpaddedAndForeignAlphabets) {
  EXPECT_EQ(Base64Decode("Zg"), std::nullopt);        // Unpadded.
  EXPECT_EQ(Base64Decode("Zm9v!A=="), std::nullopt);  // Not in the alphabet.
}

}  // namespace
}  // namespace carve
