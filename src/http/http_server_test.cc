// The front end on a real socket (port 0), driven by cpp-httplib clients and by boto3.
#include "http/http_server.h"

#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <ctime>
#include <future>
#include <nlohmann/json.hpp>

#include "aws/sigv4_test_util.h"

namespace carve::http {
namespace {

const aws::Credential kAlice{"default", "AKIAALICE0000000000A",
                             "alice-secret-0000000000000000000000000000", "111111111111"};
const aws::Credential kBob{"bob", "AKIABOB00000000000BB",
                           "bob-secret-00000000000000000000000000000000", "222222222222"};
const aws::Credential kOps{"ops", "AKIAOPS00000000000OO",
                           "ops-secret-00000000000000000000000000000000", "333333333333",
                           /*operator_role=*/true};
const std::string kScrapeToken(40, 's');

std::string NowAmzDate() { return aws::sigv4::FormatAmzDate(std::time(nullptr)); }

class HttpServerTest : public ::testing::Test {
 protected:
  void StartServer(HttpServerOptions options = {}) {
    if (!options.scrape_token_ok) {
      options.scrape_token_ok = [](std::string_view t) { return t == kScrapeToken; };
    }
    server_ = std::make_unique<HttpServer>(options, creds_, metrics_);
    server_->SetApiHandler([](const ApiRequest& r) {
      if (r.operation == "Explode") {
        return ApiResponse{400, R"({"__type":"ValidationException","message":"no"})",
                           "ValidationException"};
      }
      nlohmann::json j{{"operation", r.operation},
                       {"account", r.account_id},
                       {"body", r.body},
                       {"request_id", r.request_id},
                       {"Models", nlohmann::json::array()}};
      return ApiResponse{200, j.dump(), ""};
    });
    server_->AddRoute("GET", "/v1/endpoints/{name}/carve", kForTenants, [](const NativeRequest& r) {
      nlohmann::json j{{"name", r.path_params.at("name")}, {"account", r.account_id}};
      return NativeResponse{200, j.dump()};
    });
    server_->AddRoute("GET", "/v1/public", kForAnyone, [](const NativeRequest& r) {
      return NativeResponse{200, "account=[" + r.account_id + "]", "text/plain"};
    });
    server_->AddRoute("GET", "/v1/fleetwide", kForOperators, [](const NativeRequest& r) {
      return NativeResponse{200, "operator of " + r.account_id + " is " + r.caller.Names(),
                            "text/plain"};
    });
    auto port = server_->Start("127.0.0.1", 0);
    ASSERT_TRUE(port.has_value()) << port.error().message;
    port_ = *port;
    ASSERT_GT(port_, 0);
  }

  std::string Host() const { return "127.0.0.1:" + std::to_string(port_); }

  // Sends `method path` with `body`, signed as `who` unless `who` is null.
  httplib::Result Send(const std::string& method, const std::string& path, const std::string& body,
                       const aws::Credential* who, const std::string& target = "",
                       httplib::Client* client = nullptr) {
    aws::SigV4Request r{method, path, "", {{"Host", Host()}}, body};
    if (!target.empty()) r.headers.emplace_back("X-Amz-Target", target);
    if (method == "POST") r.headers.emplace_back("Content-Type", "application/x-amz-json-1.1");
    if (who != nullptr) {
      aws::TestSigner s;
      s.access_key = who->access_key_id;
      s.secret = who->secret_access_key;
      s.region = region_;
      s.Sign(r, NowAmzDate());
    }
    httplib::Headers headers;
    for (const auto& [k, v] : r.headers) {
      if (k != "Content-Type") headers.emplace(k, v);
    }
    httplib::Client local("127.0.0.1", port_);
    httplib::Client& c = client ? *client : local;
    if (method == "POST") return c.Post(path.c_str(), headers, body, "application/x-amz-json-1.1");
    return c.Get(path.c_str(), headers);
  }

