// What to run for one copy: a runtime's command template with placeholders ("{port}",
// "{model_data}", any "{name}" the caller defines), the user's Environment, the device binding,
// and where its logs go; MakeLaunchRequest turns it into a LaunchRequest.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "agent/launch/device_binding.h"
#include "agent/launch/launcher.h"

namespace carve::launch {

// Replaces each "{name}" (name of [a-z0-9_]) in every argument. InvalidArgument naming the
// placeholder and the known ones when a name has no value. Other braces (JSON) stay as they are.
Result<std::vector<std::string>> ExpandCommand(const std::vector<std::string>& command_template,
                                               const std::map<std::string, std::string>& values);

struct WorkloadSpec {
  std::string workload_id;  // WorkloadDesired.id: names the log directory (workload_logs.h)
  std::vector<std::string> command_template;    // e.g. {"carve", "testmodel", "--port", "{port}"}
  std::map<std::string, std::string> values;    // placeholders; "port" is filled in by the caller
  EnvVars environment;                          // CreateModel's Environment, passed through
  DeviceBinding binding;
  std::string data_dir;
  std::string work_dir;
};

// Argv from the template; env = PATH of the agent + Environment + binding (the binding wins over
// a user variable of the same name) + CARVE_PORT when "port" is given; logs per workload_logs.h.
// Errors: ExpandCommand's, BindingEnv's, LogPathsFor's.
Result<LaunchRequest> MakeLaunchRequest(const WorkloadSpec& spec);

}  // namespace carve::launch
