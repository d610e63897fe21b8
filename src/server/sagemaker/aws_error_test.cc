#include "server/sagemaker/aws_error.h"

#include <gtest/gtest.h>

#include <set>

namespace carve::server::sagemaker {
namespace {

nlohmann::json Body(const http::ApiResponse& r) { return nlohmann::json::parse(r.body); }

TEST(AwsError, NotFoundIsAValidationExceptionSoTheDeletedWaiterWorks) {
  http::ApiResponse r = ToAwsError(NotFound("Could not find endpoint \"arn\"."));
  EXPECT_EQ(r.http_status, 400);
  EXPECT_EQ(r.error_type, "ValidationException");
  EXPECT_EQ(Body(r)["__type"], "ValidationException");
  EXPECT_EQ(Body(r)["message"], "Could not find endpoint \"arn\".");
}

TEST(AwsError, AlreadyExistsAndInvalidArgumentAreValidationExceptions) {
  EXPECT_EQ(ToAwsError(AlreadyExists("x")).error_type, "ValidationException");
  EXPECT_EQ(ToAwsError(InvalidArgument("x")).error_type, "ValidationException");
}

TEST(AwsError, CapacityShortfallIsResourceLimitExceeded) {
  http::ApiResponse r = ToAwsError(ResourceExhausted("no room"));
  EXPECT_EQ(r.http_status, 400);
  EXPECT_EQ(r.error_type, "ResourceLimitExceeded");
}

// botocore's model lists ResourceInUse for none of the operations carve serves; SageMaker
// answers "Cannot update in-progress endpoint" with ValidationException.
TEST(AwsError, WrongStateIsAValidationException) {
  http::ApiResponse r = ToAwsError(FailedPrecondition("Cannot update in-progress endpoint"));
  EXPECT_EQ(r.http_status, 400);
  EXPECT_EQ(r.error_type, "ValidationException");
}

// ResourceLimitExceeded only where botocore's model lists it for the operation.
TEST(AwsError, ResourceLimitExceededOnlyOnOperationsThatListIt) {
  EXPECT_EQ(ToAwsError(ResourceExhausted("x"), "CreateInferenceComponent").error_type,
            "ResourceLimitExceeded");
  EXPECT_EQ(ToAwsError(ResourceExhausted("x"), "UpdateEndpointWeightsAndCapacities").error_type,
            "ResourceLimitExceeded");
  EXPECT_EQ(ToAwsError(ResourceExhausted("x"), "DeleteEndpoint").error_type,
            "ValidationException");
  EXPECT_EQ(ToAwsError(ResourceExhausted("x"), "DescribeInferenceComponent").error_type,
            "ValidationException");
}

// The table has one row per refusal kind, each with a source, and ToAwsError follows it.
TEST(AwsError, TheTableHasOneRowPerKindWithASource) {
  std::set<ErrorCode> kinds;
  for (const AwsErrorRow& row : SageMakerErrorTable()) {
    EXPECT_TRUE(kinds.insert(row.kind).second) << ErrorCodeName(row.kind) << " twice";
    EXPECT_FALSE(row.source.empty()) << ErrorCodeName(row.kind);
    const http::ApiResponse r = ToAwsError(Error{row.kind, "m"}, "CreateEndpoint");
    EXPECT_EQ(r.http_status, row.http_status) << ErrorCodeName(row.kind);
    EXPECT_EQ(r.error_type, row.code) << ErrorCodeName(row.kind);
  }
  EXPECT_EQ(kinds.size(), 8u);
}

TEST(AwsError, DeterministicFailuresNeverGetA5xx) {
  for (auto code :
       {ErrorCode::kInvalidArgument, ErrorCode::kNotFound, ErrorCode::kAlreadyExists,
        ErrorCode::kFailedPrecondition, ErrorCode::kResourceExhausted, ErrorCode::kUnimplemented}) {
    EXPECT_EQ(ToAwsError(Error{code, "m"}).http_status, 400) << ErrorCodeName(code);
  }
}

TEST(AwsError, OnlyTransientAndInternalFailuresAre5xx) {
  EXPECT_EQ(ToAwsError(Unavailable("busy disk")).http_status, 503);
  EXPECT_EQ(ToAwsError(Internal("bug")).http_status, 500);
}

TEST(AwsError, SuccessIsA200WithTheBody) {
  http::ApiResponse r = JsonOk({{"EndpointArn", "a"}});
  EXPECT_EQ(r.http_status, 200);
  EXPECT_TRUE(r.error_type.empty());
  EXPECT_EQ(Body(r)["EndpointArn"], "a");
  EXPECT_EQ(JsonOk(nullptr).body, "{}");
}

}  // namespace
}  // namespace carve::server::sagemaker
