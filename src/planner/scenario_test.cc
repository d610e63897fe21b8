#include "planner/scenario.h"

#include <gtest/gtest.h>

namespace carve::planner {
namespace {

TEST(ParseScenario, ReadsDeterministicShapes) {
  Scenario s = ParseScenario("D(2000, 200)").value();
  EXPECT_EQ(s.input_tokens, 2000);
  EXPECT_EQ(s.output_tokens, 200);
  EXPECT_EQ(s.text, "D(2000,200)");
  EXPECT_TRUE(s.note.empty());
}

TEST(ParseScenario, UsesTheMeansOfANormalShapeAndSaysSo) {
  Scenario s = ParseScenario("N(480,240)/(300,150)").value();
  EXPECT_EQ(s.input_tokens, 480);
  EXPECT_EQ(s.output_tokens, 300);
  EXPECT_NE(s.note.find("means"), std::string::npos);
}

TEST(ParseScenario, RejectsUnknownShapesNamingTheForms) {
  for (const char* bad : {"U(1,2)", "D(1)", "D(0,5)", "D(a,b)", "N(1,2)", "D(1,2)x"}) {
    auto r = ParseScenario(bad);
    ASSERT_FALSE(r.has_value()) << bad;
    EXPECT_NE(r.error().message.find("D(in,out)"), std::string::npos) << bad;
  }
}

TEST(ParseScenarios, SplitsListsWithoutBreakingNormalShapes) {
  auto v = ParseScenarios("D(100,100),N(480,240)/(300,150);D(7800,200)").value();
  ASSERT_EQ(v.size(), 3u);
  EXPECT_EQ(v[1].input_tokens, 480);
  EXPECT_EQ(v[2].input_tokens, 7800);
}

TEST(ParseConcurrency, ExpandsLaddersAndLists) {
  EXPECT_EQ(ParseConcurrency("2..512").value(),
            (std::vector<int>{2, 4, 8, 16, 32, 64, 128, 256, 512}));
  EXPECT_EQ(ParseConcurrency("1,2,4,...,64").value(), (std::vector<int>{1, 2, 4, 8, 16, 32, 64}));
  EXPECT_EQ(ParseConcurrency("16").value(), (std::vector<int>{16}));
  EXPECT_EQ(ParseConcurrency("8,3,3").value(), (std::vector<int>{3, 8}));
}

TEST(ParseConcurrency, RejectsNonPositiveValues) {
  EXPECT_FALSE(ParseConcurrency("0").has_value());
  EXPECT_FALSE(ParseConcurrency("4..2").has_value());
  EXPECT_FALSE(ParseConcurrency("1,x").has_value());
}

}  // namespace
}  // namespace carve::planner
