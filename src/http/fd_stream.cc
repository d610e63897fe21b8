#include "http/fd_stream.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio/error.hpp>
#include <cerrno>
#include <memory>
#include <utility>

namespace carve::http {

namespace {

namespace asio_error = boost::asio::error;
using boost::system::error_code;

error_code Errno(int e) { return error_code(e, boost::system::system_category()); }

int PollTimeoutMs(std::chrono::milliseconds t) {
  if (t.count() <= 0) return -1;
  return t.count() > 0x7fffffff ? 0x7fffffff : static_cast<int>(t.count());
}

void MakeNonBlocking(int fd) {
  int flags = ::fcntl(fd, F_GETFL, 0);
  if (flags >= 0 && (flags & O_NONBLOCK) == 0) ::fcntl(fd, F_SETFL, flags | O_NONBLOCK);
  int yes = 1;
  // Fails harmlessly on a non-TCP socket (a socketpair in tests).
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof yes);
}

// Non-blocking connect to one resolved address, bounded by `timeout`.
int ConnectOne(const addrinfo& ai, std::chrono::milliseconds timeout, error_code& ec) {
  int fd = ::socket(ai.ai_family, ai.ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai.ai_protocol);
  if (fd < 0) {
    ec = Errno(errno);
    return -1;
  }
  if (::connect(fd, ai.ai_addr, ai.ai_addrlen) == 0) return fd;
  if (errno != EINPROGRESS) {
    ec = Errno(errno);
    ::close(fd);
    return -1;
  }
  pollfd p{fd, POLLOUT, 0};
  int r;
  do {
    r = ::poll(&p, 1, PollTimeoutMs(timeout));
  } while (r < 0 && errno == EINTR);
  if (r == 0) {
    ec = asio_error::timed_out;
    ::close(fd);
    return -1;
  }
  int err = 0;
  socklen_t len = sizeof err;
  if (r < 0 || ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
  if (err != 0) {
    ec = Errno(err);
    ::close(fd);
    return -1;
  }
  return fd;
}

}  // namespace

FdStream::FdStream(int fd) : fd_(fd) { MakeNonBlocking(fd_); }

FdStream::~FdStream() { Close(); }

FdStream::FdStream(FdStream&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)),
      read_timeout_(other.read_timeout_),
      write_timeout_(other.write_timeout_) {}

FdStream& FdStream::operator=(FdStream&& other) noexcept {
  if (this != &other) {
    Close();
    fd_ = std::exchange(other.fd_, -1);
    read_timeout_ = other.read_timeout_;
    write_timeout_ = other.write_timeout_;
  }
  return *this;
}

void FdStream::Close() {
  if (fd_ >= 0) ::close(std::exchange(fd_, -1));
}

FdStream FdStream::Connect(const std::string& address, std::chrono::milliseconds timeout,
                           error_code& ec) {
  ec = {};
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == address.size()) {
    ec = asio_error::invalid_argument;
    return FdStream();
  }
  std::string host = address.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);  // "[::1]:8080"
  }
  const std::string port = address.substr(colon + 1);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* found = nullptr;
  if (int rc = ::getaddrinfo(host.c_str(), port.c_str(), &hints, &found); rc != 0) {
    ec = asio_error::host_not_found;
    return FdStream();
  }
  std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> list(found, &::freeaddrinfo);
  ec = asio_error::host_not_found;
  for (const addrinfo* ai = found; ai != nullptr; ai = ai->ai_next) {
    ec = {};
    int fd = ConnectOne(*ai, timeout, ec);
    if (fd >= 0) return FdStream(fd);
  }
  return FdStream();
}

FdStream::Wait FdStream::WaitReadable(std::chrono::milliseconds timeout, int interrupt_fd) const {
  pollfd p[2] = {{fd_, POLLIN, 0}, {interrupt_fd, POLLIN, 0}};
  const nfds_t n = interrupt_fd >= 0 ? 2 : 1;
  for (;;) {
    int r = ::poll(p, n, PollTimeoutMs(timeout));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return Wait::kReadable;  // Let the read report the error.
    if (r == 0) return Wait::kTimedOut;
    if (p[0].revents != 0) return Wait::kReadable;
    return Wait::kInterrupted;
  }
}

bool FdStream::HasPendingInput() const {
  pollfd p{fd_, POLLIN, 0};
  return ::poll(&p, 1, 0) != 0;
}

bool FdStream::PollFor(short events, std::chrono::milliseconds timeout, error_code& ec) const {
  pollfd p{fd_, events, 0};
  for (;;) {
    int r = ::poll(&p, 1, PollTimeoutMs(timeout));
    if (r > 0) return true;  // Ready, or an error the next call will report.
    if (r < 0 && errno == EINTR) continue;
    ec = r == 0 ? error_code(asio_error::timed_out) : Errno(errno);
    return false;
  }
}

size_t FdStream::ReadV(const iovec* iov, size_t n, error_code& ec) {
  ec = {};
  if (n == 0) return 0;
  if (fd_ < 0) {
    ec = asio_error::bad_descriptor;
    return 0;
  }
  for (;;) {
    ssize_t r = ::readv(fd_, iov, static_cast<int>(n));
    if (r > 0) return static_cast<size_t>(r);
    if (r == 0) {
      ec = asio_error::eof;
      return 0;
    }
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) {
      ec = Errno(errno);
      return 0;
    }
    if (!PollFor(POLLIN, read_timeout_, ec)) return 0;
  }
}

size_t FdStream::WriteV(const iovec* iov, size_t n, error_code& ec) {
  ec = {};
  if (n == 0) return 0;
  if (fd_ < 0) {
    ec = asio_error::bad_descriptor;
    return 0;
  }
  msghdr msg{};
  msg.msg_iov = const_cast<iovec*>(iov);
  msg.msg_iovlen = n;
  for (;;) {
    ssize_t r = ::sendmsg(fd_, &msg, MSG_NOSIGNAL);
    if (r >= 0) return static_cast<size_t>(r);
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) {
      ec = Errno(errno);
      return 0;
    }
    if (!PollFor(POLLOUT, write_timeout_, ec)) return 0;
  }
}

}  // namespace carve::http
