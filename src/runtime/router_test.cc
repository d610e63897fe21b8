// The router against in-process copies (TestCopy) and a FakeCopyDirectory: error mapping,
// pass-through, balancing and retries of InvokeEndpoint.
#include "runtime/router.h"

#include <gtest/gtest.h>

#include <future>
#include <nlohmann/json.hpp>
#include <vector>

#include "common/fake_clock.h"
#include "http/scripted_server.h"
#include "runtime/fake_copy_directory.h"
#include "runtime/test_copy.h"

namespace carve::runtime {
namespace {

using http::ReadRequest;
using http::ScriptedServer;
using http::WriteAll;

constexpr const char* kAccount = "111111111111";

TestCopy::Handler Echo(const std::string& name) {
  return [name](const httplib::Request& q, httplib::Response& s) {
    nlohmann::json j{{"copy", name},
                     {"body", q.body},
                     {"content_type", q.get_header_value("Content-Type")},
                     {"accept", q.get_header_value("Accept")}};
    s.set_header("X-Amzn-SageMaker-Custom-Attributes",
                 "seen=" + q.get_header_value("X-Amzn-SageMaker-Custom-Attributes"));
    s.set_content(j.dump(), "application/json");
  };
}

TestCopy::Handler Status(int status, std::string body) {
  return [status, body](const httplib::Request&, httplib::Response& s) {
    s.status = status;
    s.set_content(body, "text/plain");
  };
}

RouteInfo Route(std::vector<CopyTarget> copies, std::string component = "ic-a") {
  RouteInfo r;
  r.variant = "AllTraffic";
  r.component = std::move(component);
  r.copies = std::move(copies);
  return r;
}

http::NativeRequest Request(std::string endpoint = "ep", std::string component = "ic-a",
                            std::string body = R"({"inputs":"hi"})") {
  http::NativeRequest r;
  r.method = "POST";
  r.account_id = kAccount;
  r.path_params["EndpointName"] = std::move(endpoint);
  if (!component.empty()) r.headers["x-amzn-sagemaker-inference-component"] = component;
  r.headers["content-type"] = "application/json";
  r.headers["accept"] = "application/jsonlines";
  r.body = std::move(body);
  return r;
}

std::string HeaderOf(const http::NativeResponse& r, const std::string& name) {
  for (const auto& [k, v] : r.headers) {
    if (k == name) return v;
  }
  return "";
}

nlohmann::json BodyOf(const http::NativeResponse& r) { return nlohmann::json::parse(r.body); }

class RouterTest : public ::testing::Test {
 protected:
  RouterOptions Options() {
    RouterOptions o;
    o.seed = 42;
    o.clock = &clock_;
    return o;
  }
  FakeClock clock_;
  FakeCopyDirectory dir_;
  http::MetricsRegistry metrics_;
};

TEST_F(RouterTest, PassesBodyContentTypeAndAcceptToTheCopyAndNamesTheVariant) {
  TestCopy copy(Echo("c1"));
  dir_.SetRoute(kAccount, "ep", Route({{"c1", copy.address()}}));
  Router router(dir_, metrics_, Options());
  http::NativeRequest req = Request();
  req.headers["x-amzn-sagemaker-custom-attributes"] = "trace=7";
  http::NativeResponse out = router.Invoke(req);
  ASSERT_EQ(out.http_status, 200) << out.body;
  EXPECT_EQ(out.content_type, "application/json");
  EXPECT_EQ(HeaderOf(out, "x-Amzn-Invoked-Production-Variant"), "AllTraffic");
  EXPECT_EQ(HeaderOf(out, "X-Amzn-SageMaker-Custom-Attributes"), "seen=trace=7");
  auto j = BodyOf(out);
  EXPECT_EQ(j["body"], R"({"inputs":"hi"})");
  EXPECT_EQ(j["content_type"], "application/json");
  EXPECT_EQ(j["accept"], "application/jsonlines");
}

// The invocation statistics Application Auto Scaling reads: a unary invocation is counted when it
// starts and leaves the in-flight figure when it ends, answered or failed.
TEST_F(RouterTest, AUnaryInvocationIsCountedStartedAndFinishedInTheStats) {
  TestCopy copy(Echo("c1"));
  dir_.SetRoute(kAccount, "ep", Route({{"c1", copy.address()}}));
  InvocationStats stats;
  RouterOptions o = Options();
  o.stats = &stats;
  Router router(dir_, metrics_, o);
  ASSERT_EQ(router.Invoke(Request()).http_status, 200);
  InvocationStats::Totals t = stats.Get({kAccount, "ep", "ic-a"});
  EXPECT_EQ(t.invocations, 1u);
  EXPECT_EQ(t.in_flight, 0);
  dir_.SetRoute(kAccount, "ep", Route({}));  // no copy: ModelNotReady
  EXPECT_NE(router.Invoke(Request()).http_status, 200);
  t = stats.Get({kAccount, "ep", "ic-a"});
  EXPECT_EQ(t.invocations, 2u);
  EXPECT_EQ(t.in_flight, 0);
}

TEST_F(RouterTest, UnknownEndpointIsAValidationErrorNamingIt) {
  Router router(dir_, metrics_, Options());
  http::NativeResponse out = router.Invoke(Request("nope"));
  EXPECT_EQ(out.http_status, 400);
  EXPECT_EQ(HeaderOf(out, "X-Amzn-ErrorType"), "ValidationError");
  EXPECT_EQ(BodyOf(out)["Message"], "Endpoint nope of account 111111111111 not found.");
}

// A body over max_body_bytes (InvokeEndpoint's 6 MB) is refused naming the limit, before any
// copy is asked; one at the limit goes through.
TEST_F(RouterTest, ABodyOverTheLimitIsAValidationErrorNamingIt) {
  TestCopy copy(Status(200, "ok"));
  dir_.SetRoute(kAccount, "ep", Route({{"c1", copy.address()}}));
  RouterOptions options = Options();
  options.max_body_bytes = 10;
  Router router(dir_, metrics_, options);
  http::NativeRequest req = Request();
  req.body = std::string(11, 'x');
  http::NativeResponse out = router.Invoke(req);
  EXPECT_EQ(out.http_status, 400) << out.body;
  EXPECT_NE(out.body.find("less than or equal to 10 (got 11 bytes)"), std::string::npos)
      << out.body;
  EXPECT_EQ(copy.hits(), 0);
  req.body = std::string(10, 'x');
  EXPECT_EQ(router.Invoke(req).http_status, 200);
}

TEST_F(RouterTest, MissingComponentHeaderIsAValidationError) {
  dir_.SetRoute(kAccount, "ep", Route({{"c1", DeadAddress()}}));
  Router router(dir_, metrics_, Options());
  http::NativeResponse out = router.Invoke(Request("ep", ""));
  EXPECT_EQ(out.http_status, 400);
  EXPECT_EQ(HeaderOf(out, "X-Amzn-ErrorType"), "ValidationError");
  EXPECT_NE(BodyOf(out)["Message"].get<std::string>().find("Inference Component Name header"),
            std::string::npos);
}

TEST_F(RouterTest, UnknownComponentIsAValidationError) {
  dir_.SetRoute(kAccount, "ep", Route({{"c1", DeadAddress()}}));
  Router router(dir_, metrics_, Options());
  http::NativeResponse out = router.Invoke(Request("ep", "ic-zzz"));
  EXPECT_EQ(out.http_status, 400);
  EXPECT_EQ(HeaderOf(out, "X-Amzn-ErrorType"), "ValidationError");
  EXPECT_NE(BodyOf(out)["Message"].get<std::string>().find("ic-zzz"), std::string::npos);
}

TEST_F(RouterTest, MalformedComponentHeaderIsRejectedBeforeResolving) {
  Router router(dir_, metrics_, Options());
  http::NativeResponse out = router.Invoke(Request("ep", "bad_name!"));
  EXPECT_EQ(out.http_status, 400);
  EXPECT_NE(BodyOf(out)["Message"].get<std::string>().find("inferenceComponentName"),
            std::string::npos);
  EXPECT_EQ(dir_.resolve_calls(), 0);
}

TEST_F(RouterTest, EndpointNotInServiceIsAValidationError) {
  dir_.SetError(kAccount, "ep", FailedPrecondition("Endpoint ep is Creating, not InService."));
  Router router(dir_, metrics_, Options());
  http::NativeResponse out = router.Invoke(Request());
  EXPECT_EQ(out.http_status, 400);
  EXPECT_EQ(HeaderOf(out, "X-Amzn-ErrorType"), "ValidationError");
}

TEST_F(RouterTest, DirectoryUnavailableIsServiceUnavailableAndInternalIsInternalFailure) {
  dir_.SetError(kAccount, "ep", Unavailable("store busy"));
  dir_.SetError(kAccount, "ep2", Internal("broken invariant"));
  Router router(dir_, metrics_, Options());
  http::NativeResponse a = router.Invoke(Request("ep"));
  EXPECT_EQ(a.http_status, 503);
  EXPECT_EQ(HeaderOf(a, "X-Amzn-ErrorType"), "ServiceUnavailable");
  http::NativeResponse b = router.Invoke(Request("ep2"));
  EXPECT_EQ(b.http_status, 500);
  EXPECT_EQ(HeaderOf(b, "X-Amzn-ErrorType"), "InternalFailure");
}

// No copy at all is what step scaling from zero acts on: it says so, and counts a failure for
// want of capacity (NoCapacityInvocationFailures) in the stats and on /metrics.
TEST_F(RouterTest, NoCopyInRotationIsModelNotReady) {
  dir_.SetRoute(kAccount, "ep", Route({}));
  InvocationStats stats;
  RouterOptions o = Options();
  o.stats = &stats;
  Router router(dir_, metrics_, o);
  http::NativeResponse out = router.Invoke(Request());
  EXPECT_EQ(out.http_status, 429);
  EXPECT_EQ(HeaderOf(out, "X-Amzn-ErrorType"), "ModelNotReadyException");
  EXPECT_NE(out.body.find("Endpoint ep has no copy of inference component ic-a in service"),
            std::string::npos)
      << out.body;
  EXPECT_EQ(stats.Get({kAccount, "ep", "ic-a"}).no_capacity, 1u);
  EXPECT_NE(
      metrics_.Expose().find("carve_runtime_no_capacity_invocation_failures_total{account=\"" +
                             std::string(kAccount) + "\",endpoint=\"ep\",component=\"ic-a\"} 1"),
      std::string::npos)
      << metrics_.Expose();
}

TEST_F(RouterTest, EveryCopyRefusingConnectionsIsServiceUnavailable) {
  dir_.SetRoute(kAccount, "ep", Route({{"c1", DeadAddress()}, {"c2", DeadAddress()}}));
  Router router(dir_, metrics_, Options());
  http::NativeResponse out = router.Invoke(Request());
  EXPECT_EQ(out.http_status, 503);
  EXPECT_EQ(HeaderOf(out, "X-Amzn-ErrorType"), "ServiceUnavailable");
  EXPECT_TRUE(router.balancer().IsQuarantined("c1"));
  EXPECT_TRUE(router.balancer().IsQuarantined("c2"));
  // The message says what the last try met, in the connection's own words.
  EXPECT_NE(out.body.find("Connection refused"), std::string::npos) << out.body;
  // Quarantined copies are still tried when nothing else is left: still unreachable, still 503.
  http::NativeResponse again = router.Invoke(Request());
  EXPECT_EQ(again.http_status, 503);
}

TEST_F(RouterTest, CopyAnswering500IsModelErrorWithTheOriginalStatusAndMessage) {
  TestCopy copy(Status(500, "out of memory"));
  dir_.SetRoute(kAccount, "ep", Route({{"c1", copy.address()}}));
  Router router(dir_, metrics_, Options());
  http::NativeResponse out = router.Invoke(Request());
  EXPECT_EQ(out.http_status, 424);
  EXPECT_EQ(HeaderOf(out, "X-Amzn-ErrorType"), "ModelError");
  auto j = BodyOf(out);
  EXPECT_EQ(j["OriginalStatusCode"], 500);
  EXPECT_EQ(j["OriginalMessage"], "out of memory");
  EXPECT_NE(j["Message"].get<std::string>().find("server error (500)"), std::string::npos);
}

TEST_F(RouterTest, A4xxFromTheCopyIsNotRetried) {
  TestCopy a(Status(400, "bad input"));
  TestCopy b(Status(400, "bad input"));
  dir_.SetRoute(kAccount, "ep", Route({{"a", a.address()}, {"b", b.address()}}));
  Router router(dir_, metrics_, Options());
  http::NativeResponse out = router.Invoke(Request());
  EXPECT_EQ(out.http_status, 424);
  EXPECT_EQ(BodyOf(out)["OriginalStatusCode"], 400);
  EXPECT_EQ(a.hits() + b.hits(), 1);
}

TEST_F(RouterTest, A5xxBeforeAnyByteIsRetriedOnAnotherCopy) {
  TestCopy bad(Status(503, "warming up"));
  TestCopy good(Echo("good"));
  dir_.SetRoute(kAccount, "ep", Route({{"bad", bad.address()}, {"good", good.address()}}));
  Router router(dir_, metrics_, Options());
  for (int i = 0; i < 20; ++i) {
    http::NativeResponse out = router.Invoke(Request());
    ASSERT_EQ(out.http_status, 200) << out.body;
    EXPECT_EQ(BodyOf(out)["copy"], "good");
  }
  EXPECT_GT(bad.hits(), 0);  // It was tried (ties are random), and its answers never surfaced.
}

TEST_F(RouterTest, ARefusedConnectionIsRetriedAndTheCopyQuarantinedUntilItExpires) {
  TestCopy good(Echo("good"));
  dir_.SetRoute(kAccount, "ep", Route({{"dead", DeadAddress()}, {"good", good.address()}}));
  Router router(dir_, metrics_, Options());
  for (int i = 0; i < 10; ++i) {
    http::NativeResponse out = router.Invoke(Request());
    ASSERT_EQ(out.http_status, 200) << out.body;
  }
  EXPECT_TRUE(router.balancer().IsQuarantined("dead"));
  clock_.Advance(Options().quarantine);
  EXPECT_FALSE(router.balancer().IsQuarantined("dead"));
}

// A copy that dies or restarts under a request resets or closes the connection before any byte
// of an answer: nothing reached the client, so the request moves to another copy.
TEST_F(RouterTest, ACopyHangingUpBeforeAnsweringIsRetriedOnAnotherAndQuarantined) {
  ScriptedServer hangs_up([](int fd, int) { ReadRequest(fd); });
  TestCopy good(Echo("good"));
  dir_.SetRoute(kAccount, "ep", Route({{"gone", hangs_up.address()}, {"good", good.address()}}));
  Router router(dir_, metrics_, Options());
  for (int i = 0; i < 10; ++i) {
    http::NativeResponse out = router.Invoke(Request());
    ASSERT_EQ(out.http_status, 200) << out.body;
    EXPECT_EQ(BodyOf(out)["copy"], "good");
  }
  EXPECT_GT(hangs_up.connections(), 0);
  EXPECT_TRUE(router.balancer().IsQuarantined("gone"));
}

// Every try is counted per copy and outcome, and each move to another copy is a retry: what an
// end-to-end test reads to see that a dead copy was tried (tests/integration/runtime_test.py).
TEST_F(RouterTest, TriesAreCountedPerCopyAndOutcomeAndMovesAsRetries) {
  ScriptedServer hangs_up([](int fd, int) { ReadRequest(fd); });
  TestCopy good(Echo("good"));
  TestCopy failing(Status(503, "busy"));
  dir_.SetRoute(kAccount, "ep", Route({{"gone", hangs_up.address()}, {"good", good.address()}}));
  Router router(dir_, metrics_, Options());
  for (int i = 0; i < 10; ++i) ASSERT_EQ(router.Invoke(Request()).http_status, 200);
  http::Counter& attempts = metrics_.AddCounter("carve_runtime_copy_attempts_total", "",
                                                {"account", "component", "copy", "outcome"});
  http::Counter& retries =
      metrics_.AddCounter("carve_runtime_retries_total", "", {"account", "endpoint", "component"});
  const double unanswered = attempts.Value({kAccount, "ic-a", "gone", "unanswered"});
  EXPECT_GE(unanswered, 1);  // Least-outstanding ties are random; quarantine keeps it out after.
  EXPECT_EQ(unanswered, hangs_up.connections());
  EXPECT_EQ(attempts.Value({kAccount, "ic-a", "good", "answered"}), 10);
  EXPECT_EQ(retries.Value({kAccount, "ep", "ic-a"}), unanswered);

  dir_.SetRoute(kAccount, "ep", Route({{"busy", failing.address()}}));
  EXPECT_EQ(router.Invoke(Request()).http_status, 424);
  EXPECT_EQ(attempts.Value({kAccount, "ic-a", "busy", "5xx"}), 1);
  EXPECT_EQ(retries.Value({kAccount, "ep", "ic-a"}), unanswered) << "one copy: nothing to retry on";
}

TEST_F(RouterTest, EveryCopyHangingUpIsServiceUnavailable) {
  ScriptedServer hangs_up([](int fd, int) { ReadRequest(fd); });
  dir_.SetRoute(kAccount, "ep", Route({{"gone", hangs_up.address()}}));
  Router router(dir_, metrics_, Options());
  http::NativeResponse out = router.Invoke(Request());
  EXPECT_EQ(out.http_status, 503) << out.body;
  EXPECT_NE(BodyOf(out)["Message"].get<std::string>().find("answered a request"), std::string::npos)
      << out.body;
}

TEST_F(RouterTest, ASilentCopyTimesOutAsModelError) {
  TestCopy slow([](const httplib::Request&, httplib::Response& s) {
    std::this_thread::sleep_for(std::chrono::milliseconds(600));
    s.set_content("late", "text/plain");
  });
  RouteInfo route = Route({{"slow", slow.address()}});
  route.timeout = std::chrono::milliseconds(150);
  dir_.SetRoute(kAccount, "ep", route);
  Router router(dir_, metrics_, Options());
  http::NativeResponse out = router.Invoke(Request());
  EXPECT_EQ(out.http_status, 424);
  EXPECT_NE(BodyOf(out)["Message"].get<std::string>().find("timed out"), std::string::npos);
}

// All four requests are held inside the copies at once: least-outstanding puts two on each.
TEST_F(RouterTest, LeastOutstandingRequestsSpreadsConcurrentRequests) {
  std::mutex mu;
  std::condition_variable cv;
  int arrived = 0;
  bool release = false;
  auto gate = [&](const httplib::Request&, httplib::Response& s) {
    std::unique_lock lock(mu);
    ++arrived;
    cv.notify_all();
    cv.wait_for(lock, std::chrono::seconds(10), [&] { return release; });
    s.set_content("ok", "text/plain");
  };
  TestCopy a(gate);
  TestCopy b(gate);
  dir_.SetRoute(kAccount, "ep", Route({{"a", a.address()}, {"b", b.address()}}));
  Router router(dir_, metrics_, Options());
  std::vector<std::future<http::NativeResponse>> calls;
  for (int i = 0; i < 4; ++i) {
    calls.push_back(std::async(std::launch::async, [&] { return router.Invoke(Request()); }));
    std::unique_lock lock(mu);  // One at a time, so each choice sees the previous ones.
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(10), [&] { return arrived == i + 1; }));
  }
  EXPECT_EQ(router.balancer().Outstanding("a"), 2);
  EXPECT_EQ(router.balancer().Outstanding("b"), 2);
  {
    std::lock_guard lock(mu);
    release = true;
  }
  cv.notify_all();
  for (auto& c : calls) EXPECT_EQ(c.get().http_status, 200);
  EXPECT_EQ(a.hits(), 2);
  EXPECT_EQ(b.hits(), 2);
  EXPECT_EQ(router.balancer().Outstanding("a"), 0);
}

