#include "aws/string_patterns.h"

#include <gtest/gtest.h>

#include <regex>
#include <string>
#include <vector>

namespace carve::aws {
namespace {

// Every string of up to `max_len` characters from `alphabet`, each after every prefix.
std::vector<std::string> Strings(const std::vector<std::string>& prefixes,
                                 std::string_view alphabet, size_t max_len) {
  std::vector<std::string> out;
  std::vector<std::string> level = {""};
  for (size_t len = 0; len <= max_len; ++len) {
    for (const auto& p : prefixes) {
      for (const auto& s : level) out.push_back(p + s);
    }
    std::vector<std::string> next;
    for (const auto& s : level) {
      for (char c : alphabet) next.push_back(s + c);
    }
    level = std::move(next);
  }
  return out;
}

// The matcher agrees with std::regex (ECMAScript, the grammar botocore's patterns are written
// in) on every input; std::regex is safe here because the inputs are a few characters long.
void ExpectSameAsRegex(const char* pattern, bool (*matches)(std::string_view),
                       const std::vector<std::string>& inputs) {
  const std::regex re(pattern);
  int accepted = 0;
  for (const auto& s : inputs) {
    const bool want = std::regex_match(s, re);
    accepted += want ? 1 : 0;
    ASSERT_EQ(matches(s), want) << pattern << " on '" << s << "'";
  }
  EXPECT_GT(accepted, 0) << pattern << ": the inputs exercise only refusals";
}

TEST(StringPatterns, NamesAgreeWithTheModeledRegexes) {
  const auto inputs = Strings({""}, "aZ0-_", 6);
  ExpectSameAsRegex("[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}", &MatchesEndpointName, inputs);
  ExpectSameAsRegex("[a-zA-Z0-9]([\\-a-zA-Z0-9]*[a-zA-Z0-9])?", &MatchesModelName, inputs);
  ExpectSameAsRegex("[a-zA-Z0-9-]+", &MatchesNameContains, inputs);
}

TEST(StringPatterns, EndpointNamesHoldAtMostSixtyThreeAlphanumerics) {
  std::string name(63, 'a');
  EXPECT_TRUE(MatchesEndpointName(name));
  EXPECT_TRUE(MatchesEndpointName("a---" + name.substr(1)));  // Hyphens do not count.
  EXPECT_FALSE(MatchesEndpointName(name + "b"));
  EXPECT_TRUE(MatchesModelName(name + "b"));  // No count in this one; the length rule has it.
}

TEST(StringPatterns, RoleArnsAgreeWithTheModeledRegex) {
  ExpectSameAsRegex("arn:aws[a-z\\-]*:iam::\\d{12}:role/?[a-zA-Z_0-9+=,.@\\-_/]+", &MatchesRoleArn,
                    Strings({"arn:aws:iam::123456789012:role", "arn:aws-cn:iam::123456789012:role",
                             "arn:aws:iam::12345678901:role", "arn:aws:iam::1234567890123:role",
                             "arn:awsX:iam::123456789012:role", "arn:aws:iam::123456789012:rol"},
                            "/a_+ \n:", 4));
}

TEST(StringPatterns, ResourceArnsAgreeWithTheModeledRegex) {
  ExpectSameAsRegex("arn:aws[a-z-]*:sagemaker:[a-z0-9-]*:[0-9]{12}:.+", &MatchesResourceArn,
                    Strings({"arn:aws:sagemaker:us-east-1:123456789012:",
                             "arn:aws-us-gov:sagemaker::123456789012:",
                             "arn:aws:sagemaker:US:123456789012:", "arn:aws:sagemaker:x:12345:",
                             "arn:aws:iam::123456789012:", "arn:aws:sagemaker:x:123456789012"},
                            "a\n\r:/ ", 4));
}

TEST(StringPatterns, PartitionTypesAgreeWithTheModeledRegex) {
  ExpectSameAsRegex("mig-[0-9]+g\\.[0-9]+gb([+-][a-z0-9.]+)*", &MatchesPartitionType,
                    Strings({"mig-1g.10gb", "mig-10g.1gb", "mig-g.10gb", "mig-1g10gb", "mig-1g.gb",
                             "MIG-1g.10gb", "mig-1g.10g"},
                            "+-a.1Z ", 5));
}

TEST(StringPatterns, ImagesAgreeWithTheModeledRegex) {
  ExpectSameAsRegex("[\\S]+", &MatchesNoSpace, Strings({""}, "a \t\v\f\r\n\xc3", 4));
}

TEST(StringPatterns, ModelDataUrlsAgreeWithTheModeledRegex) {
  ExpectSameAsRegex(
      "(https|s3)://([^/]+)/?(.*)|file:///.*|/.*", &MatchesModelDataUrl,
      Strings({"https://", "s3://", "file:///", "http://", "s3:/", "file://", "/", ""}, "h/\n\r ",
              5));
}

// What std::regex could not do: a 50,000-character value is matched in one pass.
TEST(StringPatterns, MatchLongValuesWithoutRecursion) {
  const std::string long_name(50000, 'a');
  EXPECT_FALSE(MatchesEndpointName(long_name));
  EXPECT_TRUE(MatchesModelName(long_name));
  EXPECT_TRUE(MatchesNoSpace(long_name));
  EXPECT_TRUE(MatchesModelDataUrl("s3://bucket/" + long_name));
  EXPECT_TRUE(MatchesRoleArn("arn:aws:iam::123456789012:role/" + long_name));
}

}  // namespace
}  // namespace carve::aws
