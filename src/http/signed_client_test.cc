// protocol::SignedClient against the real HttpServer: its signatures verify, the account comes
// through, and error statuses map to error codes with the server's message.
#include "protocol/signed_client.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include "aws/credentials.h"
#include "http/http_server.h"
#include "http/metrics.h"

namespace carve::http {
namespace {

const aws::Credential kAlice{"default", "AKIAALICE0000000000A",
                             "alice-secret-0000000000000000000000000000", "111111111111"};

class SignedClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = std::make_unique<HttpServer>(HttpServerOptions{}, creds_, metrics_);
    server_->AddRoute("POST", "/v1/echo/{name}", kForTenants, [](const NativeRequest& r) {
      NativeResponse out;
      out.body = nlohmann::json{
          {"account", r.account_id},
          {"name", r.path_params.at("name")},
          {"body",
           r.body}}.dump();
      return out;
    });
    server_->AddRoute("GET", "/v1/missing", kForTenants, [](const NativeRequest&) {
      return NativeResponse{404, R"({"error":"no such thing"})"};
    });
    auto port = server_->Start("127.0.0.1", 0);
    ASSERT_TRUE(port.has_value());
    url_ = "http://127.0.0.1:" + std::to_string(*port);
  }
  aws::Credentials creds_{{kAlice}};
  MetricsRegistry metrics_;
  std::unique_ptr<HttpServer> server_;
  std::string url_;
};

TEST_F(SignedClientTest, SignedRequestCarriesTheAccount) {
  protocol::SignedClient client(url_, {kAlice.access_key_id, kAlice.secret_access_key});
  nlohmann::json body{{"x", 1}};
  auto r = client.Json("POST", "/v1/echo/a%20b?after=3&wait_ms=0", &body);
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_EQ((*r)["account"], "111111111111");
  EXPECT_EQ((*r)["name"], "a b");
  EXPECT_EQ(nlohmann::json::parse((*r)["body"].get<std::string>()), body);
}

TEST_F(SignedClientTest, WrongSecretIsRefused) {
  protocol::SignedClient client(url_, {kAlice.access_key_id, "not-the-secret"});
  auto r = client.Json("POST", "/v1/echo/x");
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_NE(r.error().message.find("access denied"), std::string::npos);
}

TEST_F(SignedClientTest, ErrorStatusCarriesTheServersMessage) {
  protocol::SignedClient client(url_, {kAlice.access_key_id, kAlice.secret_access_key});
  auto r = client.Json("GET", "/v1/missing");
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, ErrorCode::kNotFound);
  EXPECT_EQ(r.error().message, "no such thing");
}

TEST_F(SignedClientTest, UnreachableServerIsUnavailable) {
  server_->Stop();
  server_->Wait();
  protocol::SignedClient client(url_, {kAlice.access_key_id, kAlice.secret_access_key});
  auto r = client.Json("GET", "/v1/missing", nullptr, std::chrono::milliseconds(500));
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, ErrorCode::kUnavailable);
}

}  // namespace
}  // namespace carve::http
