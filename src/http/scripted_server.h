// ScriptedServer: a raw loopback listener that plays an HTTP server (a model copy, say) exactly
// as a test scripts it (answer, hang up, stall, send a chunked body in pieces), for what a real
// HTTP server would never do on purpose. Used by the HttpClient and Router tests.
#pragma once

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace carve::http {

// Reads one request (headers plus Content-Length body) from `fd`; "" when the peer closed.
inline std::string ReadRequest(int fd) {
  std::string data;
  char buf[4096];
  for (;;) {
    size_t end = data.find("\r\n\r\n");
    if (end != std::string::npos) {
      size_t cl = data.find("Content-Length: ");
      size_t body = cl == std::string::npos ? 0 : std::stoul(data.substr(cl + 16));
      if (data.size() >= end + 4 + body) return data;
    }
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n <= 0) return "";
    data.append(buf, static_cast<size_t>(n));
  }
}

inline void WriteAll(int fd, const std::string& s) {
  size_t off = 0;
  while (off < s.size()) {
    ssize_t n = ::write(fd, s.data() + off, s.size() - off);
    if (n <= 0) return;
    off += static_cast<size_t>(n);
  }
}

// Accepts connections on 127.0.0.1:<free port> and runs `script(fd, connection_index)` on each,
// one thread per connection; the socket is closed when the script returns.
class ScriptedServer {
 public:
  using Script = std::function<void(int fd, int connection)>;
  explicit ScriptedServer(Script script) : script_(std::move(script)) {
    listener_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::bind(listener_, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    EXPECT_EQ(::listen(listener_, 16), 0);
    socklen_t len = sizeof addr;
    ::getsockname(listener_, reinterpret_cast<sockaddr*>(&addr), &len);
    address_ = "127.0.0.1:" + std::to_string(ntohs(addr.sin_port));
    acceptor_ = std::thread([this] {
      for (;;) {
        int fd = ::accept(listener_, nullptr, nullptr);
        if (fd < 0) return;
        int index = connections_++;
        std::lock_guard lock(mu_);
        workers_.emplace_back([this, fd, index] {
          script_(fd, index);
          ::close(fd);
          ++closed_;
        });
      }
    });
  }
  ~ScriptedServer() {
    ::shutdown(listener_, SHUT_RDWR);
    ::close(listener_);
    acceptor_.join();
    std::lock_guard lock(mu_);
    for (auto& t : workers_) t.join();
  }
  const std::string& address() const { return address_; }
  int connections() const { return connections_; }
  // Connections whose script returned and whose socket this side closed.
  int closed() const { return closed_; }

 private:
  Script script_;
  int listener_ = -1;
  std::string address_;
  std::atomic<int> connections_{0};
  std::atomic<int> closed_{0};
  std::thread acceptor_;
  std::mutex mu_;
  std::vector<std::thread> workers_;
};

}  // namespace carve::http
