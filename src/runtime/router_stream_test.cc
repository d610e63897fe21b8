// InvokeEndpointWithResponseStream through the router: relay of a copy's SSE stream as
// PayloadPart frames, ModelStreamError frames for failures after the first byte, and the
// decisions still open before it (retry, ModelError). One test goes through HttpServer and has
// botocore parse the response.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <future>
#include <nlohmann/json.hpp>
#include <thread>

#include "aws/event_stream.h"
#include "http/scripted_server.h"
#include "runtime/fake_copy_directory.h"
#include "runtime/router.h"
#include "runtime/test_copy.h"

namespace carve::runtime {
namespace {

using http::ReadRequest;
using http::ScriptedServer;
using http::WriteAll;

namespace es = carve::aws::eventstream;
constexpr const char* kAccount = "111111111111";

// Streams `events` as SSE, one chunk each; then ends normally, or cuts the connection when
// `cut` is set.
// A copy streaming `events` as server-sent events (then hanging up when `cut`), answering the
// request's custom attributes as "seen=<them>", as a model container may.
TestCopy::Handler Sse(std::vector<std::string> events, bool cut = false) {
  return [events, cut](const httplib::Request& q, httplib::Response& s) {
    if (q.has_header("X-Amzn-SageMaker-Custom-Attributes")) {
      s.set_header("X-Amzn-SageMaker-Custom-Attributes",
                   "seen=" + q.get_header_value("X-Amzn-SageMaker-Custom-Attributes"));
    }
    auto next = std::make_shared<size_t>(0);
    s.set_chunked_content_provider("text/event-stream",
                                   [events, cut, next](size_t, httplib::DataSink& sink) {
                                     if (*next == events.size()) {
                                       if (cut) return false;
                                       sink.done();
                                       return true;
                                     }
                                     const std::string& e = events[(*next)++];
                                     sink.write(e.data(), e.size());
                                     return true;
                                   });
  };
}

// A copy that answers 503 with a JSON body.
void Busy503(const httplib::Request&, httplib::Response& s) {
  s.status = 503;
  s.set_content("{\"error\":\"busy\"}", "application/json");
}

RouteInfo Route(std::vector<CopyTarget> copies) {
  RouteInfo r;
  r.variant = "AllTraffic";
  r.component = "ic-a";
  r.copies = std::move(copies);
  return r;
}

http::NativeRequest Request() {
  http::NativeRequest r;
  r.account_id = kAccount;
  r.path_params["EndpointName"] = "ep";
  r.headers["x-amzn-sagemaker-inference-component"] = "ic-a";
  r.headers["content-type"] = "application/json";
  r.body = R"({"inputs":"hi","stream":true})";
  return r;
}

// A Chat Completions request naming component ic-a by its "model", streamed or not.
http::NativeRequest ChatRequest(bool stream) {
  http::NativeRequest r = Request();
  r.headers.erase("x-amzn-sagemaker-inference-component");
  r.body = std::string(R"({"model":"ic-a","messages":[{"role":"user","content":"hi"}])") +
           (stream ? R"(,"stream":true})" : "}");
  return r;
}

std::string HeaderOf(const http::NativeResponse& r, const std::string& name) {
  for (const auto& [k, v] : r.headers) {
    if (k == name) return v;
  }
  return "";
}

// Runs the response's stream and decodes what it wrote.
std::vector<es::Message> Drain(const http::NativeResponse& out) {
  std::string wire;
  out.stream([&](std::string_view chunk) {
    wire.append(chunk);
    return true;
  });
  es::Decoder d;
  auto msgs = d.Feed(wire);
  EXPECT_TRUE(msgs.has_value());
  EXPECT_EQ(d.buffered_bytes(), 0u);
  return msgs.has_value() ? *msgs : std::vector<es::Message>{};
}

std::string HeaderIn(const es::Message& m, const std::string& name) {
  for (const auto& h : m.headers) {
    if (h.name == name) return h.value;
  }
  return "";
}

// The router behind a real HttpServer on loopback, without authentication; stopped when it goes.
struct ServedRouter {
  ServedRouter(CopyDirectory& dir, http::MetricsRegistry& metrics, RouterOptions options)
      : router(dir, metrics, std::move(options)), server(ServerOptions(), creds, metrics) {
    RegisterRuntimeRoutes(server, router);
    if (auto started = server.Start("127.0.0.1", 0); started.has_value()) port = *started;
  }
  ~ServedRouter() {
    server.Stop();
    server.Wait();
  }
  static http::HttpServerOptions ServerOptions() {
    http::HttpServerOptions so;
    so.insecure_no_auth = true;
    so.insecure_account_id = kAccount;
    return so;
  }
  Router router;
  aws::Credentials creds;
  http::HttpServer server;
  std::optional<int> port;
};

class RouterStreamTest : public ::testing::Test {
 protected:
  RouterOptions Options() {
    RouterOptions o;
    o.seed = 42;
    return o;
  }
  FakeCopyDirectory dir_;
  http::MetricsRegistry metrics_;
};

TEST_F(RouterStreamTest, RelaysEachSseEventAsAPayloadPart) {
  TestCopy copy(Sse({"data: {\"t\":0}\n\n", "data: {\"t\":1}\n\n", "data: {\"t\":2}\n\n"}));
  dir_.SetRoute(kAccount, "ep", Route({{"c1", copy.address()}}));
  Router router(dir_, metrics_, Options());
  http::NativeRequest req = Request();
  req.headers["x-amzn-sagemaker-custom-attributes"] = "trace=7";
  http::NativeResponse out = router.InvokeStream(req);
  ASSERT_EQ(out.http_status, 200) << out.body;
  ASSERT_TRUE(out.stream);
  EXPECT_EQ(out.content_type, "application/vnd.amazon.eventstream");
  EXPECT_EQ(HeaderOf(out, "x-Amzn-Invoked-Production-Variant"), "AllTraffic");
  EXPECT_EQ(HeaderOf(out, "X-Amzn-SageMaker-Content-Type"), "text/event-stream");
  // CustomAttributes reach the copy and its answer comes back, as on a unary invocation.
  EXPECT_EQ(HeaderOf(out, "X-Amzn-SageMaker-Custom-Attributes"), "seen=trace=7");
  auto msgs = Drain(out);
  ASSERT_EQ(msgs.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(HeaderIn(msgs[i], ":event-type"), "PayloadPart");
    EXPECT_EQ(HeaderIn(msgs[i], ":message-type"), "event");
    EXPECT_EQ(HeaderIn(msgs[i], ":content-type"), "application/octet-stream");
    EXPECT_EQ(msgs[i].payload, "data: {\"t\":" + std::to_string(i) + "}\n\n");
  }
  EXPECT_EQ(router.balancer().Outstanding("c1"), 0);
}

// A stream's time in the copy is recorded once it ends: its model latency (and the router's
// overhead beside it) is observed once, as a unary invocation's is.
TEST_F(RouterStreamTest, AStreamsModelTimeIsObservedOnceItEnds) {
  TestCopy copy(Sse({"data: {\"t\":0}\n\n", "data: {\"t\":1}\n\n"}));
  dir_.SetRoute(kAccount, "ep", Route({{"c1", copy.address()}}));
  Router router(dir_, metrics_, Options());
  http::NativeResponse out = router.InvokeStream(Request());
  ASSERT_EQ(out.http_status, 200) << out.body;
  ASSERT_EQ(Drain(out).size(), 2u);
  auto count_of = [&](const std::string& family) {
    const std::string text = metrics_.Expose();
    const size_t at = text.find(family + "_count{");
    if (at == std::string::npos) return std::string("absent");
    const size_t end = text.find('\n', at);
    return text.substr(text.rfind(' ', end) + 1, end - text.rfind(' ', end) - 1);
  };
  EXPECT_EQ(count_of("carve_runtime_model_latency_seconds"), "1");
  EXPECT_EQ(count_of("carve_runtime_overhead_latency_seconds"), "1");
  EXPECT_EQ(count_of("carve_runtime_request_duration_seconds"), "1");
}

// A stream the server never runs (its client went away before the first byte) still ends its
// call: it is counted, and it leaves nothing in flight for autoscaling to read.
TEST_F(RouterStreamTest, AStreamNeverRunIsStillCountedAndLeavesNothingInFlight) {
  TestCopy copy(Sse({"data: {\"t\":0}\n\n"}));
  dir_.SetRoute(kAccount, "ep", Route({{"c1", copy.address()}}));
  InvocationStats stats;
  RouterOptions options = Options();
  options.stats = &stats;
  Router router(dir_, metrics_, options);
  {
    http::NativeResponse out = router.InvokeStream(Request());
    ASSERT_EQ(out.http_status, 200) << out.body;
    ASSERT_TRUE(out.stream);
    EXPECT_EQ(stats.EndpointTotals(kAccount, "ep").in_flight, 1);
  }  // Dropped without running.
  EXPECT_EQ(stats.EndpointTotals(kAccount, "ep").in_flight, 0);
  EXPECT_NE(metrics_.Expose().find("carve_runtime_request_duration_seconds_count{"),
            std::string::npos);
}

// The same for the OpenAI route's server-sent events.
TEST_F(RouterStreamTest, AnOpenAiStreamNeverRunLeavesNothingInFlight) {
  TestCopy copy(Sse({"data: {\"t\":0}\n\n"}), "/v1/chat/completions");
  dir_.SetRoute(kAccount, "ep", Route({{"c1", copy.address()}}));
  InvocationStats stats;
  RouterOptions options = Options();
  options.stats = &stats;
  Router router(dir_, metrics_, options);
  const http::NativeRequest req = ChatRequest(/*stream=*/true);
  {
    http::NativeResponse out = router.ChatCompletions(req);
    ASSERT_EQ(out.http_status, 200) << out.body;
    ASSERT_TRUE(out.stream);
    EXPECT_EQ(stats.EndpointTotals(kAccount, "ep").in_flight, 1);
  }  // Dropped without running.
  EXPECT_EQ(stats.EndpointTotals(kAccount, "ep").in_flight, 0);
}

// A copy that takes the request and never answers is the model's failure on the OpenAI route
// too (ModelError, 424), not "no copy answered" (503): the request reached it.
TEST_F(RouterStreamTest, AnOpenAiRequestWhoseCopyTimesOutIsAModelError) {
  std::atomic<bool> done{false};
  ScriptedServer silent([&](int fd, int) {
    ReadRequest(fd);
    while (!done) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  });
  RouteInfo route = Route({{"c1", silent.address()}});
  route.timeout = std::chrono::milliseconds(100);
  dir_.SetRoute(kAccount, "ep", route);
  Router router(dir_, metrics_, Options());
  const http::NativeRequest req = ChatRequest(/*stream=*/false);
  http::NativeResponse out = router.ChatCompletions(req);
  done = true;
  EXPECT_EQ(out.http_status, 424) << out.body;
  EXPECT_NE(out.body.find("ModelError"), std::string::npos) << out.body;
}

// A stream to an endpoint the directory does not know is refused like InvokeEndpoint's
// request: 400 ValidationError, before any copy is asked.
TEST_F(RouterStreamTest, AStreamToAnUnknownEndpointIsAValidationError) {
  Router router(dir_, metrics_, Options());
  http::NativeRequest req = Request();
  req.path_params["EndpointName"] = "nope";
  http::NativeResponse out = router.InvokeStream(req);
  EXPECT_EQ(out.http_status, 400) << out.body;
  EXPECT_EQ(HeaderOf(out, "X-Amzn-ErrorType"), "ValidationError");
  EXPECT_FALSE(out.stream);
}

// The OpenAI route's stream too: its time in the copy is observed once the stream ends.
TEST_F(RouterStreamTest, AnOpenAiStreamsModelTimeIsObservedOnceItEnds) {
  TestCopy copy(Sse({"data: {\"t\":0}\n\n", "data: {\"t\":1}\n\n"}), "/v1/chat/completions");
  dir_.SetRoute(kAccount, "ep", Route({{"c1", copy.address()}}));
  Router router(dir_, metrics_, Options());
  const http::NativeRequest req = ChatRequest(/*stream=*/true);
  http::NativeResponse out = router.ChatCompletions(req);
  ASSERT_EQ(out.http_status, 200) << out.body;
  ASSERT_TRUE(out.stream);
  std::string sse;
  out.stream([&](std::string_view chunk) {
    sse += chunk;
    return true;
  });
  EXPECT_EQ(sse, "data: {\"t\":0}\n\ndata: {\"t\":1}\n\n");
  const std::string text = metrics_.Expose();
  for (const char* family : {"carve_runtime_model_latency_seconds_count{",
                             "carve_runtime_overhead_latency_seconds_count{"}) {
    const size_t at = text.find(family);
    ASSERT_NE(at, std::string::npos) << family << "\n" << text;
    const size_t end = text.find('\n', at);
    EXPECT_EQ(text.substr(text.rfind(' ', end) + 1, end - text.rfind(' ', end) - 1), "1") << family;
  }
}

TEST_F(RouterStreamTest, AnOpenAiAnswersModelTimeIsObserved) {
  TestCopy copy(
      [](const httplib::Request&, httplib::Response& s) {
        s.set_content(R"({"choices":[]})", "application/json");
      },
      "/v1/chat/completions");
  dir_.SetRoute(kAccount, "ep", Route({{"c1", copy.address()}}));
  Router router(dir_, metrics_, Options());
  const http::NativeRequest req = ChatRequest(/*stream=*/false);
  http::NativeResponse out = router.ChatCompletions(req);
  ASSERT_EQ(out.http_status, 200) << out.body;
  EXPECT_EQ(out.body, R"({"choices":[]})");
  const std::string text = metrics_.Expose();
  const size_t at = text.find("carve_runtime_model_latency_seconds_count{");
  ASSERT_NE(at, std::string::npos) << text;
  const size_t end = text.find('\n', at);
  EXPECT_EQ(text.substr(text.rfind(' ', end) + 1, end - text.rfind(' ', end) - 1), "1");
}

TEST_F(RouterStreamTest, AnSseErrorEventBecomesAModelStreamErrorFrame) {
  TestCopy copy(Sse({"data: {\"t\":0}\n\n",
                     "data: {\"error\":{\"message\":\"boom\",\"type\":\"server_error\"}}\n\n"},
                    /*cut=*/true));
  dir_.SetRoute(kAccount, "ep", Route({{"c1", copy.address()}}));
  Router router(dir_, metrics_, Options());
  auto msgs = Drain(router.InvokeStream(Request()));
  ASSERT_EQ(msgs.size(), 2u);
  EXPECT_EQ(HeaderIn(msgs[0], ":event-type"), "PayloadPart");
  EXPECT_EQ(HeaderIn(msgs[1], ":message-type"), "exception");
  EXPECT_EQ(HeaderIn(msgs[1], ":exception-type"), "ModelStreamError");
  auto j = nlohmann::json::parse(msgs[1].payload);
  EXPECT_EQ(j["Message"], "boom");
  EXPECT_EQ(j["ErrorCode"], "ModelError");
}

TEST_F(RouterStreamTest, ACopyThatDisconnectsMidStreamIsNotRetried) {
  TestCopy a(Sse({"data: {\"t\":0}\n\n"}, /*cut=*/true));
  TestCopy b(Sse({"data: {\"t\":0}\n\n"}, /*cut=*/true));
  dir_.SetRoute(kAccount, "ep", Route({{"a", a.address()}, {"b", b.address()}}));
  Router router(dir_, metrics_, Options());
  auto msgs = Drain(router.InvokeStream(Request()));
  ASSERT_EQ(msgs.size(), 2u);
  EXPECT_EQ(msgs[0].payload, "data: {\"t\":0}\n\n");
  EXPECT_EQ(HeaderIn(msgs[1], ":exception-type"), "ModelStreamError");
  EXPECT_EQ(nlohmann::json::parse(msgs[1].payload)["ErrorCode"], "StreamBroken");
  EXPECT_EQ(a.hits() + b.hits(), 1);
}

TEST_F(RouterStreamTest, ANon2xxAnswerBeforeAnyByteIsAModelError) {
  TestCopy copy([](const httplib::Request&, httplib::Response& s) {
    s.status = 500;
    s.set_content("{\"error\":\"injected\"}", "application/json");
  });
  dir_.SetRoute(kAccount, "ep", Route({{"c1", copy.address()}}));
  Router router(dir_, metrics_, Options());
  http::NativeResponse out = router.InvokeStream(Request());
  EXPECT_FALSE(out.stream);
  EXPECT_EQ(out.http_status, 424);
  EXPECT_EQ(HeaderOf(out, "X-Amzn-ErrorType"), "ModelError");
  EXPECT_EQ(nlohmann::json::parse(out.body)["OriginalMessage"], "{\"error\":\"injected\"}");
}

// The one retry rule (Router::NextAfter): a 5xx before any byte reached the client moves a
// stream to another copy as it does InvokeEndpoint, on both streaming routes; with no copy left,
// the last 5xx is the answer.
TEST_F(RouterStreamTest, A5xxAnswerMovesTheStreamToAnotherCopy) {
  const TestCopy::Handler busy = Busy503;
  TestCopy failing(busy);
  TestCopy alone(busy);  // Outlives the router, whose pool holds a connection to it.
  TestCopy good(Sse({"data: ok\n\n"}));
  dir_.SetRoute(kAccount, "ep", Route({{"busy", failing.address()}, {"good", good.address()}}));
  Router router(dir_, metrics_, Options());
  for (int i = 0; i < 4; ++i) {
    auto msgs = Drain(router.InvokeStream(Request()));
    ASSERT_EQ(msgs.size(), 1u);
    EXPECT_EQ(msgs[0].payload, "data: ok\n\n");
  }
  EXPECT_EQ(good.hits(), 4);
  EXPECT_GT(failing.hits(), 0) << "the seed never tried the failing copy first";
  EXPECT_FALSE(router.balancer().IsQuarantined("busy")) << "it answered: it is not out";

  dir_.SetRoute(kAccount, "ep", Route({{"alone", alone.address()}}));
  http::NativeResponse out = router.InvokeStream(Request());
  EXPECT_EQ(out.http_status, 424);
  EXPECT_EQ(nlohmann::json::parse(out.body)["OriginalStatusCode"], 503);
}

TEST_F(RouterStreamTest, A5xxAnswerMovesAnOpenAiRequestToAnotherCopyAndTheLastOnePassesThrough) {
  const TestCopy::Handler busy = Busy503;
  TestCopy failing(busy, "/v1/chat/completions");
  TestCopy good(
      [](const httplib::Request&, httplib::Response& s) {
        s.set_content(R"({"choices":[]})", "application/json");
      },
      "/v1/chat/completions");
  dir_.SetRoute(kAccount, "ep", Route({{"busy", failing.address()}, {"good", good.address()}}));
  Router router(dir_, metrics_, Options());
  const http::NativeRequest req = ChatRequest(/*stream=*/false);
  for (int i = 0; i < 4; ++i) {
    http::NativeResponse out = router.ChatCompletions(req);
    EXPECT_EQ(out.http_status, 200) << out.body;
    EXPECT_EQ(out.body, R"({"choices":[]})");
  }
  EXPECT_GT(failing.hits(), 0) << "the seed never tried the failing copy first";

  dir_.SetRoute(kAccount, "ep", Route({{"busy", failing.address()}}));
  http::NativeResponse out = router.ChatCompletions(req);
  EXPECT_EQ(out.http_status, 503);
  EXPECT_EQ(out.body, "{\"error\":\"busy\"}");
}

TEST_F(RouterStreamTest, ARefusedConnectionMovesTheStreamToAnotherCopy) {
  TestCopy good(Sse({"data: ok\n\n"}));
  dir_.SetRoute(kAccount, "ep", Route({{"dead", DeadAddress()}, {"good", good.address()}}));
  Router router(dir_, metrics_, Options());
  for (int i = 0; i < 6; ++i) {
    auto msgs = Drain(router.InvokeStream(Request()));
    ASSERT_EQ(msgs.size(), 1u);
    EXPECT_EQ(msgs[0].payload, "data: ok\n\n");
  }
  EXPECT_TRUE(router.balancer().IsQuarantined("dead"));
}

TEST_F(RouterStreamTest, ACopyHangingUpBeforeItsHeadersMovesTheStreamToAnotherCopy) {
  ScriptedServer hangs_up([](int fd, int) { ReadRequest(fd); });
  TestCopy good(Sse({"data: ok\n\n"}));
  dir_.SetRoute(kAccount, "ep", Route({{"gone", hangs_up.address()}, {"good", good.address()}}));
  Router router(dir_, metrics_, Options());
  for (int i = 0; i < 6; ++i) {
    auto msgs = Drain(router.InvokeStream(Request()));
    ASSERT_EQ(msgs.size(), 1u);
    EXPECT_EQ(msgs[0].payload, "data: ok\n\n");
  }
  EXPECT_TRUE(router.balancer().IsQuarantined("gone"));
}

// A copy that sends one SSE event, then holds the second until Release() (or 10 s, after which
// released() stays false), then ends its stream.
class HoldingCopy {
 public:
  explicit HoldingCopy(const std::string& path)
      : copy_(
            [this](const httplib::Request&, httplib::Response& s) {
              auto step = std::make_shared<int>(0);
              s.set_chunked_content_provider(
                  "text/event-stream", [this, step](size_t, httplib::DataSink& sink) {
                    if (*step == 2) {
                      sink.done();
                      return true;
                    }
                    if (*step == 1) {
                      released_ =
                          first_.wait_for(std::chrono::seconds(10)) == std::future_status::ready;
                    }
                    const std::string e = "data: {\"t\":" + std::to_string((*step)++) + "}\n\n";
                    sink.write(e.data(), e.size());
                    return true;
                  });
            },
            path) {}
  ~HoldingCopy() {
    Release();
    copy_.Stop();
  }
  void Release() {
    if (!set_.exchange(true)) first_received_.set_value();
  }
  bool released() const { return released_; }
  std::string address() const { return copy_.address(); }