  aws::Credentials creds_{{kAlice, kBob, kOps}};
  MetricsRegistry metrics_;
  std::unique_ptr<HttpServer> server_;
  int port_ = 0;
  std::string region_ = "us-east-1";  // What Send signs for: the server's default region.
};

nlohmann::json Json(const httplib::Result& r) { return nlohmann::json::parse(r->body); }

TEST_F(HttpServerTest, ListensOnAFreePortAndAnswersPingWithARequestId) {
  StartServer();
  auto r = httplib::Client("127.0.0.1", port_).Get("/ping");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->get_header_value("x-amzn-RequestId").size(), 36u);
}

TEST_F(HttpServerTest, SignedSageMakerCallReachesTheHandlerWithTheCallersAccount) {
  StartServer();
  auto r = Send("POST", "/", R"({"MaxResults": 5})", &kAlice, "SageMaker.ListModels");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(r->get_header_value("Content-Type"), "application/x-amz-json-1.1");
  auto j = Json(r);
  EXPECT_EQ(j["operation"], "ListModels");
  EXPECT_EQ(j["account"], "111111111111");
  EXPECT_EQ(j["body"], R"({"MaxResults": 5})");
  EXPECT_EQ(j["request_id"], r->get_header_value("x-amzn-RequestId"));
}

TEST_F(HttpServerTest, EachAccessKeyActsAsItsOwnAccount) {
  StartServer();
  auto a = Send("POST", "/", "{}", &kAlice, "SageMaker.ListModels");
  auto b = Send("POST", "/", "{}", &kBob, "SageMaker.ListModels");
  ASSERT_TRUE(a && b);
  EXPECT_EQ(Json(a)["account"], "111111111111");
  EXPECT_EQ(Json(b)["account"], "222222222222");
}

TEST_F(HttpServerTest, EmptyBodyReachesTheHandlerAsAnEmptyObject) {
  StartServer();
  auto r = Send("POST", "/", "", &kAlice, "SageMaker.ListModels");
  ASSERT_TRUE(r);
  EXPECT_EQ(Json(r)["body"], "{}");
}

TEST_F(HttpServerTest, UnsignedCallIs403MissingAuthenticationToken) {
  StartServer();
  auto r = Send("POST", "/", "{}", nullptr, "SageMaker.ListModels");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 403);
  EXPECT_EQ(Json(r)["__type"], "MissingAuthenticationToken");
  EXPECT_EQ(r->get_header_value("X-Amzn-Errortype"), "MissingAuthenticationToken");
  EXPECT_FALSE(r->get_header_value("x-amzn-RequestId").empty());
}

TEST_F(HttpServerTest, WrongSecretIs403InvalidSignatureException) {
  StartServer();
  aws::Credential forged = kAlice;
  forged.secret_access_key = "not-the-secret";
  auto r = Send("POST", "/", "{}", &forged, "SageMaker.ListModels");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 403);
  EXPECT_EQ(Json(r)["__type"], "InvalidSignatureException");
}

TEST_F(HttpServerTest, UnknownKeyIs403UnrecognizedClientException) {
  StartServer();
  aws::Credential stranger{"x", "AKIASTRANGER00000000", "s", "333333333333"};
  auto r = Send("POST", "/", "{}", &stranger, "SageMaker.ListModels");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 403);
  EXPECT_EQ(Json(r)["__type"], "UnrecognizedClientException");
}

// The server's region (HttpServerOptions::region, `carve server --region`) is the only one a
// signature may be scoped to, on the API and on native routes alike.
TEST_F(HttpServerTest, ASignatureForAnotherRegionIs403NamingTheServersRegion) {
  HttpServerOptions options;
  options.region = "eu-west-1";
  StartServer(options);
  auto refused = Send("POST", "/", "{}", &kAlice, "SageMaker.ListModels");
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 403);
  EXPECT_EQ(Json(refused)["__type"], "InvalidSignatureException");
  EXPECT_EQ(Json(refused)["message"],
            "Credential should be scoped to a valid region, not 'us-east-1'. This server's region "
            "is 'eu-west-1'.");
  auto native = Send("GET", "/v1/endpoints/ep/carve", "", &kAlice);
  ASSERT_TRUE(native);
  EXPECT_EQ(native->status, 403);
  region_ = "eu-west-1";
  auto served = Send("POST", "/", "{}", &kAlice, "SageMaker.ListModels");
  ASSERT_TRUE(served);
  EXPECT_EQ(served->status, 200) << served->body;
}

