// SageMaker's name rules (resources.h) on the AWS wire's validator (aws/validator.h).
#include <gtest/gtest.h>

#include <string>

#include "server/sagemaker/resources.h"

namespace carve::server::sagemaker {
namespace {

// The 50,000-character name of the report, against the real rules: refused, not crashed.
TEST(Validator, RefusesAFiftyThousandCharacterNameOnEveryNameRule) {
  const std::string name(50000, 'a');
  for (const StringRule* rule : {&kEndpointNameRule, &kModelNameRule, &kNameContainsRule,
                                 &kResourceArnRule, &kRoleArnRule, &kTagKeyRule}) {
    Validator v;
    EXPECT_FALSE(v.String(json{{"Name", name}}, "Name", "", *rule, true));
    EXPECT_NE(v.ToStatus().error().message.find("Member must have length less than or equal to"),
              std::string::npos);
  }
}

}  // namespace
}  // namespace carve::server::sagemaker
