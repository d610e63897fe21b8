#include "aws/validator.h"

#include <gtest/gtest.h>

#include "aws/string_patterns.h"

namespace carve::aws {
namespace {

constexpr StringRule kEndpointName =
    PatternRule(0, 63, "[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}", &MatchesEndpointName);

// Counts its calls: shows whether a rule's pattern ran at all.
int pattern_calls = 0;
bool CountingMatcher(std::string_view) {
  ++pattern_calls;
  return false;
}

TEST(Validator, AcceptsAValidNameAndReturnsIt) {
  Validator v;
  auto name = v.String(json{{"EndpointName", "ep-1"}}, "EndpointName", "", kEndpointName, true);
  ASSERT_TRUE(name.has_value());
  EXPECT_EQ(*name, "ep-1");
  EXPECT_TRUE(v.ToStatus().ok());
}

TEST(Validator, WordsAPatternViolationLikeTheService) {
  Validator v;
  v.String(json{{"EndpointName", "bad_name!"}}, "EndpointName", "", kEndpointName, true);
  Status s = v.ToStatus();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(s.error().message,
            "1 validation error detected: Value 'bad_name!' at 'endpointName' failed to satisfy "
            "constraint: Member must satisfy regular expression pattern: "
            "[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}");
}

TEST(Validator, RefusesAnUnsupportedMemberNamingItAndWhy) {
  constexpr UnsupportedMember kMembers[] = {
      {"DataCaptureConfig", "capture is not implemented; omit it"},
      {"EnableSSMAccess", "no SSM; omit it or set false", false},
  };
  Validator v;
  v.Unsupported(json{{"DataCaptureConfig", {{"EnableCapture", true}}}}, kMembers, "a.member");
  EXPECT_EQ(v.ToStatus().error().message,
            "1 validation error detected: Value '{...}' at 'a.member.dataCaptureConfig' failed "
            "to satisfy constraint: carve does not support DataCaptureConfig: capture is not "
            "implemented; omit it");

  Validator off;  // The value that asks for nothing passes; any other is refused.
  off.Unsupported(json{{"EnableSSMAccess", false}}, kMembers, "");
  EXPECT_TRUE(off.ok());
  Validator on;
  on.Unsupported(json{{"EnableSSMAccess", true}}, kMembers, "");
  EXPECT_EQ(on.ToStatus().error().message,
            "1 validation error detected: Value 'true' at 'enableSSMAccess' failed to satisfy "
            "constraint: carve does not support EnableSSMAccess: no SSM; omit it or set false");

  Validator absent;  // Absent and null members are not requests.
  absent.Unsupported(json{{"DataCaptureConfig", nullptr}}, kMembers, "");
  EXPECT_TRUE(absent.ok());
}

TEST(Validator, MatchesPatternsAgainstTheWholeValue) {
  // "ab-" matches the pattern's prefix but not as a whole.
  Validator v;
  EXPECT_FALSE(v.String(json{{"EndpointName", "ab-"}}, "EndpointName", "", kEndpointName, true));
  EXPECT_FALSE(v.ok());
}

TEST(Validator, JoinsSeveralViolationsWithSemicolons) {
  Validator v;
  json body = {{"EndpointName", std::string(64, 'a')}};
  v.String(body, "EndpointName", "", kEndpointName, true);
  v.String(body, "EndpointConfigName", "", kEndpointName, true);
  Status s = v.ToStatus();
  ASSERT_FALSE(s.ok());
  // 64 characters break both the length and the pattern ({0,62} after the first); unlike the
  // service, a failed length ends the member's checks, so that no pattern ever reads a value
  // longer than its rule allows (issue 35). Each member's violation is its own entry.
  const std::string value = "Value '" + std::string(64, 'a') + "' at 'endpointName'";
  EXPECT_EQ(s.error().message,
            "2 validation errors detected: " + value +
                " failed to satisfy constraint: Member must have length less than or equal to "
                "63; Value null at 'endpointConfigName' failed to satisfy constraint: Member must "
                "not be null");
}

TEST(Validator, NamesListElementsWithOneBasedMemberPaths) {
  Validator v;
  json body = {{"ProductionVariants", json::array({json::object(), json::object()})}};
  const json* list = v.List(body, "ProductionVariants", "", 1, 10, true);
  ASSERT_NE(list, nullptr);
  v.String((*list)[1], "VariantName", ElementPath("productionVariants", 1), kEndpointName, true);
  EXPECT_NE(v.ToStatus().error().message.find("at 'productionVariants.2.member.variantName'"),
            std::string::npos);
}

TEST(Validator, ListsTheEnumValuesItRejects) {
  static constexpr std::string_view kOrder[] = {"Ascending", "Descending"};
  Validator v;
  v.String(json{{"SortOrder", "Up"}}, "SortOrder", "", EnumRule(kOrder), false);
  EXPECT_NE(v.ToStatus().error().message.find(
                "Value 'Up' at 'sortOrder' failed to satisfy constraint: Member must satisfy enum "
                "value set: [Ascending, Descending]"),
            std::string::npos);
}

TEST(Validator, ChecksIntegerRanges) {
  Validator v;
  EXPECT_FALSE(v.Integer(json{{"MaxResults", 0}}, "MaxResults", "", {1, 100}, false));
  EXPECT_EQ(v.ToStatus().error().message,
            "1 validation error detected: Value '0' at 'maxResults' failed to satisfy constraint: "
            "Member must have value greater than or equal to 1");
}

TEST(Validator, AcceptsAFloatSpellingOfAnInteger) {
  Validator v;
  auto n = v.Integer(json{{"CopyCount", 2.0}}, "CopyCount", "", {0, {}}, true);
  ASSERT_TRUE(n.has_value());
  EXPECT_EQ(*n, 2);
  EXPECT_TRUE(v.ok());
}

TEST(Validator, RejectsAFractionWhereAnIntegerIsModeled) {
  Validator v;
  EXPECT_FALSE(v.Integer(json{{"CopyCount", 1.5}}, "CopyCount", "", {0, {}}, true));
  EXPECT_FALSE(v.ok());
}

// Found by fuzzing (fuzz/corpus/sagemaker/crash-integer-beyond-int64): a float beyond int64 was
// converted to one to see whether it is whole, which is undefined behaviour.
TEST(Validator, RefusesIntegersBeyondInt64WhateverTheirSpelling) {
  Validator bounded;
  EXPECT_FALSE(bounded.Integer(json{{"MaxResults", 1.1e69}}, "MaxResults", "", {1, 100}, false));
  EXPECT_NE(bounded.ToStatus().error().message.find("less than or equal to 100"),
            std::string::npos);
  Validator unbounded;
  EXPECT_FALSE(unbounded.Integer(json{{"CopyCount", 1e69}}, "CopyCount", "", {0, {}}, true));
  EXPECT_FALSE(unbounded.Integer(json::parse(R"({"MaxCopies": 18446744073709551615})"), "MaxCopies",
                                 "", {0, {}}, true));
  EXPECT_FALSE(unbounded.Integer(json{{"Low", -1e30}}, "Low", "", {}, true));
  const std::string message = unbounded.ToStatus().error().message;
  EXPECT_NE(message.find("3 validation errors"), std::string::npos) << message;
  EXPECT_NE(message.find("less than or equal to 9223372036854775807"), std::string::npos)
      << message;
  EXPECT_NE(message.find("greater than or equal to -9223372036854775808"), std::string::npos)
      << message;
  Validator edge;
  auto n = edge.Integer(json{{"Big", 9223372036854775807}}, "Big", "", {}, true);
  ASSERT_TRUE(n.has_value()) << edge.ToStatus().error().message;
  EXPECT_EQ(*n, INT64_MAX);
}

TEST(Validator, OptionalMembersMayBeAbsent) {
  Validator v;
  EXPECT_FALSE(v.String(json::object(), "NextToken", "", StringRule{}, false));
  EXPECT_TRUE(v.ok());
}

TEST(Validator, RejectsAWrongJsonType) {
  Validator v;
  EXPECT_FALSE(v.String(json{{"EndpointName", 5}}, "EndpointName", "", kEndpointName, true));
  EXPECT_NE(v.ToStatus().error().message.find("Member must be a string"), std::string::npos);
}

// Issue 35: a 50,000-character name reached std::regex, which recursed once per character and
// overflowed the stack. A value over its length now stops before any pattern, and the message
// quotes a bounded preview of it.
TEST(Validator, AMegabyteValueFailsTheLengthRuleWithoutReachingThePattern) {
  constexpr StringRule kCounted = PatternRule(0, 63, "[a-z]+", &CountingMatcher);
  pattern_calls = 0;
  Validator v;
  const std::string huge(1 << 20, 'a');
  EXPECT_FALSE(v.String(json{{"EndpointName", huge}}, "EndpointName", "", kCounted, true));
  EXPECT_EQ(pattern_calls, 0);
  const std::string message = v.ToStatus().error().message;
  EXPECT_NE(message.find("Member must have length less than or equal to 63"), std::string::npos);
  EXPECT_EQ(message.find("regular expression"), std::string::npos) << message;
  EXPECT_LT(message.size(), 600u);
  EXPECT_NE(message.find("aaa...' at 'endpointName'"), std::string::npos) << message;
}

TEST(Validator, AShortValueFailsTheMinimumLengthWithoutReachingThePattern) {
  constexpr StringRule kCounted = PatternRule(20, 2048, "[a-z]+", &CountingMatcher);
  pattern_calls = 0;
  Validator v;
  EXPECT_FALSE(v.String(json{{"RoleArn", "short"}}, "RoleArn", "", kCounted, true));
  EXPECT_EQ(pattern_calls, 0);
  Validator within;
  EXPECT_FALSE(
      within.String(json{{"RoleArn", std::string(30, 'a')}}, "RoleArn", "", kCounted, true));
  EXPECT_EQ(pattern_calls, 1);  // Within its lengths, the pattern runs.
}

// A structure member given as another kind of value is refused at its path, quoting it.
TEST(Validator, AStructureMemberThatIsNotAnObjectIsRefused) {
  Validator v;
  EXPECT_EQ(v.Object(json{{"RuntimeConfig", 5}}, "RuntimeConfig", "", true), nullptr);
  EXPECT_EQ(v.ToStatus().error().message,
            "1 validation error detected: Value '5' at 'runtimeConfig' failed to satisfy "
            "constraint: Member must be a structure");
  Validator ok;
  EXPECT_NE(ok.Object(json{{"RuntimeConfig", json::object()}}, "RuntimeConfig", "", true), nullptr);
  EXPECT_TRUE(ok.ToStatus().ok());
}

// A list or other container in the wrong place is quoted as a bounded preview, never dumped
// whole, however deep (values built in code can be deeper than ParseJson allows).
TEST(Validator, QuotesABoundedPreviewOfADeepOrWideValue) {
  json deep = json::array();
  for (int i = 0; i < 100000; ++i) deep = json::array({std::move(deep)});
  json parent = json::object();
  parent["EndpointName"] = std::move(deep);  // Moved: nlohmann's copy recurses.
  Validator v;
  EXPECT_FALSE(v.String(parent, "EndpointName", "", kEndpointName, true));
  EXPECT_NE(v.ToStatus().error().message.find("Value '[[[[...]]]]' at 'endpointName' failed to "
                                              "satisfy constraint: Member must be a string"),
            std::string::npos)
      << v.ToStatus().error().message;
  Validator wide;
  EXPECT_EQ(wide.List(json{{"Tags", json::array({json(std::string(1 << 20, 't'))})}}, "Tags", "", 0,
                      0, true),
            nullptr);
  EXPECT_LT(wide.ToStatus().error().message.size(), 600u);
}

}  // namespace
}  // namespace carve::aws