TEST_F(HttpServerTest, MissingOrForeignTargetIs400UnknownOperation) {
  StartServer();
  for (std::string target : {"", "DynamoDB_20120810.ListTables", "SageMaker.", "SageMaker.a b"}) {
    auto r = Send("POST", "/", "{}", &kAlice, target);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 400) << target;
    EXPECT_EQ(Json(r)["__type"], "UnknownOperationException") << target;
    EXPECT_TRUE(Json(r).contains("message"));
  }
}

TEST_F(HttpServerTest, HandlerErrorsCarryTheErrortypeHeader) {
  StartServer();
  auto r = Send("POST", "/", "{}", &kAlice, "SageMaker.Explode");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  EXPECT_EQ(r->get_header_value("X-Amzn-Errortype"), "ValidationException");
}

TEST_F(HttpServerTest, AuthenticatedNativeRouteGetsPathParamsAndAccount) {
  StartServer();
  auto r = Send("GET", "/v1/endpoints/my-ep/carve", "", &kBob);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(Json(r)["name"], "my-ep");
  EXPECT_EQ(Json(r)["account"], "222222222222");
  auto unsigned_r = Send("GET", "/v1/endpoints/my-ep/carve", "", nullptr);
  ASSERT_TRUE(unsigned_r);
  EXPECT_EQ(unsigned_r->status, 403);
}

TEST_F(HttpServerTest, PublicRouteNeedsNoSignatureAndUnknownPathIs404) {
  StartServer();
  httplib::Client c("127.0.0.1", port_);
  auto r = c.Get("/v1/public");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "account=[]");
  auto missing = c.Get("/v1/nothing/here");
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404);
}

TEST_F(HttpServerTest, AnOperatorRouteRefusesATenantNamingTheRouteAndWhomItServes) {
  StartServer();
  auto tenant = Send("GET", "/v1/fleetwide", "", &kAlice);
  ASSERT_TRUE(tenant);
  EXPECT_EQ(tenant->status, 403);
  EXPECT_EQ(tenant->get_header_value("X-Amzn-Errortype"), "AccessDeniedException");
  EXPECT_NE(tenant->body.find("GET /v1/fleetwide serves operator; the caller is tenant"),
            std::string::npos)
      << tenant->body;
  auto op = Send("GET", "/v1/fleetwide", "", &kOps);
  ASSERT_TRUE(op);
  EXPECT_EQ(op->status, 200);
  EXPECT_EQ(op->body, "operator of 333333333333 is tenant, operator");
  // The scrape token is for /metrics only.
  auto scraper = httplib::Client("127.0.0.1", port_)
                     .Get("/v1/fleetwide", {{"Authorization", "Bearer " + kScrapeToken}});
  ASSERT_TRUE(scraper);
  EXPECT_EQ(scraper->status, 401);
  // An operator is a tenant of its own account on tenant routes.
  auto own = Send("GET", "/v1/endpoints/ep/carve", "", &kOps);
  ASSERT_TRUE(own);
  EXPECT_EQ(own->status, 200);
  EXPECT_NE(own->body.find("333333333333"), std::string::npos);
}

TEST_F(HttpServerTest, MetricsServeTheScrapeTokenAndOperatorsOnly) {
  StartServer();
  httplib::Client c("127.0.0.1", port_);
  auto anonymous = c.Get("/metrics");
  ASSERT_TRUE(anonymous);
  EXPECT_EQ(anonymous->status, 403);
  auto wrong = c.Get("/metrics", {{"Authorization", "Bearer " + std::string(40, 'x')}});
  ASSERT_TRUE(wrong);
  EXPECT_EQ(wrong->status, 401);
  EXPECT_EQ(wrong->body.find("carve_"), std::string::npos);
  auto tenant = Send("GET", "/metrics", "", &kBob);
  ASSERT_TRUE(tenant);
  EXPECT_EQ(tenant->status, 403);
  auto op = Send("GET", "/metrics", "", &kOps);
  ASSERT_TRUE(op);
  EXPECT_EQ(op->status, 200);
  auto scraper = c.Get("/metrics", {{"Authorization", "Bearer " + kScrapeToken}});
  ASSERT_TRUE(scraper);
  EXPECT_EQ(scraper->status, 200);
  EXPECT_NE(scraper->body.find("carve_http_connections"), std::string::npos);
}

