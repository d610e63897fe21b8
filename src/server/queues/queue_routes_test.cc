// The /v1/queues routes over a real HttpServer (no auth, port 0): status codes and bodies.
#include "server/queues/queue_routes.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include "common/fake_clock.h"
#include "store/fake_store.h"

namespace carve::server::queues {
namespace {

using nlohmann::json;

class QueueRoutesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    RegisterQueueRoutes(http_, service_);
    RegisterQueueMetrics(metrics_, service_);
    auto port = http_.Start("127.0.0.1", 0);
    ASSERT_TRUE(port.has_value());
    client_ = std::make_unique<httplib::Client>("127.0.0.1", *port);
  }
  void TearDown() override {
    http_.Stop();
    http_.Wait();
  }
  nodes::NodeRegistryOptions RegistryOptions() {
    nodes::NodeRegistryOptions o;
    o.clock = &clock_;
    return o;
  }
  QueueOptions ServiceOptions() {
    QueueOptions o;
    o.clock = &clock_;
    return o;
  }
  static std::unique_ptr<nodes::NodeClaims> OneSmallNode() {
    auto claims = std::make_unique<nodes::NodeClaims>();
    EXPECT_TRUE(claims->Upsert(NodeId("s1"), "ml.g5.xlarge", true).ok());
    return claims;
  }
  static http::HttpServerOptions Insecure() {
    http::HttpServerOptions o;
    o.insecure_no_auth = true;
    o.threads = 4;
    return o;
  }
  std::pair<int, json> Call(const std::string& method, const std::string& path,
                            const json& body = json()) {
    httplib::Result r = method == "GET"      ? client_->Get(path)
                        : method == "DELETE" ? client_->Delete(path)
                        : method == "PUT"    ? client_->Put(path, body.dump(), "application/json")
                                             : client_->Post(path, body.dump(), "application/json");
    if (!r) return {0, json()};
    return {r->status, json::parse(r->body, nullptr, false)};
  }

  FakeClock clock_;
  store::FakeStore store_{clock_};
  nodes::NodeRegistry registry_{store_, RegistryOptions()};
  std::unique_ptr<nodes::NodeClaims> claims_ = OneSmallNode();
  QueueService service_{store_, registry_, *claims_, ServiceOptions()};
  aws::Credentials credentials_;
  http::MetricsRegistry metrics_;
  http::HttpServer http_{Insecure(), credentials_, metrics_};
  std::unique_ptr<httplib::Client> client_;
};

const json kQueue = json::parse(
    R"({"name":"q1","mgpu":true,"allocation":{"instance_type":"ml.g5.xlarge","count":1}})");

TEST_F(QueueRoutesTest, CreatesDescribesAndListsAQueue) {
  auto [status, body] = Call("POST", "/v1/queues", kQueue);
  EXPECT_EQ(status, 201) << body.dump();
  EXPECT_EQ(body["nodes"], json::array({"s1"}));
  std::tie(status, body) = Call("GET", "/v1/queues/q1");
  EXPECT_EQ(status, 200);
  EXPECT_EQ(body["mgpu"], true);
  std::tie(status, body) = Call("GET", "/v1/queues");
  EXPECT_EQ(body["queues"].size(), 1u);
}

TEST_F(QueueRoutesTest, AnswersBadRequestNamingTheFieldAndNotFoundAndConflict) {
  auto [status, body] = Call("POST", "/v1/queues", json{{"name", "q1"}});
  EXPECT_EQ(status, 400);
  EXPECT_NE(body["error"].get<std::string>().find("allocation"), std::string::npos);
  std::tie(status, body) = Call("GET", "/v1/queues/nope");
  EXPECT_EQ(status, 404);
  Call("POST", "/v1/queues", kQueue);
  std::tie(status, body) = Call("POST", "/v1/queues", kQueue);
  EXPECT_EQ(status, 409);
  std::tie(status, body) = Call("PUT", "/v1/queues/q1", json{{"mgpu", false}});
  EXPECT_EQ(status, 400);
  EXPECT_NE(body["error"].get<std::string>().find("new queue"), std::string::npos);
  // An update that applies answers 200 with the queue as it now is.
  std::tie(status, body) = Call("PUT", "/v1/queues/q1", json{{"strategy", "SPREAD"}});
  EXPECT_EQ(status, 200) << body.dump();
  EXPECT_EQ(body["strategy"], "SPREAD");
}

// Issue 35: the queue parser dump()ed a caller's value recursively; a body nested 100,000 deep
// crashed the server. Such bodies, and repeated keys, are a 400 naming the rule.
TEST_F(QueueRoutesTest, RefusesDeepBodiesAndDuplicateKeysNamingTheRule) {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  httplib::Result r =
      client_->Post("/v1/queues", R"({"name":"q1","mgpu":)" + deep + "}", "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  EXPECT_NE(r->body.find("request body nests arrays and objects deeper than 64 levels"),
            std::string::npos)
      << r->body.substr(0, 300);
  r = client_->Post("/v1/queues", R"({"name":"q1","name":"q2"})", "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  EXPECT_NE(r->body.find(R"(has the key \"name\" more than once)"), std::string::npos) << r->body;
  EXPECT_EQ(Call("GET", "/v1/queues").second["queues"].size(), 0u);
}

