#include "aws/sigv4.h"

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#include <algorithm>
#include <cctype>
#include <ctime>
#include <map>

namespace carve::aws {

namespace sigv4 {

std::string HexEncode(std::string_view bytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) {
    out.push_back(kHex[c >> 4]);
    out.push_back(kHex[c & 0xf]);
  }
  return out;
}

namespace {

// OpenSSL 3's one-shot SHA256() and HMAC() look their algorithms up by name on every call, which
// costs more than hashing a signed request (bench/sigv4_bench). The algorithms are fetched once;
// an HMAC context with its digest already set is duplicated per call instead of configured.
// Fetched objects and a context used only as a template are safe to share between threads.
const EVP_MD* Sha256() {
  static EVP_MD* const md = EVP_MD_fetch(nullptr, "SHA256", nullptr);
  return md;
}

const EVP_MAC_CTX* HmacSha256Template() {
  static EVP_MAC_CTX* const ctx = [] {
    EVP_MAC* mac = EVP_MAC_fetch(nullptr, "HMAC", nullptr);
    EVP_MAC_CTX* c = mac != nullptr ? EVP_MAC_CTX_new(mac) : nullptr;
    EVP_MAC_free(mac);  // The context holds its own reference.
    char digest[] = "SHA256";
    OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0),
                           OSSL_PARAM_construct_end()};
    if (c != nullptr && EVP_MAC_CTX_set_params(c, params) != 1) {
      EVP_MAC_CTX_free(c);
      c = nullptr;
    }
    return c;
  }();
  return ctx;
}

}  // namespace

std::string Sha256Hex(std::string_view data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (Sha256() == nullptr ||
      EVP_Digest(data.data(), data.size(), digest, &len, Sha256(), nullptr) != 1) {
    return "";  // Never equal to a hex digest: the signature check fails closed.
  }
  return HexEncode(std::string_view(reinterpret_cast<const char*>(digest), len));
}

std::string HmacSha256(std::string_view key, std::string_view data) {
  unsigned char out[EVP_MAX_MD_SIZE];
  size_t len = 0;
  const EVP_MAC_CTX* tmpl = HmacSha256Template();
  EVP_MAC_CTX* ctx = tmpl != nullptr ? EVP_MAC_CTX_dup(tmpl) : nullptr;
  const bool ok =
      ctx != nullptr &&
      EVP_MAC_init(ctx, reinterpret_cast<const unsigned char*>(key.data()), key.size(), nullptr) ==
          1 &&
      EVP_MAC_update(ctx, reinterpret_cast<const unsigned char*>(data.data()), data.size()) == 1 &&
      EVP_MAC_final(ctx, out, &len, sizeof out) == 1;
  EVP_MAC_CTX_free(ctx);
  if (!ok) return "";  // Fails closed, as above.
  return std::string(reinterpret_cast<const char*>(out), len);
}

namespace {

bool IsUnreserved(unsigned char c) {
  return std::isalnum(c) != 0 || c == '-' || c == '_' || c == '.' || c == '~';
}

std::string UriEncode(std::string_view s, bool keep_slash) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (IsUnreserved(c) || (keep_slash && c == '/')) {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 0xf]);
    }
  }
  return out;
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string ToLower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Trims and collapses runs of spaces/tabs to one space (SigV4 "Trimall").
std::string TrimAll(std::string_view v) {
  std::string out;
  bool in_space = false;
  for (char c : v) {
    if (c == ' ' || c == '\t') {
      in_space = true;
      continue;
    }
    if (in_space && !out.empty()) out.push_back(' ');
    in_space = false;
    out.push_back(c);
  }
  return out;
}

}  // namespace

