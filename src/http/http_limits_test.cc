// The front end's limits and its event loop: connections that cost no thread, deadlines for slow
// senders, the connection cap, a 413 the client reads, and async routes.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <future>
#include <thread>

#include "http/http_server.h"

namespace carve::http {
namespace {

using namespace std::chrono_literals;

// Connects to 127.0.0.1:port from `source` (any address of 127/8 is this host's).
int Connect(int port, const char* source = nullptr) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (source != nullptr) {
    sockaddr_in from{};
    from.sin_family = AF_INET;
    EXPECT_EQ(::inet_pton(AF_INET, source, &from.sin_addr), 1);
    EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&from), sizeof from), 0);
  }
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  return fd;
}

// Reads until EOF or `timeout`; returns what arrived and whether the server closed.
std::pair<std::string, bool> ReadToClose(int fd, std::chrono::milliseconds timeout) {
  std::string got;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return {got, false};
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) return {got, false};
    char buf[4096];
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n <= 0) return {got, true};
    got.append(buf, static_cast<size_t>(n));
  }
}

class HttpLimitsTest : public ::testing::Test {
 protected:
  void Start(HttpServerOptions o) {
    o.insecure_no_auth = true;
    server_ = std::make_unique<HttpServer>(o, creds_, metrics_);
    server_->AddRoute("POST", "/v1/echo", kForAnyone, [](const NativeRequest& r) {
      return NativeResponse{200, std::to_string(r.body.size()), "text/plain"};
    });
    auto port = server_->Start("127.0.0.1", 0);
    ASSERT_TRUE(port.has_value()) << port.error().message;
    port_ = *port;
  }
  void TearDown() override {
    for (int fd : fds_) ::close(fd);
  }
  int Open(const char* source = nullptr) {
    fds_.push_back(Connect(port_, source));
    return fds_.back();
  }
  // Sends a /ping on `fd` and reads the start of its answer: the connection is open and counted.
  static void Ping(int fd) {
    ASSERT_EQ(::write(fd, "GET /ping HTTP/1.1\r\nHost: x\r\n\r\n", 31), 31);
    char buf[256];
    ASSERT_GT(::read(fd, buf, sizeof buf), 0);
  }
  aws::Credentials creds_;
  MetricsRegistry metrics_;
  std::unique_ptr<HttpServer> server_;
  int port_ = 0;
  std::vector<int> fds_;
};

// Each of these connections would have held a worker thread for its whole life; now they hold
// memory only, and a second client is served at once with just 2 workers.
TEST_F(HttpLimitsTest, AThousandHalfOpenConnectionsDoNotStopAnotherClient) {
  HttpServerOptions o;
  o.threads = 2;
  Start(o);
  for (int i = 0; i < 1000; ++i) {
    int fd = Open();
    ASSERT_EQ(::write(fd, "GET /pi", 7), 7);
  }
  httplib::Client other("127.0.0.1", port_);
  other.set_read_timeout(5, 0);
  auto r = other.Get("/ping");
  ASSERT_TRUE(r) << httplib::to_string(r.error());
  EXPECT_EQ(r->status, 200);
}

TEST_F(HttpLimitsTest, AClientThatSendsHalfItsHeadersIsClosedAtTheHeaderDeadline) {
  HttpServerOptions o;
  o.header_timeout = 300ms;
  Start(o);
  int fd = Open();
  ASSERT_EQ(::write(fd, "GET /ping HTTP/1.1\r\nHo", 22), 22);
  const auto began = std::chrono::steady_clock::now();
  auto [got, closed] = ReadToClose(fd, 5s);
  EXPECT_TRUE(closed);
  EXPECT_TRUE(got.empty()) << got;
  EXPECT_LT(std::chrono::steady_clock::now() - began, 3s);
}

TEST_F(HttpLimitsTest, AConnectionThatNeverSpeaksIsClosedAtTheHeaderDeadline) {
  HttpServerOptions o;
  o.header_timeout = 300ms;
  o.keep_alive_timeout = 60s;  // The idle allowance is for connections that made a request.
  Start(o);
  auto [got, closed] = ReadToClose(Open(), 5s);
  EXPECT_TRUE(closed);
}

