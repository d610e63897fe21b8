// LoadClientCredentials: the agent's and the CLI's reading of the shared-credentials file. The
// client's signatures are verified against the real HttpServer in
// src/http/signed_client_test.cc (the server may depend on this library, not the reverse).
#include "protocol/signed_client.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace carve::protocol {
namespace {

TEST(LoadClientCredentials, ReadsAProfileAndNamesAMissingOne) {
  const auto path =
      std::filesystem::temp_directory_path() / ("carve-creds-" + std::to_string(::getpid()));
  std::ofstream(path) << "[default]\naws_access_key_id = AKIAALICE0000000000A\n"
                         "aws_secret_access_key = s3cr3t\n";
  auto ok = LoadClientCredentials(path.string());
  ASSERT_TRUE(ok.has_value()) << ok.error().message;
  EXPECT_EQ(ok->access_key_id, "AKIAALICE0000000000A");
  EXPECT_EQ(ok->secret_access_key, "s3cr3t");
  auto missing = LoadClientCredentials(path.string(), "ops");
  ASSERT_FALSE(missing.has_value());
  EXPECT_NE(missing.error().message.find("[ops]"), std::string::npos);
  std::filesystem::remove(path);
}

// Whoever answers an agent (a stolen address, a proxy) cannot crash it with a deep reply, and
// repeated keys are not half-read (issue 35).
TEST(ParseJsonReply, RefusesDeepRepliesAndDuplicateKeysNamingTheRule) {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  auto r = ParseJsonReply("/v1/agent/status", HttpReply{200, deep, {}});
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().message,
            "/v1/agent/status: the reply nests arrays and objects deeper than 64 levels (the JSON "
            "depth limit)");
  r = ParseJsonReply("/v1/agent/status", HttpReply{200, R"({"a":1,"a":2})", {}});
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message.find("the reply has the key \"a\" more than once"),
            std::string::npos);
  r = ParseJsonReply("/v1/agent/status", HttpReply{400, deep, {}});  // An error's message.
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, ErrorCode::kInvalidArgument);
  EXPECT_LT(r.error().message.size(), 300u);
}

}  // namespace
}  // namespace carve::protocol
