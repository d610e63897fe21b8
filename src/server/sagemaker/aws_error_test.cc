#include "server/sagemaker/aws_error.h"

#include <gtest/gtest.h>

namespace carve::server::sagemaker {
namespace {

nlohmann::json Body(const ApiResponse& r) { return nlohmann::json::parse(r.body); }

TEST(AwsError, NotFoundIsAValidationExceptionSoTheDeletedWaiterWorks) {
  ApiResponse r = ToAwsError(NotFound("Could not find endpoint \"arn\"."));
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
  ApiResponse r = ToAwsError(ResourceExhausted("no room"));
  EXPECT_EQ(r.http_status, 400);
  EXPECT_EQ(r.error_type, "ResourceLimitExceeded");
}

TEST(AwsError, WrongStateIsResourceInUse) {
  ApiResponse r = ToAwsError(FailedPrecondition("busy"));
  EXPECT_EQ(r.http_status, 400);
  EXPECT_EQ(r.error_type, "ResourceInUse");
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
  ApiResponse r = JsonOk({{"EndpointArn", "a"}});
  EXPECT_EQ(r.http_status, 200);
  EXPECT_TRUE(r.error_type.empty());
  EXPECT_EQ(Body(r)["EndpointArn"], "a");
  EXPECT_EQ(JsonOk(nullptr).body, "{}");
}

}  // namespace
}  // namespace carve::server::sagemaker