// A value of the wrong type is quoted bounded, never whole.
TEST_F(QueueRoutesTest, QuotesABoundedPreviewOfAWrongValue) {
  json deep = json::array();
  for (int i = 0; i < 60; ++i) deep = json::array({std::move(deep)});
  json big = kQueue;
  big["mgpu"] = std::move(deep);
  auto [status, body] = Call("POST", "/v1/queues", big);
  EXPECT_EQ(status, 400);
  EXPECT_NE(body.dump().find("[[[[...]]]]"), std::string::npos) << body.dump();
}

TEST_F(QueueRoutesTest, AcceptsARuleBreakingJobAsFailedAndShowsItsReason) {
  Call("POST", "/v1/queues", kQueue);
  auto [status, body] =
      Call("POST", "/v1/queues/q1/jobs",
           json{{"command", "true"}, {"parameters", "emr.serverless.mgpu.core=150;"}});
  EXPECT_EQ(status, 201);
  EXPECT_EQ(body["state"], "Failed");
  const std::string id = body["id"];
  std::tie(status, body) = Call("GET", "/v1/queues/q1/jobs/" + id);
  EXPECT_EQ(status, 200);
  EXPECT_NE(body["reason"].get<std::string>().find("emr.serverless.mgpu.core=150"),
            std::string::npos);
  std::tie(status, body) = Call("POST", "/v1/queues/q1/jobs/" + id + "/cancel");
  EXPECT_EQ(status, 409);
  // A misspelt mGPU key fails the job the same way, naming the key it meant (docs/mgpu.md), where
  // it used to pass through and leave the task a whole card.
  std::tie(status, body) =
      Call("POST", "/v1/queues/q1/jobs",
           json{{"command", "true"}, {"parameters", "emr.serverless.mgpu.cores=30;"}});
  EXPECT_EQ(status, 201);
  EXPECT_EQ(body["state"], "Failed");
  EXPECT_EQ(body["reason"],
            "parameters: line 1, column 1: emr.serverless.mgpu.cores is not an mGPU parameter; did "
            "you mean emr.serverless.mgpu.core? (known: emr.serverless.mgpu.core, .memory and "
            "serverless.custom.job.task.gpus; serverless.ray.worker.mgpu.core, .memory and "
            "serverless.ray.worker.gpu.amount; serverless.ray.head.mgpu.core and .memory)");
}

// A job's logs: lines is a whole number from 1 to 10,000; anything else is refused naming it (a
// negative one used to wrap to a tail of the whole file, kept line by line in memory).
TEST_F(QueueRoutesTest, ALogsLinesOutsideItsRangeIsRefusedNamingIt) {
  Call("POST", "/v1/queues", kQueue);
  auto [status, body] =
      Call("POST", "/v1/queues/q1/jobs",
           json{{"command", "true"}, {"parameters", "emr.serverless.mgpu.core=150;"}});
  ASSERT_EQ(status, 201);
  const std::string logs = "/v1/queues/q1/jobs/" + body["id"].get<std::string>() + "/logs";
  for (const char* bad : {"-5", "0", "10001", "10abc", ""}) {
    std::tie(status, body) = Call("GET", logs + "?lines=" + bad);
    EXPECT_EQ(status, 400) << bad;
    EXPECT_EQ(body["error"],
              "lines=" + std::string(bad) + ": must be a whole number from 1 to 10000")
        << body.dump();
  }
  for (const char* good : {"1", "10000"}) {
    std::tie(status, body) = Call("GET", logs + "?lines=" + good);
    EXPECT_EQ(status, 200) << good << ": " << body.dump();
  }
  EXPECT_EQ(Call("GET", logs).first, 200);
}

TEST_F(QueueRoutesTest, RefusesToDeleteAQueueWithARunningJob) {
  Call("POST", "/v1/queues", kQueue);
  auto [status, body] =
      Call("POST", "/v1/queues/q1/jobs",
           json{{"command", "sleep 100"}, {"parameters", "emr.serverless.mgpu.core=30;"}});
  ASSERT_EQ(status, 201);
  service_.ReconcileOnce();
  std::tie(status, body) = Call("DELETE", "/v1/queues/q1");
  EXPECT_EQ(status, 409);
  std::tie(status, body) = Call("GET", "/v1/queues/q1/gpu");
  EXPECT_EQ(status, 200);
  EXPECT_EQ(body["totals"]["core_allocated_percent"], 30);
  const std::string text = metrics_.Expose();
  EXPECT_NE(text.find("carve_queue_worker_core_limit_percent{account=\"000000000000\",queue=\"q1\","
                      "job=\"job-0001\",task=\"0\",node=\"s1\",gpu=\"0\"} 30"),
            std::string::npos)
      << text;
  // Jobs counted by account, queue and state, each label its own value.
  EXPECT_NE(
      text.find("carve_queue_jobs{account=\"000000000000\",queue=\"q1\",state=\"Running\"} 1"),
      std::string::npos)
      << text;
}

}  // namespace
}  // namespace carve::server::queues
