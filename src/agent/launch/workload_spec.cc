#include "agent/launch/workload_spec.h"

#include <cstdlib>

#include "agent/launch/workload_logs.h"

namespace carve::launch {
namespace {

bool PlaceholderName(const std::string& s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
  }
  return true;
}

}  // namespace

Result<std::vector<std::string>> ExpandCommand(const std::vector<std::string>& command_template,
                                               const std::map<std::string, std::string>& values) {
  std::vector<std::string> out;
  for (const std::string& arg : command_template) {
    std::string expanded;
    size_t i = 0;
    while (i < arg.size()) {
      const size_t close = arg[i] == '{' ? arg.find('}', i) : std::string::npos;
      const std::string name =
          close == std::string::npos ? std::string() : arg.substr(i + 1, close - i - 1);
      if (!PlaceholderName(name)) {
        expanded += arg[i++];
        continue;
      }
      auto it = values.find(name);
      if (it == values.end()) {
        std::string known;
        for (const auto& [k, v] : values) known += (known.empty() ? "" : ", ") + ("{" + k + "}");
        return InvalidArgument("command template argument \"" + arg + "\" uses {" + name +
                               "}, which has no value; known placeholders: " +
                               (known.empty() ? "none" : known));
      }
      expanded += it->second;
      i = close + 1;
    }
    out.push_back(std::move(expanded));
  }
  if (out.empty()) return InvalidArgument("command template is empty");
  return out;
}

Result<LaunchRequest> MakeLaunchRequest(const WorkloadSpec& spec) {
  LaunchRequest r;
  CARVE_ASSIGN_OR_RETURN(r.argv, ExpandCommand(spec.command_template, spec.values));
  CARVE_ASSIGN_OR_RETURN(EnvVars binding, BindingEnv(spec.binding));
  CARVE_ASSIGN_OR_RETURN(LogPaths logs, LogPathsFor(spec.data_dir, spec.workload_id));
  const char* path = std::getenv("PATH");
  r.env.push_back({"PATH", path != nullptr ? path : "/usr/bin:/bin"});
  const bool sets_port = spec.values.contains("port");
  for (const auto& kv : spec.environment) {
    // carve's own variables win: PATH, the binding's, CARVE_PORT.
    bool overridden = kv.first == "PATH" || (sets_port && kv.first == "CARVE_PORT");
    for (const auto& b : binding) overridden = overridden || b.first == kv.first;
    if (!overridden) r.env.push_back(kv);
  }
  for (const auto& kv : binding) r.env.push_back(kv);
  if (auto it = spec.values.find("port"); it != spec.values.end()) {
    r.env.push_back({"CARVE_PORT", it->second});
  }
  r.work_dir = spec.work_dir;
  r.stdout_path = logs.stdout_path;
  r.stderr_path = logs.stderr_path;
  return r;
}

}  // namespace carve::launch
