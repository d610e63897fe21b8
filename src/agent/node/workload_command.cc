#include "agent/node/workload_command.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sys/stat.h>
#include <unistd.h>

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <variant>

#include "agent/launch/workload_spec.h"
#include "protocol/launch_inputs.h"

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

std::string ContainerName(const std::string& workload_id) {
  return "carve-" + WorkloadDirName(workload_id);
}

std::string ContainerRuntime(const std::string& search_path) {
  std::string runtime = FindOnPath("podman", search_path);
  return runtime.empty() ? FindOnPath("docker", search_path) : runtime;
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

namespace {

namespace fs = std::filesystem;

// The CUDA devices a binding gives its workload: MIG or GPU UUIDs.
std::vector<std::string> BoundDevices(const launch::DeviceBinding& binding) {
  if (const auto* m = std::get_if<launch::MigBinding>(&binding)) {
    return {m->mig_uuid.starts_with("MIG-") ? m->mig_uuid : "MIG-" + m->mig_uuid};
  }
  if (const auto* g = std::get_if<launch::GpuBinding>(&binding)) return g->gpu_uuids;
  if (const auto* s = std::get_if<launch::MgpuBinding>(&binding)) return {s->gpu_uuid};
  if (const auto* s = std::get_if<launch::MpsBinding>(&binding)) return {s->gpu_uuid};
  return {};
}

struct ContainerArgs {
  std::vector<std::string> args;
  std::string how;  // For the copy's log: how the device was passed.
};

Result<ContainerArgs> DeviceArgs(const std::string& runtime, const launch::DeviceBinding& binding,
                                 const CommandContext& ctx) {
  ContainerArgs out;
  const std::vector<std::string> devices = BoundDevices(binding);
  if (devices.empty()) {
    out.how = "no GPU";
    return out;
  }
  const std::vector<std::string> cdi = NvidiaCdiDevices(ctx.cdi_spec_dirs);
  const bool all_in_cdi = std::all_of(devices.begin(), devices.end(), [&](const std::string& d) {
    return std::find(cdi.begin(), cdi.end(), d) != cdi.end();
  });
  std::string list;
  for (const auto& d : devices) list += (list.empty() ? "" : ",") + d;
  if (all_in_cdi) {
    for (const auto& d : devices) {
      out.args.push_back("--device");
      out.args.push_back("nvidia.com/gpu=" + d);
    }
    out.how = "as CDI device(s) nvidia.com/gpu=" + list;
    return out;
  }
  if (fs::path(runtime).filename() == "podman") {
    return FailedPrecondition(fmt::format(
        "podman on node {} passes GPUs to containers through CDI only, and no CDI spec in [{}] "
        "names {}; generate one with `nvidia-ctk cdi generate --device-name-strategy=uuid "
        "--output=/etc/cdi/nvidia.yaml` (the NVIDIA Container Toolkit)",
        ctx.node_id, fmt::join(ctx.cdi_spec_dirs, ", "), list));
  }
  // docker's --gpus splits its value at commas unless the whole value is quoted.
  out.args.push_back("--gpus");
  out.args.push_back(devices.size() == 1 ? "device=" + list : "\"device=" + list + "\"");
  out.how = "with docker --gpus device=" + list + " (no CDI spec names it)";
  return out;
}

// -v arguments for the model data: a directory BuildLaunchRequest already resolved inside a
// model root, read-only at /opt/ml/model as SageMaker extracts it there. "" mounts nothing.
Result<std::vector<std::string>> ModelDataArgs(const std::string& url) {
  if (url.empty()) return std::vector<std::string>{};
  const std::string& path = url;
  if (!path.starts_with("/")) {
    return FailedPrecondition(fmt::format(
        "ModelDataUrl {} is not downloaded by carve; give the model data as a directory on every "
        "node (an absolute path or file:///path), which is mounted read-only at /opt/ml/model",
        url));
  }
  std::error_code ec;
  if (!fs::is_directory(path, ec)) {
    return FailedPrecondition(fmt::format(
        "ModelDataUrl {}: {} is not a directory on this node; carve mounts a directory (an "
        "extracted model.tar.gz) read-only at /opt/ml/model",
        url, path));
  }
  return std::vector<std::string>{"-v", path + ":/opt/ml/model:ro"};
}

// What an mGPU or MPS share needs inside the container besides its variables.
Result<std::vector<std::string>> ShareArgs(const protocol::WorkloadDesired& w,
                                           const launch::DeviceBinding& binding,
                                           const CommandContext& ctx) {
  std::vector<std::string> out;
  if (const auto* s = std::get_if<launch::MgpuBinding>(&binding)) {
    // The preload file makes the dynamic loader load the interposer into every process of the
    // container, even one whose entrypoint clears LD_PRELOAD.
    const fs::path dir = fs::path(ctx.data_dir) / "workloads" / WorkloadDirName(w.id);
    std::error_code ec;
    fs::create_directories(dir, ec);
    const fs::path preload = dir / "ld.so.preload";
    std::ofstream(preload) << s->interposer_path << "\n";
    if (!fs::exists(preload, ec)) {
      return Internal(fmt::format("cannot write {} for the container of {}", preload.string(),
                                  w.id));
    }
    const std::string ledger_dir = fs::path(s->ledger_path).parent_path().string();
    out = {"-v", s->interposer_path + ":" + s->interposer_path + ":ro",
           "-v", ledger_dir + ":" + ledger_dir,
           "-v", preload.string() + ":/etc/ld.so.preload:ro"};
  } else if (const auto* m = std::get_if<launch::MpsBinding>(&binding)) {
    out = {"--ipc=host", "-v", m->dirs.pipe_dir + ":" + m->dirs.pipe_dir};
  }
  return out;
}

// Writes `env` as NAME=VALUE lines to `path`, readable by the agent's user only (0600, the
// file replaced, never followed through a symlink): the values stay out of the client's argv
// and environment. InvalidArgument for a value the format cannot carry (NUL, line break).
Status WriteEnvFile(const std::string& path, const launch::EnvVars& env) {
  std::string text;
  for (const auto& [name, value] : env) {
    if (name.empty() || name.find_first_of(std::string_view("=\0\n\r", 4)) != std::string::npos ||
        value.find_first_of(std::string_view("\0\n\r", 3)) != std::string::npos) {
      return InvalidArgument(fmt::format(
          "environment variable {}: a name or value with '=', NUL or a line break cannot be "
          "passed to a container (one NAME=VALUE line each)",
          protocol::Preview(name)));
    }
    text += name + "=" + value + "\n";
  }
  ::unlink(path.c_str());
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return Internal(fmt::format("cannot create {}: {}", path, std::strerror(errno)));
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = errno;
      ::close(fd);
      return Internal(fmt::format("cannot write {}: {}", path, std::strerror(err)));
    }
    done += static_cast<size_t>(n);
  }
  if (::fchmod(fd, 0600) != 0 || ::close(fd) != 0) {
    return Internal(fmt::format("cannot finish {}: {}", path, std::strerror(errno)));
  }
  return OkStatus();
}

