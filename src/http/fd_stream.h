// FdStream: one connected TCP socket as a Boost.Asio synchronous stream (SyncReadStream and
// SyncWriteStream), so that Boost.Beast's HTTP/1.1 parser and serializer run directly on it.
//
// Why not cpp-httplib or an asio socket: on the router's hot path every system call counts (see
// docs/benchmarks.md, "Router overhead"). cpp-httplib polls before every read and write and sends
// headers and body in two packets; a blocking asio socket cannot time out a read. FdStream keeps
// the socket non-blocking, tries the read or write first, and polls only when it would block:
//   read_some   one readv(); on EAGAIN a poll() bounded by the read timeout, then readv() again.
//   write_some  one sendmsg() of the whole buffer sequence (headers and body in one packet);
//               on EAGAIN a poll() bounded by the write timeout.
// Errors: boost::asio::error::eof when the peer closed, boost::asio::error::timed_out when the
// timeout passed without progress, otherwise the errno as a system error. A zero timeout means
// no limit. SIGPIPE is never raised (MSG_NOSIGNAL).
// Owns the descriptor (closed on destruction); movable, not copyable. Not thread-safe: one
// thread uses a stream at a time.
#pragma once

#include <sys/uio.h>

#include <boost/asio/buffer.hpp>
#include <boost/system/error_code.hpp>
#include <boost/system/system_error.hpp>
#include <chrono>
#include <string>

namespace carve::http {

class FdStream {
 public:
  // What WaitReadable saw.
  enum class Wait { kReadable, kTimedOut, kInterrupted };

  FdStream() = default;
  explicit FdStream(int fd);  // Takes ownership; sets O_NONBLOCK and TCP_NODELAY.
  ~FdStream();
  FdStream(FdStream&& other) noexcept;
  FdStream& operator=(FdStream&& other) noexcept;
  FdStream(const FdStream&) = delete;
  FdStream& operator=(const FdStream&) = delete;

  // Connects to "host:port" (numeric or resolvable host) within `timeout`. On failure the error
  // names the address and the cause (connection refused, timed out, unresolvable).
  static FdStream Connect(const std::string& address, std::chrono::milliseconds timeout,
                          boost::system::error_code& ec);

  bool is_open() const { return fd_ >= 0; }
  int fd() const { return fd_; }
  void Close();

  void set_read_timeout(std::chrono::milliseconds t) { read_timeout_ = t; }
  void set_write_timeout(std::chrono::milliseconds t) { write_timeout_ = t; }

  // Blocks until the socket is readable (data or EOF), `timeout` passes, or `interrupt_fd`
  // (when >= 0) becomes readable. Readable wins when both are.
  Wait WaitReadable(std::chrono::milliseconds timeout, int interrupt_fd) const;

  // True when a read would not block (data or EOF pending): a pooled idle connection that is
  // readable was closed by its peer or holds garbage, and must not be reused.
  bool HasPendingInput() const;

  template <class MutableBufferSequence>
  size_t read_some(const MutableBufferSequence& buffers, boost::system::error_code& ec) {
    iovec iov[kMaxIov];
    return ReadV(iov, Gather(buffers, iov), ec);
  }
  template <class MutableBufferSequence>
  size_t read_some(const MutableBufferSequence& buffers) {
    boost::system::error_code ec;
    size_t n = read_some(buffers, ec);
    if (ec) throw boost::system::system_error(ec);
    return n;
  }

  template <class ConstBufferSequence>
  size_t write_some(const ConstBufferSequence& buffers, boost::system::error_code& ec) {
    iovec iov[kMaxIov];
    return WriteV(iov, Gather(buffers, iov), ec);
  }
  template <class ConstBufferSequence>
  size_t write_some(const ConstBufferSequence& buffers) {
    boost::system::error_code ec;
    size_t n = write_some(buffers, ec);
    if (ec) throw boost::system::system_error(ec);
    return n;
  }

 private:
  // Beast's serializer hands over at most a header, a chunk header, the body and a CRLF at once.
  static constexpr size_t kMaxIov = 16;

  // The first kMaxIov non-empty buffers of `buffers` as iovecs (a partial read or write is
  // allowed by the stream contract); returns how many.
  template <class BufferSequence>
  static size_t Gather(const BufferSequence& buffers, iovec (&iov)[kMaxIov]) {
    size_t n = 0;
    // A pointer for a single buffer, an iterator for a sequence: `auto` on purpose.
    for (auto it =
             boost::asio::buffer_sequence_begin(buffers);  // NOLINT(readability-qualified-auto)
         it != boost::asio::buffer_sequence_end(buffers) && n < kMaxIov; ++it) {
      boost::asio::const_buffer b(*it);
      if (b.size() != 0) iov[n++] = iovec{const_cast<void*>(b.data()), b.size()};
    }
    return n;
  }
  size_t ReadV(const iovec* iov, size_t n, boost::system::error_code& ec);
  size_t WriteV(const iovec* iov, size_t n, boost::system::error_code& ec);
  // Polls for `events` up to `timeout`; false with ec = timed_out (or the poll error) otherwise.
  bool PollFor(short events, std::chrono::milliseconds timeout,
               boost::system::error_code& ec) const;

  int fd_ = -1;
  std::chrono::milliseconds read_timeout_{0};
  std::chrono::milliseconds write_timeout_{0};
};

}  // namespace carve::http
