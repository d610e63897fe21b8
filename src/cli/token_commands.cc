// `carve token`: prints a short-lived bearer token for the OpenAI-compatible route
// (POST /endpoints/NAME/openai/v1/chat/completions), minted from a key of the shared-credentials
// file in the format of AWS's bearer-token generators (aws/bearer_token.h). Nothing is sent to
// the server: the token is a presigned request it verifies with the same key.
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
};

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? v : "";
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
  std::string url = f.endpoint_url.empty() ? Env("CARVE_ENDPOINT_URL") : f.endpoint_url;
  if (url.empty()) url = "http://127.0.0.1:8080";
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
  cmd->callback([flags, &ctx] { ctx.exit_code = RunToken(*flags, ctx); });
}

}  // namespace carve::cli
