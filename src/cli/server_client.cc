#include "cli/server_client.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <iostream>

namespace carve::cli {

using nlohmann::json;

void AddConnFlags(CLI::App* cmd, Conn& c) {
  cmd->add_option("--endpoint-url", c.endpoint_url,
                  "carve server URL (default: $CARVE_ENDPOINT_URL)");
  cmd->add_option("--credentials", c.credentials,
                  "AWS shared-credentials file (default: $AWS_SHARED_CREDENTIALS_FILE)");
  cmd->add_option("--region", c.region,
                  "The server's region, which requests are signed for (default: $AWS_REGION, "
                  "else $AWS_DEFAULT_REGION, else us-east-1)");
}

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? v : "";
}

Result<protocol::SignedClient> Client(const Conn& c) {
  std::string url = c.endpoint_url.empty() ? Env("CARVE_ENDPOINT_URL") : c.endpoint_url;
  if (url.empty()) {
    return InvalidArgument(
        "--endpoint-url: required (or set CARVE_ENDPOINT_URL), e.g. "
        "http://127.0.0.1:8080");
  }
  while (!url.empty() && url.back() == '/') url.pop_back();
  std::string file = c.credentials.empty() ? Env("AWS_SHARED_CREDENTIALS_FILE") : c.credentials;
  protocol::ClientCredentials creds;
  if (!file.empty()) {
    CARVE_ASSIGN_OR_RETURN(creds, protocol::LoadClientCredentials(file));
  }
  if (!c.region.empty()) creds.region = c.region;
  return protocol::SignedClient(url, creds);
}

int Call(const Conn& c, const std::string& what, std::string_view method, const std::string& path,
         const json* body, json& out) {
  auto client = Client(c);
  if (!client.has_value()) {
    std::cerr << what << ": " << client.error().message << "\n";
    return 2;
  }
  auto r = client->Json(method, path, body);
  if (!r.has_value()) {
    std::cerr << what << ": " << r.error().message << "\n";
    return 1;
  }
  out = std::move(r).value();
  return 0;
}

std::string Str(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_null()) return "-";
  if (v.is_number_float()) return fmt::format("{:.1f}", v.get<double>());
  return v.dump();
}

}  // namespace carve::cli