// The container's variables: the model's, then carve's (the binding's, the port), carve's
// winning over a model variable of the same name.
launch::EnvVars ContainerEnv(const protocol::WorkloadDesired& w, const launch::EnvVars& carve) {
  launch::EnvVars out;
  for (const auto& kv : w.environment) {
    const bool overridden = std::any_of(carve.begin(), carve.end(),
                                        [&](const auto& c) { return c.first == kv.first; });
    if (!overridden) out.push_back(kv);
  }
  out.insert(out.end(), carve.begin(), carve.end());
  return out;
}

}  // namespace

launch::EnvVars ContainerClientEnv() {
  launch::EnvVars env;
  const char* path = std::getenv("PATH");
  env.push_back({"PATH", path != nullptr ? path : "/usr/sbin:/usr/bin:/sbin:/bin"});
  for (std::string_view name : kContainerClientPassthrough) {
    if (const char* v = std::getenv(std::string(name).c_str()); v != nullptr) {
      env.push_back({std::string(name), v});
    }
  }
  return env;
}

std::vector<std::string> NvidiaCdiDevices(const std::vector<std::string>& dirs) {
  std::vector<std::string> names;
  for (const auto& dir : dirs) {
    std::error_code ec;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
      const std::string ext = it->path().extension().string();
      if (ext != ".yaml" && ext != ".yml" && ext != ".json") continue;
      try {
        const YAML::Node spec = YAML::LoadFile(it->path().string());
        if (spec["kind"].as<std::string>("") != "nvidia.com/gpu") continue;
        for (const auto& d : spec["devices"]) names.push_back(d["name"].as<std::string>(""));
      } catch (const YAML::Exception&) {
        continue;  // Not a spec carve can read: as if absent.
      }
    }
  }
  return names;
}

