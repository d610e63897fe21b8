// How carve's clients trust a carve server they reach over https:// (docs/security.md, "TLS"):
// by a pin of the server certificate's public key, as `kubeadm join
// --discovery-token-ca-cert-hash` does, or by CA certificates and the host name, as the aws CLI
// does with --ca-bundle. And the one rule every client keeps for plain http://: no secret goes
// to another machine in the clear.
#pragma once

#include <openssl/types.h>

#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace httplib {
class Client;
enum class Error;
}  // namespace httplib

namespace carve::protocol {

// A pin is "sha256:" and 64 lower-case hex digits: the SHA-256 of the certificate's DER
// SubjectPublicKeyInfo (kubeadm's discovery hash). It names the key, not the certificate, so a
// certificate renewed with the same key keeps its pin.
inline constexpr std::string_view kPinPrefix = "sha256:";

std::string CertificatePin(const X509* cert);
// The pin of the first certificate of PEM `text`; InvalidArgument when it holds none.
Result<std::string> PemCertificatePin(std::string_view pem);
// A pin as a person typed it ("sha256:" then 64 hex digits, either case), written lower-case;
// InvalidArgument naming the expected shape otherwise.
Result<std::string> ParsePin(std::string_view text);
// Comma-separated pins (an HA control plane whose replicas have certificates of their own).
Result<std::vector<std::string>> ParsePins(std::string_view text);

// Whether `url` is https://.
bool IsHttps(std::string_view url);
// The host of "scheme://host[:port][/...]", without the brackets of an IPv6 literal.
std::string UrlHost(std::string_view url);
// Whether the host of `url` ("http://HOST:PORT/...") is this machine's loopback: 127.0.0.0/8,
// ::1 or localhost.
bool IsLoopbackUrl(std::string_view url);
// Whether `host` (no port, brackets allowed) is a loopback address or localhost.
bool IsLoopbackHost(std::string_view host);

// FailedPrecondition when `url` is plain http:// to another machine and `allowed` is false:
// `what` (a join token, a node credential) would cross the network in the clear. The message
// names the URL and both ways out (https://, or the insecure flag `flag`).
Status RefuseSecretInClear(std::string_view url, std::string_view what, std::string_view flag,
                           bool allowed);

// How an https client decides that the server is the right one.
struct ServerTrust {
  // Pins (ParsePin's form): when any is set, the server's certificate must carry one of these
  // keys, whatever its issuer, names or dates (the key is what the pin vouches for; an agent
  // may reach the server by an address its certificate does not name). Nothing else is trusted.
  std::vector<std::string> pins{};
  // Without pins: a PEM file of CA certificates ("": the system's), and the URL's host must be
  // one the certificate names.
  std::string ca_file{};
};

// What one https client saw of the server; shared with the verification callback, so it must
// outlive every request of the client it was applied to.
class TlsPeer {
 public:
  explicit TlsPeer(std::vector<std::string> pins) : pins_(std::move(pins)) {}
  const std::vector<std::string>& pins() const { return pins_; }
  // The pin of the last certificate the server presented ("" before any handshake). Thread-safe.
  std::string presented() const;
  // Whether the server presented a key none of the pins names.
  bool mismatched() const;
  void Record(std::string pin);

 private:
  const std::vector<std::string> pins_;
  mutable std::mutex mu_;
  std::string presented_;  // Guarded by mu_.
};

// Makes the https client `client` (a no-op for http://) trust exactly `trust`, with TLS 1.2 at
// least. With pins the handshake itself fails on any other key, so not a byte of a request
// (a token, a credential) is sent to the wrong server. Returns what `DescribeRequestFailure` needs.
std::shared_ptr<TlsPeer> ApplyServerTrust(httplib::Client& client, const ServerTrust& trust);

// Why a request to `url` failed with cpp-httplib's `error`, for people: on a pin mismatch both
// pins; on a failed CA verification OpenSSL's reason (`verify_result`), the bundle used and
// how to pass another; otherwise cpp-httplib's own text.
std::string DescribeRequestFailure(std::string_view url, const ServerTrust& trust,
                                   const TlsPeer* peer, httplib::Error error, long verify_result);

}  // namespace carve::protocol
