// The runtime routes on a real HttpServer with SigV4 on: signed calls are routed with the
// caller's account, unsigned ones are refused, and an endpoint of another account is not found.
#include <gtest/gtest.h>
#include <httplib.h>

#include <ctime>
#include <nlohmann/json.hpp>

#include "aws/sigv4_test_util.h"
#include "server/runtime/fake_copy_directory.h"
#include "server/runtime/router.h"
#include "server/runtime/test_copy.h"

namespace carve::server::runtime {
namespace {

const aws::Credential kAlice{"default", "AKIAALICE0000000000A",
                             "alice-secret-0000000000000000000000000000", "111111111111"};
const aws::Credential kBob{"bob", "AKIABOB00000000000BB",
                           "bob-secret-00000000000000000000000000000000", "222222222222"};

class RoutesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    RouteInfo route;
    route.variant = "AllTraffic";
    route.component = "ic-a";
    route.copies = {{"c1", copy_.address()}};
    dir_.SetRoute(kAlice.account_id, "ep", route);
    RegisterRuntimeRoutes(server_, router_);
    auto port = server_.Start("127.0.0.1", 0);
    ASSERT_TRUE(port.has_value());
    port_ = *port;
  }

  httplib::Result Post(const std::string& path, const aws::Credential* who) {
    const std::string host = "127.0.0.1:" + std::to_string(port_);
    const std::string body = R"({"inputs":"x"})";
    aws::SigV4Request r{"POST",
                        path,
                        "",
                        {{"Host", host},
                         {"Content-Type", "application/json"},
                         {"X-Amzn-SageMaker-Inference-Component", "ic-a"}},
                        body};
    if (who != nullptr) {
      aws::TestSigner signer{who->access_key_id, who->secret_access_key};
      signer.Sign(r, aws::sigv4::FormatAmzDate(std::time(nullptr)));
    }
    httplib::Headers h;
    for (const auto& [k, v] : r.headers) {
      if (k != "Host" && k != "Content-Type") h.emplace(k, v);
    }
    httplib::Client cli("127.0.0.1", port_);
    return cli.Post(path.c_str(), h, body, "application/json");
  }

  TestCopy copy_{[](const httplib::Request& q, httplib::Response& s) {
    s.set_content("echo:" + q.body, "text/plain");
  }};
  FakeCopyDirectory dir_;
  MetricsRegistry metrics_;
  Router router_{dir_, metrics_, RouterOptions{}};
  aws::Credentials creds_{{kAlice, kBob}};
  HttpServer server_{HttpServerOptions{}, creds_, metrics_};
  int port_ = 0;
};

TEST_F(RoutesTest, ASignedInvocationIsRoutedToTheCallersEndpoint) {
  auto res = Post("/endpoints/ep/invocations", &kAlice);
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200) << res->body;
  EXPECT_EQ(res->body, R"(echo:{"inputs":"x"})");
  EXPECT_EQ(res->get_header_value("x-Amzn-Invoked-Production-Variant"), "AllTraffic");
}

TEST_F(RoutesTest, AnUnsignedInvocationIsRefused) {
  auto res = Post("/endpoints/ep/invocations", nullptr);
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 403);
  EXPECT_EQ(copy_.hits(), 0);
}

TEST_F(RoutesTest, AnotherAccountsEndpointIsNotFound) {
  auto res = Post("/endpoints/ep/invocations", &kBob);
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 400);
  EXPECT_EQ(res->get_header_value("X-Amzn-ErrorType"), "ValidationError");
  EXPECT_EQ(nlohmann::json::parse(res->body)["Message"],
            "Endpoint ep of account 222222222222 not found.");
  EXPECT_EQ(copy_.hits(), 0);
}

}  // namespace
}  // namespace carve::server::runtime
