#include "agent/launch/health.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <thread>

namespace carve::launch {
namespace {

using namespace std::chrono_literals;

TEST(Health, FindFreePortReturnsABindablePort) {
  auto port = FindFreePort();
  ASSERT_TRUE(port.has_value()) << port.error().message;
  httplib::Server s;
  EXPECT_TRUE(s.bind_to_port("127.0.0.1", *port));
}

TEST(Health, WaitForPingSucceedsOnce200Answers) {
  httplib::Server s;
  std::atomic<int> calls{0};
  s.Get("/ping", [&](const httplib::Request&, httplib::Response& res) {
    res.status = ++calls < 3 ? 503 : 200;  // not ready for the first two polls
  });
  const int port = s.bind_to_any_port("127.0.0.1");
  std::thread t([&] { s.listen_after_bind(); });
  Status st = WaitForPing(port, 10s, [] { return true; }, 10ms);
  s.stop();
  t.join();
  EXPECT_TRUE(st.ok()) << st.error().message;
  EXPECT_GE(calls.load(), 3);
}

TEST(Health, WaitForPingTimesOutNamingThePortAndLastAnswer) {
  httplib::Server s;
  s.Get("/ping", [](const httplib::Request&, httplib::Response& res) { res.status = 503; });
  const int port = s.bind_to_any_port("127.0.0.1");
  std::thread t([&] { s.listen_after_bind(); });
  Status st = WaitForPing(port, 100ms, [] { return true; }, 10ms);
  s.stop();
  t.join();
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, ErrorCode::kUnavailable);
  EXPECT_NE(st.error().message.find(std::to_string(port)), std::string::npos);
  EXPECT_NE(st.error().message.find("HTTP 503"), std::string::npos);
}

TEST(Health, WaitForPingGivesUpWhenTheProcessDies) {
  auto port = FindFreePort().value();  // nothing listens there
  Status st = WaitForPing(port, 10s, [] { return false; });
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, ErrorCode::kFailedPrecondition);
}

}  // namespace
}  // namespace carve::launch
