// The dashboard's routes on a real HttpServer (port 0), called with and without signatures.
#include "server/ui/ui_routes.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <ctime>
#include <nlohmann/json.hpp>

#include "aws/sigv4_test_util.h"
#include "common/fake_clock.h"
#include "server/ui/test_assets.h"

namespace carve::server::ui {
namespace {

using nlohmann::json;

const aws::Credential kAlice{"default", "AKIAALICE0000000000A",
                             "alice-secret-0000000000000000000000000000", "111111111111"};
const aws::Credential kBob{"bob", "AKIABOB00000000000BB",
                           "bob-secret-00000000000000000000000000000000", "222222222222"};

class UiRoutesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    runtime_ = &metrics_.AddCounter("carve_runtime_requests_total", "h",
                                    {"account", "endpoint", "component", "code"});
    card_ = &metrics_.AddGauge("carve_queue_card_core_allocated_percent", "h",
                               {"account", "queue", "node", "gpu"});
    UiOptions options;
    options.assets = TestAssets();
    options.clock = &clock_;
    dashboard_ = std::make_unique<Dashboard>(
        options, creds_, metrics_, [this](const http::ApiRequest& r) { return SageMaker(r); });
    dashboard_->Register(http_);
    auto port = http_.Start("127.0.0.1", 0);
    ASSERT_TRUE(port.has_value()) << port.error().message;
    port_ = *port;
  }

  // The SageMaker API as the dashboard sees it: Alice owns e/alice-c, Bob owns e/bob-c, and
  // both own shared/ic (an endpoint and a component of the same names in each account).
  http::ApiResponse SageMaker(const http::ApiRequest& r) {
    if (fail_sagemaker_) return http::ApiResponse{503, "{}", "ServiceUnavailable"};
    EXPECT_EQ(r.operation, "ListInferenceComponents");
    const std::string mine = r.account_id == kAlice.account_id ? "alice-c" : "bob-c";
    json body{{"InferenceComponents",
               json::array({{{"EndpointName", "e"}, {"InferenceComponentName", mine}},
                            {{"EndpointName", "shared"}, {"InferenceComponentName", "ic"}}})}};
    return http::ApiResponse{200, body.dump(), ""};
  }

  httplib::Result Get(const std::string& path, const aws::Credential* who) {
    aws::SigV4Request r{"GET", path, "", {{"Host", "127.0.0.1:" + std::to_string(port_)}}, ""};
    if (who != nullptr) {
      aws::TestSigner s;
      s.access_key = who->access_key_id;
      s.secret = who->secret_access_key;
      s.Sign(r, aws::sigv4::FormatAmzDate(std::time(nullptr)));
    }
    httplib::Headers headers(r.headers.begin(), r.headers.end());
    httplib::Client c("127.0.0.1", port_);
    return c.Get(path.c_str(), headers);
  }

  FakeClock clock_;
  aws::Credentials creds_{{kAlice, kBob}};
  http::MetricsRegistry metrics_;
  http::Counter* runtime_ = nullptr;
  http::Gauge* card_ = nullptr;
  bool fail_sagemaker_ = false;
  http::HttpServer http_{http::HttpServerOptions{}, creds_, metrics_};
  std::unique_ptr<Dashboard> dashboard_;
  int port_ = 0;
};

TEST_F(UiRoutesTest, RequestsWithoutASignatureGetNothingFromTheDataRoutes) {
  for (const char* path : {"/v1/ui/whoami", "/v1/ui/metrics", "/v1/catalog"}) {
    auto r = Get(path, nullptr);
    ASSERT_TRUE(r) << path;
    EXPECT_EQ(r->status, 403) << path;
    EXPECT_EQ(r->body.find("account"), std::string::npos) << path << ": " << r->body;
    EXPECT_EQ(json::parse(r->body)["__type"], "MissingAuthenticationToken") << path;
  }
}