std::string UriDecode(std::string_view s, bool plus_is_space) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && HexValue(s[i + 1]) >= 0 && HexValue(s[i + 2]) >= 0) {
      out.push_back(static_cast<char>(HexValue(s[i + 1]) * 16 + HexValue(s[i + 2])));
      i += 2;
    } else if (plus_is_space && s[i] == '+') {
      out.push_back(' ');
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

std::string CanonicalUri(std::string_view path) {
  // Non-S3 services normalise the path (RFC 3986 remove_dot_segments, empty segments dropped)
  // and URI-encode it once more on top of the wire encoding ("encoded twice"); botocore does
  // quote(remove_dot_segments(path), safe='/~').
  std::string_view decoded = path;
  std::vector<std::string> out_segments;
  size_t start = decoded.empty() || decoded[0] != '/' ? 0 : 1;
  bool trailing_slash = decoded.size() > 1 && decoded.back() == '/';
  while (start <= decoded.size()) {
    size_t end = decoded.find('/', start);
    if (end == std::string::npos) end = decoded.size();
    std::string seg(decoded.substr(start, end - start));
    if (seg == "..") {
      if (!out_segments.empty()) out_segments.pop_back();
    } else if (seg != "." && !seg.empty()) {
      out_segments.push_back(seg);
    }
    start = end + 1;
  }
  std::string out = "/";
  for (size_t i = 0; i < out_segments.size(); ++i) {
    if (i > 0) out.push_back('/');
    out += UriEncode(out_segments[i], false);
  }
  if (trailing_slash && !out_segments.empty()) out.push_back('/');
  return out;
}

std::string CanonicalQuery(std::string_view query) {
  std::vector<std::pair<std::string, std::string>> pairs;
  size_t start = 0;
  while (start < query.size()) {
    size_t end = query.find('&', start);
    if (end == std::string_view::npos) end = query.size();
    std::string_view item = query.substr(start, end - start);
    if (!item.empty()) {
      size_t eq = item.find('=');
      std::string_view k = item.substr(0, eq);
      std::string_view v = eq == std::string_view::npos ? "" : item.substr(eq + 1);
      pairs.emplace_back(UriEncode(UriDecode(k, true), false),
                         UriEncode(UriDecode(v, true), false));
    }
    start = end + 1;
  }
  std::sort(pairs.begin(), pairs.end());
  std::string out;
  for (const auto& [k, v] : pairs) {
    if (!out.empty()) out.push_back('&');
    out.append(k).append("=").append(v);
  }
  return out;
}

Result<std::string> CanonicalHeaders(
    const std::vector<std::pair<std::string, std::string>>& headers,
    std::string_view signed_headers) {
  std::map<std::string, std::vector<std::string>> by_name;
  for (const auto& [name, value] : headers) by_name[ToLower(name)].push_back(TrimAll(value));
  std::string out;
  size_t start = 0;
  while (start <= signed_headers.size()) {
    size_t end = signed_headers.find(';', start);
    if (end == std::string_view::npos) end = signed_headers.size();
    std::string name = ToLower(signed_headers.substr(start, end - start));
    auto it = by_name.find(name);
    if (it == by_name.end()) {
      return InvalidArgument("signed header '" + name + "' is not present in the request");
    }
    out += name + ":";
    for (size_t i = 0; i < it->second.size(); ++i) {
      if (i > 0) out.push_back(',');
      out += it->second[i];
    }
    out.push_back('\n');
    start = end + 1;
  }
  return out;
}

std::string CanonicalRequest(std::string_view method, std::string_view canonical_uri,
                             std::string_view canonical_query, std::string_view canonical_headers,
                             std::string_view signed_headers, std::string_view payload_hash) {
  std::string out;
  out.append(method).append("\n").append(canonical_uri).append("\n");
  out.append(canonical_query).append("\n").append(canonical_headers).append("\n");
  out.append(signed_headers).append("\n").append(payload_hash);
  return out;
}

std::string StringToSign(std::string_view amz_date, std::string_view scope,
                         std::string_view canonical_request) {
  return "AWS4-HMAC-SHA256\n" + std::string(amz_date) + "\n" + std::string(scope) + "\n" +
         Sha256Hex(canonical_request);
}

std::string SigningKey(std::string_view secret, std::string_view date, std::string_view region,
                       std::string_view service) {
  std::string k = HmacSha256("AWS4" + std::string(secret), date);
  k = HmacSha256(k, region);
  k = HmacSha256(k, service);
  return HmacSha256(k, "aws4_request");
}

bool ConstantTimeEquals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

Result<int64_t> ParseAmzDate(std::string_view amz_date) {
  std::string_view d = amz_date;
  auto bad = [&] {
    return InvalidArgument("X-Amz-Date '" + std::string(d) +
                           "' is not in the form yyyyMMdd'T'HHmmss'Z'");
  };
  if (d.size() != 16 || d[8] != 'T' || d[15] != 'Z') return bad();
  for (size_t i = 0; i < 15; ++i) {
    if (i != 8 && std::isdigit(static_cast<unsigned char>(d[i])) == 0) return bad();
  }
  auto num = [&](size_t pos, size_t len) {
    return std::stoi(std::string(d.substr(pos, len)));  // Digits only: cannot throw.
  };
  std::tm tm{};
  tm.tm_year = num(0, 4) - 1900;
  tm.tm_mon = num(4, 2) - 1;
  tm.tm_mday = num(6, 2);
  tm.tm_hour = num(9, 2);
  tm.tm_min = num(11, 2);
  tm.tm_sec = num(13, 2);
  if (tm.tm_mon > 11 || tm.tm_mday < 1 || tm.tm_mday > 31 || tm.tm_hour > 23 || tm.tm_min > 59 ||
      tm.tm_sec > 60) {
    return bad();
  }
  return static_cast<int64_t>(timegm(&tm));
}

std::string FormatAmzDate(int64_t unix_seconds) {
  std::time_t t = static_cast<std::time_t>(unix_seconds);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%dT%H%M%SZ", &tm);
  return buf;
}

void SignRequest(SigV4Request& request, std::string_view access_key_id, std::string_view secret,
                 std::string_view region, std::string_view service, std::string_view amz_date) {
  request.headers.emplace_back("X-Amz-Date", std::string(amz_date));
  std::vector<std::string> names;
  names.reserve(request.headers.size());
  for (const auto& header : request.headers) names.push_back(ToLower(header.first));
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  std::string signed_headers;
  for (const auto& n : names) {
    if (!signed_headers.empty()) signed_headers.push_back(';');
    signed_headers += n;
  }
  const std::string date(amz_date.substr(0, 8));
  std::string scope = date;
  scope.append("/").append(region).append("/").append(service).append("/aws4_request");
  // Every signed header is present by construction, so this cannot fail.
  const std::string headers = CanonicalHeaders(request.headers, signed_headers).value_or("");
  const std::string canonical =
      CanonicalRequest(request.method, CanonicalUri(request.path), CanonicalQuery(request.query),
                       headers, signed_headers, Sha256Hex(request.body));
  const std::string signature = HexEncode(HmacSha256(SigningKey(secret, date, region, service),
                                                     StringToSign(amz_date, scope, canonical)));
  std::string authorization = "AWS4-HMAC-SHA256 Credential=";
  authorization.append(access_key_id).append("/").append(scope);
  authorization.append(", SignedHeaders=").append(signed_headers);
  authorization.append(", Signature=").append(signature);
  request.headers.emplace_back("Authorization", std::move(authorization));
}

}  // namespace sigv4

