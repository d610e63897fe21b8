// What to exec for one desired workload: its command template expanded ({port}, {model_data},
// {carve} and the workload's own values), or its OCI image run through podman or docker, with
// the device binding's environment, logs under the data dir.
#pragma once

#include <string>

#include "agent/launch/device_binding.h"
#include "agent/launch/launcher.h"
#include "protocol/agent_protocol.h"

namespace carve::agent::node {

struct CommandContext {
  std::string node_id;
  std::string data_dir;
  std::string carve_binary;  // absolute path of `carve`: the value of {carve}
  std::string search_path;   // PATH searched for podman/docker
};

// The absolute path of executable `name` in the ':'-separated `search_path`; "" when absent.
std::string FindOnPath(const std::string& name, const std::string& search_path);

// The LaunchRequest of `w` serving on `port` with `binding`.
//   command set: the template expanded with values + port + model_data ("" unless given) +
//     carve; CARVE_PORT is also set.
//   image only: `podman run --rm --name carve-<dir> -p 127.0.0.1:<port>:8080 -e NAME... <image>`
//     (docker when podman is absent); the container gets the Environment and binding variables
//     by name, and is expected to serve SageMaker's port 8080 inside.
// Errors: FailedPrecondition "image <ref> needs podman or docker on node <id>; neither is
// installed"; InvalidArgument when neither command nor image is set, or from ExpandCommand /
// BindingEnv / LogPathsFor (they name the field).
Result<launch::LaunchRequest> BuildLaunchRequest(const protocol::WorkloadDesired& w, int port,
                                                 const launch::DeviceBinding& binding,
                                                 const CommandContext& ctx);

// A file-name-safe, stable, collision-resistant directory name for a workload id:
// "acct_ic-a_0-1f2e3d4c" for "acct/ic-a/0" (unsafe characters become '_', plus an FNV-1a hash
// of the whole id).
std::string WorkloadDirName(const std::string& id);

}  // namespace carve::agent::node
