#include "http/tls_stream.h"

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <boost/asio/error.hpp>
#include <cerrno>
#include <memory>

namespace carve::http {

namespace {
using boost::system::error_code;
}  // namespace

std::unique_ptr<TlsStream> TlsStream::Accept(const TlsContext& context, int fd) {
  SSL* ssl = SSL_new(context.native());
  if (ssl == nullptr) return nullptr;
  if (SSL_set_fd(ssl, fd) != 1) {
    SSL_free(ssl);
    return nullptr;
  }
  SSL_set_accept_state(ssl);
  return std::unique_ptr<TlsStream>(new TlsStream(ssl));
}

TlsStream::~TlsStream() { SSL_free(ssl_); }

TlsStream::Io TlsStream::Finish(int rc) {
  Io io;
  if (rc > 0) {
    io.bytes = static_cast<size_t>(rc);
    return io;
  }
  const int saved_errno = errno;
  switch (SSL_get_error(ssl_, rc)) {
    case SSL_ERROR_WANT_READ:
      io.want = Want::kReadable;
      return io;
    case SSL_ERROR_WANT_WRITE:
      io.want = Want::kWritable;
      return io;
    case SSL_ERROR_ZERO_RETURN:
      io.ec = boost::asio::error::eof;
      return io;
    case SSL_ERROR_SYSCALL:
      // An empty error queue and no errno: the peer closed the TCP connection.
      io.ec = saved_errno != 0 ? error_code(saved_errno, boost::system::system_category())
                               : error_code(boost::asio::error::eof);
      ERR_clear_error();
      return io;
    default: {
      error_text_.clear();
      while (const unsigned long e = ERR_get_error()) {
        char text[256];
        ERR_error_string_n(e, text, sizeof text);
        error_text_ += (error_text_.empty() ? "" : "; ") + std::string(text);
      }
      io.ec = make_error_code(boost::system::errc::protocol_error);
      return io;
    }
  }
}

// Each call starts with an empty error queue (it is per thread, and SSL_get_error reads it) and
// errno cleared (SSL_ERROR_SYSCALL reads it).
TlsStream::Io TlsStream::Handshake() {
  ERR_clear_error();
  errno = 0;
  const int rc = SSL_do_handshake(ssl_);
  return rc == 1 ? Io{} : Finish(rc);
}

TlsStream::Io TlsStream::Read(void* data, size_t size) {
  ERR_clear_error();
  errno = 0;
  size_t got = 0;
  const int rc = SSL_read_ex(ssl_, data, size, &got);
  if (rc == 1) return Io{got, Want::kNothing, {}};
  return Finish(rc);
}

TlsStream::Io TlsStream::Write(const void* data, size_t size) {
  ERR_clear_error();
  errno = 0;
  size_t put = 0;
  const int rc = SSL_write_ex(ssl_, data, size, &put);
  if (rc == 1) return Io{put, Want::kNothing, {}};
  return Finish(rc);
}

bool TlsStream::HasBufferedInput() const { return SSL_pending(ssl_) > 0; }

void TlsStream::SendCloseNotify() {
  ERR_clear_error();
  SSL_shutdown(ssl_);
  ERR_clear_error();
}

std::string TlsStream::Describe() const {
  const SSL_CIPHER* cipher = SSL_get_current_cipher(ssl_);
  return std::string(SSL_get_version(ssl_)) + " " +
         (cipher != nullptr ? SSL_CIPHER_get_name(cipher) : "-");
}

}  // namespace carve::http