TEST_F(UiRoutesTest, ServesThePageWithoutCredentials) {
  auto r = Get("/ui/", nullptr);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "<!doctype html><p>test dashboard</p>");
  EXPECT_NE(r->get_header_value("Content-Security-Policy").find("default-src 'none'"),
            std::string::npos);
}

TEST_F(UiRoutesTest, WhoAmISaysWhoSigned) {
  auto r = Get("/v1/ui/whoami", &kBob);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  json j = json::parse(r->body);
  EXPECT_EQ(j["account_id"], kBob.account_id);
  EXPECT_EQ(j["access_key_id"], kBob.access_key_id);
  EXPECT_EQ(j["profile"], "bob");
  EXPECT_EQ(j["server_time_ms"], clock_.UnixMillis());
  EXPECT_EQ(r->body.find(kBob.secret_access_key), std::string::npos);
}

TEST_F(UiRoutesTest, MetricsShowOnlyTheCallersComponentsAndQueues) {
  const std::string& alice = kAlice.account_id;
  const std::string& bob = kBob.account_id;
  runtime_->Increment({alice, "e", "alice-c", "200"}, 10);
  runtime_->Increment({bob, "e", "bob-c", "200"}, 99);
  card_->Set({alice, "alice-q", "n0", "0"}, 30);
  card_->Set({bob, "bob-q", "n1", "0"}, 60);
  ASSERT_TRUE(dashboard_->SampleNow().ok());
  clock_.Advance(std::chrono::seconds(5));
  runtime_->Increment({alice, "e", "alice-c", "200"}, 10);
  runtime_->Increment({alice, "shared", "ic", "200"}, 5);
  runtime_->Increment({bob, "shared", "ic", "200"}, 40);
  ASSERT_TRUE(dashboard_->SampleNow().ok());

  auto r = Get("/v1/ui/metrics", &kAlice);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  json j = json::parse(r->body);
  ASSERT_EQ(j["components"].size(), 2u);
  EXPECT_EQ(j["components"][0]["component"], "alice-c");
  EXPECT_DOUBLE_EQ(j["components"][0]["points"][0]["requests_per_s"].get<double>(), 2.0);
  EXPECT_EQ(j["components"][1]["component"], "ic");  // Bob's 40 on his own shared/ic: not here.
  EXPECT_DOUBLE_EQ(j["components"][1]["points"][0]["requests"].get<double>(), 5);
  ASSERT_EQ(j["queues"].size(), 1u);
  EXPECT_EQ(j["queues"][0]["queue"], "alice-q");
  EXPECT_EQ(r->body.find("bob"), std::string::npos) << r->body;
}

TEST_F(UiRoutesTest, MetricsAreUnavailableWhenTheSageMakerApiIsNot) {
  fail_sagemaker_ = true;
  auto r = Get("/v1/ui/metrics", &kAlice);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 503);
  EXPECT_NE(json::parse(r->body)["error"].get<std::string>().find("ListInferenceComponents"),
            std::string::npos);
}

TEST_F(UiRoutesTest, CatalogIsServedToSignedCallers) {
  auto r = Get("/v1/catalog", &kAlice);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200);
  EXPECT_FALSE(json::parse(r->body)["instance_types"].empty());
}

// The sampler thread records on its own, every step, and records nothing once stopped.
TEST(Dashboard, SamplesEveryStepUntilStopped) {
  aws::Credentials creds;
  http::MetricsRegistry metrics;
  UiOptions options;
  options.history.step_ms = 10;
  Dashboard d(options, creds, metrics, [](const http::ApiRequest&) { return http::ApiResponse{}; });
  d.Start();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (d.history().records() < 3 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_GE(d.history().records(), 3u);
  d.Stop();
  const size_t after_stop = d.history().records();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(d.history().records(), after_stop);
  d.Stop();  // Idempotent.
}

}  // namespace
}  // namespace carve::server::ui
