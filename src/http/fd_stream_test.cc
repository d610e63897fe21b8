// FdStream on real sockets: a socketpair for the stream contract, loopback TCP for Connect.
#include "http/fd_stream.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <boost/asio/error.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <string>
#include <thread>

namespace carve::http {
namespace {

using boost::system::error_code;
using namespace std::chrono_literals;

struct Pair {
  FdStream a;
  FdStream b;
};

Pair MakePair() {
  int fds[2];
  EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
  return Pair{FdStream(fds[0]), FdStream(fds[1])};
}

TEST(FdStream, GatheredWriteArrivesAsOneByteStream) {
  Pair p = MakePair();
  const std::string head = "HTTP/1.1 200 OK\r\n\r\n";
  const std::string body = "hello";
  std::array<boost::asio::const_buffer, 2> bufs{boost::asio::buffer(head),
                                                boost::asio::buffer(body)};
  error_code ec;
  EXPECT_EQ(p.a.write_some(bufs, ec), head.size() + body.size());
  EXPECT_FALSE(ec);
  std::string got(head.size() + body.size(), '\0');
  boost::asio::read(p.b, boost::asio::buffer(got), ec);
  EXPECT_FALSE(ec);
  EXPECT_EQ(got, head + body);
}

TEST(FdStream, ReadWaitsForDataThatArrivesLater) {
  Pair p = MakePair();
  p.b.set_read_timeout(5s);
  std::thread writer([&] {
    std::this_thread::sleep_for(50ms);
    boost::asio::write(p.a, boost::asio::buffer(std::string("late")));
  });
  char buf[8];
  error_code ec;
  size_t n = p.b.read_some(boost::asio::buffer(buf), ec);
  writer.join();
  EXPECT_FALSE(ec) << ec.message();
  EXPECT_EQ(std::string(buf, n), "late");
}

TEST(FdStream, ReadTimesOutWhenNothingArrives) {
  Pair p = MakePair();
  p.b.set_read_timeout(30ms);
  char buf[8];
  error_code ec;
  EXPECT_EQ(p.b.read_some(boost::asio::buffer(buf), ec), 0u);
  EXPECT_EQ(ec, boost::asio::error::timed_out);
}

TEST(FdStream, ClosedPeerReadsAsEof) {
  Pair p = MakePair();
  p.a.Close();
  char buf[8];
  error_code ec;
  p.b.read_some(boost::asio::buffer(buf), ec);
  EXPECT_EQ(ec, boost::asio::error::eof);
  EXPECT_TRUE(p.b.HasPendingInput()) << "EOF is pending input: the connection is not reusable";
}

TEST(FdStream, WriteToClosedPeerFailsWithoutSigpipe) {
  Pair p = MakePair();
  p.b.Close();
  error_code ec;
  p.a.write_some(boost::asio::buffer(std::string("x")), ec);
  EXPECT_EQ(ec, boost::asio::error::broken_pipe);
}

TEST(FdStream, WaitReadableReportsTimeoutInterruptAndData) {
  Pair p = MakePair();
  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  EXPECT_EQ(p.b.WaitReadable(20ms, pipe_fds[0]), FdStream::Wait::kTimedOut);
  ASSERT_EQ(::write(pipe_fds[1], "x", 1), 1);
  EXPECT_EQ(p.b.WaitReadable(5s, pipe_fds[0]), FdStream::Wait::kInterrupted);
  boost::asio::write(p.a, boost::asio::buffer(std::string("d")));
  EXPECT_EQ(p.b.WaitReadable(5s, pipe_fds[0]), FdStream::Wait::kReadable)
      << "data wins over the interrupt, so a request already sent is still served";
  ::close(pipe_fds[0]);
  ::close(pipe_fds[1]);
}

TEST(FdStream, ConnectReachesAListenerAndReportsRefusal) {
  int listener = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(::listen(listener, 4), 0);
  socklen_t len = sizeof addr;
  ::getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len);
  const std::string address = "127.0.0.1:" + std::to_string(ntohs(addr.sin_port));

  error_code ec;
  FdStream s = FdStream::Connect(address, 2s, ec);
  EXPECT_FALSE(ec) << ec.message();
  EXPECT_TRUE(s.is_open());
  ::close(listener);

  FdStream refused = FdStream::Connect(address, 2s, ec);
  EXPECT_EQ(ec, boost::asio::error::connection_refused);
  EXPECT_FALSE(refused.is_open());

  FdStream::Connect("no-port-here", 2s, ec);
  EXPECT_EQ(ec, boost::asio::error::invalid_argument);
}

}  // namespace
}  // namespace carve::http
