// TlsContext: the listener's TLS configuration (docs/security.md, "TLS"), loaded once and shared
// by every connection: one certificate chain and its key; TLS 1.2 at least, 1.3 preferred
// (OpenSSL settles on the highest version both sides speak); for TLS 1.2 only ECDHE key exchange
// with AEAD ciphers (Mozilla's "intermediate" list); ALPN http/1.1; no renegotiation. Immutable
// after Load and safe to share between threads.
#pragma once

#include <openssl/types.h>

#include <memory>
#include <string>

#include "common/result.h"

namespace carve::http {

class TlsContext {
 public:
  // `cert_chain_file`: PEM, the server's certificate first, then any intermediates. `key_file`:
  // its PEM private key. InvalidArgument naming the file when one cannot be read or parsed, or
  // the key does not belong to the certificate.
  static Result<std::shared_ptr<const TlsContext>> Load(const std::string& cert_chain_file,
                                                        const std::string& key_file);
  ~TlsContext();
  TlsContext(const TlsContext&) = delete;
  TlsContext& operator=(const TlsContext&) = delete;

  SSL_CTX* native() const { return ctx_; }
  // "sha256:<hex>" of the certificate's SubjectPublicKeyInfo (protocol/server_trust.h).
  const std::string& pin() const { return pin_; }
  const std::string& cert_file() const { return cert_file_; }

 private:
  TlsContext(SSL_CTX* ctx, std::string pin, std::string cert_file)
      : ctx_(ctx), pin_(std::move(pin)), cert_file_(std::move(cert_file)) {}

  SSL_CTX* const ctx_;
  const std::string pin_;
  const std::string cert_file_;
};

}  // namespace carve::http