TEST_F(HttpLimitsTest, ABodyThatStopsComingIsClosedAtTheBodyDeadline) {
  HttpServerOptions o;
  o.body_timeout = 300ms;
  Start(o);
  int fd = Open();
  const std::string head = "POST /v1/echo HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nabc";
  ASSERT_EQ(::write(fd, head.data(), head.size()), static_cast<ssize_t>(head.size()));
  auto [got, closed] = ReadToClose(fd, 5s);
  EXPECT_TRUE(closed);
  EXPECT_TRUE(got.empty()) << got;
}

TEST_F(HttpLimitsTest, OverTheConnectionCapTheNextOneGetsA503SayingWhy) {
  HttpServerOptions o;
  o.max_connections = 3;
  Start(o);
  for (int i = 0; i < 3; ++i) {
    int fd = Open();
    ASSERT_EQ(::write(fd, "GET /ping HTTP/1.1\r\nHost: x\r\n\r\n", 31), 31);
    char buf[256];
    ASSERT_GT(::read(fd, buf, sizeof buf), 0);  // Served: the connection is open and counted.
  }
  auto [got, closed] = ReadToClose(Open(), 5s);
  EXPECT_TRUE(closed);
  EXPECT_EQ(got.rfind("HTTP/1.1 503 ", 0), 0u) << got;
  EXPECT_NE(got.find("maximum of 3 open connections"), std::string::npos) << got;
  EXPECT_NE(
      metrics_.Expose().find("carve_http_connections_refused_total{reason=\"max_connections\"} 1"),
      std::string::npos);
  ::close(fds_[0]);  // One closes; a new one is served again.
  fds_.erase(fds_.begin());
  httplib::Client again("127.0.0.1", port_);
  for (auto deadline = std::chrono::steady_clock::now() + 5s;
       std::chrono::steady_clock::now() < deadline;) {
    auto r = again.Get("/ping");
    if (r && r->status == 200) return;
    std::this_thread::sleep_for(20ms);
  }
  ADD_FAILURE() << "no connection was served after one closed";
}

// One client address cannot take every connection: past its own cap it is refused, saying why,
// while another client is still served, and closing one of its connections lets it in again.
TEST_F(HttpLimitsTest, OverThePerClientCapThatClientGetsA503AndAnotherIsServed) {
  HttpServerOptions o;
  o.max_connections_per_client = 2;
  Start(o);
  Ping(Open("127.0.0.1"));
  Ping(Open("127.0.0.1"));
  auto [got, closed] = ReadToClose(Open("127.0.0.1"), 5s);
  EXPECT_TRUE(closed);
  EXPECT_EQ(got.rfind("HTTP/1.1 503 ", 0), 0u) << got;
  EXPECT_NE(got.find("client 127.0.0.1 already holds 2 open connections"), std::string::npos)
      << got;
  EXPECT_NE(metrics_.Expose().find("carve_http_connections_refused_total{reason=\"max_connections_"
                                   "per_client\"} 1"),
            std::string::npos);
  Ping(Open("127.0.0.2"));
  ::close(fds_[0]);
  fds_.erase(fds_.begin());
  for (auto deadline = std::chrono::steady_clock::now() + 5s;
       std::chrono::steady_clock::now() < deadline; std::this_thread::sleep_for(20ms)) {
    const int fd = Open("127.0.0.1");
    ASSERT_EQ(::write(fd, "GET /ping HTTP/1.1\r\nHost: x\r\n\r\n", 31), 31);
    auto [answer, gone] = ReadToClose(fd, 1s);
    if (answer.rfind("HTTP/1.1 200 ", 0) == 0) return;
  }
  ADD_FAILURE() << "127.0.0.1 was not served again after closing a connection";
}

// A request of many tiny header fields stays under the byte limit but is refused by count, with
// a 431 that says so; one at the limit is served.
TEST_F(HttpLimitsTest, MoreThan128HeaderFieldsGetA431NamingTheCount) {
  Start(HttpServerOptions{});
  auto request = [](int fields) {
    std::string r = "GET /ping HTTP/1.1\r\nHost: x\r\n";
    for (int i = 1; i < fields; ++i) r += "x-" + std::to_string(i) + ": y\r\n";
    return r + "Connection: close\r\n\r\n";
  };
  // Host and Connection are two of the fields.
  const std::string over = request(128);
  int fd = Open();
  ASSERT_EQ(::write(fd, over.data(), over.size()), static_cast<ssize_t>(over.size()));
  auto [got, closed] = ReadToClose(fd, 5s);
  EXPECT_TRUE(closed);
  EXPECT_EQ(got.rfind("HTTP/1.1 431 ", 0), 0u) << got;
  EXPECT_NE(got.find("the request has 129 header fields; the limit is 128"), std::string::npos)
      << got;
  const std::string at = request(127);
  fd = Open();
  ASSERT_EQ(::write(fd, at.data(), at.size()), static_cast<ssize_t>(at.size()));
  auto [ok, ok_closed] = ReadToClose(fd, 5s);
  EXPECT_EQ(ok.rfind("HTTP/1.1 200 ", 0), 0u) << ok;
}

