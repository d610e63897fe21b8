#include "agent/node/node_credential.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/bounded_json.h"
#include "protocol/signed_client.h"

namespace carve::agent::node {
namespace {

namespace fs = std::filesystem;

Status WriteCredential(const std::string& file, const std::string& node_id,
                       const std::string& credential) {
  std::error_code ec;
  fs::create_directories(fs::path(file).parent_path(), ec);
  const std::string tmp = file + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return Internal(fmt::format("cannot create {}: {}", tmp, std::strerror(errno)));
  const std::string text =
      nlohmann::json{{"node_id", node_id}, {"credential", credential}}.dump() + "\n";
  const bool wrote = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) &&
                     ::fsync(fd) == 0;
  ::close(fd);
  if (!wrote) return Internal(fmt::format("cannot write {}: {}", tmp, std::strerror(errno)));
  fs::rename(tmp, file, ec);
  if (ec) return Internal(fmt::format("cannot rename {} to {}: {}", tmp, file, ec.message()));
  return OkStatus();
}

}  // namespace

Result<std::string> JoinNode(const std::vector<std::string>& servers,
                             const std::string& join_token, const std::string& node_id) {
  if (servers.empty()) return InvalidArgument("no server to join");
  const nlohmann::json body{{"node_id", node_id}};
  Error last = Unavailable("no server answered");
  for (const auto& url : servers) {
    protocol::ClientCredentials bearer;
    bearer.bearer_token = join_token;
    Result<nlohmann::json> reply =
        protocol::SignedClient(url, bearer).Json("POST", "/v1/agent/join", &body);
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

Result<std::string> LoadOrJoin(const std::string& file, const std::vector<std::string>& servers,
                               const std::string& join_token, const std::string& node_id) {
  struct stat st{};
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
      return InvalidArgument(file + " is not a node credential file (JSON with node_id and "
                                    "credential); remove it and join again");
    }
    const std::string owner = (*j)["node_id"].get<std::string>();
    if (owner != node_id) {
      return InvalidArgument(fmt::format(
          "{} holds the credential of node {}, not {}: a data dir belongs to one node", file,
          owner.substr(0, 64), node_id));
    }
    return (*j)["credential"].get<std::string>();
  }
  if (join_token.empty()) {
    return NotFound(fmt::format(
        "{} does not exist: join this node once with --join-token (or CARVE_JOIN_TOKEN), a "
        "bootstrap token from `carve node token create`",
        file));
  }
  CARVE_ASSIGN_OR_RETURN(std::string credential, JoinNode(servers, join_token, node_id));
  CARVE_RETURN_IF_ERROR(WriteCredential(file, node_id, credential));
  return credential;
}

}  // namespace carve::agent::node
