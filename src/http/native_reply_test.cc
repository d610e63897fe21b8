#include "http/native_reply.h"

#include <gtest/gtest.h>

namespace carve::http {
namespace {

TEST(NativeReply, MapsEveryCodeToOneStatus) {
  EXPECT_EQ(HttpStatusFor(ErrorCode::kInvalidArgument), 400);
  EXPECT_EQ(HttpStatusFor(ErrorCode::kNotFound), 404);
  EXPECT_EQ(HttpStatusFor(ErrorCode::kAlreadyExists), 409);
  EXPECT_EQ(HttpStatusFor(ErrorCode::kFailedPrecondition), 409);
  EXPECT_EQ(HttpStatusFor(ErrorCode::kResourceExhausted), 409);
  EXPECT_EQ(HttpStatusFor(ErrorCode::kUnavailable), 503);
  EXPECT_EQ(HttpStatusFor(ErrorCode::kUnimplemented), 501);
  EXPECT_EQ(HttpStatusFor(ErrorCode::kInternal), 500);
}

TEST(NativeReply, AnErrorBodyCarriesTheMessageAndTheCodeName) {
  NativeResponse r = ErrorReply(ResourceExhausted("needs 2 x ml.g5.xlarge"));
  EXPECT_EQ(r.http_status, 409);
  auto body = nlohmann::json::parse(r.body);
  EXPECT_EQ(body["error"], "needs 2 x ml.g5.xlarge");
  EXPECT_EQ(body["code"], std::string(ErrorCodeName(ErrorCode::kResourceExhausted)));
}

TEST(NativeReply, AnswerGivesTheValueOrTheError) {
  EXPECT_EQ(Answer(Result<nlohmann::json>(nlohmann::json{{"a", 1}})).http_status, 200);
  EXPECT_EQ(Answer(Result<nlohmann::json>(NotFound("x"))).http_status, 404);
}

}  // namespace
}  // namespace carve::http
