// SigV4 verification (src/aws/sigv4.h): every header, the query and the path of a request
// reach it from anyone who can connect. Input: method, path, query, header lines
// ("name: value"), a blank line, then the body. Each input is verified twice:
//  - as it is (with the Authorization it may carry): the outcome is a VerifiedCaller of the one
//    known key, or a 403 AuthFailure of a documented type;
//  - signed by carve's own signer (sigv4::SignRequest) when every header name is an HTTP token
//    and no value holds CR or LF, i.e. when it could travel on the wire: the verifier must then
//    accept it, and refuse it once the body changes.
// Also: ParseAmzDate(FormatAmzDate(t)) == t.
#include <strings.h>

#include <set>
#include <string>

#include "aws/sigv4.h"
#include "common/fake_clock.h"
#include "fuzz_util.h"

namespace {

using carve::aws::AuthFailure;
using carve::aws::AuthOutcome;
using carve::aws::SigV4Request;
using carve::aws::VerifiedCaller;
namespace sigv4 = carve::aws::sigv4;

constexpr char kAccessKey[] = "AKIAIOSFODNN7EXAMPLE";
constexpr char kSecret[] = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";
constexpr char kAccount[] = "123456789012";
constexpr int64_t kNowSeconds = 1'700'000'000;

const carve::aws::Credentials& Creds() {
  static const auto* creds = new carve::aws::Credentials(
      {carve::aws::Credential{"default", kAccessKey, kSecret, kAccount}});
  return *creds;
}

bool IsToken(std::string_view name) {
  if (name.empty()) return false;
  for (char c : name) {
    const bool ok = std::isalnum(static_cast<unsigned char>(c)) ||
                    std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
    if (!ok) return false;
  }
  return true;
}

void CheckOutcome(const AuthOutcome& out) {
  static const std::set<std::string> kTypes = {"MissingAuthenticationToken", "IncompleteSignature",
                                               "UnrecognizedClientException",
                                               "InvalidSignatureException"};
  if (const auto* ok = std::get_if<VerifiedCaller>(&out)) {
    FUZZ_CHECK(ok->access_key_id == kAccessKey && ok->account_id == kAccount,
               "verified an unknown caller %s", ok->access_key_id.c_str());
    return;
  }
  const auto& f = std::get<AuthFailure>(out);
  FUZZ_CHECK(f.http_status == 403 && kTypes.count(f.type) == 1, "undocumented failure %d %s: %s",
             f.http_status, f.type.c_str(), f.message.c_str());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input = carve::fuzz::AsView(data, size);
  const size_t blank = input.find("\n\n");
  const std::string_view head = input.substr(0, blank);
  const std::string_view body =
      blank == std::string_view::npos ? std::string_view() : input.substr(blank + 2);
  auto lines = carve::fuzz::Split(head, '\n');
  if (lines.size() < 3) return 0;

  SigV4Request r;
  r.method = std::string(lines[0]);
  r.path = std::string(lines[1]);
  r.query = std::string(lines[2]);
  r.body = std::string(body);
  bool wire_safe = !r.method.empty();
  bool has_auth_headers = false;
  for (size_t i = 3; i < lines.size(); ++i) {
    const size_t colon = lines[i].find(':');
    std::string name(lines[i].substr(0, colon));
    std::string value(colon == std::string_view::npos ? "" : lines[i].substr(colon + 1));
    wire_safe = wire_safe && IsToken(name) && value.find('\r') == std::string::npos;
    for (const char* reserved : {"authorization", "x-amz-date", "host"}) {
      if (strcasecmp(name.c_str(), reserved) == 0) has_auth_headers = true;
    }
    r.headers.emplace_back(std::move(name), std::move(value));
  }

  carve::FakeClock clock(kNowSeconds * 1000);
  const carve::aws::SigV4Verifier verifier(Creds(), clock, "sagemaker", "us-east-1");
  CheckOutcome(verifier.Verify(r));

  auto parsed = sigv4::ParseAmzDate(sigv4::FormatAmzDate(kNowSeconds + static_cast<int64_t>(size)));
  FUZZ_CHECK(parsed.has_value() && *parsed == kNowSeconds + static_cast<int64_t>(size),
             "X-Amz-Date does not round-trip");

  if (!wire_safe || has_auth_headers) return 0;
  SigV4Request signed_request = r;
  signed_request.headers.emplace_back("Host", "127.0.0.1:8080");
  sigv4::SignRequest(signed_request, kAccessKey, kSecret, "us-east-1", "sagemaker",
                     sigv4::FormatAmzDate(kNowSeconds));
  const AuthOutcome accepted = verifier.Verify(signed_request);
  FUZZ_CHECK(std::holds_alternative<VerifiedCaller>(accepted),
             "a request carve signed itself is refused: %s",
             std::get<AuthFailure>(accepted).message.c_str());
  signed_request.body += "x";
  FUZZ_CHECK(std::holds_alternative<AuthFailure>(verifier.Verify(signed_request)),
             "a changed body still verifies");
  return 0;
}
