// TlsStream: the TLS side of one accepted connection (http_connection.h), OpenSSL's SSL_* over
// the connection's own non-blocking descriptor. Nothing here blocks or waits: each call does
// what the socket allows now and says which readiness (readable, writable) would let it go on,
// and the connection waits for that on the event loop, under the deadlines it keeps anyway.
// Errors: asio::error::eof when the peer closed (a close_notify, or the TCP connection), the
// errno of a failed system call, or errc::protocol_error for a TLS failure (a bad handshake,
// a corrupt record), whose text error_text() keeps. Not thread-safe: the loop thread only.
// Does not own the descriptor.
#pragma once

#include <openssl/types.h>

#include <boost/system/error_code.hpp>
#include <cstddef>
#include <string>

#include "http/tls_context.h"

namespace carve::http {

class TlsStream {
 public:
  enum class Want { kNothing, kReadable, kWritable };
  struct Io {
    size_t bytes = 0;            // Read or written.
    Want want = Want::kNothing;  // Set when the call would have blocked: wait, then call again.
    boost::system::error_code ec;
  };

  // A server-side session on `fd` (accept state), or nullptr when OpenSSL cannot make one.
  static std::unique_ptr<TlsStream> Accept(const TlsContext& context, int fd);
  ~TlsStream();
  TlsStream(const TlsStream&) = delete;
  TlsStream& operator=(const TlsStream&) = delete;

  // Advances the handshake; done when it returns neither want nor ec.
  Io Handshake();
  // At most `size` bytes of plaintext (at most one record's, 16 KiB).
  Io Read(void* data, size_t size);
  // Writes from `data`; a call that wants readiness must be repeated with the same bytes.
  Io Write(const void* data, size_t size);
  // Decrypted bytes OpenSSL holds already, which the socket's readiness says nothing of.
  bool HasBufferedInput() const;
  // Sends close_notify if the socket takes it now; never waits.
  void SendCloseNotify();
  // What the last protocol_error was, for the log.
  const std::string& error_text() const { return error_text_; }
  // "TLSv1.3 TLS_AES_128_GCM_SHA256", after the handshake.
  std::string Describe() const;

 private:
  explicit TlsStream(SSL* ssl) : ssl_(ssl) {}
  Io Finish(int rc);

  SSL* const ssl_;
  std::string error_text_;
};

}  // namespace carve::http
