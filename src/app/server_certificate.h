// The certificate `carve server` serves HTTPS with when the operator gives none
// (docs/security.md, "TLS"): a self-signed one that the server generates on its first start into
// <data-dir>/tls/ and reuses on later ones.
//
//   <data-dir>/tls/            mode 0700
//   <data-dir>/tls/key.pem     the private key, ECDSA P-256, mode 0600, never rewritten
//   <data-dir>/tls/cert.pem    the certificate: subject alternative names as asked, valid for
//                              825 days (the most Apple's clients accept), CA:FALSE, serverAuth
//
// The pin that joining agents check names the key, so the key is kept for good: a certificate
// missing a wanted name, or with less than 30 days left, is issued again with the same key and
// every pin stays valid (only clients that trust the file itself, --ca-bundle, need the new one).
// Remove tls/ to get a new key; every agent must then be given the new pin.
#pragma once

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "common/result.h"

namespace carve::app {

struct ServerCertificate {
  std::string cert_file;
  std::string key_file;
  std::string pin;  // protocol/server_trust.h
  enum class Origin { kReused, kGenerated, kRenewed } origin = Origin::kReused;
  std::string why_renewed;  // With kRenewed: what was missing or expiring.
};

// The names a generated certificate holds: this host's name, localhost, 127.0.0.1, ::1, the
// listen address when it is neither a wildcard nor already there, and `extra` (--tls-san, the
// advertised URL's host). Each is a DNS name or an IP address; InvalidArgument names one that is
// neither.
Result<std::vector<std::string>> SubjectAltNames(const std::string& hostname,
                                                 const std::string& listen_host,
                                                 const std::vector<std::string>& extra);

struct CertificateOptions {
  std::chrono::hours validity{825 * 24};
  std::chrono::hours renew_before{30 * 24};
  std::chrono::system_clock::time_point now = std::chrono::system_clock::now();
};

// Creates or reuses the certificate in `dir` for `names` (as SubjectAltNames returns them).
// InvalidArgument naming the file for a key that cannot be read, is readable by others or is
// not a key; Internal when a file cannot be written.
Result<ServerCertificate> EnsureServerCertificate(const std::filesystem::path& dir,
                                                  const std::vector<std::string>& names,
                                                  const CertificateOptions& options = {});

}  // namespace carve::app
