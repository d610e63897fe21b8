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
  cmd->add_option("--ca-bundle", c.ca_bundle,
                  "PEM CA certificates to verify an https server with, e.g. its "
                  "DATA_DIR/tls/cert.pem (default: $AWS_CA_BUNDLE, else the system's)");
  cmd->add_option("--server-cert-sha256", c.server_cert_sha256,
                  "Instead of a CA bundle: the pin of the server certificate's key, sha256:HEX "
                  "(default: $CARVE_SERVER_CERT_SHA256)");
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
  protocol::ServerTrust trust;
  trust.ca_file = c.ca_bundle.empty() ? Env("AWS_CA_BUNDLE") : c.ca_bundle;
  const std::string pins =
      c.server_cert_sha256.empty() ? Env("CARVE_SERVER_CERT_SHA256") : c.server_cert_sha256;
  CARVE_ASSIGN_OR_RETURN(trust.pins, protocol::ParsePins(pins));
  if (!trust.pins.empty()) trust.ca_file.clear();  // The pin names the server exactly.
  return protocol::SignedClient(url, creds, std::move(trust));
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
