#include "agent/launch/port_guard.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>

namespace carve::launch {
namespace {

constexpr size_t kKeptErrorBytes = 4096;
constexpr uint32_t kLastUid = 0xFFFFFFFE;

}  // namespace

Result<CommandOutcome> RunCommand(const std::vector<std::string>& args) {
  if (args.empty()) return InvalidArgument("RunCommand: no program");
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  int err[2];
  if (::pipe2(err, O_CLOEXEC) != 0) {
    return Internal(fmt::format("running {}: pipe: {}", args[0], std::strerror(errno)));
  }
  const pid_t pid = ::fork();
  if (pid < 0) {
    const int e = errno;
    ::close(err[0]);
    ::close(err[1]);
    return Internal(fmt::format("running {}: fork: {}", args[0], std::strerror(e)));
  }
  if (pid == 0) {
    ::signal(SIGPIPE, SIG_DFL);  // carve ignores it (cli/main.cc)
    const int null = ::open("/dev/null", O_RDWR);
    if (null >= 0) {
      ::dup2(null, 0);
      ::dup2(null, 1);
    }
    ::dup2(err[1], 2);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  ::close(err[1]);
  CommandOutcome out;
  char buf[512];
  for (;;) {
    const ssize_t n = ::read(err[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    const size_t room = kKeptErrorBytes - std::min(kKeptErrorBytes, out.error_output.size());
    out.error_output.append(buf, std::min(room, static_cast<size_t>(n)));
  }
  ::close(err[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) {
      return Internal(fmt::format("running {}: waitpid: {}", args[0], std::strerror(errno)));
    }
  }
  out.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  while (!out.error_output.empty() && out.error_output.back() == '\n') out.error_output.pop_back();
  return out;
}

std::string PortGuard::ChainFor(const std::string& data_dir) {
  uint32_t hash = 2166136261u;  // FNV-1a, 32 bits
  for (unsigned char c : data_dir) {
    hash ^= c;
    hash *= 16777619u;
  }
  return fmt::format("CARVE-{:08X}", hash);
}

Result<std::unique_ptr<PortGuard>> PortGuard::Create(std::string iptables, std::string chain,
                                                     uint32_t tenant_first, CommandRunner run) {
  if (chain.empty() || chain.size() > 28 ||
      chain.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-") != std::string::npos) {
    return InvalidArgument(
        fmt::format("iptables chain \"{}\" is not [A-Z0-9-]{{1,28}}", chain.substr(0, 32)));
  }
  std::unique_ptr<PortGuard> g(
      new PortGuard(std::move(iptables), std::move(chain), tenant_first, std::move(run)));
  // -N fails when the chain exists (an earlier run of this agent): then it is only emptied.
  if (Status made = g->Iptables({"-N", g->chain_}); !made) {
    CARVE_RETURN_IF_ERROR(g->Iptables({"-F", g->chain_}));
  }
  // Last in the chain, below every port's rules: no tenant id reaches a container's bridge
  // address directly (a published port's own account passes by its port's RETURN first).
  for (const auto& spec : g->BridgeRules()) {
    std::vector<std::string> args = {"-A", g->chain_};
    args.insert(args.end(), spec.begin(), spec.end());
    CARVE_RETURN_IF_ERROR(g->Iptables(args));
  }
  if (Status hooked = g->Iptables({"-C", "OUTPUT", "-j", g->chain_}); !hooked) {
    CARVE_RETURN_IF_ERROR(g->Iptables({"-A", "OUTPUT", "-j", g->chain_}));
  }
  return g;
}

std::vector<std::vector<std::string>> PortGuard::BridgeRules() const {
  std::vector<std::vector<std::string>> rules;
  for (const char* bridge : {"podman+", "cni-podman+", "docker+"}) {
    rules.push_back({"-o", bridge, "-m", "owner", "--uid-owner",
                     fmt::format("{}-{}", tenant_first_, kLastUid), "-j", "REJECT"});
  }
  return rules;
}

std::vector<std::vector<std::string>> PortGuard::RulesFor(int port, const PortOwner& owner) const {
  const std::vector<std::string> match = {
      "-p", "tcp",   "-m",         "conntrack", "--ctorigdstport", std::to_string(port),
      "-m", "owner", "--uid-owner"};
  auto rule = [&](std::string ids, std::vector<std::string> target) {
    std::vector<std::string> r = match;
    r.push_back(std::move(ids));
    r.insert(r.end(), target.begin(), target.end());
    return r;
  };
  std::vector<std::vector<std::string>> rules;
  rules.push_back(rule(std::to_string(owner.uid), {"-j", "RETURN"}));
  if (owner.containers.count > 0) {
    rules.push_back(rule(fmt::format("{}-{}", owner.containers.first,
                                     owner.containers.first + (owner.containers.count - 1)),
                         {"-j", "RETURN"}));
  }
  rules.push_back(rule(fmt::format("{}-{}", tenant_first_, kLastUid),
                       {"-j", "REJECT", "--reject-with", "tcp-reset"}));
  return rules;
}

Status PortGuard::Guard(int port, const PortOwner& owner) {
  Release(port);
  std::vector<std::vector<std::string>> added;
  // Each inserted at the top, last first: the port's rules in order, above the bridge rules.
  std::vector<std::vector<std::string>> specs = RulesFor(port, owner);
  for (auto it = specs.rbegin(); it != specs.rend(); ++it) {
    std::vector<std::string>& spec = *it;
    std::vector<std::string> args = {"-I", chain_, "1"};
    args.insert(args.end(), spec.begin(), spec.end());
    if (Status s = Iptables(args); !s) {
      rules_[port] = std::move(added);  // so that Release takes back what went in
      Release(port);
      return s;
    }
    added.push_back(std::move(spec));
  }
  rules_[port] = std::move(added);
  return OkStatus();
}

void PortGuard::Release(int port) {
  auto it = rules_.find(port);
  if (it == rules_.end()) return;
  for (const auto& spec : it->second) {
    std::vector<std::string> args = {"-D", chain_};
    args.insert(args.end(), spec.begin(), spec.end());
    if (Status s = Iptables(args); !s) {
      spdlog::warn("releasing port {}: {}", port, s.error().message);
    }
  }
  rules_.erase(it);
}

Status PortGuard::Iptables(std::vector<std::string> args) {
  args.insert(args.begin(), {iptables_, "-w", "5"});
  CARVE_ASSIGN_OR_RETURN(CommandOutcome out, run_(args));
  if (out.status != 0) {
    return FailedPrecondition(fmt::format("`{}` exited with status {}: {}", fmt::join(args, " "),
                                          out.status, out.error_output.substr(0, 300)));
  }
  return OkStatus();
}

}  // namespace carve::launch
