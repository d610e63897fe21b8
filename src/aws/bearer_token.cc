#include "aws/bearer_token.h"

#include <algorithm>
#include <map>
#include <vector>

#include "common/base64.h"

namespace carve::aws {
namespace {

constexpr std::string_view kAction = "CallWithBearerToken";
constexpr std::string_view kPrefix = "carve-api-key-";
// botocore's SigV4QueryAuth signs the (empty) body's hash; S3-style presigners sign
// UNSIGNED-PAYLOAD. Tokens are minted the first way and verified either way.
constexpr std::string_view kEmptyPayloadSha256 =
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
constexpr std::string_view kUnsignedPayload = "UNSIGNED-PAYLOAD";
constexpr size_t kMaxPrefixChars = 64;

// The query to sign: every parameter but the signature, in the order given (CanonicalQuery
// sorts).
std::string QueryOf(const std::vector<std::pair<std::string, std::string>>& params) {
  std::string q;
  for (const auto& [k, v] : params) {
    if (!q.empty()) q.push_back('&');
    q.append(k).append("=").append(v);
  }
  return q;
}

std::string Signature(std::string_view secret, std::string_view date, std::string_view region,
                      std::string_view service, std::string_view amz_date, std::string_view scope,
                      std::string_view host, std::string_view query,
                      std::string_view payload_hash = kEmptyPayloadSha256) {
  const std::string canonical =
      sigv4::CanonicalRequest("POST", "/", sigv4::CanonicalQuery(query),
                              "host:" + std::string(host) + "\n", "host", payload_hash);
  return sigv4::HexEncode(sigv4::HmacSha256(sigv4::SigningKey(secret, date, region, service),
                                            sigv4::StringToSign(amz_date, scope, canonical)));
}

AuthFailure Denied(std::string message) {
  return AuthFailure{403, "InvalidSignatureException", std::move(message)};
}

// Percent-encodes a query value (RFC 3986 unreserved kept), as botocore writes presigned URLs.
std::string Encode(std::string_view s) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

}  // namespace

Result<std::string> MakeBearerToken(const BearerTokenSpec& s) {
  if (s.expires_seconds < 1 || s.expires_seconds > kMaxBearerTokenSeconds) {
    return InvalidArgument("a bearer token is valid for 1 to 43200 seconds (12 hours); got " +
                           std::to_string(s.expires_seconds));
  }
  if (s.access_key_id.empty() || s.secret_access_key.empty() || s.host.empty()) {
    return InvalidArgument("a bearer token needs an access key, its secret and a host");
  }
  const std::string amz_date = sigv4::FormatAmzDate(s.now_unix_seconds);
  const std::string date = amz_date.substr(0, 8);
  const std::string scope = date + "/" + s.region + "/" + s.service + "/aws4_request";
  std::vector<std::pair<std::string, std::string>> params = {
      {"Action", std::string(kAction)},
      {"X-Amz-Algorithm", "AWS4-HMAC-SHA256"},
      {"X-Amz-Credential", Encode(s.access_key_id + "/" + scope)},
      {"X-Amz-Date", amz_date},
      {"X-Amz-Expires", std::to_string(s.expires_seconds)},
      {"X-Amz-SignedHeaders", "host"}};
  if (!s.endpoint.empty()) params.emplace_back("X-Carve-Endpoint", Encode(s.endpoint));
  const std::string query = QueryOf(params);
  const std::string signature =
      Signature(s.secret_access_key, date, s.region, s.service, amz_date, scope, s.host, query);
  const std::string url = s.host + "/?" + query + "&X-Amz-Signature=" + signature + "&Version=1";
  return std::string(kPrefix) + Base64Encode(url);
}

namespace {

// A token that is not one this server issues or accepts, byte for byte: 401, as for a bearer
// credential the server does not know.
AuthFailure Malformed(const std::string& why) {
  return AuthFailure{401, "UnrecognizedClientException",
                     "The bearer token is not a token this server issues or accepts: " + why};
}

bool IsPrefixChar(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'; }
bool IsLowerHex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }

struct ParsedToken {
  std::string host;
  std::vector<std::pair<std::string, std::string>> signed_params;  // In the token's order.
  std::map<std::string, std::string> params;                       // Decoded values.
  std::string signature;
};

// Splits a token into its signed request, accepting exactly the bytes a generator writes:
// "<prefix>-" ([a-z0-9-], at most 64), then canonical padded base64 of
// "<host>/?<k=v>&...&X-Amz-Signature=<64 hex>[&Version=1]" in printable ASCII, every parameter
// once. Anything else, a byte appended or a second encoding of the same request included, is
// Malformed: what the signature does not cover must not vary.
std::variant<ParsedToken, AuthFailure> ParseToken(std::string_view token) {
  const size_t dash = token.rfind('-');
  if (dash == std::string_view::npos || dash + 1 > kMaxPrefixChars) {
    return Malformed("it must start with a prefix such as carve-api-key-");
  }
  const std::string_view prefix = token.substr(0, dash + 1);
  if (!std::all_of(prefix.begin(), prefix.end(), IsPrefixChar)) {
    return Malformed("its prefix may hold only a-z, 0-9 and '-'");
  }
  const std::string_view encoded = token.substr(dash + 1);
  auto url = Base64Decode(encoded);
  if (!url || Base64Encode(*url) != encoded) {
    return Malformed("the part after the prefix is not canonical padded base64");
  }
  if (!std::all_of(url->begin(), url->end(), [](char c) { return c > ' ' && c < 0x7f; })) {
    return Malformed("the signed request holds bytes outside printable ASCII");
  }
  const size_t q = url->find("/?");
  if (q == std::string::npos || q == 0) return Malformed("it names no signed request");
  ParsedToken out;
  out.host = url->substr(0, q);
  bool version = false;
  std::string_view rest = std::string_view(*url).substr(q + 2);
  for (bool more = true; more;) {
    const size_t amp = rest.find('&');
    const std::string_view item = rest.substr(0, amp);
    more = amp != std::string_view::npos;
    rest = more ? rest.substr(amp + 1) : std::string_view();
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos || eq == 0) {
      return Malformed("its query has an empty or valueless parameter");
    }
    const std::string k(item.substr(0, eq));
    const std::string v(item.substr(eq + 1));
    if (version) return Malformed("nothing may follow Version=1");
    if (k == "Version") {
      // Appended after signing by the generators: the last parameter, if present.
      if (v != "1" || out.signature.empty()) {
        return Malformed("Version=1 may only follow X-Amz-Signature");
      }
      version = true;
    } else if (!out.signature.empty()) {
      return Malformed("only Version=1 may follow X-Amz-Signature");
    } else if (k == "X-Amz-Signature") {
      if (v.size() != 64 || !std::all_of(v.begin(), v.end(), IsLowerHex)) {
        return Malformed("X-Amz-Signature must be 64 lower-case hex digits");
      }
      out.signature = v;
    } else {
      if (out.params.contains(k)) return Malformed("parameter " + k + " appears twice");
      out.signed_params.emplace_back(k, v);
      out.params[k] = sigv4::UriDecode(v, false);
    }
  }
  if (out.signature.empty()) return Malformed("it has no X-Amz-Signature");
  return out;
}

}  // namespace

