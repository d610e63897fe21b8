#include "common/bounded_json.h"

#include <gtest/gtest.h>

#include <string>

namespace carve {
namespace {

using nlohmann::json;

std::string Nested(int depth, char open, char close, std::string_view inner = "") {
  return std::string(depth, open) + std::string(inner) + std::string(depth, close);
}

// {"a":{"a":...{"a":1}...}} with `depth` objects.
std::string NestedObjects(int depth) {
  std::string out;
  for (int i = 0; i < depth; ++i) out += "{\"a\":";
  out += "1";
  out += std::string(depth, '}');
  return out;
}

std::string ErrorOf(const Result<json>& r) { return r.has_value() ? "" : r.error().message; }

TEST(ParseJson, ParsesOrdinaryDocuments) {
  auto r = ParseJson(R"({"ModelName":"m","Tags":[{"Key":"k","Value":"v"}],"n":1.5,"b":null})");
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_EQ((*r)["Tags"][0]["Key"], "k");
  EXPECT_EQ((*r)["n"], 1.5);
  EXPECT_TRUE(ParseJson("3").has_value());
  EXPECT_TRUE(ParseJson(" \"s\" ").has_value());
}

TEST(ParseJson, AcceptsArraysExactlyAtTheDepthLimit) {
  auto r = ParseJson(Nested(kMaxJsonDepth, '[', ']', "1"));
  ASSERT_TRUE(r.has_value()) << r.error().message;
  const json* v = &*r;
  for (int i = 0; i < kMaxJsonDepth; ++i) v = &(*v)[0];
  EXPECT_EQ(*v, 1);
}

TEST(ParseJson, RefusesArraysOneLevelPastTheLimit) {
  auto r = ParseJson(Nested(kMaxJsonDepth + 1, '[', ']'));
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(r.error().message,
            "nests arrays and objects deeper than 64 levels (the JSON depth limit)");
}

TEST(ParseJson, AcceptsObjectsExactlyAtTheDepthLimitAndRefusesOneMore) {
  EXPECT_TRUE(ParseJson(NestedObjects(kMaxJsonDepth)).has_value());
  EXPECT_NE(ErrorOf(ParseJson(NestedObjects(kMaxJsonDepth + 1))).find("JSON depth limit"),
            std::string::npos);
}

TEST(ParseJson, MixedArraysAndObjectsCountTogether) {
  std::string text;
  for (int i = 0; i < kMaxJsonDepth + 1; ++i) text += i % 2 == 0 ? "[" : "{\"k\":";
  for (int i = kMaxJsonDepth; i >= 0; --i) text += i % 2 == 0 ? "]" : "}";
  EXPECT_NE(ErrorOf(ParseJson(text)).find("JSON depth limit"), std::string::npos);
}

TEST(ParseJson, TakesASmallerLimitWhenGiven) {
  EXPECT_TRUE(ParseJson("[[1]]", 2).has_value());
  EXPECT_NE(ErrorOf(ParseJson("[[[1]]]", 2)).find("deeper than 2 levels"), std::string::npos);
}

// The inputs that crashed the server (issue 35): 100,000 levels, closed or not.
TEST(ParseJson, RefusesAHundredThousandNestedArrays) {
  EXPECT_NE(ErrorOf(ParseJson(Nested(100000, '[', ']'))).find("JSON depth limit"),
            std::string::npos);
  EXPECT_NE(ErrorOf(ParseJson(std::string(100000, '['))).find("JSON depth limit"),
            std::string::npos);
}

TEST(ParseJson, RefusesAHundredThousandNestedObjectsInsideAMember) {
  const std::string text = R"({"ModelName":"m","Containers":)" + NestedObjects(100000) + "}";
  EXPECT_NE(ErrorOf(ParseJson(text)).find("JSON depth limit"), std::string::npos);
}

TEST(ParseJson, RefusesADuplicateTopLevelKeyNamingIt) {
  auto r = ParseJson(R"({"ModelName":"a","ExecutionRoleArn":"r","ModelName":"b"})");
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(r.error().message,
            "has the key \"ModelName\" more than once in one object (duplicate JSON keys are "
            "refused)");
}

TEST(ParseJson, RefusesADuplicateNestedKeyNamingIt) {
  auto r = ParseJson(R"({"Tags":[{"Key":"a","Value":"b","Key":"c"}]})");
  EXPECT_NE(ErrorOf(r).find("\"Key\" more than once"), std::string::npos) << ErrorOf(r);
}

TEST(ParseJson, AllowsTheSameKeyInSiblingAndNestedObjects) {
  auto r = ParseJson(R"({"a":{"a":1},"b":[{"a":1},{"a":2}]})");
  EXPECT_TRUE(r.has_value()) << ErrorOf(r);
}

TEST(ParseJson, BoundsALongDuplicateKeyInTheMessage) {
  const std::string key(50000, 'k');
  auto r = ParseJson("{\"" + key + "\":1,\"" + key + "\":2}");
  ASSERT_FALSE(r.has_value());
  EXPECT_LT(r.error().message.size(), 300u);
  EXPECT_NE(r.error().message.find("kkk..."), std::string::npos);
}

TEST(ParseJson, KeepsLongStringsWhole) {
  const std::string s(1 << 20, 'x');
  auto r = ParseJson("{\"Name\":\"" + s + "\"}");
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ((*r)["Name"], s);
}

TEST(ParseJson, BoundsTheMessageForAnUnterminatedLongString) {
  auto r = ParseJson("{\"Name\":\"" + std::string(1 << 20, 'x'));
  ASSERT_FALSE(r.has_value());
  EXPECT_TRUE(r.error().message.starts_with("is not valid JSON: ")) << r.error().message;
  EXPECT_LT(r.error().message.size(), 300u);
}

TEST(ParseJson, RefusesMalformedTextAndTrailingContent) {
  EXPECT_TRUE(ErrorOf(ParseJson("{")).starts_with("is not valid JSON: "));
  EXPECT_TRUE(ErrorOf(ParseJson("")).starts_with("is not valid JSON: "));
  EXPECT_TRUE(ErrorOf(ParseJson("{} {}")).starts_with("is not valid JSON: "));
  EXPECT_TRUE(ErrorOf(ParseJson("\"\xff\"")).starts_with("is not valid JSON: "));
}

TEST(TextPreview, KeepsShortTextAndCutsLongText) {
  EXPECT_EQ(TextPreview("abc", 3), "abc");
  EXPECT_EQ(TextPreview("abcd", 3), "abc...");
}

TEST(TextPreview, NeverSplitsAUtf8Sequence) {
  EXPECT_EQ(TextPreview("a\xc3\xa9z", 2), "a...");  // é is 2 bytes: not half of it.
  EXPECT_EQ(TextPreview("a\xc3\xa9z", 3), "a\xc3\xa9...");
}

TEST(JsonPreview, ShowsSmallValuesAsCompactJson) {
  EXPECT_EQ(JsonPreview(json::parse(R"({"a":[1,"x",null]})")), R"({"a":[1,"x",null]})");
  EXPECT_EQ(JsonPreview(json("s")), "\"s\"");
}

TEST(JsonPreview, ElidesContainersBelowTheDepth) {
  EXPECT_EQ(JsonPreview(json::parse(R"([[[[1]]],{}])"), 256, 2), "[[[...]],{}]");
  EXPECT_EQ(JsonPreview(json::parse(R"({"a":{"b":1}})"), 256, 1), R"({"a":{...}})");
}

TEST(JsonPreview, BoundsLongAndWideValues) {
  EXPECT_LE(JsonPreview(json(std::string(1 << 20, 'x')), 100).size(), 103u);
  json wide = json::array();
  for (int i = 0; i < 100000; ++i) wide.push_back(i);
  EXPECT_LE(JsonPreview(wide, 100).size(), 103u);
}

// A value built in code can be deeper than ParseJson allows; the preview still stops.
TEST(JsonPreview, HandlesAHundredThousandLevels) {
  json deep = json::array();
  for (int i = 0; i < 100000; ++i) deep = json::array({std::move(deep)});
  EXPECT_EQ(JsonPreview(deep, 256, 3), "[[[[...]]]]");
}

TEST(JsonPreview, ReplacesInvalidUtf8) {
  const std::string shown = JsonPreview(json(std::string("a\xff")));
  EXPECT_EQ(shown, "\"a\xef\xbf\xbd\"");
}

}  // namespace
}  // namespace carve
