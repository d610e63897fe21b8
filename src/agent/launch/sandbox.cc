#include "agent/launch/sandbox.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

namespace carve::launch {
namespace {

std::string FindProgram(const std::string& name, const std::string& search_path) {
  for (size_t at = 0; at <= search_path.size();) {
    const size_t colon = std::min(search_path.find(':', at), search_path.size());
    if (colon > at) {
      const std::string candidate = search_path.substr(at, colon - at) + "/" + name;
      if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    }
    at = colon + 1;
  }
  return "";
}

// Runs argv with stdio on /dev/null; its exit status, or -1 when it could not run.
int RunQuietly(const std::vector<std::string>& args) {
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    ::signal(SIGPIPE, SIG_DFL);  // carve ignores it (cli/main.cc)
    const int null = ::open("/dev/null", O_RDWR);
    if (null >= 0) {
      ::dup2(null, 0);
      ::dup2(null, 1);
      ::dup2(null, 2);
    }
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  int status = 0;
  if (::waitpid(pid, &status, 0) != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace

Result<SandboxMode> ParseSandboxMode(const std::string& text) {
  if (text == "auto") return SandboxMode::kAuto;
  if (text == "required") return SandboxMode::kRequired;
  if (text == "off") return SandboxMode::kOff;
  return InvalidArgument(
      fmt::format("--sandbox {}: expected auto, required or off", text.substr(0, 32)));
}

std::string SandboxModeName(SandboxMode mode) {
  switch (mode) {
    case SandboxMode::kAuto:
      return "auto";
    case SandboxMode::kRequired:
      return "required";
    case SandboxMode::kOff:
      return "off";
  }
  return "auto";
}

std::vector<std::string> SandboxArgv(const SandboxSpec& spec, const SandboxTools& tools,
                                     const std::vector<std::string>& argv) {
  std::vector<std::string> out = {tools.bwrap};
  // Every directory on the way to a mount point, made 0755 explicitly: bwrap creates missing
  // parents 0700 (root's), which the workload's uid could not traverse.
  auto parents = [&](const std::string& path) {
    for (size_t slash = path.find('/', 1); slash != std::string::npos;
         slash = path.find('/', slash + 1)) {
      out.insert(out.end(), {"--perms", "0755", "--dir", path.substr(0, slash)});
    }
  };
  // bwrap applies mounts in order: the host read-only first, then what hides parts of it, then
  // what is bound back on top of those.
  out.insert(out.end(), {"--ro-bind", "/", "/", "--dev-bind", "/dev", "/dev"});
  if (spec.private_pids) out.insert(out.end(), {"--proc", "/proc"});
  out.insert(out.end(), {"--perms", "1777", "--tmpfs", "/tmp"});
  if (spec.private_ipc) out.insert(out.end(), {"--perms", "1777", "--tmpfs", "/dev/shm"});
  for (const auto& path : spec.visible) {
    parents(path);
    out.insert(out.end(), {"--ro-bind", path, path});
  }
  for (const auto& dir : spec.hidden) {
    parents(dir);
    out.insert(out.end(), {"--perms", "0755", "--tmpfs", dir});
  }
  for (const auto& path : spec.read_only) {
    parents(path);
    out.insert(out.end(), {"--ro-bind", path, path});
  }
  for (const auto& path : spec.writable) {
    parents(path);
    out.insert(out.end(), {"--bind", path, path});
  }
  if (spec.private_pids) out.push_back("--unshare-pid");
  out.push_back("--unshare-uts");
  if (spec.private_ipc) out.push_back("--unshare-ipc");
  out.push_back("--new-session");
  // Last, inside the sandbox: root becomes the account's uid for good. A uid change from 0
  // clears the permitted and effective capabilities; the bounding and inheritable sets are
  // emptied too and no_new_privs is set, so no set-uid program or file capability gives any back.
  const std::string uid = std::to_string(spec.uid);
  const std::string gid = std::to_string(spec.gid);
  out.insert(out.end(), {"--", tools.setpriv, "--reuid", uid, "--regid", gid, "--clear-groups",
                         "--no-new-privs", "--inh-caps=-all", "--bounding-set=-all", "--"});
  out.insert(out.end(), argv.begin(), argv.end());
  return out;
}

Result<SandboxTools> ProbeSandbox(const std::string& search_path, uint32_t trial_uid) {
  if (::geteuid() != 0) {
    return FailedPrecondition(fmt::format(
        "the agent runs as uid {}, not root, so it cannot switch a workload to another uid",
        ::geteuid()));
  }
  SandboxTools tools{FindProgram("setpriv", search_path), FindProgram("bwrap", search_path)};
  if (tools.bwrap.empty()) {
    return FailedPrecondition("bwrap (Debian package bubblewrap) is not installed on this node");
  }
  if (tools.setpriv.empty()) {
    return FailedPrecondition("setpriv (Debian package util-linux) is not on this node's PATH");
  }
  SandboxSpec trial;
  trial.uid = trial_uid;
  trial.gid = trial_uid;
  if (int rc = RunQuietly(SandboxArgv(trial, tools, {"/bin/true"})); rc != 0) {
    return FailedPrecondition(
        fmt::format("a trial sandbox ({} ... {} ... /bin/true as uid {}) exited with status {} (is "
                    "kernel.unprivileged_userns_clone 0?)",
                    tools.setpriv, tools.bwrap, trial_uid, rc));
  }
  return tools;
}

}  // namespace carve::launch