TEST_F(HttpServerTest, PublicMetricsNeedNoCredential) {
  HttpServerOptions o;
  o.public_metrics = true;
  StartServer(o);
  auto r = httplib::Client("127.0.0.1", port_).Get("/metrics");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
}

TEST_F(HttpServerTest, ARouteServingNobodyIsAStartupError) {
  server_ = std::make_unique<HttpServer>(HttpServerOptions{}, creds_, metrics_);
  server_->AddRoute("GET", "/v1/open", Access{}, [](const NativeRequest&) {
    return NativeResponse{200, "open"};
  });
  auto started = server_->Start("127.0.0.1", 0);
  ASSERT_FALSE(started.has_value());
  EXPECT_NE(started.error().message.find("route GET /v1/open is registered for no principal"),
            std::string::npos)
      << started.error().message;
  const auto routes = server_->Routes();
  ASSERT_EQ(routes.size(), 4u);  // POST /, /ping, /metrics, and the one added.
  EXPECT_EQ(routes[3].pattern, "/v1/open");
  EXPECT_TRUE(routes[3].access.serves.empty());
}

TEST_F(HttpServerTest, MetricsCountRequestsPerOperationAndCode) {
  StartServer();
  ASSERT_TRUE(Send("POST", "/", "{}", &kAlice, "SageMaker.ListModels"));
  ASSERT_TRUE(Send("POST", "/", "{}", &kAlice, "SageMaker.ListModels"));
  ASSERT_TRUE(Send("POST", "/", "{}", &kAlice, "SageMaker.Explode"));
  ASSERT_TRUE(Send("POST", "/", "{}", nullptr, "SageMaker.ListModels"));
  auto r = httplib::Client("127.0.0.1", port_)
               .Get("/metrics", {{"Authorization", "Bearer " + kScrapeToken}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->get_header_value("Content-Type"), MetricsRegistry::kContentType);
  const std::string& text = r->body;
  EXPECT_NE(text.find("carve_api_requests_total{operation=\"ListModels\",code=\"200\"} 2\n"),
            std::string::npos)
      << text;
  EXPECT_NE(
      text.find("carve_api_requests_total{operation=\"Explode\",code=\"ValidationException\"} 1\n"),
      std::string::npos)
      << text;
  EXPECT_NE(text.find("code=\"MissingAuthenticationToken\"} 1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("carve_api_request_duration_seconds_count{operation=\"ListModels\"} 2\n"),
            std::string::npos)
      << text;
}

TEST_F(HttpServerTest, InsecureModeSkipsVerificationAndUsesTheFixedAccount) {
  HttpServerOptions o;
  o.insecure_no_auth = true;
  StartServer(o);
  auto r = Send("POST", "/", "{}", nullptr, "SageMaker.ListModels");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200);
  EXPECT_EQ(Json(r)["account"], std::string(aws::kDefaultAccountId));
}

// botocore pools keep-alive connections; many must be served at once.
TEST_F(HttpServerTest, ServesManyConcurrentKeepAliveConnections) {
  StartServer();
  constexpr int kClients = 48;
  std::vector<std::unique_ptr<httplib::Client>> clients;
  for (int i = 0; i < kClients; ++i) {
    clients.push_back(std::make_unique<httplib::Client>("127.0.0.1", port_));
    clients.back()->set_keep_alive(true);
    clients.back()->set_read_timeout(std::chrono::seconds(20));
  }
  // Every connection is opened and left open before any sends its second request.
  for (int round = 0; round < 2; ++round) {
    std::vector<std::future<int>> results;
    for (auto& c : clients) {
      results.push_back(std::async(std::launch::async, [&, cp = c.get()] {
        auto r = Send("POST", "/", "{}", &kAlice, "SageMaker.ListModels", cp);
        return r ? r->status : -100 - static_cast<int>(r.error());
      }));
    }
    for (auto& f : results) EXPECT_EQ(f.get(), 200);
  }
}

TEST_F(HttpServerTest, StopEndsWaitEvenWithAnOpenKeepAliveConnection) {
  HttpServerOptions o;
  o.keep_alive_timeout = std::chrono::seconds(1);
  StartServer(o);
  httplib::Client c("127.0.0.1", port_);
  c.set_keep_alive(true);
  ASSERT_TRUE(c.Get("/ping"));
  auto waited = std::async(std::launch::async, [&] { server_->Wait(); });
  server_->Stop();
  EXPECT_EQ(waited.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  EXPECT_FALSE(httplib::Client("127.0.0.1", port_).Get("/ping"));  // No longer accepting.
  server_->Stop();                                                 // Idempotent.
}

// A raw client socket, for what a library client would never send.
class RawClient {
 public:
  explicit RawClient(int port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    timeval tv{10, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  }
  ~RawClient() { ::close(fd_); }
  void Send(const std::string& s) {
    ASSERT_EQ(::write(fd_, s.data(), s.size()), static_cast<ssize_t>(s.size()));
  }
  // Reads until `needle` has arrived (or EOF/timeout); returns everything read so far.
  std::string ReadUntil(const std::string& needle) {
    char buf[4096];
    while (data_.find(needle) == std::string::npos) {
      ssize_t n = ::read(fd_, buf, sizeof buf);
      if (n <= 0) break;
      data_.append(buf, static_cast<size_t>(n));
    }
    return data_;
  }
  // Reads to EOF: true when the server closed the connection within the timeout.
  bool ReadsToEof() {
    char buf[4096];
    for (;;) {
      ssize_t n = ::read(fd_, buf, sizeof buf);
      if (n == 0) return true;
      if (n < 0) return false;
      data_.append(buf, static_cast<size_t>(n));
    }
  }

 private:
  int fd_ = -1;
  std::string data_;
};

TEST_F(HttpServerTest, MalformedRequestIs400AndTheConnectionCloses) {
  StartServer();
  RawClient c(port_);
  c.Send("NOT AN HTTP REQUEST\r\n\r\n");
  std::string got = c.ReadUntil("}");
  EXPECT_EQ(got.rfind("HTTP/1.1 400 ", 0), 0u) << got;
  EXPECT_NE(got.find("malformed HTTP request"), std::string::npos) << got;
  EXPECT_TRUE(c.ReadsToEof());
}

TEST_F(HttpServerTest, BodyOverTheLimitIs413NamingTheLimit) {
  HttpServerOptions o;
  o.max_body_bytes = 16;
  StartServer(o);
  RawClient c(port_);
  c.Send("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n" + std::string(100, 'x'));
  std::string got = c.ReadUntil("}");
  EXPECT_EQ(got.rfind("HTTP/1.1 413 ", 0), 0u) << got;
  EXPECT_NE(got.find("limit of 16 bytes"), std::string::npos) << got;
}

TEST_F(HttpServerTest, ExpectContinueGets100BeforeTheBodyIsSent) {
  StartServer();
  RawClient c(port_);
  c.Send(
      "POST /v1/nowhere HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n");
  EXPECT_EQ(c.ReadUntil("\r\n\r\n"), "HTTP/1.1 100 Continue\r\n\r\n");
  c.Send("{}");
  std::string got = c.ReadUntil("no route for POST /v1/nowhere");
  EXPECT_NE(got.find("HTTP/1.1 404 "), std::string::npos) << got;
}

TEST_F(HttpServerTest, PipelinedRequestsAreAnsweredInOrder) {
  StartServer();
  RawClient c(port_);
  c.Send("GET /v1/public HTTP/1.1\r\nHost: x\r\n\r\nGET /ping HTTP/1.1\r\nHost: x\r\n\r\n");
  std::string got = c.ReadUntil("Content-Length: 0\r\n");  // The /ping answer comes second.
  size_t public_answer = got.find("account=[]");
  size_t ping_answer = got.find("Content-Length: 0\r\n");
  ASSERT_NE(public_answer, std::string::npos) << got;
  EXPECT_LT(public_answer, ping_answer) << got;
}

TEST_F(HttpServerTest, QueryParametersArriveDecoded) {
  server_ = std::make_unique<HttpServer>(HttpServerOptions{}, creds_, metrics_);
  server_->AddRoute("GET", "/v1/echo/{name}", kForAnyone, [](const NativeRequest& r) {
    std::string out = r.path_params.at("name");
    for (const auto& [k, v] : r.query) out += "|" + k + "=" + v;
    return NativeResponse{200, out, "text/plain"};
  });
  auto port = server_->Start("127.0.0.1", 0);
  ASSERT_TRUE(port.has_value());
  RawClient c(*port);
  c.Send("GET /v1/echo/a%20b?state=In+Service&x=%2F HTTP/1.1\r\nHost: x\r\n\r\n");
  std::string got = c.ReadUntil("x=/");
  EXPECT_NE(got.find("\r\n\r\na b|state=In Service|x=/"), std::string::npos) << got;
}

TEST_F(HttpServerTest, StopAnswersTheRequestInProgressThenCloses) {
  std::promise<void> entered;
  std::promise<void> release;
  auto released = release.get_future().share();
  server_ = std::make_unique<HttpServer>(HttpServerOptions{}, creds_, metrics_);
  server_->AddRoute("GET", "/v1/slow", kForAnyone, [&](const NativeRequest&) {
    entered.set_value();
    released.wait();
    return NativeResponse{200, "done", "text/plain"};
  });
  auto port = server_->Start("127.0.0.1", 0);
  ASSERT_TRUE(port.has_value());
  RawClient c(*port);
  c.Send("GET /v1/slow HTTP/1.1\r\nHost: x\r\n\r\n");
  entered.get_future().wait();
  server_->Stop();
  release.set_value();
  std::string got = c.ReadUntil("done");
  EXPECT_EQ(got.rfind("HTTP/1.1 200 ", 0), 0u) << got;
  EXPECT_NE(got.find("Connection: close"), std::string::npos) << got;
  EXPECT_TRUE(c.ReadsToEof());
  server_->Wait();
}

TEST_F(HttpServerTest, TakenPortIsUnavailable) {
  StartServer();
  HttpServer second({}, creds_, metrics_);
  auto r = second.Start("127.0.0.1", port_);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, ErrorCode::kUnavailable);
}

// The stock client: boto3 signs with botocore and parses our responses and errors.
TEST_F(HttpServerTest, Boto3CanCallAndSeesAuthErrorsAsClientErrors) {
  StartServer();
  const std::string script = R"PY(
import sys, boto3, botocore
url = sys.argv[1]
def client(key, secret):
    return boto3.client("sagemaker", endpoint_url=url, region_name="us-east-1",
                        aws_access_key_id=key, aws_secret_access_key=secret,
                        config=botocore.config.Config(retries={"max_attempts": 1}))
good = client(sys.argv[2], sys.argv[3])
resp = good.list_models()
assert resp["ResponseMetadata"]["HTTPStatusCode"] == 200, resp
assert len(resp["ResponseMetadata"]["RequestId"]) == 36, resp
try:
    client(sys.argv[2], "wrong").list_models()
    print("wrong secret accepted"); sys.exit(1)
except botocore.exceptions.ClientError as e:
    assert e.response["Error"]["Code"] == "InvalidSignatureException", e.response
    assert e.response["ResponseMetadata"]["HTTPStatusCode"] == 403
print("ok")
)PY";
  char path[] = "/tmp/carve-boto3-XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(write(fd, script.data(), script.size()), static_cast<ssize_t>(script.size()));
  close(fd);
  std::string cmd = "AWS_CONFIG_FILE=/dev/null AWS_SHARED_CREDENTIALS_FILE=/dev/null python3 " +
                    std::string(path) + " http://" + Host() + " " + kAlice.access_key_id + " " +
                    kAlice.secret_access_key + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  int rc = pclose(p);
  unlink(path);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_EQ(out, "ok\n");
}

}  // namespace
}  // namespace carve::http
