// A driver-API client for the interposer's CPU tests. It reaches the (fake) driver the ways real
// programs do (probe_api.h lists the modes) and checks what it sees:
//   mgpu_probe MODE ACTION [ARGS]
//   ACTION: exact LIMIT | paths | pitch WIDTH HEIGHT | vmm | graphmem | stream-device-pool |
//           hold BYTES | alloc BYTES | getinfo | totalmem | nvmlinfo |
//           launch SECONDS KIND | capture-elsewhere SECONDS KIND   (KIND: kernel|ex|coop|graph)
//           identity VERSION BASE EXPORT [ptsz] | rtld-next |
//           spawn VIA BYTES   (VIA: execve|execv|execvp|execvpe|posix_spawn|posix_spawnp) |
//           exec-preload-only BYTES
// Exit status 0 when every check passed (3: an allocation was refused); a failed check prints
// what it expected and got.
#include <dlfcn.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "interposer/testing/probe_api.h"

using namespace carve::interposer;         // NOLINT: test program over the C ABI
using namespace carve::interposer::probe;  // NOLINT

namespace {

constexpr int kOutOfMemoryExit = 3;

int WaitFor(pid_t pid) {
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) return 128;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

// Starts `self MODE alloc BYTES` through `via` with an empty environment: no LD_PRELOAD, no
// ledger variable. Only the interposer's exec hooks can give them back.
int Spawn(const char* self, const std::string& mode, const std::string& via, const char* bytes) {
  char* argv[] = {const_cast<char*>(self), const_cast<char*>(mode.c_str()),
                  const_cast<char*>("alloc"), const_cast<char*>(bytes), nullptr};
  char* empty[] = {nullptr};
  if (via == "posix_spawn" || via == "posix_spawnp") {
    pid_t pid = 0;
    const int r = via == "posix_spawn" ? posix_spawn(&pid, self, nullptr, nullptr, argv, empty)
                                       : posix_spawnp(&pid, self, nullptr, nullptr, argv, empty);
    if (r != 0) Fail("posix_spawn failed");
    return WaitFor(pid);
  }
  const pid_t pid = fork();
  if (pid == 0) {
    if (via == "execve") execve(self, argv, empty);
    if (via == "execvpe") execvpe(self, argv, empty);
    clearenv();  // execv and execvp pass environ
    if (via == "execv") execv(self, argv);
    if (via == "execvp") execvp(self, argv);
    _exit(127);
  }
  return WaitFor(pid);
}

// Execs itself through the hooked execve with this process's own environment; the child exits with
// the number of its environment entries named `var` (the hook adds LD_PRELOAD and the ledger only
// where they are missing: never a second one).
int ExecCountingVariable(const char* self, const std::string& mode, const char* var) {
  const pid_t pid = fork();
  if (pid == 0) {
    char* argv[] = {const_cast<char*>(self), const_cast<char*>(mode.c_str()),
                    const_cast<char*>("count-env"), const_cast<char*>(var), nullptr};
    execve(self, argv, environ);
    _exit(127);
  }
  return WaitFor(pid);
}

int CountVariable(const char* var) {
  const std::string prefix = std::string(var) + "=";
  int n = 0;
  for (char** e = environ; *e != nullptr; ++e)
    n += std::strncmp(*e, prefix.c_str(), prefix.size()) == 0;
  return n;
}

// As when /etc/ld.so.preload loads the library into a child started by `env -i`: the child gets
// LD_PRELOAD (standing in for ld.so.preload) and nothing else, through a raw execve that no
// hook sees. Only a ledger descriptor the library itself left open can make it a worker.
int ExecPreloadOnly(const char* self, const std::string& mode, const char* bytes) {
  const Api api = ApiFor(mode);
  CuDevicePtr p = 0;
  CHECK_EQ(api.mem_alloc(&p, 1), kCudaSuccess);  // the library is loaded and its runtime up
  CHECK_EQ(api.mem_free(p), kCudaSuccess);
  const char* preload = std::getenv("LD_PRELOAD");
  const char* libs = std::getenv("LD_LIBRARY_PATH");
  if (preload == nullptr || libs == nullptr) Fail("exec-preload-only needs LD_PRELOAD");
  const std::string env_preload = std::string("LD_PRELOAD=") + preload;
  const std::string env_libs = std::string("LD_LIBRARY_PATH=") + libs;
  const pid_t pid = fork();
  if (pid == 0) {
    char* argv[] = {const_cast<char*>(self), const_cast<char*>(mode.c_str()),
                    const_cast<char*>("alloc"), const_cast<char*>(bytes), nullptr};
    char* envp[] = {const_cast<char*>(env_preload.c_str()), const_cast<char*>(env_libs.c_str()),
                    nullptr};
    syscall(SYS_execve, self, argv, envp);
    _exit(127);
  }
  return WaitFor(pid);
}

// Whether cuGetProcAddress hands a caller of `version` the export named `want` (as the global
// scope resolves it: under LD_PRELOAD, the interposer's hook).
int Identity(int version, const char* base, const char* want, bool per_thread) {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW);
  if (lib == nullptr) Fail(dlerror());
  void* fn = nullptr;
  const CuUint64 flags = per_thread ? kCuGetProcAddressPerThreadDefaultStream : 0;
  CuResult r = kCudaErrorUnknown;
  if (version < 12000) {  // a CUDA 11 runtime has only the four-argument entry
    auto get = reinterpret_cast<PfnGetProcAddressV1>(dlsym(lib, "cuGetProcAddress"));
    r = get(base, &fn, version, flags);
  } else {
    auto get = reinterpret_cast<PfnGetProcAddressV2>(dlsym(lib, "cuGetProcAddress_v2"));
    int status = 0;
    r = get(base, &fn, version, flags, &status);
  }
  CHECK_EQ(r, kCudaSuccess);
  void* expected = dlsym(RTLD_DEFAULT, want);
  if (fn != expected) {
    Dl_info got{}, exp{};
    dladdr(fn, &got);
    dladdr(expected, &exp);
    std::printf("different: %s@%d got %s in %s, want %s in %s\n", base, version,
                got.dli_sname ? got.dli_sname : "?", got.dli_fname ? got.dli_fname : "?", want,
                exp.dli_fname ? exp.dli_fname : "?");
    return 1;
  }
  std::printf("same\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) Fail("usage: mgpu_probe MODE ACTION [ARGS]");
  const std::string mode = argv[1];
  const std::string action = argv[2];
  const std::vector<std::string> args(argv + 3, argv + argc);
  if (action == "spawn" && args.size() == 2) return Spawn(argv[0], mode, args[0], argv[4]);
  if (action == "exec-count-env" && args.size() == 1) {
    return ExecCountingVariable(argv[0], mode, argv[3]);
  }
  if (action == "count-env" && args.size() == 1) return CountVariable(argv[3]);
  if (action == "exec-preload-only" && args.size() == 1) {
    return ExecPreloadOnly(argv[0], mode, argv[3]);
  }
  if (action == "identity" && args.size() >= 3) {
    return Identity(std::stoi(args[0]), argv[4], argv[5], args.size() == 4 && args[3] == "ptsz");
  }
  if (action == "rtld-next") {
    auto resolve = reinterpret_cast<int (*)()>(dlsym(RTLD_DEFAULT, "carve_next_resolve"));
    if (resolve == nullptr) Fail("carve_next_resolve is not loaded");
    std::printf("next=%d\n", resolve());
    return 0;
  }
  if (action == "nvmlinfo") {  // both NVML memory queries, through dlopen + dlsym
    void* nvml = dlopen("libnvidia-ml.so.1", RTLD_NOW);
    if (nvml == nullptr) Fail(dlerror());
    auto v1 = reinterpret_cast<PfnNvmlDeviceGetMemoryInfo>(dlsym(nvml, "nvmlDeviceGetMemoryInfo"));
    auto v2 =
        reinterpret_cast<PfnNvmlDeviceGetMemoryInfoV2>(dlsym(nvml, "nvmlDeviceGetMemoryInfo_v2"));
    if (v1 == nullptr || v2 == nullptr) Fail("NVML memory queries not found");
    NvmlMemory m1{};
    NvmlMemoryV2 m2{};
    CHECK_EQ(v1(nullptr, &m1), kNvmlSuccess);
    CHECK_EQ(v2(nullptr, &m2), kNvmlSuccess);
    std::printf("v1 total=%llu free=%llu used=%llu v2 total=%llu free=%llu used=%llu\n", m1.total,
                m1.free, m1.used, m2.total, m2.free, m2.used);
    return 0;
  }
  const Api api = ApiFor(mode);
  if (action == "exact" && args.size() == 1) return Exact(api, std::stoull(args[0]));
  if (action == "paths") return Paths(api);
  if (action == "pitch" && args.size() == 2) {
    return Pitch(api, std::stoull(args[0]), std::stoull(args[1]));
  }
  if (action == "vmm") return Vmm(api);
  if (action == "graphmem") return GraphMemory(api);
  if (action == "stream-device-pool") return PoolOfTheStreamsDevice(api);
  if (action == "getinfo") {
    size_t free_bytes = 0, total = 0;
    CHECK_EQ(api.mem_get_info(&free_bytes, &total), kCudaSuccess);
    std::printf("free=%zu total=%zu\n", free_bytes, total);
    return 0;
  }
  if (action == "totalmem") {
    size_t total = 0;
    CHECK_EQ(api.device_total_mem(&total, 0), kCudaSuccess);
    std::printf("total=%zu\n", total);
    return 0;
  }
  if ((action == "alloc" || action == "hold") && args.size() == 1) {
    CuDevicePtr p = 0;
    CuResult r = api.mem_alloc(&p, std::stoull(args[0]));
    std::printf("alloc=%d\n", r);
    std::fflush(stdout);
    if (action == "hold" && r == kCudaSuccess) pause();
    return r == kCudaSuccess ? 0 : kOutOfMemoryExit;
  }
  if (action == "launch" && args.size() == 2) {
    return LaunchLoop(api, std::stod(args[0]), args[1]);
  }
  if (action == "capture-elsewhere" && args.size() == 2) {
    return CaptureElsewhere(api, std::stod(args[0]), args[1], mode.ends_with("-ptsz"));
  }
  Fail("unknown action or wrong arguments");
}
