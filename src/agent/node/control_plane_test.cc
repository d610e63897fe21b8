#include "agent/node/control_plane.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <mutex>
#include <thread>

namespace carve::agent::node {
namespace {

using namespace std::chrono_literals;

// A stand-in server on 127.0.0.1:<free port> that records what it was sent.
class StubServer {
 public:
  StubServer() {
    server_.Post("/v1/agent/register", [this](const httplib::Request& req, httplib::Response& res) {
      Record(req);
      protocol::RegisterReply reply;
      reply.node_id = "n1";
      reply.epoch = "e-7";
      reply.heartbeat_interval_ms = 1234;
      res.set_content(protocol::ToJson(reply).dump(), "application/json");
    });
    server_.Get("/v1/agent/desired", [this](const httplib::Request& req, httplib::Response& res) {
      Record(req);
      if (req.get_param_value("node") == "ghost") {
        res.status = 404;
        res.set_content(R"({"error":"node ghost is not registered"})", "application/json");
        return;
      }
      protocol::DesiredState state;
      state.node_id = req.get_param_value("node");
      state.epoch = "e-7";
      state.version = 5;
      state.gpus.push_back({0, true, {{"3g.20gb", 4}}});
      res.set_content(protocol::ToJson(state).dump(), "application/json");
    });
    server_.Post("/v1/agent/status", [this](const httplib::Request& req, httplib::Response& res) {
      Record(req);
      protocol::StatusReply reply;
      reply.desired_epoch = "e-7";
      reply.reregister = true;
      res.set_content(protocol::ToJson(reply).dump(), "application/json");
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ~StubServer() {
    server_.stop();
    thread_.join();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  httplib::Request last() {
    std::lock_guard lock(mu_);
    return last_;
  }

 private:
  void Record(const httplib::Request& req) {
    std::lock_guard lock(mu_);
    last_ = req;
  }
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
  std::mutex mu_;
  httplib::Request last_;
};

HttpControlPlane Client(const std::string& url) {
  return HttpControlPlane(protocol::SignedClient(url, {}));
}

TEST(HttpControlPlane, RegisterPostsTheInventoryAndReadsTheEpoch) {
  StubServer server;
  auto plane = Client(server.url());
  protocol::Registration r;
  r.node_id = "n1";
  r.instance_type = "ml.p4d.24xlarge";
  auto reply = plane.Register(r);
  ASSERT_TRUE(reply.has_value()) << reply.error().message;
  EXPECT_EQ(reply->epoch, "e-7");
  EXPECT_EQ(reply->heartbeat_interval_ms, 1234);
  auto sent = protocol::RegistrationFromJson(nlohmann::json::parse(server.last().body));
  ASSERT_TRUE(sent.has_value());
  EXPECT_EQ(sent->instance_type, "ml.p4d.24xlarge");
}

// A node speaks with its own credential: a bearer token, never a signature.
TEST(HttpControlPlane, ANodeCredentialGoesAsABearerTokenOnEveryCall) {
  StubServer server;
  protocol::ClientCredentials key;
  key.access_key_id = "AKIDEXAMPLE";
  key.secret_access_key = "secret";
  key.bearer_token = "carve-node.0123456789abcdef." + std::string(64, 'a');
  HttpControlPlane plane(protocol::SignedClient(server.url(), key));
  protocol::Registration r;
  r.node_id = "n1";
  ASSERT_TRUE(plane.Register(r).has_value());
  EXPECT_EQ(server.last().get_header_value("Authorization"), "Bearer " + key.bearer_token);
  ASSERT_TRUE(plane.WatchDesired("n1", "e-7", 0, 0ms).has_value());
  EXPECT_EQ(server.last().get_header_value("Authorization"), "Bearer " + key.bearer_token);
}

TEST(HttpControlPlane, WatchDesiredSendsNodeEpochAfterAndWaitInTheQuery) {
  StubServer server;
  auto plane = Client(server.url());
  auto state = plane.WatchDesired("node a/1", "e-7", 4, 1500ms);
  ASSERT_TRUE(state.has_value()) << state.error().message;
  EXPECT_EQ(state->version, 5u);
  ASSERT_EQ(state->gpus.size(), 1u);
  EXPECT_EQ(state->gpus[0].partitions[0].start, 4);
  const httplib::Request req = server.last();
  EXPECT_EQ(req.get_param_value("node"), "node a/1");
  EXPECT_EQ(req.get_param_value("epoch"), "e-7");
  EXPECT_EQ(req.get_param_value("after"), "4");
  EXPECT_EQ(req.get_param_value("wait_ms"), "1500");
}

TEST(HttpControlPlane, AnUnknownNodeIsNotFound) {
  StubServer server;
  auto state = Client(server.url()).WatchDesired("ghost", "", 0, 0ms);
  ASSERT_FALSE(state.has_value());
  EXPECT_EQ(state.error().code, ErrorCode::kNotFound);
}

TEST(HttpControlPlane, ReportPostsTheStatusAndReadsReregister) {
  StubServer server;
  protocol::StatusReport report;
  report.node_id = "n1";
  report.events = {"copy ic/0 exited with status 3"};
  auto reply = Client(server.url()).Report(report);
  ASSERT_TRUE(reply.has_value()) << reply.error().message;
  EXPECT_TRUE(reply->reregister);
  auto sent = protocol::StatusReportFromJson(nlohmann::json::parse(server.last().body));
  ASSERT_TRUE(sent.has_value());
  EXPECT_EQ(sent->events, report.events);
}

TEST(HttpControlPlane, AnUnreachableServerIsUnavailable) {
  int port = 0;
  {
    StubServer gone;  // Take a port, then free it.
    port = std::stoi(gone.url().substr(gone.url().rfind(':') + 1));
  }
  auto reply = Client("http://127.0.0.1:" + std::to_string(port)).Report({});
  ASSERT_FALSE(reply.has_value());
  EXPECT_EQ(reply.error().code, ErrorCode::kUnavailable);
}

TEST(QueryEscape, EncodesReservedCharacters) {
  EXPECT_EQ(QueryEscape("node a/1&x=y"), "node%20a%2F1%26x%3Dy");
  EXPECT_EQ(QueryEscape("ip-10-0-0-1.ec2_internal~"), "ip-10-0-0-1.ec2_internal~");
}

}  // namespace
}  // namespace carve::agent::node
