#include "protocol/server_trust.h"

#include <arpa/inet.h>
#include <httplib.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>
#include <strings.h>

#include <algorithm>
#include <memory>

namespace carve::protocol {
namespace {

std::string Hex(const unsigned char* data, size_t size) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(size * 2);
  for (size_t i = 0; i < size; ++i) {
    out += kHex[data[i] >> 4];
    out += kHex[data[i] & 15];
  }
  return out;
}

std::string_view HostOf(std::string_view url) {
  if (const size_t scheme = url.find("://"); scheme != std::string_view::npos) {
    url.remove_prefix(scheme + 3);
  }
  url = url.substr(0, url.find_first_of("/?#"));
  if (const size_t at = url.rfind('@'); at != std::string_view::npos) url.remove_prefix(at + 1);
  if (url.starts_with('[')) {
    const size_t close = url.find(']');
    return close == std::string_view::npos ? url.substr(1) : url.substr(1, close - 1);
  }
  return url.substr(0, url.find(':'));
}

// SSL_CTX_set_cert_verify_callback's function: replaces OpenSSL's chain verification with the
// pin comparison, so that neither the issuer nor the names nor the dates matter, only the key.
// With SSL_VERIFY_PEER a 0 here aborts the handshake before the client sends anything.
int VerifyPin(X509_STORE_CTX* store, void* arg) {
  auto* peer = static_cast<TlsPeer*>(arg);
  const X509* leaf = X509_STORE_CTX_get0_cert(store);
  if (leaf == nullptr) {
    X509_STORE_CTX_set_error(store, X509_V_ERR_UNSPECIFIED);
    return 0;
  }
  std::string pin = CertificatePin(leaf);
  const bool ok = std::find(peer->pins().begin(), peer->pins().end(), pin) != peer->pins().end();
  peer->Record(std::move(pin));
  X509_STORE_CTX_set_error(store, ok ? X509_V_OK : X509_V_ERR_CERT_REJECTED);
  return ok ? 1 : 0;
}

std::string JoinPins(const std::vector<std::string>& pins) {
  std::string out;
  for (const auto& p : pins) out += (out.empty() ? "" : ", ") + p;
  return out;
}

}  // namespace

std::string CertificatePin(const X509* cert) {
  unsigned char* der = nullptr;
  const int size = i2d_X509_PUBKEY(X509_get_X509_PUBKEY(cert), &der);
  if (size <= 0) return "";
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int digest_size = 0;
  const bool hashed =
      EVP_Digest(der, static_cast<size_t>(size), digest, &digest_size, EVP_sha256(), nullptr) == 1;
  OPENSSL_free(der);
  if (!hashed) return "";
  return std::string(kPinPrefix) + Hex(digest, digest_size);
}

Result<std::string> PemCertificatePin(std::string_view pem) {
  std::unique_ptr<BIO, decltype(&BIO_free)> bio(
      BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())), &BIO_free);
  std::unique_ptr<X509, decltype(&X509_free)> cert(
      bio ? PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr) : nullptr, &X509_free);
  if (!cert) return InvalidArgument("no PEM certificate (-----BEGIN CERTIFICATE-----) found");
  std::string pin = CertificatePin(cert.get());
  if (pin.empty()) return InvalidArgument("the certificate's public key cannot be encoded");
  return pin;
}

Result<std::string> ParsePin(std::string_view text) {
  const auto refuse = [&] {
    return InvalidArgument("server certificate pin '" + std::string(text.substr(0, 80)) +
                           "': expected sha256: and 64 hex digits (the SHA-256 of the "
                           "certificate's public key, as `carve server` and `carve node token "
                           "create` print it)");
  };
  if (text.size() != kPinPrefix.size() + 64 ||
      strncasecmp(text.data(), kPinPrefix.data(), kPinPrefix.size()) != 0) {
    return refuse();
  }
  std::string out(kPinPrefix);
  for (char c : text.substr(kPinPrefix.size())) {
    if (c >= 'A' && c <= 'F') c = static_cast<char>(c - 'A' + 'a');
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return refuse();
    out += c;
  }
  return out;
}

