// `carve node`: node identity for operators (docs/security.md, "Nodes").
//   carve node token create [--ttl 24h] [--description TEXT]   a bootstrap token and the line
//                                                              that joins an agent with it
//   carve node token list | delete ID                          unexpired tokens; delete one
//   carve node credentials                                     which nodes hold a credential
//   carve node revoke NODE                                     the node's agent is refused from
//                                                              its next request on
// Each is an operator's call (an operator key of the credentials file). Exit codes: 0 done,
// 1 the server refused, 2 bad input.
#include <fmt/format.h>

#include <cctype>
#include <chrono>
#include <ctime>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/server_client.h"
#include "cli/table.h"

namespace carve::cli {
namespace {

using nlohmann::json;

struct NodeFlags {
  Conn conn;
  std::string ttl = "24h";
  std::string description;
  std::string id;
};

// "90s", "30m", "24h", "7d" or plain seconds; nullopt for anything else.
std::optional<int64_t> ParseTtl(const std::string& text) {
  if (text.empty() || text.size() > 12) return std::nullopt;
  size_t digits = 0;
  while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits])) != 0) {
    ++digits;
  }
  if (digits == 0) return std::nullopt;
  const int64_t n = std::stoll(text.substr(0, digits));
  const std::string unit = text.substr(digits);
  if (unit.empty() || unit == "s") return n;
  if (unit == "m") return n * 60;
  if (unit == "h") return n * 3600;
  if (unit == "d") return n * 86400;
  return std::nullopt;
}

std::string When(int64_t unix_ms) {
  const std::time_t t = static_cast<std::time_t>(unix_ms / 1000);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

int CreateToken(const NodeFlags& f, const Context& ctx) {
  const auto ttl = ParseTtl(f.ttl);
  if (!ttl) {
    std::cerr << "carve node token create: --ttl " << f.ttl.substr(0, 16)
              << ": a duration such as 3600, 90s, 30m, 24h or 7d\n";
    return 2;
  }
  json body{{"ttl_seconds", *ttl}};
  if (!f.description.empty()) body["description"] = f.description;
  json token;
  if (int rc = Call(f.conn, "carve node token create", "POST", "/v1/node-tokens", &body, token);
      rc != 0) {
    return rc;
  }
  if (ctx.json) {
    std::cout << token.dump(2) << "\n";
    return 0;
  }
  // The join line names the server as this command reached it, and pins its certificate by the
  // key the server reported over this (verified) connection.
  auto client = Client(f.conn);
  const std::string url = client.has_value() ? client->base_url() : "URL";
  const std::string pin = token.value("server_cert_sha256", "");
  std::cout << token.value("token", "") << "\n";
  std::cerr << "valid until " << When(token.value("expires_ms", int64_t{0}))
            << "; join a node with\n  carve agent --server " << url << " --join-token "
            << token.value("token", "") << (pin.empty() ? "" : " --server-cert-sha256 " + pin)
            << " ...\n";
  if (pin.empty() && !protocol::IsLoopbackUrl(url)) {
    std::cerr << "(the server speaks plain HTTP: the token would cross the network in the "
                 "clear; the agent needs --insecure-plain-http)\n";
  }
  return 0;
}

int ListTokens(const NodeFlags& f, const Context& ctx) {
  json out;
  if (int rc = Call(f.conn, "carve node token list", "GET", "/v1/node-tokens", nullptr, out);
      rc != 0) {
    return rc;
  }
  if (ctx.json) {
    std::cout << out.dump(2) << "\n";
    return 0;
  }
  std::vector<std::vector<std::string>> rows = {{"ID", "EXPIRES", "DESCRIPTION"}};
  for (const json& t : out.value("Tokens", json::array())) {
    rows.push_back({Str(t.value("id", json())), When(t.value("expires_ms", int64_t{0})),
                    t.value("description", "")});
  }
  PrintTable(rows);
  return 0;
}

int DeleteToken(const NodeFlags& f) {
  json out;
  return Call(f.conn, "carve node token delete", "DELETE", "/v1/node-tokens/" + f.id, nullptr, out);
}

int Credentials(const NodeFlags& f, const Context& ctx) {
  json out;
  if (int rc = Call(f.conn, "carve node credentials", "GET", "/v1/node-credentials", nullptr, out);
      rc != 0) {
    return rc;
  }
  if (ctx.json) {
    std::cout << out.dump(2) << "\n";
    return 0;
  }
  std::vector<std::vector<std::string>> rows = {{"NODE", "CREDENTIAL", "SINCE", "JOINED WITH"}};
  for (const json& c : out.value("Credentials", json::array())) {
    rows.push_back({Str(c.value("node_id", json())), Str(c.value("credential_id", json())),
                    When(c.value("created_ms", int64_t{0})), Str(c.value("joined_with", json()))});
  }
  PrintTable(rows);
  return 0;
}

int Revoke(const NodeFlags& f) {
  json out;
  const int rc = Call(f.conn, "carve node revoke", "DELETE", "/v1/nodes/" + f.id + "/credential",
                      nullptr, out);
  if (rc == 0) std::cerr << "node " << f.id << ": credential revoked\n";
  return rc;
}

}  // namespace

void RegisterNodeCommands(CLI::App& app, Context& ctx) {
  CLI::App* node = app.add_subcommand("node", "Node identity: bootstrap tokens and credentials");
  node->require_subcommand(1);
  auto f = std::make_shared<NodeFlags>();
  CLI::App* token = node->add_subcommand("token", "Bootstrap tokens that join node agents");
  token->require_subcommand(1);
  CLI::App* create = token->add_subcommand(
      "create", "A bootstrap token (printed on stdout) that agents join with until it expires");
  AddConnFlags(create, f->conn);
  create->add_option("--ttl", f->ttl, "How long it is valid: 3600, 90s, 30m, 24h, up to 7d")
      ->capture_default_str();
  create->add_option("--description", f->description, "A note shown by `carve node token list`");
  create->callback([f, &ctx] { ctx.exit_code = CreateToken(*f, ctx); });
  CLI::App* list = token->add_subcommand("list", "Unexpired bootstrap tokens (never their secret)");
  AddConnFlags(list, f->conn);
  list->callback([f, &ctx] { ctx.exit_code = ListTokens(*f, ctx); });
  CLI::App* del =
      token->add_subcommand("delete", "Delete a bootstrap token: no agent joins with it");
  AddConnFlags(del, f->conn);
  del->add_option("ID", f->id, "The token's id: the 6 characters before the dot")->required();
  del->callback([f, &ctx] { ctx.exit_code = DeleteToken(*f); });
  CLI::App* creds = node->add_subcommand("credentials", "The nodes that hold a credential");
  AddConnFlags(creds, f->conn);
  creds->callback([f, &ctx] { ctx.exit_code = Credentials(*f, ctx); });
  CLI::App* revoke = node->add_subcommand(
      "revoke",
      "Revoke a node's credential: its agent is refused from its next request on, "
      "until it joins again with a new bootstrap token");
  AddConnFlags(revoke, f->conn);
  revoke->add_option("NODE", f->id, "The node id")->required();
  revoke->callback([f, &ctx] { ctx.exit_code = Revoke(*f); });
}

}  // namespace carve::cli
