// TestCopy: an in-process cpp-httplib server on 127.0.0.1:<free port> standing in for a model
// copy in router tests. Handlers are set before Start(); hits() counts POST /invocations.
#pragma once

#include <arpa/inet.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

namespace carve::runtime {

class TestCopy {
 public:
  using Handler = std::function<void(const httplib::Request&, httplib::Response&)>;

  // Serves POST `path`: "/invocations" as SageMaker's container contract has it, or an
  // OpenAI-compatible server's "/v1/chat/completions".
  explicit TestCopy(Handler handler, const std::string& path = "/invocations") {
    server_.new_task_queue = [] { return new httplib::ThreadPool(16); };
    server_.Post(path, [this, handler](const httplib::Request& q, httplib::Response& s) {
      ++hits_;
      handler(q, s);
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!server_.is_running() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  ~TestCopy() { Stop(); }

  void Stop() {
    if (thread_.joinable()) {
      server_.stop();
      thread_.join();
    }
  }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  int hits() const { return hits_.load(); }

 private:
  httplib::Server server_;
  int port_ = -1;
  std::atomic<int> hits_{0};
  std::thread thread_;
};

// An address on which nothing listens: a port the kernel handed out, bound and closed again.
inline std::string DeadAddress() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return "127.0.0.1:" + std::to_string(ntohs(addr.sin_port));
}

}  // namespace carve::runtime
