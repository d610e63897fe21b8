#include "aws/bearer_token.h"

#include <gtest/gtest.h>

#include "common/fake_clock.h"

namespace carve::aws {
namespace {

constexpr int64_t kNow = 1'796'151'600;  // 2026-12-01T19:00:00Z

class BearerTokenTest : public ::testing::Test {
 protected:
  BearerTokenTest() : clock_(kNow * 1000) {}
  BearerTokenSpec Spec() {
    BearerTokenSpec s;
    s.access_key_id = "AKIDEXAMPLE";
    s.secret_access_key = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";
    s.host = "127.0.0.1:8080";
    s.now_unix_seconds = kNow;
    s.expires_seconds = 3600;
    return s;
  }
  std::variant<VerifiedBearer, AuthFailure> Verify(const std::string& token,
                                                   std::string_view service = "sagemaker") {
    return VerifyBearerToken(token, creds_, clock_, service);
  }
  static std::string FailureType(const std::variant<VerifiedBearer, AuthFailure>& v) {
    return std::holds_alternative<AuthFailure>(v) ? std::get<AuthFailure>(v).type : "ok";
  }

  FakeClock clock_;
  Credentials creds_{{Credential{"default", "AKIDEXAMPLE",
                                 "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "123456789012"}}};
};

TEST_F(BearerTokenTest, AMintedTokenVerifiesToItsAccountAndEndpoint) {
  BearerTokenSpec s = Spec();
  s.endpoint = "ep";
  auto token = MakeBearerToken(s);
  ASSERT_TRUE(token.has_value()) << token.error().message;
  EXPECT_TRUE(token->starts_with("carve-api-key-"));
  auto v = Verify(*token);
  ASSERT_TRUE(std::holds_alternative<VerifiedBearer>(v)) << std::get<AuthFailure>(v).message;
  EXPECT_EQ(std::get<VerifiedBearer>(v).caller.account_id, "123456789012");
  EXPECT_EQ(std::get<VerifiedBearer>(v).endpoint, "ep");
  EXPECT_EQ(std::get<VerifiedBearer>(v).expires_at_unix_seconds, kNow + 3600);
}

TEST_F(BearerTokenTest, ExpiredTamperedForeignAndOverlongTokensAreRefused) {
  const std::string token = *MakeBearerToken(Spec());
  clock_.Advance(std::chrono::seconds(3601));
  EXPECT_EQ(FailureType(Verify(token)), "ExpiredTokenException");

  FakeClock fresh(kNow * 1000);
  BearerTokenSpec s = Spec();
  s.endpoint = "mine";
  const std::string scoped = *MakeBearerToken(s);
  // Change one character of the encoded request: it no longer verifies.
  std::string tampered = scoped;
  tampered[tampered.size() - 8] = tampered[tampered.size() - 8] == 'A' ? 'B' : 'A';
  EXPECT_NE(FailureType(VerifyBearerToken(tampered, creds_, fresh, "sagemaker")), "ok");

  EXPECT_EQ(FailureType(VerifyBearerToken(*MakeBearerToken(Spec()), creds_, fresh, "bedrock")),
            "InvalidSignatureException");
  Credentials unknown({Credential{"default", "AKIDOTHER", "x", "999999999999"}});
  EXPECT_EQ(FailureType(VerifyBearerToken(*MakeBearerToken(Spec()), unknown, fresh, "sagemaker")),
            "UnrecognizedClientException");
  BearerTokenSpec longer = Spec();
  longer.expires_seconds = kMaxBearerTokenSeconds + 1;
  EXPECT_FALSE(MakeBearerToken(longer).has_value());
  EXPECT_EQ(FailureType(VerifyBearerToken("carve-api-key-!!!!", creds_, fresh, "sagemaker")),
            "InvalidSignatureException");
}

TEST_F(BearerTokenTest, ATokenDatedInTheFutureIsRefused) {
  BearerTokenSpec s = Spec();
  s.now_unix_seconds = kNow + 3600;
  EXPECT_EQ(FailureType(Verify(*MakeBearerToken(s))), "InvalidSignatureException");
}

}  // namespace
}  // namespace carve::aws