Result<std::vector<std::string>> ParsePins(std::string_view text) {
  std::vector<std::string> out;
  while (!text.empty()) {
    const size_t comma = text.find(',');
    std::string_view one = text.substr(0, comma);
    while (!one.empty() && one.front() == ' ') one.remove_prefix(1);
    while (!one.empty() && one.back() == ' ') one.remove_suffix(1);
    if (!one.empty()) {
      CARVE_ASSIGN_OR_RETURN(std::string pin, ParsePin(one));
      if (std::find(out.begin(), out.end(), pin) == out.end()) out.push_back(std::move(pin));
    }
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
  }
  return out;
}

bool IsHttps(std::string_view url) {
  return url.size() >= 8 && strncasecmp(url.data(), "https://", 8) == 0;
}

bool IsLoopbackHost(std::string_view host) {
  if (host.starts_with('[') && host.ends_with(']')) host = host.substr(1, host.size() - 2);
  if (host.size() == 9 && strncasecmp(host.data(), "localhost", 9) == 0) return true;
  const std::string h(host);
  in_addr v4{};
  if (::inet_pton(AF_INET, h.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{};
  if (::inet_pton(AF_INET6, h.c_str(), &v6) == 1) {
    if (IN6_IS_ADDR_LOOPBACK(&v6)) return true;
    return IN6_IS_ADDR_V4MAPPED(&v6) && v6.s6_addr[12] == 127;
  }
  return false;
}

bool IsLoopbackUrl(std::string_view url) { return IsLoopbackHost(HostOf(url)); }

std::string UrlHost(std::string_view url) { return std::string(HostOf(url)); }

Status RefuseSecretInClear(std::string_view url, std::string_view what, std::string_view flag,
                           bool allowed) {
  if (allowed || IsHttps(url) || IsLoopbackUrl(url)) return OkStatus();
  return FailedPrecondition(std::string(url) +
                            " is plain http:// to another machine: " + std::string(what) +
                            " would cross the network in the clear. Use the server's https:// "
                            "URL, or " +
                            std::string(flag) + " for a network you trust (docs/security.md)");
}

std::string TlsPeer::presented() const {
  std::lock_guard lock(mu_);
  return presented_;
}

bool TlsPeer::mismatched() const {
  const std::string seen = presented();
  return !seen.empty() && std::find(pins_.begin(), pins_.end(), seen) == pins_.end();
}

void TlsPeer::Record(std::string pin) {
  std::lock_guard lock(mu_);
  presented_ = std::move(pin);
}

std::shared_ptr<TlsPeer> ApplyServerTrust(httplib::Client& client, const ServerTrust& trust) {
  auto peer = std::make_shared<TlsPeer>(trust.pins);
  SSL_CTX* ctx = client.ssl_context();
  if (ctx == nullptr) return peer;  // http://
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  if (!trust.pins.empty()) {
    // cpp-httplib's own verification would check the chain against CAs and the host name, and
    // it sets SSL_VERIFY_NONE to look at the result only after the handshake: off, and the pin
    // decides inside the handshake instead.
    client.enable_server_certificate_verification(false);
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
    SSL_CTX_set_cert_verify_callback(ctx, &VerifyPin, peer.get());
  } else {
    client.enable_server_certificate_verification(true);
    if (!trust.ca_file.empty()) client.set_ca_cert_path(trust.ca_file);
  }
  return peer;
}

std::string DescribeRequestFailure(std::string_view url, const ServerTrust& trust,
                                   const TlsPeer* peer, httplib::Error error, long verify_result) {
  std::string base = httplib::to_string(error);
  if (!IsHttps(url)) return base;
  if (!trust.pins.empty() && peer != nullptr && peer->mismatched()) {
    return "the server's certificate has pin " + peer->presented() + ", not the expected " +
           JoinPins(trust.pins) +
           " (--server-cert-sha256): refused before sending anything. If the server's key "
           "changed, get the new pin from `carve server`'s start or `carve node token create`";
  }
  if (error == httplib::Error::SSLServerVerification) {
    const std::string why = verify_result != X509_V_OK
                                ? X509_verify_cert_error_string(verify_result)
                                : "its certificate does not name the host of " + std::string(url);
    return "the server's certificate is not trusted: " + why +
           " (CA bundle: " + (trust.ca_file.empty() ? std::string("the system's") : trust.ca_file) +
           "; pass --ca-bundle FILE or AWS_CA_BUNDLE, e.g. the server's <data-dir>/tls/cert.pem)";
  }
  if (error == httplib::Error::SSLConnection) {
    return base + " (is " + std::string(url) + " a carve server speaking https?)";
  }
  return base;
}

}  // namespace carve::protocol
