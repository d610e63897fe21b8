// The HTTP targets against an in-process server on 127.0.0.1, port 0: SSE and event-stream
// bodies sent in pieces, SigV4 checked with the server's own verifier, failures and deadlines.
#include "loadgen/http_targets.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <nlohmann/json.hpp>
#include <thread>

#include "aws/credentials.h"
#include "aws/event_stream.h"
#include "aws/sigv4.h"
#include "common/clock.h"

namespace carve::loadgen {
namespace {

namespace es = aws::eventstream;
using nlohmann::json;
using std::chrono::milliseconds;

constexpr const char* kKey = "AKIDEXAMPLE";
constexpr const char* kSecret = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";

// Sends `pieces` one write at a time, sleeping `gap` between them.
void Stream(httplib::Response& res, const char* type, std::vector<std::string> pieces,
            milliseconds gap) {
  auto next = std::make_shared<size_t>(0);
  res.set_chunked_content_provider(type, [pieces, next, gap](size_t, httplib::DataSink& sink) {
    if (*next == pieces.size()) {
      sink.done();
      return true;
    }
    if (*next > 0) std::this_thread::sleep_for(gap);
    const std::string& p = pieces[(*next)++];
    sink.write(p.data(), p.size());
    return true;
  });
}

std::string Frame(const std::string& bytes) {
  return es::Encode(
      es::Message{{{":message-type", "event"}, {":event-type", "PayloadPart"}}, bytes});
}

class FakeModelServer {
 public:
  FakeModelServer()
      : credentials_({{"default", kKey, kSecret, "123456789012"}}),
        verifier_(credentials_, clock_, "sagemaker", "us-west-2") {
    server_.Post("/v1/completions", [this](const httplib::Request& req, httplib::Response& res) {
      last_body_ = req.body;
      json body = json::parse(req.body);
      if (body.value("model", "") == "broken") {
        res.status = 500;
        res.set_content(R"({"error":{"message":"injected"}})", "application/json");
        return;
      }
      const milliseconds gap(body.value("model", "") == "slow" ? 200 : 20);
      // "data: ..." split mid-line across writes, then usage and [DONE].
      Stream(res, "text/event-stream",
             {"data: {\"choices\":[{\"text\":\" a\"}]}\n", "\ndata: {\"choices\":[{\"te",
              "xt\":\" b\"}]}\n\n",
              "data: {\"choices\":[{\"text\":\" c\"}],\"usage\":"
              "{\"completion_tokens\":3}}\n\ndata: [DONE]\n\n"},
             gap);
    });
    server_.Post("/endpoints/ep-1/invocations-response-stream", [this](const httplib::Request& req,
                                                                       httplib::Response& res) {
      aws::SigV4Request sig{req.method, req.path, "", {}, req.body};
      for (const auto& [k, v] : req.headers) sig.headers.emplace_back(k, v);
      if (std::holds_alternative<aws::AuthFailure>(verifier_.Verify(sig))) {
        res.status = 403;
        res.set_content(std::get<aws::AuthFailure>(verifier_.Verify(sig)).message, "text/plain");
        return;
      }
      component_ = req.get_header_value("X-Amzn-SageMaker-Inference-Component");
      last_body_ = req.body;
      const std::string all = Frame("data: {\"token\":{\"text\":\" a\"}}\n\ndata: {\"tok") +
                              Frame("en\":{\"text\":\" b\"},\"generated_text\":\" a b\"}\n\n");
      // The frames cut at arbitrary byte offsets.
      Stream(res, "application/vnd.amazon.eventstream",
             {all.substr(0, 5), all.substr(5, 40), all.substr(45)}, milliseconds(10));
    });
    server_.set_tcp_nodelay(true);
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    // httplib 0.11 has no wait_until_ready; stop() is a no-op until listening starts.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!server_.is_running() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(milliseconds(1));
    }
  }
  ~FakeModelServer() {
    server_.stop();
    thread_.join();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

  std::string last_body_;
  std::string component_;

 private:
  aws::Credentials credentials_;
  SystemClock clock_;
  aws::SigV4Verifier verifier_;
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
};

BenchRequest Request(int64_t in, int64_t out) {
  BenchRequest r;
  r.shape = {in, out};
  r.prompt = std::string(static_cast<size_t>(in * 4), 'x');
  return r;
}

TEST(ParseHttpUrl, SplitsOriginAndPath) {
  auto u = ParseHttpUrl("http://127.0.0.1:8000/v1/");
  ASSERT_TRUE(u.has_value()) << u.error().message;
  EXPECT_EQ(u->origin, "http://127.0.0.1:8000");
  EXPECT_EQ(u->host_header, "127.0.0.1:8000");
  EXPECT_EQ(u->path, "/v1");
}

TEST(ParseHttpUrl, RejectsOtherSchemesNamingTheUrl) {
  auto u = ParseHttpUrl("https://example.com");
  ASSERT_FALSE(u.has_value());
  EXPECT_NE(u.error().message.find("https://example.com"), std::string::npos);
}

TEST(OpenAiBody, AsksForExactlyTheOutputTokens) {
  json b = json::parse(OpenAiBody({"", "m", OpenAiApi::kCompletions, true}, Request(2, 7)));
  EXPECT_EQ(b["max_tokens"], 7);
  EXPECT_EQ(b["stream"], true);
  EXPECT_EQ(b["ignore_eos"], true);
  EXPECT_EQ(b["model"], "m");
  EXPECT_EQ(b["prompt"], "xxxxxxxx");
  json chat = json::parse(OpenAiBody({"", "", OpenAiApi::kChat, false}, Request(1, 3)));
  EXPECT_EQ(chat["messages"][0]["content"], "xxxx");
  EXPECT_FALSE(chat.contains("model"));
  EXPECT_FALSE(chat.contains("ignore_eos"));
}

TEST(RuntimeBody, UsesSageMakerFields) {
  json b = json::parse(RuntimeBody(Request(1, 9)));
  EXPECT_EQ(b["parameters"]["max_new_tokens"], 9);
  EXPECT_EQ(b["stream"], true);
  EXPECT_EQ(b["inputs"], "xxxx");
}

TEST(OpenAiTarget, TimesAStreamSplitAcrossWrites) {
  FakeModelServer server;
  auto target = MakeOpenAiTarget({server.url() + "/v1", "m", OpenAiApi::kCompletions, true});
  ASSERT_TRUE(target.has_value()) << target.error().message;
  auto session = (*target)->NewSession();
  for (int i = 0; i < 2; ++i) {  // the second request reuses the session's connection
    RequestOutcome o = session->Send(Request(4, 3), std::chrono::seconds(10));
    EXPECT_EQ(o.kind, OutcomeKind::kOk) << o.error;
    EXPECT_EQ(o.output_tokens, 3);
    EXPECT_GT(o.ttft_s, 0);
    EXPECT_GE(o.e2e_s - o.ttft_s, 0.035) << "ttft " << o.ttft_s << " e2e " << o.e2e_s << " i " << i;
  }
}

TEST(OpenAiTarget, Http500IsAnErrorWithTheStatus) {
  FakeModelServer server;
  auto target = MakeOpenAiTarget({server.url(), "broken", OpenAiApi::kCompletions, true});
  RequestOutcome o = (*target)->NewSession()->Send(Request(4, 3), std::chrono::seconds(10));
  EXPECT_EQ(o.kind, OutcomeKind::kError);
  EXPECT_NE(o.error.find("HTTP 500"), std::string::npos) << o.error;
}

TEST(OpenAiTarget, SlowStreamIsADeadlineFailure) {
  FakeModelServer server;
  auto target = MakeOpenAiTarget({server.url(), "slow", OpenAiApi::kCompletions, true});
  RequestOutcome o = (*target)->NewSession()->Send(Request(4, 3), milliseconds(300));
  EXPECT_EQ(o.kind, OutcomeKind::kDeadline) << o.error << " e2e " << o.e2e_s;
}

TEST(OpenAiTarget, UnreachableServerIsAnError) {
  auto target = MakeOpenAiTarget({"http://127.0.0.1:1", "", OpenAiApi::kCompletions, true});
  RequestOutcome o = (*target)->NewSession()->Send(Request(1, 1), std::chrono::seconds(2));
  EXPECT_EQ(o.kind, OutcomeKind::kError);
  EXPECT_FALSE(o.error.empty());
}

TEST(RuntimeTarget, SignsAndDecodesTheEventStream) {
  FakeModelServer server;
  auto target = MakeRuntimeTarget({server.url(), "ep-1", "ic-a", {kKey, kSecret, "us-west-2"}});
  ASSERT_TRUE(target.has_value()) << target.error().message;
  RequestOutcome o = (*target)->NewSession()->Send(Request(5, 2), std::chrono::seconds(10));
  EXPECT_EQ(o.kind, OutcomeKind::kOk) << o.error;
  EXPECT_EQ(o.output_tokens, 2);
  EXPECT_EQ(server.component_, "ic-a");
  EXPECT_EQ(json::parse(server.last_body_)["parameters"]["max_new_tokens"], 2);
}

TEST(RuntimeTarget, WrongSecretIsRejectedByTheVerifier) {
  FakeModelServer server;
  auto target = MakeRuntimeTarget(
      {server.url(), "ep-1", "", {kKey, "wrongwrongwrongwrongwrongwrongwrongwrong", "us-west-2"}});
  RequestOutcome o = (*target)->NewSession()->Send(Request(5, 2), std::chrono::seconds(10));
  EXPECT_EQ(o.kind, OutcomeKind::kError);
  EXPECT_NE(o.error.find("HTTP 403"), std::string::npos) << o.error;
}

TEST(RuntimeTarget, RejectsNamesSageMakerWouldReject) {
  auto target = MakeRuntimeTarget({"http://127.0.0.1:1", "bad_name", "", {}});
  ASSERT_FALSE(target.has_value());
  EXPECT_NE(target.error().message.find("bad_name"), std::string::npos);
}

}  // namespace
}  // namespace carve::loadgen