namespace {

constexpr std::string_view kAlgorithm = "AWS4-HMAC-SHA256";

AuthFailure Fail(std::string type, std::string message) {
  return AuthFailure{403, std::move(type), std::move(message)};
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

const std::string* FindHeader(const SigV4Request& r, std::string_view lower_name) {
  for (const auto& [name, value] : r.headers) {
    if (name.size() == lower_name.size() &&
        std::equal(name.begin(), name.end(), lower_name.begin(), [](char a, char b) {
          return std::tolower(static_cast<unsigned char>(a)) == b;
        })) {
      return &value;
    }
  }
  return nullptr;
}

// Whether `name` (lowercase) is one of the ';'-separated SignedHeaders.
bool SignsHeader(std::string_view signed_headers, std::string_view name) {
  while (!signed_headers.empty()) {
    const size_t semi = signed_headers.find(';');
    if (signed_headers.substr(0, semi) == name) return true;
    if (semi == std::string_view::npos) break;
    signed_headers.remove_prefix(semi + 1);
  }
  return false;
}

struct ParsedAuthorization {
  std::string access_key, date, region, service, signed_headers, signature;
};

std::variant<ParsedAuthorization, AuthFailure> ParseAuthorization(std::string_view header) {
  auto incomplete = [&](const std::string& what) {
    return Fail("IncompleteSignature", "Authorization header requires '" + what +
                                           "' parameter. Authorization=" + std::string(header));
  };
  if (header.substr(0, kAlgorithm.size()) != kAlgorithm) {
    return Fail("IncompleteSignature",
                "Unsupported Authorization Type; only AWS4-HMAC-SHA256 is accepted");
  }
  std::map<std::string, std::string, std::less<>> params;
  std::string_view rest = header.substr(kAlgorithm.size());
  while (!rest.empty()) {
    size_t comma = rest.find(',');
    std::string_view item = Trim(rest.substr(0, comma));
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    size_t eq = item.find('=');
    if (eq != std::string_view::npos) {
      params[std::string(Trim(item.substr(0, eq)))] = std::string(Trim(item.substr(eq + 1)));
    }
  }
  for (const char* required : {"Credential", "SignedHeaders", "Signature"}) {
    if (!params.contains(required)) return incomplete(required);
  }
  ParsedAuthorization p;
  std::vector<std::string> scope;
  std::string_view cred = params["Credential"];
  for (size_t start = 0; start <= cred.size();) {
    size_t slash = cred.find('/', start);
    if (slash == std::string_view::npos) slash = cred.size();
    scope.emplace_back(cred.substr(start, slash - start));
    start = slash + 1;
  }
  if (scope.size() != 5 || scope[4] != "aws4_request" || scope[0].empty()) {
    return Fail("IncompleteSignature",
                "Credential '" + std::string(cred) +
                    "' must have the form <access key>/<yyyyMMdd>/<region>/<service>/aws4_request");
  }
  p.access_key = scope[0];
  p.date = scope[1];
  p.region = scope[2];
  p.service = scope[3];
  p.signed_headers = params["SignedHeaders"];
  p.signature = params["Signature"];
  return p;
}

}  // namespace

namespace {

// A signing key depends only on the secret, the day, the region and the service, and deriving
// one costs four HMACs, half of a whole verification (bench/sigv4_bench). Each thread keeps the
// last key it derived; a server's callers rarely change day or region.
const std::string& CachedSigningKey(const std::string& secret, const std::string& date,
                                    const std::string& region, const std::string& service) {
  struct Entry {
    std::string secret, date, region, service, key;
  };
  thread_local Entry last;
  if (last.key.empty() || last.date != date || last.region != region || last.service != service ||
      last.secret != secret) {
    last = Entry{secret, date, region, service, sigv4::SigningKey(secret, date, region, service)};
  }
  return last.key;
}

}  // namespace

SigV4Verifier::SigV4Verifier(const Credentials& credentials, const Clock& clock,
                             std::string service, std::string region, std::chrono::seconds max_skew)
    : credentials_(credentials),
      clock_(clock),
      service_(std::move(service)),
      region_(std::move(region)),
      max_skew_(max_skew) {}

// AWS answers a scope with another region "Credential should be scoped to a valid region, not
// '<region>'. " (IAM's "Troubleshoot signed requests": credential scope errors); the expected
// region is added so a user knows what to configure.
AuthFailure WrongRegion(std::string_view scoped, std::string_view expected) {
  return Fail("InvalidSignatureException",
              "Credential should be scoped to a valid region, not '" + std::string(scoped) +
                  "'. This server's region is '" + std::string(expected) + "'.");
}

AuthOutcome SigV4Verifier::Verify(const SigV4Request& request, std::string_view service) const {
  const std::string* authorization = FindHeader(request, "authorization");
  if (authorization == nullptr) {
    return Fail("MissingAuthenticationToken", "Request is missing Authentication Token");
  }
  auto parsed_or = ParseAuthorization(*authorization);
  if (auto* f = std::get_if<AuthFailure>(&parsed_or)) return *f;
  const auto& auth = std::get<ParsedAuthorization>(parsed_or);

  const std::string* amz_date = FindHeader(request, "x-amz-date");
  if (amz_date == nullptr) {
    return Fail("IncompleteSignature",
                "Authorization header requires existence of either a 'X-Amz-Date' or a 'Date' "
                "header.");
  }
  auto when = sigv4::ParseAmzDate(*amz_date);
  if (!when.has_value()) return Fail("IncompleteSignature", when.error().message);
  if (amz_date->substr(0, 8) != auth.date) {
    return Fail("InvalidSignatureException",
                "Date in Credential scope does not match YYYYMMDD from ISO-8601 version of date "
                "from HTTP: '" +
                    auth.date + "' != '" + amz_date->substr(0, 8) + "', from '" + *amz_date + "'.");
  }
  const int64_t now = clock_.UnixMillis() / 1000;
  const int64_t skew = max_skew_.count();
  const std::string skew_text = std::to_string(skew / 60) + " min.";
  if (*when < now - skew) {
    return Fail("InvalidSignatureException",
                "Signature expired: " + *amz_date + " is now earlier than " +
                    sigv4::FormatAmzDate(now - skew) + " (" + sigv4::FormatAmzDate(now) + " - " +
                    skew_text + ")");
  }
  if (*when > now + skew) {
    return Fail("InvalidSignatureException",
                "Signature not yet current: " + *amz_date + " is still later than " +
                    sigv4::FormatAmzDate(now + skew) + " (" + sigv4::FormatAmzDate(now) + " + " +
                    skew_text + ")");
  }
  if (auth.region != region_) return WrongRegion(auth.region, region_);
  if (auth.service != service) {
    return Fail("InvalidSignatureException",
                "Credential should be scoped to correct service: '" + std::string(service) + "'. ");
  }
  // What a signature must cover, as AWS requires: the host, and on the JSON protocol the
  // operation (an unsigned X-Amz-Target would let one signed call be replayed as another).
  if (!SignsHeader(auth.signed_headers, "host")) {
    return Fail("InvalidSignatureException",
                "'Host' or ':authority' must be a 'SignedHeader' in the AWS Authorization.");
  }
  if (FindHeader(request, "x-amz-target") != nullptr &&
      !SignsHeader(auth.signed_headers, "x-amz-target")) {
    return Fail("InvalidSignatureException",
                "'X-Amz-Target' must be a 'SignedHeader' in the AWS Authorization.");
  }
  // A query-presigned request (a bearer token's) is verified by VerifyBearerToken on the routes
  // that take tokens, never as a header signature.
  if (request.query.find("X-Amz-Signature=") != std::string::npos ||
      request.query.find("X-Amz-Credential=") != std::string::npos) {
    return Fail("InvalidSignatureException",
                "A request may carry its signature in the Authorization header or in its query "
                "string, not both.");
  }
  const std::optional<Credential> cred = credentials_.Find(auth.access_key);
  if (!cred.has_value()) {
    return Fail("UnrecognizedClientException",
                "The security token included in the request is invalid.");
  }
  auto headers = sigv4::CanonicalHeaders(request.headers, auth.signed_headers);
  if (!headers.has_value()) return Fail("InvalidSignatureException", headers.error().message);
  const std::string* content_sha = FindHeader(request, "x-amz-content-sha256");
  // The body hash is always computed here; a client-sent X-Amz-Content-SHA256 must agree with it
  // (UNSIGNED-PAYLOAD is an S3-only convention and is refused).
  const std::string payload_hash = sigv4::Sha256Hex(request.body);
  if (content_sha != nullptr && *content_sha != payload_hash) {
    return Fail("InvalidSignatureException",
                "The provided 'x-amz-content-sha256' header does not match what was computed.");
  }
  const std::string canonical = sigv4::CanonicalRequest(
      request.method, sigv4::CanonicalUri(request.path), sigv4::CanonicalQuery(request.query),
      *headers, auth.signed_headers, payload_hash);
  const std::string scope = auth.date + "/" + auth.region + "/" + auth.service + "/aws4_request";
  const std::string expected = sigv4::HexEncode(sigv4::HmacSha256(
      CachedSigningKey(cred->secret_access_key, auth.date, auth.region, auth.service),
      sigv4::StringToSign(*amz_date, scope, canonical)));
  if (!sigv4::ConstantTimeEquals(expected, auth.signature)) {
    return Fail("InvalidSignatureException",
                "The request signature we calculated does not match the signature you provided. "
                "Check your AWS Secret Access Key and signing method. Consult the service "
                "documentation for details.");
  }
  return VerifiedCaller{cred->access_key_id, cred->account_id, auth.region};
}

}  // namespace carve::aws
