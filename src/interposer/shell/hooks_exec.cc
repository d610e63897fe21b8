// Exec hooks: a worker's child keeps its limits even when it is started with a cleared or
// rewritten environment. The child's environment gets LD_PRELOAD (this library) and
// CARVE_MGPU_LEDGER back when they are missing, so the interposer loads in the child and finds
// the same ledger. (The ledger descriptor is also inherited, for children that lose the variable
// another way; inside containers the agent also lists the library in /etc/ld.so.preload, which
// no environment can clear.) Only processes that are workers themselves inject anything.
//
// No heap allocation here: execve may run in a child forked from a multithreaded parent.
#include <dlfcn.h>
#include <spawn.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "interposer/shell/hooks.h"

extern char** environ;

namespace carve::interposer::shell {
namespace {

constexpr size_t kMaxEnv = 4096;
constexpr size_t kBuf = 8192;

// A copy of `envp` with the two variables ensured, living on the caller's stack.
class WorkerEnv {
 public:
  explicit WorkerEnv(char* const* envp) : original_(envp) {
    const char* self = SelfPath();
    const char* ledger = LedgerPathFromEnv();
    const bool worker = self[0] != '\0' && IsWorkerAtLoad();
    if (!worker) return;  // get() hands back the caller's envp untouched
    bool has_preload = false;
    bool has_ledger = false;
    size_t n = 0;
    for (char* const* e = envp; e != nullptr && *e != nullptr; ++e) {
      if (n + 3 >= kMaxEnv) return;  // too large to copy here: left as the caller gave it
      char* entry = *e;
      if (std::strncmp(entry, "LD_PRELOAD=", 11) == 0) {
        has_preload = true;
        if (std::strstr(entry + 11, self) == nullptr) {
          std::snprintf(preload_, kBuf, "LD_PRELOAD=%s:%s", self, entry + 11);
          entry = preload_;
        }
      } else if (std::strncmp(entry, "CARVE_MGPU_LEDGER=", 18) == 0) {
        has_ledger = true;
      }
      vars_[n++] = entry;
    }
    if (!has_preload) {
      std::snprintf(preload_, kBuf, "LD_PRELOAD=%s", self);
      vars_[n++] = preload_;
    }
    if (ledger != nullptr && !has_ledger) {
      std::snprintf(ledger_, kBuf, "CARVE_MGPU_LEDGER=%s", ledger);
      vars_[n++] = ledger_;
    }
    vars_[n] = nullptr;
    rewritten_ = true;
  }
  char* const* get() const { return rewritten_ ? vars_ : original_; }

 private:
  char* const* original_;
  bool rewritten_ = false;
  char* vars_[kMaxEnv];
  char preload_[kBuf];
  char ledger_[kBuf];
};

template <typename Fn>
Fn Next(const char* name) {
  return reinterpret_cast<Fn>(RealDlsym(RTLD_NEXT, name));
}

using ExecveFn = int (*)(const char*, char* const[], char* const[]);
using SpawnFn = int (*)(pid_t*, const char*, const posix_spawn_file_actions_t*,
                        const posix_spawnattr_t*, char* const[], char* const[]);

}  // namespace
}  // namespace carve::interposer::shell

using namespace carve::interposer::shell;  // NOLINT: C ABI shell

CARVE_EXPORT int execve(const char* path, char* const argv[], char* const envp[]) {
  static const auto real = Next<ExecveFn>("execve");
  WorkerEnv env(envp);
  return real(path, argv, env.get());
}

CARVE_EXPORT int execv(const char* path, char* const argv[]) {
  return execve(path, argv, environ);
}

CARVE_EXPORT int execvpe(const char* file, char* const argv[], char* const envp[]) {
  static const auto real = Next<ExecveFn>("execvpe");
  WorkerEnv env(envp);
  return real(file, argv, env.get());
}

CARVE_EXPORT int execvp(const char* file, char* const argv[]) {
  return execvpe(file, argv, environ);
}

CARVE_EXPORT int posix_spawn(pid_t* pid, const char* path,
                             const posix_spawn_file_actions_t* actions,
                             const posix_spawnattr_t* attr, char* const argv[],
                             char* const envp[]) {
  static const auto real = Next<SpawnFn>("posix_spawn");
  WorkerEnv env(envp);
  return real(pid, path, actions, attr, argv, env.get());
}

CARVE_EXPORT int posix_spawnp(pid_t* pid, const char* file,
                              const posix_spawn_file_actions_t* actions,
                              const posix_spawnattr_t* attr, char* const argv[],
                              char* const envp[]) {
  static const auto real = Next<SpawnFn>("posix_spawnp");
  WorkerEnv env(envp);
  return real(pid, file, actions, attr, argv, env.get());
}
