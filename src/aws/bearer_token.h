// Short-lived bearer tokens, in the format AWS's bearer-token generators use
// (aws-bedrock-token-generator, and the SageMaker Python SDK's generate_token for the
// OpenAI-compatible route): a SigV4 query-presigned request
//   POST https://<host>/?Action=CallWithBearerToken&X-Amz-Algorithm=AWS4-HMAC-SHA256
//        &X-Amz-Credential=<key>/<date>/<region>/<service>/aws4_request&X-Amz-Date=...
//        &X-Amz-Expires=<seconds, at most 43200>&X-Amz-SignedHeaders=host&X-Amz-Signature=...
// whose URL, without "https://" and with "&Version=1" appended, is base64-encoded behind a
// prefix ("bedrock-api-key-" for Bedrock; carve writes "carve-api-key-" and accepts any prefix
// of [a-z0-9-] that ends in '-'). The payload hash is that of the empty body, as botocore's
// SigV4QueryAuth signs it, so a token minted by such a generator with the account's key verifies
// here unchanged (tests/integration/openai_route_test.py mints one with botocore; UNSIGNED-PAYLOAD
// is accepted too).
//
// carve's addition: an optional signed parameter X-Carve-Endpoint limits the token to one
// endpoint. A token without it may invoke any endpoint of its account.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "aws/credentials.h"
#include "aws/sigv4.h"
#include "common/clock.h"
#include "common/result.h"

namespace carve::aws {

inline constexpr int kMaxBearerTokenSeconds = 12 * 3600;

struct BearerTokenSpec {
  std::string access_key_id;
  std::string secret_access_key;
  std::string region = "us-east-1";
  std::string service = "sagemaker";
  std::string host;              // Signed; any host works (the signature, not it, is checked).
  int64_t now_unix_seconds = 0;  // When it is minted.
  int expires_seconds = kMaxBearerTokenSeconds;
  std::string endpoint;  // "": any endpoint of the account.
};

// InvalidArgument when expires_seconds is outside 1..43200 or a field is empty.
Result<std::string> MakeBearerToken(const BearerTokenSpec& spec);

struct VerifiedBearer {
  VerifiedCaller caller;
  std::string endpoint;  // The endpoint it is limited to; "" for any.
  int64_t expires_at_unix_seconds = 0;
  // What a revocation names (server/bearer_revocations.h): SHA-256 (hex) of the token's
  // signature, which no other token has and which no re-encoding of this one changes.
  std::string id;
};

// Verifies `token` (the text after "Bearer "): its bytes exactly as a generator writes them (a
// prefix of [a-z0-9-] ending in '-', canonical padded base64, the presigned request in printable
// ASCII with every parameter once, X-Amz-Signature of 64 lower-case hex digits followed by
// nothing but an optional Version=1), Action, a credential scoped to `region` and `service`, not
// expired and not valid for more than 12 hours, a known key, and its signature. Failures are
// AuthFailure-shaped: 401 UnrecognizedClientException for bytes that are not such a token (one
// byte appended is enough), 403 otherwise with the reason (expired tokens and another region
// say so, the latter as SigV4 does).
std::variant<VerifiedBearer, AuthFailure> VerifyBearerToken(std::string_view token,
                                                            const Credentials& credentials,
                                                            const Clock& clock,
                                                            std::string_view service,
                                                            std::string_view region);

}  // namespace carve::aws
