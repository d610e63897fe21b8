#include "protocol/signed_client.h"

#include <httplib.h>

#include <cstdlib>
#include <ctime>

#include "aws/credentials.h"
#include "aws/sigv4.h"
#include "common/bounded_json.h"

namespace carve::protocol {

std::string DefaultRegion() {
  for (const char* name : {"AWS_REGION", "AWS_DEFAULT_REGION"}) {
    const char* v = std::getenv(name);
    if (v != nullptr && *v != '\0') return v;
  }
  return "us-east-1";
}

Result<ClientCredentials> LoadClientCredentials(const std::string& path,
                                                const std::string& profile) {
  CARVE_ASSIGN_OR_RETURN(auto all, aws::Credentials::Load(path));
  for (const auto& c : all.all()) {
    if (c.profile == profile) {
      return ClientCredentials{c.access_key_id, c.secret_access_key, DefaultRegion()};
    }
  }
  return NotFound("credentials file " + path + " has no profile [" + profile + "]");
}

SignedClient::SignedClient(std::string base_url, ClientCredentials credentials, ServerTrust trust)
    : base_url_(std::move(base_url)),
      credentials_(std::move(credentials)),
      trust_(std::move(trust)) {
  std::string_view rest = base_url_;
  const bool https = IsHttps(rest);
  if (rest.starts_with("http://")) rest.remove_prefix(7);
  if (https) rest.remove_prefix(8);
  rest = rest.substr(0, rest.find('/'));
  // cpp-httplib leaves a scheme's default port out of Host, and the signature must cover the
  // Host it sends.
  if (https && rest.ends_with(":443")) rest.remove_suffix(4);
  if (!https && rest.ends_with(":80")) rest.remove_suffix(3);
  host_header_ = std::string(rest);
}

std::vector<std::pair<std::string, std::string>> SignedClient::SignedHeaders(
    std::string_view method, std::string_view path, std::string_view body,
    std::string_view content_type) const {
  const size_t q = path.find('?');
  aws::SigV4Request req;
  req.method = std::string(method);
  req.path = std::string(path.substr(0, q));
  req.query = q == std::string_view::npos ? "" : std::string(path.substr(q + 1));
  req.body = std::string(body);
  req.headers = {{"Host", host_header_}};
  if (!body.empty()) req.headers.emplace_back("Content-Type", std::string(content_type));
  if (!credentials_.bearer_token.empty()) {
    req.headers.emplace_back("Authorization", "Bearer " + credentials_.bearer_token);
  } else if (!credentials_.access_key_id.empty()) {
    aws::sigv4::SignRequest(req, credentials_.access_key_id, credentials_.secret_access_key,
                            credentials_.region, "sagemaker",
                            aws::sigv4::FormatAmzDate(std::time(nullptr)));
  }
  return std::move(req.headers);
}

Result<HttpReply> SignedClient::Send(std::string_view method, std::string_view path,
                                     std::string_view body, std::chrono::milliseconds timeout,
                                     std::string_view content_type) const {
  httplib::Client client(base_url_);
  const std::shared_ptr<TlsPeer> peer = ApplyServerTrust(client, trust_);
  const auto secs = std::chrono::duration_cast<std::chrono::seconds>(timeout);
  const auto usecs = std::chrono::duration_cast<std::chrono::microseconds>(timeout - secs);
  client.set_connection_timeout(std::chrono::seconds(3));
  client.set_read_timeout(secs.count(), usecs.count());
  client.set_write_timeout(secs.count(), usecs.count());
  httplib::Headers headers;
  for (auto& [k, v] : SignedHeaders(method, path, body, content_type)) {
    if (k != "Host" && k != "Content-Type") headers.emplace(std::move(k), std::move(v));
  }
  const std::string target(path);
  const std::string ctype(content_type);
  const std::string content(body);
  auto send = [&]() -> Result<httplib::Result> {
    if (method == "GET") return client.Get(target, headers);
    if (method == "DELETE") return client.Delete(target, headers, content, ctype);
    if (method == "PUT") return client.Put(target, headers, content, ctype);
    if (method == "POST") return client.Post(target, headers, content, ctype);
    return InvalidArgument("method " + std::string(method) + " is not supported");
  };
  CARVE_ASSIGN_OR_RETURN(httplib::Result r, send());
  if (!r) {
    const std::string why = DescribeRequestFailure(base_url_, trust_, peer.get(), r.error(),
                                                   client.get_openssl_verify_result());
    const std::string what = std::string(method) + " " + base_url_ + target + ": " + why;
    // A server that is not the one trusted stays so when asked again: not Unavailable, which
    // callers retry.
    const bool untrusted =
        IsHttps(base_url_) && (r.error() == httplib::Error::SSLServerVerification ||
                               (!trust_.pins.empty() && peer->mismatched()));
    return untrusted ? FailedPrecondition(what) : Unavailable(what);
  }
  HttpReply reply{r->status, r->body, {}};
  for (const auto& [k, v] : r->headers) reply.headers.emplace(k, v);
  return reply;
}

Result<nlohmann::json> SignedClient::Json(std::string_view method, std::string_view path,
                                          const nlohmann::json* body,
                                          std::chrono::milliseconds timeout) const {
  CARVE_ASSIGN_OR_RETURN(HttpReply reply,
                         Send(method, path, body == nullptr ? "" : body->dump(), timeout));
  return ParseJsonReply(path, reply);
}

Result<nlohmann::json> ParseJsonReply(std::string_view path, const HttpReply& reply) {
  // Bounded nesting, no repeated keys (common/bounded_json.h), whoever answered.
  Result<nlohmann::json> bounded = ParseJson(reply.body);
  if (reply.status >= 200 && reply.status < 300) {
    if (!bounded.has_value()) {
      return Internal(std::string(path) + ": the reply " + bounded.error().message);
    }
    return bounded;
  }
  nlohmann::json parsed = bounded.value_or(nlohmann::json());
  std::string message = TextPreview(reply.body, 200);
  if (parsed.is_object()) {
    if (parsed.contains("error") && parsed["error"].is_string()) {
      message = parsed["error"].get<std::string>();
    } else if (parsed.contains("message") && parsed["message"].is_string()) {
      message = parsed["message"].get<std::string>();
    }
  }
  switch (reply.status) {
    case 400:
      return InvalidArgument(message);
    case 401:
    case 403:
      return FailedPrecondition("access denied: " + message);
    case 404:
      return NotFound(message);
    case 409:
      return FailedPrecondition(message);
    default:
      if (reply.status >= 500) return Unavailable(message);
      return Internal("HTTP " + std::to_string(reply.status) + ": " + message);
  }
}

}  // namespace carve::protocol
