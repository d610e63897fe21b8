#include "agent/node/node_credential.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/bounded_json.h"
#include "protocol/signed_client.h"

namespace carve::agent::node {
namespace {

namespace fs = std::filesystem;

Status WriteCredential(const std::string& file, const std::string& node_id,
                       const NodeCredential& credential) {
  std::error_code ec;
  fs::create_directories(fs::path(file).parent_path(), ec);
  const std::string tmp = file + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return Internal(fmt::format("cannot create {}: {}", tmp, std::strerror(errno)));
  nlohmann::json record{{"node_id", node_id}, {"credential", credential.credential}};
  if (!credential.server_pins.empty()) record["server_cert_sha256"] = credential.server_pins;
  const std::string text = record.dump() + "\n";
  const bool wrote = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) &&
                     ::fsync(fd) == 0;
  ::close(fd);
  if (!wrote) return Internal(fmt::format("cannot write {}: {}", tmp, std::strerror(errno)));
  fs::rename(tmp, file, ec);
  if (ec) return Internal(fmt::format("cannot rename {} to {}: {}", tmp, file, ec.message()));
  return OkStatus();
}

}  // namespace

Result<std::string> JoinNode(const std::vector<std::string>& servers, const std::string& join_token,
                             const std::string& node_id, const protocol::ServerTrust& trust) {
  if (servers.empty()) return InvalidArgument("no server to join");
  const nlohmann::json body{{"node_id", node_id}};
  Error last = Unavailable("no server answered");
  for (const auto& url : servers) {
    protocol::ClientCredentials bearer;
    bearer.bearer_token = join_token;
    Result<nlohmann::json> reply =
        protocol::SignedClient(url, bearer, trust).Json("POST", "/v1/agent/join", &body);
    if (reply.has_value()) {
      if (!reply->is_object() || !(*reply)["credential"].is_string()) {
        return Internal(url + " answered the join without a credential");
      }
      return (*reply)["credential"].get<std::string>();
    }
    last = reply.error();
    if (last.code != ErrorCode::kUnavailable) break;
  }
  return Error{last.code, "joining as node " + node_id + ": " + last.message};
}

Result<NodeCredential> LoadOrJoin(const std::string& file, const std::vector<std::string>& servers,
                                  const std::string& join_token, const std::string& node_id,
                                  const protocol::ServerTrust& trust) {
  struct stat st {};
  if (::stat(file.c_str(), &st) == 0) {
    if ((st.st_mode & 077) != 0) {
      return InvalidArgument(fmt::format(
          "{} can be read by others (mode {:o}); it holds this node's credential: chmod 600 it",
          file, st.st_mode & 0777));
    }
    std::ifstream in(file);
    std::ostringstream text;
    text << in.rdbuf();
    Result<nlohmann::json> j = ParseJson(text.str());
    if (!j.has_value() || !j->is_object() || !(*j)["node_id"].is_string() ||
        !(*j)["credential"].is_string()) {
      return InvalidArgument(file +
                             " is not a node credential file (JSON with node_id and "
                             "credential); remove it and join again");
    }
    const std::string owner = (*j)["node_id"].get<std::string>();
    if (owner != node_id) {
      return InvalidArgument(
          fmt::format("{} holds the credential of node {}, not {}: a data dir belongs to one node",
                      file, owner.substr(0, 64), node_id));
    }
    NodeCredential held{(*j)["credential"].get<std::string>(), {}};
    const auto& pins = (*j)["server_cert_sha256"];
    if (!pins.is_null() && !pins.is_array()) {
      return InvalidArgument(file + ": server_cert_sha256 must be a list of pins");
    }
    for (const auto& pin : pins.is_array() ? pins : nlohmann::json::array()) {
      auto parsed = pin.is_string() ? protocol::ParsePin(pin.get<std::string>())
                                    : Result<std::string>(InvalidArgument("not a string"));
      if (!parsed.has_value()) return InvalidArgument(file + ": " + parsed.error().message);
      held.server_pins.push_back(*parsed);
    }
    if (!trust.pins.empty() && trust.pins != held.server_pins) {
      // The operator named the server's key anew (it was changed, or the node joined before TLS).
      spdlog::warn("{}: the server certificate pins become {} (--server-cert-sha256)", file,
                   fmt::join(trust.pins, ","));
      held.server_pins = trust.pins;
      CARVE_RETURN_IF_ERROR(WriteCredential(file, node_id, held));
    }
    return held;
  }
  if (join_token.empty()) {
    return NotFound(fmt::format(
        "{} does not exist: join this node once with --join-token (or CARVE_JOIN_TOKEN), a "
        "bootstrap token from `carve node token create`",
        file));
  }
  NodeCredential joined{"", trust.pins};
  CARVE_ASSIGN_OR_RETURN(joined.credential, JoinNode(servers, join_token, node_id, trust));
  CARVE_RETURN_IF_ERROR(WriteCredential(file, node_id, joined));
  return joined;
}

}  // namespace carve::agent::node