// The client sends its whole oversized body and then reads the answer: the server must not reset
// the connection under it (which is what botocore reported as "Connection was closed").
TEST_F(HttpLimitsTest, AnOversizedBodyGetsA413TheClientReadsAfterSendingIt) {
  HttpServerOptions o;
  o.max_body_bytes = 64 * 1024;
  Start(o);
  httplib::Client c("127.0.0.1", port_);
  c.set_read_timeout(10, 0);
  auto r = c.Post("/v1/echo", std::string(4 * 1024 * 1024, 'x'), "application/octet-stream");
  ASSERT_TRUE(r) << httplib::to_string(r.error());
  EXPECT_EQ(r->status, 413);
  EXPECT_NE(r->body.find("limit of 65536 bytes"), std::string::npos) << r->body;
}

TEST_F(HttpLimitsTest, AnAsyncRouteAnswersFromAnotherThreadWithoutHoldingAWorker) {
  HttpServerOptions o;
  o.threads = 1;
  o.insecure_no_auth = true;
  server_ = std::make_unique<HttpServer>(o, creds_, metrics_);
  std::mutex mu;
  std::vector<Responder> waiting;
  server_->AddAsyncRoute("GET", "/v1/wait", kForAnyone, [&](NativeRequest, Responder respond) {
    std::lock_guard lock(mu);
    waiting.push_back(std::move(respond));
  });
  auto port = server_->Start("127.0.0.1", 0);
  ASSERT_TRUE(port.has_value());
  port_ = *port;
  std::vector<std::future<int>> calls;
  for (int i = 0; i < 20; ++i) {  // 20 waiters on one worker thread.
    calls.push_back(std::async(std::launch::async, [&] {
      httplib::Client c("127.0.0.1", port_);
      c.set_read_timeout(10, 0);
      auto r = c.Get("/v1/wait");
      return r ? r->status : -1;
    }));
  }
  for (auto deadline = std::chrono::steady_clock::now() + 10s;
       std::chrono::steady_clock::now() < deadline;) {
    {
      std::lock_guard lock(mu);
      if (waiting.size() == 20) break;
    }
    std::this_thread::sleep_for(5ms);
  }
  httplib::Client c("127.0.0.1", port_);
  auto ping = c.Get("/ping");  // The worker is free for others meanwhile.
  ASSERT_TRUE(ping);
  EXPECT_EQ(ping->status, 200);
  std::thread([&] {
    std::lock_guard lock(mu);
    for (auto& r : waiting) r(NativeResponse{202, "woken", "text/plain"});
  }).join();
  for (auto& f : calls) EXPECT_EQ(f.get(), 202);
}

TEST_F(HttpLimitsTest, StopAnswersAWaitingAsyncRequest503AndALateAnswerIsIgnored) {
  HttpServerOptions o;
  o.insecure_no_auth = true;
  server_ = std::make_unique<HttpServer>(o, creds_, metrics_);
  std::promise<Responder> taken;
  server_->AddAsyncRoute("GET", "/v1/wait", kForAnyone,
                         [&](NativeRequest, Responder respond) { taken.set_value(respond); });
  auto port = server_->Start("127.0.0.1", 0);
  ASSERT_TRUE(port.has_value());
  int fd = Connect(*port);
  ASSERT_EQ(::write(fd, "GET /v1/wait HTTP/1.1\r\nHost: x\r\n\r\n", 35), 35);
  Responder late = taken.get_future().get();
  server_->Stop();
  auto [got, closed] = ReadToClose(fd, 5s);
  ::close(fd);
  EXPECT_EQ(got.rfind("HTTP/1.1 503 ", 0), 0u) << got;
  EXPECT_NE(got.find("the server is stopping"), std::string::npos) << got;
  server_->Wait();
  server_.reset();
  late(NativeResponse{200, "too late", "text/plain"});  // The server is gone: nothing happens.
}

}  // namespace
}  // namespace carve::http
