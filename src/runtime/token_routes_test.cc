// Revoking one endpoint bearer token on a real HttpServer: the token is refused on the
// OpenAI-compatible route from the next request, another token of the same key still works, and
// only the token's own account may revoke it.
#include "runtime/token_routes.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <chrono>
#include <ctime>
#include <nlohmann/json.hpp>

#include "aws/sigv4_test_util.h"
#include "http/scripted_server.h"
#include "runtime/fake_copy_directory.h"
#include "runtime/router.h"
#include "store/fake_store.h"

namespace carve::runtime {
namespace {

using http::ReadRequest;
using http::ScriptedServer;
using http::WriteAll;

using nlohmann::json;

const aws::Credential kAlice{"default", "AKIAALICE0000000000A",
                             "alice-secret-0000000000000000000000000000", "111111111111"};
const aws::Credential kBob{"bob", "AKIABOB00000000000BB",
                           "bob-secret-00000000000000000000000000000000", "222222222222"};

// A copy that answers every chat completion.
void Answer(int fd, int) {
  ReadRequest(fd);
  WriteAll(fd,
           "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n"
           "Connection: close\r\n\r\n{}");
}

class TokenRoutesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    RouteInfo route;
    route.variant = "AllTraffic";
    route.component = "ic";
    route.copies = {{"c1", copy_.address()}};
    dir_.SetRoute(kAlice.account_id, "ep", route);
    http::HttpServerOptions options;
    options.bearer_token_revoked = [this](std::string_view id) {
      return revocations_.IsRevoked(id);
    };
    server_ = std::make_unique<http::HttpServer>(options, creds_, metrics_);
    RegisterRuntimeRoutes(*server_, router_);
    RegisterTokenRoutes(*server_, revocations_, {.credentials = &creds_});
    auto port = server_->Start("127.0.0.1", 0);
    ASSERT_TRUE(port.has_value());
    port_ = *port;
  }

  std::string Mint(const aws::Credential& who, int64_t at_offset_s = 0) {
    aws::BearerTokenSpec s;
    s.access_key_id = who.access_key_id;
    s.secret_access_key = who.secret_access_key;
    s.host = "127.0.0.1:" + std::to_string(port_);
    s.now_unix_seconds = std::time(nullptr) + at_offset_s;
    s.expires_seconds = 3600;
    s.endpoint = "ep";
    return *aws::MakeBearerToken(s);
  }

  int Chat(const std::string& token) {
    httplib::Client c("127.0.0.1", port_);
    auto r =
        c.Post("/endpoints/ep/openai/v1/chat/completions", {{"Authorization", "Bearer " + token}},
               R"({"model":"ic","messages":[]})", "application/json");
    return r ? r->status : -1;
  }

  // POST /v1/tokens/revoke, signed by `who`: (status, body).
  std::pair<int, json> Revoke(const aws::Credential& who, const std::string& token) {
    const std::string body = json{{"token", token}}.dump();
    aws::SigV4Request r{
        "POST",
        "/v1/tokens/revoke",
        "",
        {{"Host", "127.0.0.1:" + std::to_string(port_)}, {"Content-Type", "application/json"}},
        body};
    aws::TestSigner{who.access_key_id, who.secret_access_key}.Sign(
        r, aws::sigv4::FormatAmzDate(std::time(nullptr)));
    httplib::Headers h;
    for (const auto& [k, v] : r.headers) {
      if (k != "Host" && k != "Content-Type") h.emplace(k, v);
    }
    httplib::Client c("127.0.0.1", port_);
    auto res = c.Post("/v1/tokens/revoke", h, body, "application/json");
    if (!res) return {-1, json()};
    return {res->status, json::parse(res->body, nullptr, false)};
  }

  ScriptedServer copy_{Answer};
  FakeCopyDirectory dir_;
  http::MetricsRegistry metrics_;
  Router router_{dir_, metrics_, RouterOptions{}};
  aws::Credentials creds_{{kAlice, kBob}};
  store::FakeStore store_;
  BearerRevocations revocations_{store_, SystemClock::Get()};
  std::unique_ptr<http::HttpServer> server_;
  int port_ = 0;
};

TEST_F(TokenRoutesTest, ARevokedTokenIsRefusedAtOnceAndAnotherStillWorks) {
  const std::string first = Mint(kAlice);
  const std::string second = Mint(kAlice, -1);  // A second earlier: another signature.
  ASSERT_EQ(Chat(first), 200);
  ASSERT_EQ(Chat(second), 200);
  auto [status, body] = Revoke(kAlice, first);
  ASSERT_EQ(status, 200) << body.dump();
  EXPECT_EQ(body["revoked"], true);
  EXPECT_EQ(body["endpoint"], "ep");
  EXPECT_EQ(Chat(first), 401);
  EXPECT_EQ(Chat(second), 200);
}

TEST_F(TokenRoutesTest, AnotherAccountCannotRevokeAToken) {
  const std::string token = Mint(kAlice);
  auto [status, body] = Revoke(kBob, token);
  EXPECT_EQ(status, 403) << body.dump();
  EXPECT_EQ(body["code"], "AccessDeniedException");
  EXPECT_EQ(body.dump().find(kAlice.account_id), std::string::npos) << body.dump();
  EXPECT_EQ(revocations_.size(), 0u);
  EXPECT_EQ(Chat(token), 200);
}

TEST_F(TokenRoutesTest, BytesThatAreNotATokenAreRefusedAndNotRevoked) {
  const std::string token = Mint(kAlice);
  EXPECT_EQ(Chat(token + "A"), 401);
  auto [status, body] = Revoke(kAlice, token + "A");
  EXPECT_EQ(status, 400) << body.dump();
  EXPECT_EQ(revocations_.size(), 0u);
  auto [no_token, _] = Revoke(kAlice, "");
  EXPECT_EQ(no_token, 400);
  EXPECT_EQ(Chat(token), 200);
}

TEST_F(TokenRoutesTest, AnExpiredTokenHasNothingToRevoke) {
  aws::BearerTokenSpec s;
  s.access_key_id = kAlice.access_key_id;
  s.secret_access_key = kAlice.secret_access_key;
  s.host = "h";
  s.now_unix_seconds = std::time(nullptr) - 7200;
  s.expires_seconds = 60;
  auto [status, body] = Revoke(kAlice, *aws::MakeBearerToken(s));
  EXPECT_EQ(status, 200) << body.dump();
  EXPECT_EQ(body["revoked"], false);
  EXPECT_EQ(revocations_.size(), 0u);
}

}  // namespace
}  // namespace carve::runtime
