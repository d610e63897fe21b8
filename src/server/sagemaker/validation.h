// The AWS wire's member validation (aws/validator.h) and the matchers of SageMaker's string
// patterns (aws/string_patterns.h), under the names the SageMaker handlers use.
#pragma once

#include "aws/string_patterns.h"
#include "aws/validator.h"

namespace carve::server::sagemaker {

using aws::ElementPath;
using aws::EnumRule;
using aws::kMaxShownValueBytes;
using aws::LengthRule;
using aws::MemberPath;
using aws::NumberRule;
using aws::PatternRule;
using aws::StringRule;
using aws::UnsupportedMember;
using aws::Validator;
using nlohmann::json;

using aws::MatchesEndpointName;
using aws::MatchesModelDataUrl;
using aws::MatchesModelName;
using aws::MatchesNameContains;
using aws::MatchesNoSpace;
using aws::MatchesPartitionType;
using aws::MatchesResourceArn;
using aws::MatchesRoleArn;

}  // namespace carve::server::sagemaker