 private:
  std::promise<void> first_received_;
  std::shared_future<void> first_ = first_received_.get_future().share();
  std::atomic<bool> set_{false};
  std::atomic<bool> released_{false};
  TestCopy copy_;
};

// Sends `req` to 127.0.0.1:`port` and releases `copy` on the first chunk after which
// `has_first_event` holds for what arrived so far; returns everything that arrived.
std::string SendReleasingOnTheFirstEvent(int port, httplib::Request req, HoldingCopy& copy,
                                         const std::function<bool(const std::string&)>& has_first) {
  std::string received;
  req.method = "POST";
  req.content_receiver = [&](const char* data, size_t n, uint64_t, uint64_t) {
    received.append(data, n);
    if (has_first(received)) copy.Release();
    return true;
  };
  httplib::Client cli("127.0.0.1", port);
  auto res = cli.send(req);
  copy.Release();  // Let the copy finish whatever happened.
  EXPECT_TRUE(res);
  if (res) {
    EXPECT_EQ(res->status, 200) << received;
  }
  return received;
}

// Each event reaches the client as the copy produces it, not when the copy finishes: the copy
// sends its first event, then holds the second until the client, over HTTP through HttpServer,
// has received the first. A front end that held events back would deliver the first only once
// the copy gave up waiting (10 s) and finished, and released() would be false. No clock is
// read: the copy's wait ends with the client's receipt, or not at all. Both streaming routes:
// SageMaker's event stream and the OpenAI route's server-sent events.
TEST_F(RouterStreamTest, EachEventReachesTheClientBeforeTheCopySendsTheNext) {
  HoldingCopy copy("/invocations");
  dir_.SetRoute(kAccount, "ep", Route({{"c1", copy.address()}}));
  ServedRouter served(dir_, metrics_, Options());
  ASSERT_TRUE(served.port.has_value());
  httplib::Request req;
  req.path = "/endpoints/ep/invocations-response-stream";
  req.headers = {{"X-Amzn-SageMaker-Inference-Component", "ic-a"},
                 {"Content-Type", "application/json"}};
  req.body = Request().body;
  const std::string wire =
      SendReleasingOnTheFirstEvent(*served.port, req, copy, [](const std::string& got) {
        es::Decoder d;
        auto msgs = d.Feed(got);
        return msgs.has_value() && !msgs->empty();
      });
  EXPECT_TRUE(copy.released()) << "the first event reached the client only after the copy ended";
  es::Decoder d;
  auto msgs = d.Feed(wire);
  ASSERT_TRUE(msgs.has_value());
  ASSERT_EQ(msgs->size(), 2u);
  EXPECT_EQ((*msgs)[0].payload, "data: {\"t\":0}\n\n");
  EXPECT_EQ((*msgs)[1].payload, "data: {\"t\":1}\n\n");
}

TEST_F(RouterStreamTest, EachOpenAiEventReachesTheClientBeforeTheCopySendsTheNext) {
  HoldingCopy copy("/v1/chat/completions");
  dir_.SetRoute(kAccount, "ep", Route({{"c1", copy.address()}}));
  ServedRouter served(dir_, metrics_, Options());
  ASSERT_TRUE(served.port.has_value());
  httplib::Request req;
  req.path = "/endpoints/ep/openai/v1/chat/completions";
  req.headers = {{"Content-Type", "application/json"}};
  req.body = R"({"model":"ic-a","messages":[{"role":"user","content":"hi"}],"stream":true})";
  const std::string sse = SendReleasingOnTheFirstEvent(
      *served.port, req, copy,
      [](const std::string& got) { return got.find("\n\n") != std::string::npos; });
  EXPECT_TRUE(copy.released()) << "the first event reached the client only after the copy ended";
  EXPECT_EQ(sse, "data: {\"t\":0}\n\ndata: {\"t\":1}\n\n");
}

// A body that is JSON but not an object (an array, a string, a number) is a 400 in OpenAI's
// error shape, never read as a request: the route reads "model" and "stream" from it.
TEST_F(RouterStreamTest, AnOpenAiBodyThatIsNotAnObjectIsRefused) {
  HoldingCopy copy("/v1/chat/completions");
  dir_.SetRoute(kAccount, "ep", Route({{"c1", copy.address()}}));
  ServedRouter served(dir_, metrics_, Options());
  ASSERT_TRUE(served.port.has_value());
  httplib::Client cli("127.0.0.1", *served.port);
  for (const char* body : {"[1]", "\"text\"", "7"}) {
    auto res = cli.Post("/endpoints/ep/openai/v1/chat/completions", body, "application/json");
    ASSERT_TRUE(res) << body;
    EXPECT_EQ(res->status, 400) << body << ": " << res->body;
    const auto j = nlohmann::json::parse(res->body, nullptr, false);
    ASSERT_TRUE(j.is_object()) << res->body;
    EXPECT_NE(j["error"]["message"].get<std::string>().find("must be a JSON object"),
              std::string::npos)
        << res->body;
    EXPECT_EQ(j["error"]["type"], "invalid_request_error") << res->body;  // OpenAI's for a 400.
  }
}

TEST_F(RouterStreamTest, BotocoreParsesTheResponseStreamServedOverHttp) {
  // botocore is a dependency of `make test` (scripts/setup.sh installs it): without it this is
  // a failure to see, not a skip.
  ASSERT_EQ(std::system("python3 -c 'import botocore' >/dev/null 2>&1"), 0)
      << "python3 cannot import botocore; scripts/setup.sh installs it (python3-boto3)";
  TestCopy copy(Sse({"data: {\"t\":0}\n\n", "data: {\"t\":1}\n\n",
                     "data: {\"error\":{\"message\":\"stream failure injected\"}}\n\n"},
                    /*cut=*/true));
  dir_.SetRoute(kAccount, "ep", Route({{"c1", copy.address()}}));
  ServedRouter served(dir_, metrics_, Options());
  ASSERT_TRUE(served.port.has_value());
  const int port = *served.port;
  httplib::Client cli("127.0.0.1", port);
  httplib::Headers h{{"X-Amzn-SageMaker-Inference-Component", "ic-a"}};
  auto res =
      cli.Post("/endpoints/ep/invocations-response-stream", h, Request().body, "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->get_header_value("Content-Type"), "application/vnd.amazon.eventstream");
  EXPECT_EQ(res->get_header_value("x-Amzn-Invoked-Production-Variant"), "AllTraffic");
  const auto path = std::filesystem::temp_directory_path() /
                    ("carve_stream_" + std::to_string(getpid()) + ".bin");
  std::ofstream(path, std::ios::binary) << res->body;
  const std::string cmd = std::string("python3 ") + CARVE_RUNTIME_SRC_DIR +
                          "/parse_response_stream.py " + path.string();
  FILE* p = popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string got;
  char buf[256];
  while (size_t n = fread(buf, 1, sizeof buf, p)) got.append(buf, n);
  EXPECT_EQ(pclose(p), 0);
  std::filesystem::remove(path);
  EXPECT_EQ(got,
            "PART b'data: {\"t\":0}\\n\\n'\n"
            "PART b'data: {\"t\":1}\\n\\n'\n"
            "ERROR ModelStreamError stream failure injected\n");
}

}  // namespace
}  // namespace carve::runtime
