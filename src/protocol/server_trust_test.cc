// Pins and the plain-HTTP rule. The pins are checked against a real TLS listener in
// src/http/tls_test.cc (the server may depend on this library, not the reverse).
#include "protocol/server_trust.h"

#include <gtest/gtest.h>

namespace carve::protocol {
namespace {

// A self-signed P-256 certificate made with `openssl req -x509`, and its pin as the OpenSSL
// command line computes it, independently of carve:
//   openssl x509 -pubkey -noout | openssl pkey -pubin -outform der | openssl dgst -sha256
constexpr const char* kCertificate = R"(-----BEGIN CERTIFICATE-----
MIIB7zCCAZWgAwIBAgIUZTS7LrBz2oSRbotaKzlqLVof3EQwCgYIKoZIzj0EAwIw
LDEOMAwGA1UECgwFY2FydmUxGjAYBgNVBAMMEWNhcnZlIHNlcnZlciB0ZXN0MB4X
DTI2MTIwNDE0NTUzNloXDTI5MDMwODE0NTUzNlowLDEOMAwGA1UECgwFY2FydmUx
GjAYBgNVBAMMEWNhcnZlIHNlcnZlciB0ZXN0MFkwEwYHKoZIzj0CAQYIKoZIzj0D
AQcDQgAEV6D/VfTme1dmuMBkWs7tAUm29eNUBgn/BBCu3OQJjY/u/YQcZHjIMkYR
4dqN6CMofFv8Ai/hGJ6Fu2+8Py73b6OBlDCBkTAdBgNVHQ4EFgQUwo/u1yr/eBFP
aKajNqiWUEwaO7AwDAYDVR0TAQH/BAIwADATBgNVHSUEDDAKBggrBgEFBQcDATAs
BgNVHREEJTAjgglsb2NhbGhvc3SHBH8AAAGHEAAAAAAAAAAAAAAAAAAAAAEwHwYD
VR0jBBgwFoAUwo/u1yr/eBFPaKajNqiWUEwaO7AwCgYIKoZIzj0EAwIDSAAwRQIg
L3uQ2/uxieOi2Lt/rXO2zfDA2xWkJSFf4F6bsUgUBFoCIQDQJ3RqBhCiiZV7/QGg
PGfd/zWwfmXYWRLaFwq1Q1cEXw==
-----END CERTIFICATE-----
)";
constexpr const char* kPin =
    "sha256:117a5f52ed53cdd32d020081c0fafa3b9db02b7c7242c1d7328d4c0ec991fe72";

TEST(CertificatePin, IsTheSha256OfTheDerPublicKeyAsOpenSslComputesIt) {
  auto pin = PemCertificatePin(kCertificate);
  ASSERT_TRUE(pin.has_value()) << pin.error().message;
  EXPECT_EQ(*pin, kPin);
}

TEST(CertificatePin, TextWithoutACertificateIsRefused) {
  auto pin = PemCertificatePin("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n");
  ASSERT_FALSE(pin.has_value());
  EXPECT_EQ(pin.error().code, ErrorCode::kInvalidArgument);
}

TEST(ParsePin, AcceptsEitherCaseAndWritesLowerCase) {
  std::string upper = "SHA256:117A5F52ED53CDD32D020081C0FAFA3B9DB02B7C7242C1D7328D4C0EC991FE72";
  auto pin = ParsePin(upper);
  ASSERT_TRUE(pin.has_value()) << pin.error().message;
  EXPECT_EQ(*pin, kPin);
}

TEST(ParsePin, RefusesAnythingButSha256AndSixtyFourHexDigits) {
  const std::string hex(kPin + 7);
  for (const std::string& bad : std::vector<std::string>{
           hex, "sha1:" + hex, "sha256:" + hex.substr(1), "sha256:" + hex + "0",
           "sha256:" + hex.substr(1) + "g", std::string()}) {
    auto pin = ParsePin(bad);
    ASSERT_FALSE(pin.has_value()) << bad;
    EXPECT_NE(pin.error().message.find("expected sha256: and 64 hex digits"), std::string::npos);
  }
}

TEST(ParsePins, SplitsCommasDropsRepeatsAndMayBeEmpty) {
  const std::string other = "sha256:" + std::string(64, 'a');
  auto pins = ParsePins(std::string(kPin) + ", " + other + "," + kPin);
  ASSERT_TRUE(pins.has_value()) << pins.error().message;
  EXPECT_EQ(*pins, (std::vector<std::string>{kPin, other}));
  auto none = ParsePins("");
  ASSERT_TRUE(none.has_value());
  EXPECT_TRUE(none->empty());
  EXPECT_FALSE(ParsePins(std::string(kPin) + ",nope").has_value());
}

TEST(IsLoopbackUrl, KnowsThisMachinesAddressesFromOthers) {
  for (const char* local :
       {"http://127.0.0.1:8080", "http://127.3.4.5:1/x", "http://[::1]:80", "http://localhost:8080",
        "https://LOCALHOST", "http://[::ffff:127.0.0.1]:9"}) {
    EXPECT_TRUE(IsLoopbackUrl(local)) << local;
  }
  for (const char* remote : {"http://10.0.0.5:8080", "http://carve.example:8080", "http://[::]:80",
                             "http://0.0.0.0:8080", "http://128.0.0.1:80",
                             "http://localhost.evil.example:80", "http://127.0.0.1@evil:80"}) {
    EXPECT_FALSE(IsLoopbackUrl(remote)) << remote;
  }
}

TEST(RefuseSecretInClear, RefusesPlainHttpToAnotherMachineNamingTheWaysOut) {
  Status s =
      RefuseSecretInClear("http://10.0.0.5:8080", "the join token", "--insecure-plain-http", false);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_NE(s.error().message.find("the join token would cross the network in the clear"),
            std::string::npos)
      << s.error().message;
  EXPECT_NE(s.error().message.find("--insecure-plain-http"), std::string::npos);
  EXPECT_TRUE(RefuseSecretInClear("https://10.0.0.5:8080", "x", "--f", false).ok());
  EXPECT_TRUE(RefuseSecretInClear("http://127.0.0.1:8080", "x", "--f", false).ok());
  EXPECT_TRUE(RefuseSecretInClear("http://10.0.0.5:8080", "x", "--f", true).ok());
}

}  // namespace
}  // namespace carve::protocol