std::variant<VerifiedBearer, AuthFailure> VerifyBearerToken(std::string_view token,
                                                            const Credentials& credentials,
                                                            const Clock& clock,
                                                            std::string_view service,
                                                            std::string_view region) {
  auto parsed = ParseToken(token);
  if (auto* f = std::get_if<AuthFailure>(&parsed)) return *f;
  ParsedToken& t = std::get<ParsedToken>(parsed);
  auto& p = t.params;
  if (p["Action"] != kAction || p["X-Amz-Algorithm"] != "AWS4-HMAC-SHA256" ||
      p["X-Amz-SignedHeaders"] != "host") {
    return Denied("The bearer token is not a presigned CallWithBearerToken request");
  }
  // <key>/<date>/<region>/<service>/aws4_request
  std::vector<std::string> cred;
  for (size_t start = 0;;) {
    const size_t slash = p["X-Amz-Credential"].find('/', start);
    cred.push_back(p["X-Amz-Credential"].substr(start, slash - start));
    if (slash == std::string::npos) break;
    start = slash + 1;
  }
  if (cred.size() != 5 || cred[4] != "aws4_request") {
    return Denied("The bearer token's credential is malformed");
  }
  if (cred[2] != region) return WrongRegion(cred[2], region);
  if (cred[3] != service) {
    return Denied("The bearer token's credential should be scoped to service '" +
                  std::string(service) + "', not '" + cred[3] + "'");
  }
  auto when = sigv4::ParseAmzDate(p["X-Amz-Date"]);
  int64_t expires = 0;
  try {
    expires = std::stoll(p["X-Amz-Expires"]);
  } catch (const std::exception&) {
    expires = -1;
  }
  if (!when.has_value() || expires < 1 || expires > kMaxBearerTokenSeconds ||
      p["X-Amz-Date"].substr(0, 8) != cred[1]) {
    return Denied("The bearer token's date or lifetime is malformed (at most 43200 seconds)");
  }
  const int64_t now = clock.UnixMillis() / 1000;
  if (*when > now + 900) return Denied("The bearer token is dated in the future");
  if (now > *when + expires) {
    return AuthFailure{403, "ExpiredTokenException",
                       "The bearer token expired at " + sigv4::FormatAmzDate(*when + expires)};
  }
  const std::optional<Credential> key = credentials.Find(cred[0]);
  if (!key.has_value()) {
    return AuthFailure{403, "UnrecognizedClientException",
                       "The bearer token's access key is not known to this server"};
  }
  const std::string scope = cred[1] + "/" + cred[2] + "/" + cred[3] + "/aws4_request";
  const std::string query = QueryOf(t.signed_params);
  const bool matches =
      sigv4::ConstantTimeEquals(Signature(key->secret_access_key, cred[1], cred[2], cred[3],
                                          p["X-Amz-Date"], scope, t.host, query),
                                t.signature) ||
      sigv4::ConstantTimeEquals(Signature(key->secret_access_key, cred[1], cred[2], cred[3],
                                          p["X-Amz-Date"], scope, t.host, query, kUnsignedPayload),
                                t.signature);
  if (!matches) {
    return Denied("The bearer token's signature does not match");
  }
  VerifiedBearer out;
  out.caller = VerifiedCaller{key->access_key_id, key->account_id, cred[2]};
  out.endpoint = p.contains("X-Carve-Endpoint") ? p["X-Carve-Endpoint"] : "";
  out.expires_at_unix_seconds = *when + expires;
  out.id = sigv4::Sha256Hex(t.signature);
  return out;
}

}  // namespace carve::aws
