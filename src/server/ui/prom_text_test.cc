#include "server/ui/prom_text.h"

#include <gtest/gtest.h>

#include <cmath>

#include "http/metrics.h"

namespace carve::server::ui {
namespace {

TEST(PromText, ParsesNamesLabelsAndValues) {
  auto r = ParsePromText(
      "# HELP x_total Things.\n# TYPE x_total counter\n"
      "x_total{a=\"1\",b=\"two\"} 12.5\n\ny 3 1700000000000\n");
  ASSERT_TRUE(r.has_value()) << r.error().message;
  ASSERT_EQ(r->size(), 2u);
  EXPECT_EQ((*r)[0].name, "x_total");
  ASSERT_NE((*r)[0].Label("b"), nullptr);
  EXPECT_EQ(*(*r)[0].Label("b"), "two");
  EXPECT_EQ((*r)[0].Label("c"), nullptr);
  EXPECT_DOUBLE_EQ((*r)[0].value, 12.5);
  EXPECT_EQ((*r)[1].name, "y");
  EXPECT_TRUE((*r)[1].labels.empty());
  EXPECT_DOUBLE_EQ((*r)[1].value, 3);
}

TEST(PromText, UnescapesLabelValues) {
  auto r = ParsePromText(R"(m{v="a\"b\\c\nd"} 1)");
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_EQ(*(*r)[0].Label("v"), "a\"b\\c\nd");
}

TEST(PromText, ReadsInfinitiesAndNaN) {
  auto r = ParsePromText("a{le=\"+Inf\"} +Inf\nb -Inf\nc NaN\n");
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_TRUE(std::isinf((*r)[0].value) && (*r)[0].value > 0);
  EXPECT_TRUE(std::isinf((*r)[1].value) && (*r)[1].value < 0);
  EXPECT_TRUE(std::isnan((*r)[2].value));
}

TEST(PromText, NamesTheLineAndColumnOfAMissingEquals) {
  auto r = ParsePromText("ok 1\nbad{a\"x\"} 2\n");
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(r.error().message,
            "metrics line 2 \"bad{a\"x\"} 2\": expected '=' after the label name at column 6");
}

TEST(PromText, RejectsAValueThatIsNotANumber) {
  auto r = ParsePromText("m{a=\"1\"} twelve\n");
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message.find("expected a number as the sample value"), std::string::npos)
      << r.error().message;
}

TEST(PromText, RejectsAnUnterminatedLabelValue) {
  auto r = ParsePromText("m{a=\"1} 2\n");
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message.find("closing the label value"), std::string::npos);
}

TEST(PromText, KeepsOnlyTheNamesTheFilterAccepts) {
  auto r = ParsePromText("a 1\nb 2\na 3\n", [](std::string_view n) { return n == "a"; });
  ASSERT_TRUE(r.has_value());
  ASSERT_EQ(r->size(), 2u);
  EXPECT_DOUBLE_EQ((*r)[1].value, 3);
}

// What the registry writes, the reader reads back: every family type, and a label value that
// needs escaping.
TEST(PromText, ReadsBackTheRegistryExposition) {
  http::MetricsRegistry m;
  m.AddCounter("c_total", "help", {"k"}).Increment({"a \"quoted\"\nvalue"}, 3);
  m.AddGauge("g", "help").Set({}, 1.25);
  m.AddHistogram("h_seconds", "help", {"k"}, {0.1, 1}).Observe({"x"}, 0.5);
  auto r = ParsePromText(m.Expose());
  ASSERT_TRUE(r.has_value()) << r.error().message;
  std::map<std::string, double> by_key;
  for (const auto& s : *r) {
    const std::string* le = s.Label("le");
    by_key[s.name + (le != nullptr ? "/" + *le : "")] = s.value;
    if (s.name == "c_total") {
      EXPECT_EQ(*s.Label("k"), "a \"quoted\"\nvalue");
    }
  }
  EXPECT_DOUBLE_EQ(by_key["c_total"], 3);
  EXPECT_DOUBLE_EQ(by_key["g"], 1.25);
  EXPECT_DOUBLE_EQ(by_key["h_seconds_bucket/0.1"], 0);
  EXPECT_DOUBLE_EQ(by_key["h_seconds_bucket/1"], 1);
  EXPECT_DOUBLE_EQ(by_key["h_seconds_bucket/+Inf"], 1);
  EXPECT_DOUBLE_EQ(by_key["h_seconds_count"], 1);
}

}  // namespace
}  // namespace carve::server::ui
