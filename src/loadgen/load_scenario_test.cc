#include "loadgen/load_scenario.h"

#include <gtest/gtest.h>

#include "testmodel/protocol.h"

namespace carve::loadgen {
namespace {

TEST(LoadScenario, ParsesDeterministicShape) {
  auto s = ParseLoadScenario("D(100, 1000)");
  ASSERT_TRUE(s.has_value()) << s.error().message;
  EXPECT_EQ(s->shape.text, "D(100,1000)");
  EXPECT_FALSE(s->normal);
  EXPECT_EQ(s->shape.input_tokens, 100);
  EXPECT_EQ(s->shape.output_tokens, 1000);
}

TEST(LoadScenario, ParsesNormalShapeWithItsSpread) {
  auto s = ParseLoadScenario("N(480,240)/(300,150)");
  ASSERT_TRUE(s.has_value()) << s.error().message;
  EXPECT_TRUE(s->normal);
  EXPECT_EQ(s->shape.input_tokens, 480);
  EXPECT_EQ(s->shape.output_tokens, 300);
  EXPECT_DOUBLE_EQ(s->input_sd, 240);
  EXPECT_DOUBLE_EQ(s->output_sd, 150);
}

TEST(LoadScenario, RejectsBadTextNamingIt) {
  for (const char* text : {"D(100)", "X(1,2)", "D(a,b)", "N(1,2)", "D(0,5)"}) {
    auto s = ParseLoadScenario(text);
    ASSERT_FALSE(s.has_value()) << text;
    EXPECT_EQ(s.error().code, ErrorCode::kInvalidArgument);
    EXPECT_NE(s.error().message.find(text), std::string::npos) << s.error().message;
  }
}

TEST(LoadScenario, ParsesAList) {
  auto list = ParseLoadScenarios("D(100,100),N(480,240)/(300,150);D(7800,200)");
  ASSERT_TRUE(list.has_value()) << list.error().message;
  ASSERT_EQ(list->size(), 3u);
  EXPECT_TRUE((*list)[1].normal);
  EXPECT_EQ((*list)[2].shape.input_tokens, 7800);
}

TEST(LoadScenario, DefaultsAreGenaiBenchs) {
  std::vector<std::string> texts;
  for (const auto& s : DefaultScenarios()) texts.push_back(s.shape.text);
  EXPECT_EQ(texts, (std::vector<std::string>{"D(100,100)", "D(100,1000)", "D(2000,200)",
                                             "D(7800,200)", "N(480,240)/(300,150)"}));
  EXPECT_EQ(DefaultConcurrency(), (std::vector<int>{1, 2, 4, 8, 16, 32, 64, 128, 256}));
}

TEST(LoadScenario, DeterministicShapeAlwaysSamplesItsCounts) {
  auto s = ParseLoadScenario("D(200,50)").value();
  auto rng = RequestRng(1, 0, 0);
  for (int i = 0; i < 10; ++i) {
    RequestShape r = SampleShape(s, rng);
    EXPECT_EQ(r.input_tokens, 200);
    EXPECT_EQ(r.output_tokens, 50);
  }
}

TEST(LoadScenario, NormalShapeSamplesAroundItsMeansAndAtLeastOne) {
  auto s = ParseLoadScenario("N(480,240)/(300,150)").value();
  double sum_in = 0;
  int64_t min_out = 1 << 30;
  bool varies = false;
  const int n = 4000;
  for (int i = 0; i < n; ++i) {
    auto rng = RequestRng(7, 3, static_cast<uint64_t>(i));
    RequestShape r = SampleShape(s, rng);
    sum_in += static_cast<double>(r.input_tokens);
    min_out = std::min(min_out, r.output_tokens);
    varies = varies || r.input_tokens != 480;
  }
  EXPECT_TRUE(varies);
  EXPECT_NEAR(sum_in / n, 480, 20);  // clamping at 1 lifts the mean a little
  EXPECT_GE(min_out, 1);
}

TEST(LoadScenario, SameSeedAndIndexGiveTheSameRequest) {
  auto s = ParseLoadScenario("N(480,240)/(300,150)").value();
  auto a = RequestRng(42, 1, 17), b = RequestRng(42, 1, 17), c = RequestRng(43, 1, 17);
  RequestShape ra = SampleShape(s, a), rb = SampleShape(s, b), rc = SampleShape(s, c);
  EXPECT_EQ(ra.input_tokens, rb.input_tokens);
  EXPECT_EQ(ra.output_tokens, rb.output_tokens);
  EXPECT_EQ(PromptOfTokens(20, a), PromptOfTokens(20, b));
  EXPECT_FALSE(ra.input_tokens == rc.input_tokens && ra.output_tokens == rc.output_tokens);
}

TEST(LoadScenario, PromptCountsExactlyAsTheTestmodelTokenizer) {
  auto rng = RequestRng(0, 0, 0);
  for (int64_t tokens : {1, 2, 8, 9, 100, 7800}) {
    std::string p = PromptOfTokens(tokens, rng);
    EXPECT_EQ(testmodel::CountPromptTokens(p), tokens) << tokens;
  }
}

TEST(LoadScenario, PromptsOfDifferentRequestsStartDifferently) {
  auto a = RequestRng(0, 0, 1), b = RequestRng(0, 0, 2);
  EXPECT_NE(PromptOfTokens(100, a).substr(0, 32), PromptOfTokens(100, b).substr(0, 32));
}

}  // namespace
}  // namespace carve::loadgen
