#include "app/server_certificate.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <openssl/bn.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>

#include "protocol/server_trust.h"

namespace carve::app {
namespace fs = std::filesystem;

namespace {

using Key = std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)>;
using Cert = std::unique_ptr<X509, decltype(&X509_free)>;

// An IP address in its canonical text form ("::1", "10.0.0.5"), or "" when `text` is none.
std::string CanonicalIp(std::string_view text) {
  if (text.size() > 2 && text.front() == '[' && text.back() == ']') {
    text = text.substr(1, text.size() - 2);
  }
  const std::string s(text);
  char out[INET6_ADDRSTRLEN] = {};
  in_addr v4{};
  if (::inet_pton(AF_INET, s.c_str(), &v4) == 1) {
    return ::inet_ntop(AF_INET, &v4, out, sizeof out) != nullptr ? out : "";
  }
  in6_addr v6{};
  if (::inet_pton(AF_INET6, s.c_str(), &v6) == 1) {
    return ::inet_ntop(AF_INET6, &v6, out, sizeof out) != nullptr ? out : "";
  }
  return "";
}

// A host name a certificate may carry: labels of letters, digits and '-', at most 253
// characters, optionally a leading "*." wildcard.
bool IsDnsName(std::string_view name) {
  if (name.starts_with("*.")) name.remove_prefix(2);
  if (name.empty() || name.size() > 253) return false;
  size_t label = 0;
  for (char c : name) {
    if (c == '.') {
      if (label == 0) return false;
      label = 0;
      continue;
    }
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '-' || c == '_';
    if (!ok || ++label > 63) return false;
  }
  return label != 0;
}

bool SameName(const std::string& a, const std::string& b) {
  return a.size() == b.size() && strncasecmp(a.data(), b.data(), a.size()) == 0;
}

// The certificate's DNS names and IP addresses (canonical), from its subjectAltName.
std::vector<std::string> NamesOf(X509* cert) {
  std::vector<std::string> out;
  auto* names =
      static_cast<GENERAL_NAMES*>(X509_get_ext_d2i(cert, NID_subject_alt_name, nullptr, nullptr));
  if (names == nullptr) return out;
  for (int i = 0; i < sk_GENERAL_NAME_num(names); ++i) {
    const GENERAL_NAME* n = sk_GENERAL_NAME_value(names, i);
    if (n->type == GEN_DNS) {
      const ASN1_STRING* s = n->d.dNSName;
      out.emplace_back(reinterpret_cast<const char*>(ASN1_STRING_get0_data(s)),
                       static_cast<size_t>(ASN1_STRING_length(s)));
    } else if (n->type == GEN_IPADD) {
      const ASN1_STRING* s = n->d.iPAddress;
      char text[INET6_ADDRSTRLEN] = {};
      const int family = ASN1_STRING_length(s) == 4 ? AF_INET : AF_INET6;
      if (::inet_ntop(family, ASN1_STRING_get0_data(s), text, sizeof text) != nullptr) {
        out.emplace_back(text);
      }
    }
  }
  GENERAL_NAMES_free(names);
  return out;
}

Result<std::string> ReadFile(const fs::path& file) {
  std::ifstream in(file);
  if (!in) return Internal("cannot read " + file.string() + ": " + std::strerror(errno));
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// Writes `text` to `file` through a temporary file and a rename, so a crash leaves the old file
// or the new one, never half of one. The data dir's lock (data_dir.h) keeps other writers out.
Status WriteFile(const fs::path& file, const std::string& text, mode_t mode) {
  const fs::path tmp = file.string() + ".tmp";
  std::error_code ignored;
  fs::remove(tmp, ignored);  // Left by a crash, perhaps with another mode.
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode);
  if (fd < 0) return Internal("cannot create " + tmp.string() + ": " + std::strerror(errno));
  const bool wrote = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) &&
                     ::fsync(fd) == 0;
  const int saved = errno;
  ::close(fd);
  if (!wrote) return Internal("cannot write " + tmp.string() + ": " + std::strerror(saved));
  std::error_code ec;
  fs::rename(tmp, file, ec);
  if (ec)
    return Internal("cannot rename " + tmp.string() + " to " + file.string() + ": " + ec.message());
  return OkStatus();
}

Result<Key> LoadKey(const fs::path& file) {
  struct stat st {};
  if (::lstat(file.c_str(), &st) != 0) return Internal("cannot stat " + file.string());
  if (!S_ISREG(st.st_mode) || (st.st_mode & 077) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%03o", st.st_mode & 0777);
    return InvalidArgument(file.string() + " has mode " + mode +
                           " or is not a regular file; the server's TLS key must be private to "
                           "its owner (chmod 600 " +
                           file.string() + ")");
  }
  CARVE_ASSIGN_OR_RETURN(std::string pem, ReadFile(file));
  std::unique_ptr<BIO, decltype(&BIO_free)> bio(
      BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())), &BIO_free);
  Key key(bio ? PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr) : nullptr,
          &EVP_PKEY_free);
  if (!key) {
    return InvalidArgument(file.string() +
                           " is not a PEM private key; remove the directory to have a new key "
                           "generated (every agent must then be given the new pin)");
  }
  return key;
}

