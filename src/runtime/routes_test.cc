// The runtime routes on a real HttpServer with SigV4 on: signed calls are routed with the
// caller's account, unsigned ones are refused, and an endpoint of another account is not found.
#include <gtest/gtest.h>
#include <httplib.h>

#include <condition_variable>
#include <ctime>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

#include "aws/sigv4_test_util.h"
#include "runtime/fake_copy_directory.h"
#include "runtime/router.h"
#include "runtime/test_copy.h"

namespace carve::runtime {
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
    return PostTo(port_, path, who);
  }
  static httplib::Result PostTo(int port, const std::string& path, const aws::Credential* who) {
    const std::string host = "127.0.0.1:" + std::to_string(port);
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
    httplib::Client cli("127.0.0.1", port);
    cli.set_read_timeout(20, 0);
    return cli.Post(path.c_str(), h, body, "application/json");
  }

  TestCopy copy_{[](const httplib::Request& q, httplib::Response& s) {
    s.set_content("echo:" + q.body, "text/plain");
  }};
  FakeCopyDirectory dir_;
  http::MetricsRegistry metrics_;
  Router router_{dir_, metrics_, RouterOptions{}};
  aws::Credentials creds_{{kAlice, kBob}};
  http::HttpServer server_{http::HttpServerOptions{}, creds_, metrics_};
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

// InvokeEndpoint holds no worker thread while its copy works (issue 14): a server with 2 workers
// has 12 invocations in flight at once. The copy answers none until all 12 have reached it, so
// a router that parked a worker per invocation would have only 2 there and each would get the
// copy's "not together" answer after its 5 s wait.
TEST_F(RoutesTest, InvocationsInFlightDoNotHoldWorkerThreads) {
  constexpr int kInFlight = 12;
  std::mutex mu;
  std::condition_variable all_here;
  int arrived = 0;
  TestCopy gathering{[&](const httplib::Request&, httplib::Response& s) {
    std::unique_lock lock(mu);
    ++arrived;
    all_here.notify_all();
    const bool together =
        all_here.wait_for(lock, std::chrono::seconds(5), [&] { return arrived >= kInFlight; });
    s.set_content(together ? "together" : "not together", "text/plain");
  }};
  RouteInfo route;
  route.variant = "AllTraffic";
  route.component = "ic-a";
  route.copies = {{"slow", gathering.address()}};
  FakeCopyDirectory dir;
  dir.SetRoute(kAlice.account_id, "ep", route);
  http::MetricsRegistry metrics;
  Router router{dir, metrics, RouterOptions{}};
  http::HttpServerOptions options;
  options.threads = 2;
  http::HttpServer server{options, creds_, metrics};
  RegisterRuntimeRoutes(server, router);
  auto port = server.Start("127.0.0.1", 0);
  ASSERT_TRUE(port.has_value());

  std::vector<std::thread> clients;
  std::vector<std::string> answers(kInFlight);
  for (int i = 0; i < kInFlight; ++i) {
    clients.emplace_back([&, i] {
      auto res = PostTo(*port, "/endpoints/ep/invocations", &kAlice);
      answers[static_cast<size_t>(i)] =
          res ? std::to_string(res->status) + " " + res->body : "no answer";
    });
  }
  for (auto& t : clients) t.join();
  for (const std::string& a : answers) EXPECT_EQ(a, "200 together");
  server.Stop();
}

}  // namespace
}  // namespace carve::runtime
