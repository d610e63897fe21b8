#include "http/tls_context.h"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "protocol/server_trust.h"

namespace carve::http {
namespace {

// OpenSSL's queued errors as one line (and the queue emptied).
std::string OpenSslErrors() {
  std::string out;
  while (const unsigned long e = ERR_get_error()) {
    char text[256];
    ERR_error_string_n(e, text, sizeof text);
    out += (out.empty() ? "" : "; ") + std::string(text);
  }
  return out.empty() ? "unknown OpenSSL error" : out;
}

// ALPN: HTTP/1.1 is all this server speaks. A client that offers protocols but not http/1.1
// gets the no_application_protocol alert (RFC 7301, 3.2) instead of a connection it cannot use.
int SelectAlpn(SSL*, const unsigned char** out, unsigned char* out_size, const unsigned char* in,
               unsigned int in_size, void*) {
  static constexpr unsigned char kHttp11[] = {8, 'h', 't', 't', 'p', '/', '1', '.', '1'};
  unsigned char* chosen = nullptr;
  if (SSL_select_next_proto(&chosen, out_size, kHttp11, sizeof kHttp11, in, in_size) !=
      OPENSSL_NPN_NEGOTIATED) {
    return SSL_TLSEXT_ERR_ALERT_FATAL;
  }
  *out = chosen;
  return SSL_TLSEXT_ERR_OK;
}

// TLS 1.2's suites: ECDHE (forward secrecy) with AES-GCM or ChaCha20-Poly1305, as Mozilla's
// "intermediate" configuration (2023). TLS 1.3's are OpenSSL's defaults, all AEAD.
constexpr const char* kTls12Ciphers =
    "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:"
    "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:"
    "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305";

}  // namespace

Result<std::shared_ptr<const TlsContext>> TlsContext::Load(const std::string& cert_chain_file,
                                                           const std::string& key_file) {
  ERR_clear_error();
  SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());
  if (ctx == nullptr) return Internal("cannot create a TLS context: " + OpenSslErrors());
  std::unique_ptr<SSL_CTX, decltype(&SSL_CTX_free)> owned(ctx, &SSL_CTX_free);
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  // IGNORE_UNEXPECTED_EOF: a client that closes TCP without a close_notify (most do, between
  // requests) is an end of stream, as on a plain connection, not a protocol error.
  SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE |
                               SSL_OP_NO_COMPRESSION | SSL_OP_IGNORE_UNEXPECTED_EOF);
  // RELEASE_BUFFERS: an idle connection holds no 16 KiB record buffers (a fleet's agents keep
  // thousands open). The write modes let a partial write resume from where it stopped.
  SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS | SSL_MODE_ENABLE_PARTIAL_WRITE |
                            SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  if (SSL_CTX_set_cipher_list(ctx, kTls12Ciphers) != 1) {
    return Internal("cannot set the TLS 1.2 ciphers: " + OpenSslErrors());
  }
  // One session ticket per full handshake (OpenSSL sends two by default): a client resumes one
  // connection at a time.
  SSL_CTX_set_num_tickets(ctx, 1);
  static constexpr unsigned char kSessionContext[] = "carve";
  SSL_CTX_set_session_id_context(ctx, kSessionContext, sizeof kSessionContext - 1);
  SSL_CTX_set_alpn_select_cb(ctx, &SelectAlpn, nullptr);
  // The key first: a certificate loaded after a key that is not its own drops the key quietly,
  // and the check below then says which is the matter, rather than a "key values mismatch".
  if (SSL_CTX_use_PrivateKey_file(ctx, key_file.c_str(), SSL_FILETYPE_PEM) != 1) {
    return InvalidArgument("TLS key " + key_file +
                           ": cannot load a PEM private key: " + OpenSslErrors());
  }
  if (SSL_CTX_use_certificate_chain_file(ctx, cert_chain_file.c_str()) != 1) {
    return InvalidArgument("TLS certificate " + cert_chain_file +
                           ": cannot load a PEM certificate chain: " + OpenSslErrors());
  }
  if (SSL_CTX_check_private_key(ctx) != 1) {
    ERR_clear_error();
    return InvalidArgument("TLS key " + key_file + " does not belong to the certificate in " +
                           cert_chain_file);
  }
  X509* leaf = SSL_CTX_get0_certificate(ctx);
  std::string pin = leaf != nullptr ? protocol::CertificatePin(leaf) : "";
  if (pin.empty()) return InvalidArgument("TLS certificate " + cert_chain_file + ": no public key");
  return std::shared_ptr<const TlsContext>(
      new TlsContext(owned.release(), std::move(pin), cert_chain_file));
}

TlsContext::~TlsContext() { SSL_CTX_free(ctx_); }

}  // namespace carve::http