Result<Key> GenerateKey(const fs::path& file) {
  Key key(EVP_EC_gen("P-256"), &EVP_PKEY_free);
  if (!key) return Internal("OpenSSL cannot generate a P-256 key");
  std::unique_ptr<BIO, decltype(&BIO_free)> bio(BIO_new(BIO_s_mem()), &BIO_free);
  if (!bio ||
      PEM_write_bio_PrivateKey(bio.get(), key.get(), nullptr, nullptr, 0, nullptr, nullptr) != 1) {
    return Internal("OpenSSL cannot encode the key");
  }
  const char* data = nullptr;
  const long size = BIO_get_mem_data(bio.get(), &data);
  CARVE_RETURN_IF_ERROR(WriteFile(file, std::string(data, static_cast<size_t>(size)), 0600));
  return key;
}

// Adds one extension written in openssl.cnf's syntax.
Status AddExtension(X509* cert, int nid, const std::string& value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, cert, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str());
  if (ext == nullptr) return Internal("OpenSSL refused the extension " + value);
  const int added = X509_add_ext(cert, ext, -1);
  X509_EXTENSION_free(ext);
  return added == 1 ? OkStatus() : Internal("OpenSSL cannot add the extension " + value);
}

Result<Cert> Issue(EVP_PKEY* key, const std::vector<std::string>& names,
                   const CertificateOptions& o) {
  Cert cert(X509_new(), &X509_free);
  if (!cert) return Internal("OpenSSL cannot allocate a certificate");
  X509_set_version(cert.get(), X509_VERSION_3);
  // A random positive 127-bit serial (RFC 5280 allows 20 octets; browsers dislike repeats).
  unsigned char serial[16];
  if (RAND_bytes(serial, sizeof serial) != 1) return Internal("OpenSSL RAND_bytes failed");
  serial[0] &= 0x7f;
  std::unique_ptr<BIGNUM, decltype(&BN_free)> bn(BN_bin2bn(serial, sizeof serial, nullptr),
                                                 &BN_free);
  if (!bn || BN_to_ASN1_INTEGER(bn.get(), X509_get_serialNumber(cert.get())) == nullptr) {
    return Internal("OpenSSL cannot set the serial number");
  }
  const time_t now = std::chrono::system_clock::to_time_t(o.now);
  const time_t not_after =
      now +
      static_cast<time_t>(std::chrono::duration_cast<std::chrono::seconds>(o.validity).count());
  // An hour back, for clients whose clocks run a little behind.
  ASN1_TIME_set(X509_getm_notBefore(cert.get()), now - 3600);
  ASN1_TIME_set(X509_getm_notAfter(cert.get()), not_after);
  X509_set_pubkey(cert.get(), key);
  X509_NAME* subject = X509_get_subject_name(cert.get());
  const std::string cn = ("carve " + names.front()).substr(0, 64);
  X509_NAME_add_entry_by_txt(subject, "O", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>("carve"), -1, -1, 0);
  X509_NAME_add_entry_by_txt(subject, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1, 0);
  X509_set_issuer_name(cert.get(), subject);
  std::string san;
  for (const auto& n : names) {
    san += (san.empty() ? "" : ",") + std::string(CanonicalIp(n).empty() ? "DNS:" : "IP:") + n;
  }
  // CA:FALSE and serverAuth: a server's own certificate, which clients may also trust as itself
  // (--ca-bundle: a self-signed certificate is its own trust anchor). No keyUsage, which some
  // verifiers would then require to include keyCertSign for that.
  CARVE_RETURN_IF_ERROR(AddExtension(cert.get(), NID_basic_constraints, "critical,CA:FALSE"));
  CARVE_RETURN_IF_ERROR(AddExtension(cert.get(), NID_ext_key_usage, "serverAuth"));
  CARVE_RETURN_IF_ERROR(AddExtension(cert.get(), NID_subject_key_identifier, "hash"));
  CARVE_RETURN_IF_ERROR(AddExtension(cert.get(), NID_authority_key_identifier, "keyid:always"));
  CARVE_RETURN_IF_ERROR(AddExtension(cert.get(), NID_subject_alt_name, san));
  if (X509_sign(cert.get(), key, EVP_sha256()) <= 0) return Internal("OpenSSL cannot sign");
  return cert;
}

std::string Pem(X509* cert) {
  std::unique_ptr<BIO, decltype(&BIO_free)> bio(BIO_new(BIO_s_mem()), &BIO_free);
  if (!bio || PEM_write_bio_X509(bio.get(), cert) != 1) return "";
  const char* data = nullptr;
  const long size = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<size_t>(size));
}

