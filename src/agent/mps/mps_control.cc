#include "agent/mps/mps_control.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <thread>
#include <vector>

namespace carve::agent::mps {
namespace {

Status MakeDirs(const std::string& path) {
  std::string partial;
  size_t pos = 0;
  while (pos != std::string::npos) {
    pos = path.find('/', pos + 1);
    partial = path.substr(0, pos);
    if (!partial.empty() && ::mkdir(partial.c_str(), 0755) != 0 && errno != EEXIST) {
      return Internal("cannot create " + partial + ": " + std::strerror(errno));
    }
  }
  return OkStatus();
}

}  // namespace

Status MpsControl::CheckBinary() const {
  if (::access(binary_.c_str(), X_OK) != 0) {
    return FailedPrecondition("MPS control binary " + binary_ +
                              " is missing or not executable; install the NVIDIA driver's MPS "
                              "tools or set the queue's enforcement to 'interposer'");
  }
  return OkStatus();
}

bool MpsControl::Running(const MpsDirs& dirs) const {
  std::ifstream pid_file(dirs.pipe_dir + "/nvidia-cuda-mps-control.pid");
  long pid = 0;
  return (pid_file >> pid) && pid > 0 && ::kill(static_cast<pid_t>(pid), 0) == 0;
}

Status MpsControl::Run(const MpsDirs& dirs, const std::string& gpu_uuid, const char* arg,
                       const std::string& stdin_text) {
  // Everything the child needs is built before fork: it only calls async-signal-safe functions.
  std::vector<std::string> env_strings;
  for (const auto& [k, v] : MpsDaemonEnv(dirs, gpu_uuid)) env_strings.push_back(k + "=" + v);
  if (const char* path = std::getenv("PATH")) env_strings.push_back(std::string("PATH=") + path);
  std::vector<char*> envp;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<char*> argv{binary_.data()};
  std::string arg_copy = arg != nullptr ? arg : "";
  if (arg != nullptr) argv.push_back(arg_copy.data());
  argv.push_back(nullptr);

  int in[2];
  if (::pipe2(in, O_CLOEXEC) != 0) return Internal(std::string("pipe: ") + std::strerror(errno));
  pid_t pid = ::fork();
  if (pid < 0) {
    ::close(in[0]);
    ::close(in[1]);
    return Internal(std::string("fork: ") + std::strerror(errno));
  }
  if (pid == 0) {
    ::signal(SIGPIPE, SIG_DFL);  // carve ignores it (cli/main.cc); the daemon gets the default
    ::dup2(in[0], STDIN_FILENO);
    ::execve(binary_.c_str(), argv.data(), envp.data());
    _exit(127);
  }
  ::close(in[0]);
  if (!stdin_text.empty()) (void)!::write(in[1], stdin_text.data(), stdin_text.size());
  ::close(in[1]);

  const auto deadline = std::chrono::steady_clock::now() + timeout_;
  int status = 0;
  while (true) {
    pid_t done = ::waitpid(pid, &status, WNOHANG);
    if (done == pid) break;
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      return Internal(binary_ + " " + arg_copy + " did not return within " +
                      std::to_string(timeout_.count()) + " ms");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return Internal(binary_ + " " + arg_copy + " failed with status " + std::to_string(status) +
                    "; see " + dirs.log_dir + "/control.log");
  }
  return OkStatus();
}

Status MpsControl::Start(const MpsDirs& dirs, const std::string& gpu_uuid) {
  CARVE_RETURN_IF_ERROR(CheckBinary());
  if (Running(dirs)) return OkStatus();
  CARVE_RETURN_IF_ERROR(MakeDirs(dirs.pipe_dir));
  CARVE_RETURN_IF_ERROR(MakeDirs(dirs.log_dir));
  return Run(dirs, gpu_uuid, "-d", "");
}

Status MpsControl::Stop(const MpsDirs& dirs, const std::string& gpu_uuid) {
  CARVE_RETURN_IF_ERROR(CheckBinary());
  if (!Running(dirs)) return OkStatus();
  return Run(dirs, gpu_uuid, nullptr, "quit\n");
}

}  // namespace carve::agent::mps
