// What to exec for one desired workload: its command template expanded ({port}, {model_data},
// {carve} and the workload's own values), or its OCI image run through podman or docker, with
// the device binding's environment, logs under the data dir.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "agent/launch/device_binding.h"
#include "agent/launch/launcher.h"
#include "protocol/agent_protocol.h"

namespace carve::agent::node {

struct CommandContext {
  std::string node_id;
  std::string data_dir;
  std::string carve_binary;  // absolute path of `carve`: the value of {carve}
  std::string search_path;   // PATH searched for podman/docker
  // Where the NVIDIA Container Toolkit writes its CDI specs (`nvidia-ctk cdi generate`).
  std::vector<std::string> cdi_spec_dirs = {"/etc/cdi", "/var/run/cdi"};
};

// The device names of kind nvidia.com/gpu that the CDI specs (*.yaml, *.yml, *.json) in `dirs`
// declare ("MIG-<uuid>", "GPU-<uuid>", "0", "all", ...). Unreadable files are skipped.
std::vector<std::string> NvidiaCdiDevices(const std::vector<std::string>& dirs);

// The name a workload's container runs under (`podman|docker run --name`), unique per workload.
std::string ContainerName(const std::string& workload_id);

// The container runtime BuildLaunchRequest runs images with: podman, else docker, on
// `search_path`; "" when neither is there.
std::string ContainerRuntime(const std::string& search_path);

// What the podman/docker client process may inherit from the agent besides PATH: where it
// finds its own state and credentials. Operator settings, never a model's variables.
inline constexpr std::string_view kContainerClientPassthrough[] = {
    "HOME", "XDG_RUNTIME_DIR", "XDG_CONFIG_HOME", "CONTAINERS_CONF", "CONTAINERS_STORAGE_CONF",
    "REGISTRY_AUTH_FILE", "CONTAINER_HOST", "DOCKER_HOST", "DOCKER_CONFIG", "DOCKER_CERT_PATH",
    "DOCKER_TLS_VERIFY", "TMPDIR"};

// The complete, fixed environment of the container client: the agent's PATH plus those of
// kContainerClientPassthrough the agent has. A model's Environment is not in it.
launch::EnvVars ContainerClientEnv();

// The absolute path of executable `name` in the ':'-separated `search_path`; "" when absent.
std::string FindOnPath(const std::string& name, const std::string& search_path);

// The LaunchRequest of `w` serving on `port` with `binding`.
//   command set: the template expanded with values + port + model_data ("" unless given) +
//     carve; CARVE_PORT is also set.
//   image only, SageMaker's hosting contract: `podman run --rm --name carve-<dir>
//     -p 127.0.0.1:<port>:8080 --security-opt=no-new-privileges <devices> <mounts>
//     --env-file <dir>/container.env -- <image> serve` (docker when podman is absent): the
//     image (checked again with protocol::CheckImageReference) is the first operand after
//     `--`, and the client's own environment is ContainerClientEnv(). Devices: the binding's
//     MIG or GPU UUIDs as CDI names (`--device nvidia.com/gpu=MIG-<uuid>`) when the CDI specs
//     declare them (generated with `--device-name-strategy=uuid`), else docker's
//     `--gpus device=...`; podman has no other way.
//     Mounts: model data (ModelDataUrl as an absolute directory or file://, resolved again with
//     symlinks followed and refused outside w.model_roots) read-only at /opt/ml/model; for an
//     mGPU share the interposer library and its ledger's directory at the same paths and an
//     /etc/ld.so.preload naming the interposer (so an entrypoint that resets LD_PRELOAD is
//     still limited); for MPS the pipe directory and --ipc=host. The container gets the
//     Environment, the binding variables and SAGEMAKER_BIND_TO_PORT=8080 (carve's win over the
//     Environment's) through the env file, 0600, one NAME=VALUE line each. The copy's stdout
//     log starts with a line that says how the device was passed.
//   image and command (a Ray process in a container): the same run with `--network=host` instead
//     of -p, no SAGEMAKER_BIND_TO_PORT, CARVE_PORT in the env file, the workload's files
//     directory mounted at its own path, and the expanded command after the image instead of
//     `serve`.
// A file:// or absolute model_data is replaced by its resolved path, for a command too.
// Errors: InvalidArgument for an image that is not a reference, model data outside the model
// roots, or a variable an env file cannot carry; FailedPrecondition "image <ref> needs podman
// or docker on node <id>; neither is installed", podman without CDI names for the devices, or
// model data carve cannot mount (an s3:// or https:// URL, a path that is not a directory);
// InvalidArgument when neither command nor image is set, or from ExpandCommand / BindingEnv /
// LogPathsFor (they name the field).
Result<launch::LaunchRequest> BuildLaunchRequest(const protocol::WorkloadDesired& w, int port,
                                                 const launch::DeviceBinding& binding,
                                                 const CommandContext& ctx);

// A file-name-safe, stable, collision-resistant directory name for a workload id:
// "acct_ic-a_0-1f2e3d4c" for "acct/ic-a/0" (unsafe characters become '_', plus an FNV-1a hash
// of the whole id).
std::string WorkloadDirName(const std::string& id);

}  // namespace carve::agent::node
