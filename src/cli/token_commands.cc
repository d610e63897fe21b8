// `carve token`: prints a short-lived bearer token for the OpenAI-compatible route
// (POST /endpoints/NAME/openai/v1/chat/completions), minted from a key of the shared-credentials
// file in the format of AWS's bearer-token generators (aws/bearer_token.h). Nothing is sent to
// the server: the token is a presigned request it verifies with the same key.
//
// `carve token revoke TOKEN` asks the server to refuse that one token from now on
// (POST /v1/tokens/revoke), signed with a key of the token's own account; the key and every
// other token stay valid.
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>

#include "aws/bearer_token.h"
#include "aws/credentials.h"
#include "cli/commands.h"
#include "protocol/signed_client.h"

namespace carve::cli {
namespace {

struct TokenFlags {
  std::string credentials;
  std::string profile = "default";
  std::string endpoint_url;
  std::string region;  // "": protocol::DefaultRegion().
  int expires_in = aws::kMaxBearerTokenSeconds;
  std::string endpoint;
  std::string token;  // `carve token revoke`: the token to revoke.
};

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? v : "";
}

std::string ServerUrl(const TokenFlags& f) {
  std::string url = f.endpoint_url.empty() ? Env("CARVE_ENDPOINT_URL") : f.endpoint_url;
  if (url.empty()) url = "http://127.0.0.1:8080";
  while (!url.empty() && url.back() == '/') url.pop_back();
  return url;
}

int RunToken(const TokenFlags& f, const Context& ctx) {
  const std::string file =
      f.credentials.empty() ? Env("AWS_SHARED_CREDENTIALS_FILE") : f.credentials;
  if (file.empty()) {
    std::cerr << "carve token: --credentials: required (or set AWS_SHARED_CREDENTIALS_FILE)\n";
    return 2;
  }
  auto creds = aws::Credentials::Load(file);
  if (!creds.has_value()) {
    std::cerr << "carve token: --credentials " << file << ": " << creds.error().message << "\n";
    return 2;
  }
  std::optional<aws::Credential> key;
  for (const auto& c : creds->all()) {
    if (c.profile == f.profile) key = c;
  }
  if (!key.has_value()) {
    std::cerr << "carve token: --profile " << f.profile << ": no such profile in " << file << "\n";
    return 2;
  }
  const std::string url = ServerUrl(f);
  const size_t scheme = url.find("://");
  std::string host = scheme == std::string::npos ? url : url.substr(scheme + 3);
  host = host.substr(0, host.find('/'));
  aws::BearerTokenSpec spec;
  spec.access_key_id = key->access_key_id;
  spec.secret_access_key = key->secret_access_key;
  spec.region = f.region.empty() ? protocol::DefaultRegion() : f.region;
  spec.host = host;
  spec.now_unix_seconds = std::chrono::duration_cast<std::chrono::seconds>(
                              std::chrono::system_clock::now().time_since_epoch())
                              .count();
  spec.expires_seconds = f.expires_in;
  spec.endpoint = f.endpoint;
  auto token = aws::MakeBearerToken(spec);
  if (!token.has_value()) {
    std::cerr << "carve token: " << token.error().message << "\n";
    return 2;
  }
  if (ctx.json) {
    std::cout << nlohmann::json{{"token", *token},
                                {"expires_at", spec.now_unix_seconds + f.expires_in},
                                {"endpoint",
                                 f.endpoint.empty() ? nullptr : nlohmann::json(f.endpoint)}}
              << "\n";
  } else {
    std::cout << *token << "\n";
  }
  return 0;
}

int RunRevoke(const TokenFlags& f, const Context& ctx) {
  const std::string file =
      f.credentials.empty() ? Env("AWS_SHARED_CREDENTIALS_FILE") : f.credentials;
  if (file.empty()) {
    std::cerr << "carve token revoke: --credentials: required (or set "
                 "AWS_SHARED_CREDENTIALS_FILE)\n";
    return 2;
  }
  auto creds = protocol::LoadClientCredentials(file, f.profile);
  if (!creds.has_value()) {
    std::cerr << "carve token revoke: " << creds.error().message << "\n";
    return 2;
  }
  if (!f.region.empty()) creds->region = f.region;
  const protocol::SignedClient client(ServerUrl(f), *creds);
  const nlohmann::json body{{"token", f.token}};
  auto answer = client.Json("POST", "/v1/tokens/revoke", &body);
  if (!answer.has_value()) {
    std::cerr << "carve token revoke: " << answer.error().message << "\n";
    return answer.error().code == ErrorCode::kInvalidArgument ? 2 : 1;
  }
  if (ctx.json) {
    std::cout << *answer << "\n";
  } else if (answer->value("revoked", false)) {
    std::cout << "revoked token " << answer->value("token_id", "") << "; it is refused from now "
              << "on\n";
  } else {
    std::cout << "nothing to revoke: " << answer->value("expired", "the token expired") << "\n";
  }
  return 0;
}

}  // namespace

void RegisterTokenCommands(CLI::App& app, Context& ctx) {
  auto flags = std::make_shared<TokenFlags>();
  CLI::App* cmd = app.add_subcommand("token",
                                     "Print a bearer token for the OpenAI-compatible route "
                                     "(Authorization: Bearer <token>), valid for at most 12 hours");
  cmd->add_option("--credentials", flags->credentials,
                  "AWS shared-credentials file (default: $AWS_SHARED_CREDENTIALS_FILE)");
  cmd->add_option("--profile", flags->profile, "Profile in the credentials file")
      ->capture_default_str();
  cmd->add_option("--endpoint-url", flags->endpoint_url,
                  "carve server URL, whose host the token is signed for (default: "
                  "$CARVE_ENDPOINT_URL, else http://127.0.0.1:8080)");
  cmd->add_option("--region", flags->region,
                  "Region of the token's credential scope: the server's (default: $AWS_REGION, "
                  "else $AWS_DEFAULT_REGION, else us-east-1)");
  cmd->add_option("--expires-in", flags->expires_in, "Seconds the token is valid")
      ->capture_default_str()
      ->check(CLI::Range(1, aws::kMaxBearerTokenSeconds));
  cmd->add_option("--endpoint", flags->endpoint,
                  "Limit the token to this endpoint (default: any endpoint of the account)");
  CLI::App* revoke = cmd->add_subcommand(
      "revoke",
      "Revoke one token before it expires: the server refuses it from the next request on, "
      "while the key and its other tokens stay valid");
  revoke->add_option("TOKEN", flags->token, "The token, as `carve token` printed it")->required();
  revoke->add_option("--credentials", flags->credentials,
                     "AWS shared-credentials file (default: $AWS_SHARED_CREDENTIALS_FILE)");
  revoke
      ->add_option("--profile", flags->profile,
                   "Profile whose key signs the request: one of the token's own account")
      ->capture_default_str();
  revoke->add_option("--endpoint-url", flags->endpoint_url,
                     "carve server URL (default: $CARVE_ENDPOINT_URL, else http://127.0.0.1:8080)");
  revoke->add_option("--region", flags->region,
                     "The server's region (default: $AWS_REGION, else $AWS_DEFAULT_REGION, else "
                     "us-east-1)");
  revoke->callback([flags, &ctx] { ctx.exit_code = RunRevoke(*flags, ctx); });
  cmd->callback([flags, revoke, &ctx] {
    if (!revoke->parsed()) ctx.exit_code = RunToken(*flags, ctx);
  });
}

}  // namespace carve::cli
