#include "catalog/price_overrides.h"

#include <gtest/gtest.h>

namespace carve::catalog {
namespace {

TEST(PriceOverrides, LoadsPricesUnderCatalogIds) {
  auto prices = LoadPriceOverrides(
      "server: {port: 8080}\n"
      "prices:\n"
      "  ml.p4d.24xlarge: 37.69\n"
      "  p5.48xlarge: 98.32   # no ml. prefix\n");
  ASSERT_TRUE(prices) << prices.error().message;
  EXPECT_EQ(prices->size(), 2u);
  EXPECT_DOUBLE_EQ(prices->at("ml.p4d.24xlarge"), 37.69);
  EXPECT_DOUBLE_EQ(prices->at("ml.p5.48xlarge"), 98.32);
  EXPECT_DOUBLE_EQ(PriceUsdPerHour(**FindInstanceType("ml.p5.48xlarge"), *prices), 98.32);
}

TEST(PriceOverrides, EmptyDocumentOrNoPricesSectionMeansNoOverrides) {
  for (const char* text : {"", "server: {port: 1}\n", "prices:\n"}) {
    auto prices = LoadPriceOverrides(text);
    ASSERT_TRUE(prices) << text << ": " << prices.error().message;
    EXPECT_TRUE(prices->empty()) << text;
  }
}

TEST(PriceOverrides, RejectsUnknownInstanceTypeNamingIt) {
  auto prices = LoadPriceOverrides("prices:\n  ml.p4d.24xlage: 1.0\n");
  ASSERT_FALSE(prices);
  EXPECT_EQ(prices.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(prices.error().message.find("prices.ml.p4d.24xlage"), std::string::npos);
}

TEST(PriceOverrides, RejectsNegativeAndNonNumericPrices) {
  auto negative = LoadPriceOverrides("prices:\n  ml.p4d.24xlarge: -3\n");
  ASSERT_FALSE(negative);
  EXPECT_NE(negative.error().message.find("prices.ml.p4d.24xlarge=-3"), std::string::npos);
  EXPECT_NE(negative.error().message.find(">= 0"), std::string::npos);
  auto text = LoadPriceOverrides("prices:\n  ml.p4d.24xlarge: cheap\n");
  ASSERT_FALSE(text);
  EXPECT_NE(text.error().message.find("expected a price"), std::string::npos);
  EXPECT_FALSE(LoadPriceOverrides("prices:\n  ml.p4d.24xlarge: .nan\n"));
}

TEST(PriceOverrides, RejectsTheSameTypeGivenTwice) {
  auto prices = LoadPriceOverrides("prices:\n  ml.p4d.24xlarge: 1\n  p4d.24xlarge: 2\n");
  ASSERT_FALSE(prices);
  EXPECT_NE(prices.error().message.find("priced twice"), std::string::npos);
}

TEST(PriceOverrides, RejectsMalformedYamlAndWrongShapes) {
  EXPECT_FALSE(LoadPriceOverrides("prices: [unclosed\n"));
  EXPECT_FALSE(LoadPriceOverrides("- just\n- a list\n"));
  auto list = LoadPriceOverrides("prices: [1, 2]\n");
  ASSERT_FALSE(list);
  EXPECT_NE(list.error().message.find("expected a map"), std::string::npos);
}

}  // namespace
}  // namespace carve::catalog
