#include "agent/launch/health.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <thread>

#include <httplib.h>

namespace carve::launch {

Result<int> FindFreePort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Internal(std::string("socket: ") + std::strerror(errno));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) < 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) < 0) {
    const int e = errno;
    ::close(fd);
    return Internal(std::string("cannot bind 127.0.0.1:0: ") + std::strerror(e));
  }
  ::close(fd);
  return static_cast<int>(ntohs(addr.sin_port));
}

Status WaitForPing(int port, std::chrono::milliseconds timeout,
                   const std::function<bool()>& alive, std::chrono::milliseconds interval) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  httplib::Client client("127.0.0.1", port);
  client.set_connection_timeout(std::chrono::milliseconds(500));
  client.set_read_timeout(std::chrono::seconds(2));
  std::string last = "no attempt";
  while (true) {
    if (!alive()) {
      return FailedPrecondition("process for port " + std::to_string(port) +
                                " exited before /ping answered 200 (last: " + last + ")");
    }
    if (auto res = client.Get("/ping")) {
      if (res->status == 200) return OkStatus();
      last = "HTTP " + std::to_string(res->status);
    } else {
      last = httplib::to_string(res.error());
    }
    if (std::chrono::steady_clock::now() >= deadline) break;
    std::this_thread::sleep_for(interval);
  }
  return Unavailable("GET 127.0.0.1:" + std::to_string(port) + "/ping did not answer 200 within " +
                     std::to_string(timeout.count()) + " ms (last: " + last + ")");
}

}  // namespace carve::launch