Result<launch::LaunchRequest> BuildLaunchRequest(const protocol::WorkloadDesired& w, int port,
                                                 const launch::DeviceBinding& binding,
                                                 const CommandContext& ctx) {
  launch::WorkloadSpec spec;
  spec.workload_id = w.id;
  spec.values = w.values;
  spec.values["port"] = std::to_string(port);
  spec.values.emplace("model_data", "");
  spec.values["carve"] = ctx.carve_binary;
  for (const auto& kv : w.environment) spec.environment.push_back(kv);
  spec.binding = binding;
  spec.data_dir = ctx.data_dir;
  // The server checked the path at CreateModel; a symlink swapped since must not lead out of
  // the model roots, so it is resolved again here and the resolved path is what is used.
  if (std::string& data = spec.values["model_data"]; protocol::IsLocalModelData(data)) {
    CARVE_ASSIGN_OR_RETURN(data, protocol::ResolveModelData(data, w.model_roots, true));
  }
  if (!w.command.empty() && w.image.empty()) {
    spec.command_template = w.command;
    return launch::MakeLaunchRequest(spec);
  }
  if (w.image.empty()) {
    return InvalidArgument(fmt::format("workload {} has neither a command nor an image", w.id));
  }
  // Checked at CreateModel too; here, so that nothing but a reference reaches the image slot.
  CARVE_RETURN_IF_ERROR(protocol::CheckImageReference(w.image));
  const std::string runtime = ContainerRuntime(ctx.search_path);
  if (runtime.empty()) {
    return FailedPrecondition(fmt::format(
        "image {} needs podman or docker on node {}; neither is installed", w.image, ctx.node_id));
  }
  CARVE_ASSIGN_OR_RETURN(launch::EnvVars binding_env, launch::BindingEnv(binding));
  CARVE_ASSIGN_OR_RETURN(ContainerArgs devices, DeviceArgs(runtime, binding, ctx));
  CARVE_ASSIGN_OR_RETURN(std::vector<std::string> model, ModelDataArgs(spec.values["model_data"]));
  CARVE_ASSIGN_OR_RETURN(std::vector<std::string> share, ShareArgs(w, binding, ctx));
  // Braces in values would be read as placeholders; the image reference and names have none.
  // A serving container publishes its 8080 on the copy's port. A command run in an image (a Ray
  // process) shares the node's network: it listens on the ports carve picked for it.
  const bool serving = w.command.empty();
  spec.command_template = {runtime, "run", "--rm", "--name", ContainerName(w.id)};
  if (serving) {
    spec.command_template.push_back("-p");
    spec.command_template.push_back(fmt::format("127.0.0.1:{}:8080", port));
  } else {
    spec.command_template.push_back("--network=host");
  }
  // No set-uid gains inside; carve passes no --privileged, --cap-add or host pid/user namespace.
  spec.command_template.push_back("--security-opt=no-new-privileges");
  auto append = [&](const std::vector<std::string>& args) {
    spec.command_template.insert(spec.command_template.end(), args.begin(), args.end());
  };
  append(devices.args);
  append(model);
  append(share);
  const fs::path dir = fs::path(ctx.data_dir) / "workloads" / WorkloadDirName(w.id);
  if (!w.files.empty()) {  // {file_NAME} paths name the agent's files at the same place inside.
    const std::string files = (dir / "files").string();
    append({"-v", files + ":" + files + ":ro"});
  }
  // The container's variables go through a 0600 env file: the client (podman runs as root)
  // neither sees them in its environment nor shows them in its argv.
  launch::EnvVars carve_env = binding_env;
  if (serving) carve_env.emplace_back("SAGEMAKER_BIND_TO_PORT", "8080");  // SageMaker's contract
  if (!serving) carve_env.emplace_back("CARVE_PORT", std::to_string(port));
  std::error_code dir_ec;
  fs::create_directories(dir, dir_ec);
  const std::string env_file = (dir / "container.env").string();
  CARVE_RETURN_IF_ERROR(WriteEnvFile(env_file, ContainerEnv(w, carve_env)));
  append({"--env-file", env_file});
  // Options end here: the image is the first operand, so no tenant value is read as an option.
  spec.command_template.push_back("--");
  spec.command_template.push_back(w.image);
  if (serving) {
    spec.command_template.push_back("serve");
  } else {
    spec.command_template.insert(spec.command_template.end(), w.command.begin(), w.command.end());
  }
  CARVE_ASSIGN_OR_RETURN(launch::LaunchRequest request, launch::MakeLaunchRequest(spec));
  request.env = ContainerClientEnv();  // Nothing of the model's reaches the client.
  // The copy's own log says how it got its GPU, the first thing to check when it sees none.
  std::error_code ec;
  fs::create_directories(fs::path(request.stdout_path).parent_path(), ec);
  std::ofstream(request.stdout_path, std::ios::app)
      << fmt::format("carve: {} runs {} with its GPU passed {}\n",
                     fs::path(runtime).filename().string(), w.image, devices.how);
  return request;
}

}  // namespace carve::agent::node
