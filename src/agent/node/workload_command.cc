#include "agent/node/workload_command.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cctype>
#include <cstdint>

#include "agent/launch/workload_spec.h"

namespace carve::agent::node {

std::string FindOnPath(const std::string& name, const std::string& search_path) {
  size_t begin = 0;
  while (begin <= search_path.size()) {
    size_t end = search_path.find(':', begin);
    if (end == std::string::npos) end = search_path.size();
    const std::string dir = search_path.substr(begin, end - begin);
    if (!dir.empty()) {
      const std::string candidate = dir + "/" + name;
      if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    }
    begin = end + 1;
  }
  return "";
}

std::string WorkloadDirName(const std::string& id) {
  uint32_t hash = 2166136261u;
  std::string safe;
  for (unsigned char c : id) {
    hash = (hash ^ c) * 16777619u;
    const bool plain = std::isalnum(c) != 0 || c == '.' || c == '-' || c == '_';
    safe.push_back(plain ? static_cast<char>(c) : '_');
  }
  if (safe.size() > 80) safe.resize(80);
  return fmt::format("{}-{:08x}", safe, hash);
}

Result<launch::LaunchRequest> BuildLaunchRequest(const protocol::WorkloadDesired& w, int port,
                                                 const launch::DeviceBinding& binding,
                                                 const CommandContext& ctx) {
  launch::WorkloadSpec spec;
  spec.component = w.name;
  spec.copy = w.index;
  spec.values = w.values;
  spec.values["port"] = std::to_string(port);
  spec.values.emplace("model_data", "");
  spec.values["carve"] = ctx.carve_binary;
  for (const auto& kv : w.environment) spec.environment.push_back(kv);
  spec.binding = binding;
  spec.data_dir = ctx.data_dir;
  if (!w.command.empty()) {
    spec.command_template = w.command;
    return launch::MakeLaunchRequest(spec);
  }
  if (w.image.empty()) {
    return InvalidArgument(fmt::format("workload {} has neither a command nor an image", w.id));
  }
  std::string runtime = FindOnPath("podman", ctx.search_path);
  if (runtime.empty()) runtime = FindOnPath("docker", ctx.search_path);
  if (runtime.empty()) {
    return FailedPrecondition(fmt::format(
        "image {} needs podman or docker on node {}; neither is installed", w.image, ctx.node_id));
  }
  CARVE_ASSIGN_OR_RETURN(launch::EnvVars binding_env, launch::BindingEnv(binding));
  // Braces in values would be read as placeholders; the image reference and names have none.
  spec.command_template = {runtime, "run", "--rm", "--name", "carve-" + WorkloadDirName(w.id),
                           "-p", fmt::format("127.0.0.1:{}:8080", port)};
  auto pass = [&](const std::string& name) {
    spec.command_template.push_back("-e");
    spec.command_template.push_back(name);
  };
  for (const auto& kv : w.environment) pass(kv.first);
  for (const auto& kv : binding_env) {
    if (!w.environment.contains(kv.first)) pass(kv.first);
  }
  spec.command_template.push_back(w.image);
  return launch::MakeLaunchRequest(spec);
}

}  // namespace carve::agent::node