// Why the certificate in `file` cannot be served as it is for `names` with `key` ("": it can).
std::string WhyRenew(const fs::path& file, EVP_PKEY* key, const std::vector<std::string>& names,
                     const CertificateOptions& o) {
  auto pem = ReadFile(file);
  if (!pem.has_value()) return "no certificate";
  std::unique_ptr<BIO, decltype(&BIO_free)> bio(
      BIO_new_mem_buf(pem->data(), static_cast<int>(pem->size())), &BIO_free);
  Cert cert(bio ? PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr) : nullptr, &X509_free);
  if (!cert) return "the certificate file holds no PEM certificate";
  if (X509_check_private_key(cert.get(), key) != 1) return "the certificate is for another key";
  time_t deadline = std::chrono::system_clock::to_time_t(o.now + o.renew_before);
  if (X509_cmp_time(X509_get0_notAfter(cert.get()), &deadline) <= 0) {
    return "the certificate expires within " +
           std::to_string(std::chrono::duration_cast<std::chrono::hours>(o.renew_before).count() /
                          24) +
           " days";
  }
  const std::vector<std::string> held = NamesOf(cert.get());
  for (const auto& want : names) {
    const std::string ip = CanonicalIp(want);
    const bool found = std::any_of(held.begin(), held.end(), [&](const std::string& h) {
      return ip.empty() ? SameName(h, want) : h == ip;
    });
    if (!found) return "the certificate does not name " + want;
  }
  return "";
}

}  // namespace

Result<std::vector<std::string>> SubjectAltNames(const std::string& hostname,
                                                 const std::string& listen_host,
                                                 const std::vector<std::string>& extra) {
  std::vector<std::string> out;
  auto add = [&](const std::string& name, const std::string& what) -> Status {
    std::string n = CanonicalIp(name);
    if (n.empty()) {
      if (!IsDnsName(name)) {
        return InvalidArgument(what + " '" + name.substr(0, 64) +
                               "': neither a DNS name nor an IP address");
      }
      n = name;
    }
    const bool seen =
        std::any_of(out.begin(), out.end(), [&](const std::string& o) { return SameName(o, n); });
    if (!seen) out.push_back(std::move(n));
    return OkStatus();
  };
  if (IsDnsName(hostname)) CARVE_RETURN_IF_ERROR(add(hostname, "the host name"));
  CARVE_RETURN_IF_ERROR(add("localhost", "localhost"));
  CARVE_RETURN_IF_ERROR(add("127.0.0.1", "127.0.0.1"));
  CARVE_RETURN_IF_ERROR(add("::1", "::1"));
  const std::string listen_ip = CanonicalIp(listen_host);
  if (!listen_host.empty() && listen_ip != "0.0.0.0" && listen_ip != "::") {
    CARVE_RETURN_IF_ERROR(add(listen_host, "--listen"));
  }
  for (const auto& name : extra) CARVE_RETURN_IF_ERROR(add(name, "--tls-san"));
  return out;
}

Result<ServerCertificate> EnsureServerCertificate(const fs::path& dir,
                                                  const std::vector<std::string>& names,
                                                  const CertificateOptions& options) {
  if (names.empty()) return InvalidArgument("a certificate needs at least one name");
  std::error_code ec;
  if (!fs::exists(dir, ec)) {
    fs::create_directories(dir, ec);
    if (ec) return Internal("cannot create " + dir.string() + ": " + ec.message());
    fs::permissions(dir, fs::perms::owner_all, ec);
  }
  ServerCertificate out;
  out.cert_file = (dir / "cert.pem").string();
  out.key_file = (dir / "key.pem").string();
  const bool had_key = fs::exists(out.key_file, ec);
  Key key(nullptr, &EVP_PKEY_free);
  if (had_key) {
    CARVE_ASSIGN_OR_RETURN(key, LoadKey(out.key_file));
  } else {
    CARVE_ASSIGN_OR_RETURN(key, GenerateKey(out.key_file));
  }
  std::string why = had_key ? WhyRenew(out.cert_file, key.get(), names, options) : "a new key";
  if (!why.empty()) {
    CARVE_ASSIGN_OR_RETURN(Cert cert, Issue(key.get(), names, options));
    const std::string pem = Pem(cert.get());
    if (pem.empty()) return Internal("OpenSSL cannot encode the certificate");
    CARVE_RETURN_IF_ERROR(WriteFile(out.cert_file, pem, 0644));
    out.origin =
        had_key ? ServerCertificate::Origin::kRenewed : ServerCertificate::Origin::kGenerated;
    out.why_renewed = had_key ? why : "";
  }
  CARVE_ASSIGN_OR_RETURN(std::string pem, ReadFile(out.cert_file));
  CARVE_ASSIGN_OR_RETURN(out.pin, protocol::PemCertificatePin(pem));
  return out;
}

}  // namespace carve::app
