#include "aws/bearer_token.h"

#include <gtest/gtest.h>

#include "common/base64.h"
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
    return VerifyBearerToken(token, creds_, clock_, service, "us-east-1");
  }
  static std::string FailureType(const std::variant<VerifiedBearer, AuthFailure>& v) {
    return std::holds_alternative<AuthFailure>(v) ? std::get<AuthFailure>(v).type : "ok";
  }
  static int HttpStatusOf(const std::variant<VerifiedBearer, AuthFailure>& v) {
    return std::holds_alternative<AuthFailure>(v) ? std::get<AuthFailure>(v).http_status : 200;
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
  EXPECT_EQ(std::get<VerifiedBearer>(v).id.size(), 64u);
}

// A revocation names a token by its id: another token of the same key and endpoint, minted a
// second later, has another.
TEST_F(BearerTokenTest, TwoTokensOfOneKeyHaveTwoIds) {
  BearerTokenSpec s = Spec();
  s.endpoint = "ep";
  auto first = Verify(*MakeBearerToken(s));
  s.now_unix_seconds += 1;
  auto second = Verify(*MakeBearerToken(s));
  ASSERT_TRUE(std::holds_alternative<VerifiedBearer>(first));
  ASSERT_TRUE(std::holds_alternative<VerifiedBearer>(second));
  EXPECT_NE(std::get<VerifiedBearer>(first).id, std::get<VerifiedBearer>(second).id);
}

// A token carries a region in its credential scope, as a signature does: the server's only.
TEST_F(BearerTokenTest, ATokenScopedToAnotherRegionIsRefused) {
  BearerTokenSpec s = Spec();
  s.region = "eu-west-1";
  auto v = Verify(*MakeBearerToken(s));
  ASSERT_EQ(FailureType(v), "InvalidSignatureException");
  EXPECT_EQ(HttpStatusOf(v), 403);
  EXPECT_EQ(std::get<AuthFailure>(v).message,
            "Credential should be scoped to a valid region, not 'eu-west-1'. This server's region "
            "is 'us-east-1'.");
  EXPECT_EQ(
      FailureType(VerifyBearerToken(*MakeBearerToken(s), creds_, clock_, "sagemaker", "eu-west-1")),
      "ok");
}

// Only the bytes a generator writes are a token: nothing the signature does not cover may be
// added or re-encoded, so a token has one spelling (and one revocation covers it).
TEST_F(BearerTokenTest, ATokenWithTrailingOrUnsignedBytesIsRefused) {
  const std::string token = *MakeBearerToken(Spec());
  ASSERT_EQ(FailureType(Verify(token)), "ok");
  const std::string prefix = "carve-api-key-";
  const std::string url = *Base64Decode(token.substr(prefix.size()));
  ASSERT_TRUE(url.ends_with("&Version=1")) << url;
  // The last base64 digit before "=" padding carries bits the decoder drops: set one. (With
  // or without Version=1, one of the two spellings of the request needs padding.)
  const std::string padded = url.size() % 3 != 0 ? url : url.substr(0, url.size() - 10);
  std::string noncanonical = Base64Encode(padded);
  static constexpr std::string_view kDigits =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  const size_t last = noncanonical.find_last_not_of('=');
  noncanonical[last] = kDigits[kDigits.find(noncanonical[last]) ^ 1];
  ASSERT_EQ(*Base64Decode(noncanonical), padded);
  noncanonical = prefix + noncanonical;
  std::vector<std::string> bad = {
      token + "A",                                     // One byte appended.
      token + "AAAA",                                  // Three NULs appended once decoded.
      token + "=",                                     // Padding appended.
      " " + token,                                     // Not a prefix character.
      "Carve-api-key-" + token.substr(prefix.size()),  // Upper case in the prefix.
      prefix + Base64Encode(url + "&Version=1"),       // Version twice.
      prefix + Base64Encode(url.substr(0, url.size() - 1) + "2"),  // Version=2.
      prefix + Base64Encode(url + "&X-Extra=1"),  // A parameter after the signature.
      prefix + Base64Encode(url + "\n"),          // A byte outside printable ASCII.
      prefix + Base64Encode(url + "&"),           // An empty parameter.
      noncanonical,                               // Another spelling of a request.
  };
  for (const std::string& t : bad) {
    auto v = Verify(t);
    EXPECT_EQ(FailureType(v), "UnrecognizedClientException") << t;
    EXPECT_EQ(HttpStatusOf(v), 401) << t;
  }
  // Without the optional Version=1 it is still the same, valid token.
  EXPECT_EQ(FailureType(Verify(prefix + Base64Encode(url.substr(0, url.size() - 10)))), "ok");
  // The prefix is any run of a-z, 0-9 and '-', both ends of each range included.
  const std::string rest = token.substr(prefix.size());
  EXPECT_EQ(FailureType(Verify("zz09-api-key-" + rest)), "ok");
  EXPECT_EQ(FailureType(Verify("az-" + rest)), "ok");
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
  EXPECT_NE(FailureType(VerifyBearerToken(tampered, creds_, fresh, "sagemaker", "us-east-1")),
            "ok");

  EXPECT_EQ(FailureType(
                VerifyBearerToken(*MakeBearerToken(Spec()), creds_, fresh, "bedrock", "us-east-1")),
            "InvalidSignatureException");
  Credentials unknown({Credential{"default", "AKIDOTHER", "x", "999999999999"}});
  const auto by_unknown_key =
      VerifyBearerToken(*MakeBearerToken(Spec()), unknown, fresh, "sagemaker", "us-east-1");
  EXPECT_EQ(FailureType(by_unknown_key), "UnrecognizedClientException");
  EXPECT_EQ(HttpStatusOf(by_unknown_key), 403);  // A well-formed token of a key nobody holds.
  BearerTokenSpec longer = Spec();
  longer.expires_seconds = kMaxBearerTokenSeconds + 1;
  EXPECT_FALSE(MakeBearerToken(longer).has_value());
  EXPECT_EQ(
      FailureType(VerifyBearerToken("carve-api-key-!!!!", creds_, fresh, "sagemaker", "us-east-1")),
      "UnrecognizedClientException");
}

TEST_F(BearerTokenTest, ATokenDatedInTheFutureIsRefused) {
  BearerTokenSpec s = Spec();
  s.now_unix_seconds = kNow + 3600;
  EXPECT_EQ(FailureType(Verify(*MakeBearerToken(s))), "InvalidSignatureException");
}

}  // namespace
}  // namespace carve::aws
