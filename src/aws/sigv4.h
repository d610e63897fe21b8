// SigV4: server-side verification of AWS Signature Version 4 (header form, AWS4-HMAC-SHA256).
//
// The verifier rebuilds the canonical request exactly as botocore's SigV4Auth does (method, URI
// path normalised for non-S3 services, sorted query, the client's SignedHeaders with trimmed
// values, SHA-256 of the body computed here), derives the signing key from the secret found for
// the access key, and compares signatures in constant time. The credential scope must name the
// server's region and the service, as AWS requires of a regional endpoint. Failures are values
// (AuthFailure) carrying the AWS error type and message, all HTTP 403:
//   MissingAuthenticationToken  no Authorization header
//   IncompleteSignature         malformed Authorization / missing X-Amz-Date
//   UnrecognizedClientException unknown access key
//   InvalidSignatureException   signature mismatch, another region ("Credential should be scoped
//                               to a valid region, not 'eu-west-1'. ..."), another service, or
//                               X-Amz-Date more than `max_skew` away from now ("Signature
//                               expired: ...")
// Thread-safe (const after construction).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "aws/credentials.h"
#include "common/clock.h"

namespace carve::aws {

struct SigV4Request {
  std::string method;  // "POST"
  std::string path;    // Raw request path as received, without the query ("/").
  std::string query;   // Raw query string without '?', possibly empty.
  std::vector<std::pair<std::string, std::string>> headers;  // As received; any name case.
  std::string body;
};

struct VerifiedCaller {
  std::string access_key_id;
  std::string account_id;
  std::string region;
};

struct AuthFailure {
  int http_status = 403;
  std::string type;     // AWS error code, e.g. "InvalidSignatureException".
  std::string message;  // AWS-style message.
};

using AuthOutcome = std::variant<VerifiedCaller, AuthFailure>;

class SigV4Verifier {
 public:
  // `credentials` and `clock` must outlive the verifier. `region` is the server's own
  // (`carve server --region`): the only one a credential scope may name.
  SigV4Verifier(const Credentials& credentials, const Clock& clock, std::string service,
                std::string region, std::chrono::seconds max_skew = std::chrono::minutes(15));

  AuthOutcome Verify(const SigV4Request& request) const { return Verify(request, service_); }
  // For a request to another service on the same listener (Application Auto Scaling beside
  // SageMaker): the credential scope must name `service`.
  AuthOutcome Verify(const SigV4Request& request, std::string_view service) const;

 private:
  const Credentials& credentials_;
  const Clock& clock_;
  std::string service_;
  std::string region_;
  std::chrono::seconds max_skew_;
};

// The refusal of a credential scope that names `scoped` while the server's region is `expected`,
// in AWS's words plus the region to use. Shared by SigV4 headers and bearer tokens.
AuthFailure WrongRegion(std::string_view scoped, std::string_view expected);

// The building blocks, exposed for tests and for signing in tools.
namespace sigv4 {
std::string HexEncode(std::string_view bytes);
// Percent-decodes `s` (a malformed escape stays as is); with plus_is_space, '+' becomes ' '
// as in a query string.
std::string UriDecode(std::string_view s, bool plus_is_space);
std::string Sha256Hex(std::string_view data);
std::string HmacSha256(std::string_view key, std::string_view data);  // Raw 32 bytes.
// `path` as on the wire (already percent-encoded). Dot segments and empty segments removed,
// then every byte outside the unreserved set and '/' percent-encoded again, as AWS does for
// every service but S3 ("/a b" arrives as "/a%20b" and is signed as "/a%2520b").
std::string CanonicalUri(std::string_view path);
// Pairs decoded then re-encoded with RFC 3986 unreserved set, sorted by key then value.
std::string CanonicalQuery(std::string_view query);
// Lower-case names, values trimmed with internal whitespace runs collapsed, repeated headers
// comma-joined; only `signed_headers` (';'-separated), in that order. Ends with "\n".
// InvalidArgument if a signed header is absent.
Result<std::string> CanonicalHeaders(
    const std::vector<std::pair<std::string, std::string>>& headers,
    std::string_view signed_headers);
std::string CanonicalRequest(std::string_view method, std::string_view canonical_uri,
                             std::string_view canonical_query, std::string_view canonical_headers,
                             std::string_view signed_headers, std::string_view payload_hash);
std::string StringToSign(std::string_view amz_date, std::string_view scope,
                         std::string_view canonical_request);
std::string SigningKey(std::string_view secret, std::string_view date, std::string_view region,
                       std::string_view service);  // Raw 32 bytes.
bool ConstantTimeEquals(std::string_view a, std::string_view b);
// "20150830T123600Z" -> Unix seconds; InvalidArgument on any other shape.
Result<int64_t> ParseAmzDate(std::string_view amz_date);
std::string FormatAmzDate(int64_t unix_seconds);

// Client side, for carve's own tools and tests: adds X-Amz-Date (`amz_date`) and an
// Authorization header that signs every header already present plus X-Amz-Date.
// `request.headers` must include Host.
void SignRequest(SigV4Request& request, std::string_view access_key_id, std::string_view secret,
                 std::string_view region, std::string_view service, std::string_view amz_date);
}  // namespace sigv4

}  // namespace carve::aws
