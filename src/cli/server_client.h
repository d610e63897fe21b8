// What every `carve` command that talks to a running server shares: the --endpoint-url,
// --credentials and --region flags (with $CARVE_ENDPOINT_URL, $AWS_SHARED_CREDENTIALS_FILE and
// $AWS_REGION / $AWS_DEFAULT_REGION as defaults; the region must be the server's), how an
// https:// server is trusted (--ca-bundle or $AWS_CA_BUNDLE as the aws CLI takes them, or
// --server-cert-sha256), one signed call with the exit-code convention of commands.h, and
// plain-text tables.
#pragma once

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "cli/table.h"
#include "common/result.h"
#include "protocol/signed_client.h"

namespace carve::cli {

struct Conn {
  std::string endpoint_url;
  std::string credentials;
  std::string region;  // "": protocol::DefaultRegion().
  std::string ca_bundle;
  std::string server_cert_sha256;
};

void AddConnFlags(CLI::App* cmd, Conn& c);
std::string Env(const char* name);
Result<protocol::SignedClient> Client(const Conn& c);
// Runs one call; prints the error and returns the exit code (2 bad input, 1 refused) when it
// fails, 0 with the answer in `out` when it succeeds.
int Call(const Conn& c, const std::string& what, std::string_view method, const std::string& path,
         const nlohmann::json* body, nlohmann::json& out);
// A JSON value as a table cell: strings bare, null as "-", floats to one decimal.
std::string Str(const nlohmann::json& v);

}  // namespace carve::cli