TEST_F(RouterTest, MetricsCountRequestsByCodeErrorsAndLatency) {
  TestCopy copy(Echo("c1"));
  dir_.SetRoute(kAccount, "ep", Route({{"c1", copy.address()}}));
  Router router(dir_, metrics_, Options());
  ASSERT_EQ(router.Invoke(Request()).http_status, 200);
  ASSERT_EQ(router.Invoke(Request("ep", "ic-zzz")).http_status, 400);
  const std::string text = metrics_.Expose();
  EXPECT_NE(text.find(R"(carve_runtime_requests_total{account="111111111111",endpoint="ep",)"
                      R"(component="ic-a",code="200"} 1)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find(R"(carve_runtime_errors_total{account="111111111111",endpoint="",)"
                      R"(component="",type="ValidationError"} 1)"),
            std::string::npos);
  EXPECT_NE(text.find(R"(carve_runtime_request_duration_seconds_count{account="111111111111",)"
                      R"(endpoint="ep",component="ic-a"} 1)"),
            std::string::npos);
  EXPECT_NE(text.find(R"(carve_runtime_in_flight{account="111111111111",endpoint="ep",)"
                      R"(component="ic-a"} 0)"),
            std::string::npos);
  EXPECT_NE(text.find(R"(carve_runtime_copy_in_flight{account="111111111111",component="ic-a",)"
                      R"(copy="c1"} 0)"),
            std::string::npos);
}

// Two accounts may both have endpoint "ep" with component "ic-a": each one's invocations are
// counted in its own series, never in the other's.
TEST_F(RouterTest, SameNamedEndpointsOfTwoAccountsHaveTheirOwnSeries) {
  constexpr const char* kOther = "222222222222";
  TestCopy mine(Echo("mine"));
  TestCopy theirs(Echo("theirs"));
  dir_.SetRoute(kAccount, "ep", Route({{"mine", mine.address()}}));
  dir_.SetRoute(kOther, "ep", Route({{"theirs", theirs.address()}}));
  Router router(dir_, metrics_, Options());
  for (int i = 0; i < 3; ++i) ASSERT_EQ(router.Invoke(Request()).http_status, 200);
  http::NativeRequest other = Request();
  other.account_id = kOther;
  ASSERT_EQ(BodyOf(router.Invoke(other))["copy"], "theirs");
  http::Counter& requests = metrics_.AddCounter("carve_runtime_requests_total", "",
                                                {"account", "endpoint", "component", "code"});
  http::Histogram& latency = metrics_.AddHistogram("carve_runtime_model_latency_seconds", "",
                                                   {"account", "endpoint", "component"});
  EXPECT_EQ(requests.Value({kAccount, "ep", "ic-a", "200"}), 3);
  EXPECT_EQ(requests.Value({kOther, "ep", "ic-a", "200"}), 1);
  EXPECT_EQ(latency.Count({kAccount, "ep", "ic-a"}), 3u);
  EXPECT_EQ(latency.Count({kOther, "ep", "ic-a"}), 1u);
}

}  // namespace
}  // namespace carve::runtime
