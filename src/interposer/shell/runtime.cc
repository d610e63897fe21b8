// Symbol resolution and the per-process runtime of libcarve-mgpu.so.
#include <dlfcn.h>
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

#include "interposer/shell/hooks.h"

namespace carve::interposer::shell {
namespace {

using DlsymFn = void* (*)(void*, const char*);

DlsymFn ResolveRealDlsym() {
  // glibc 2.34 moved dlsym into libc (GLIBC_2.34); older programs bind GLIBC_2.2.5 (x86-64).
  for (const char* version : {"GLIBC_2.34", "GLIBC_2.2.5", "GLIBC_2.17"}) {
    if (void* f = dlvsym(RTLD_NEXT, "dlsym", version)) return reinterpret_cast<DlsymFn>(f);
  }
  return nullptr;
}

constexpr const char* kNames[] = {
#define CARVE_NAME(name) #name,
    CARVE_CUDA_HOOKS(CARVE_NAME) CARVE_CUDA_HELPERS(CARVE_NAME)
#undef CARVE_NAME
};
static_assert(sizeof(kNames) / sizeof(kNames[0]) == static_cast<size_t>(Fn::kCount));

struct RealTable {
  void* fns[static_cast<int>(Fn::kCount)] = {};
  RealTable() {
    // Ask libcuda itself: RTLD_NEXT would miss a driver the program dlopen'ed privately.
    void* handle = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (handle == nullptr) handle = dlopen("libcuda.so.1", RTLD_NOW);
    if (handle == nullptr) return;
    for (int i = 0; i < static_cast<int>(Fn::kCount); ++i) fns[i] = RealDlsym(handle, kNames[i]);
  }
};

// Captured at load time, before the program can clear its environment (see SelfPath()).
char g_self_path[4096];
char g_ledger_path[4096];
bool g_worker_at_load = false;

__attribute__((constructor)) void CaptureEnvironment() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&CaptureEnvironment), &info) != 0 && info.dli_fname) {
    std::snprintf(g_self_path, sizeof(g_self_path), "%s", info.dli_fname);
  }
  if (const char* p = std::getenv("CARVE_MGPU_LEDGER")) {
    std::snprintf(g_ledger_path, sizeof(g_ledger_path), "%s", p);
    // An inheritable descriptor: a child exec'd with a cleared environment still finds the
    // ledger among its open files (Ledger::FindInheritedFd). Deliberately without O_CLOEXEC.
    if (!Ledger::FindInheritedFd()) (void)::open(p, O_RDWR);
  }
  g_worker_at_load = g_ledger_path[0] != '\0' || Ledger::FindInheritedFd().has_value();
}

Runtime* CreateRuntime() noexcept {
  try {
    auto probe = std::make_shared<ProcfsProcessProbe>();
    auto rt = std::make_unique<Runtime>();
    Result<std::unique_ptr<Ledger>> ledger = NotFound("no ledger configured");
    if (g_ledger_path[0] != '\0') {
      ledger = Ledger::Open(g_ledger_path, probe);
      if (!ledger) {
        rt->broken = true;
        rt->broken_reason =
            "CARVE_MGPU_LEDGER=" + std::string(g_ledger_path) + ": " + ledger.error().message;
        std::fprintf(stderr, "carve-mgpu: %s; device allocations will fail\n",
                     rt->broken_reason.c_str());
        return rt.release();
      }
    } else if (auto fd = Ledger::FindInheritedFd()) {
      ledger = Ledger::OpenFd(*fd, probe);
    } else if (::access(kContainerLedgerPath, F_OK) == 0) {
      ledger = Ledger::Open(kContainerLedgerPath, probe);
    }
    if (!ledger) return nullptr;
    rt->ledger = std::move(ledger).value();
    (void)rt->ledger->KeepAcrossExec();
    rt->account = std::make_unique<MemoryAccount>(*rt->ledger);
    rt->limiter = std::make_unique<LaunchLimiter>(rt->ledger->bucket(), rt->ledger->settings(),
                                                  SystemClock::Get());
    rt->timer = std::make_unique<LaunchTimer>(*rt->limiter);
    return rt.release();
  } catch (...) {
    return nullptr;
  }
}

}  // namespace

void* RealDlsym(void* handle, const char* name) {
  // An atomic, not a function-local static: a sanitizer runtime calls dlsym while it initialises,
  // and TSan intercepts a static's guard (__cxa_guard_release) with code that needs it
  // initialised. Two threads that both resolve store the same pointer.
  static constinit std::atomic<DlsymFn> real{nullptr};
  DlsymFn f = real.load(std::memory_order_acquire);
  if (f == nullptr) {
    f = ResolveRealDlsym();
    __atomic_store_n(&carve_real_dlsym, reinterpret_cast<void*>(f), __ATOMIC_RELEASE);
    real.store(f, std::memory_order_release);
  }
  return f == nullptr || name == nullptr ? nullptr : f(handle, name);
}

void* RealFn(Fn fn) {
  static const RealTable* table = new RealTable();
  return table->fns[static_cast<int>(fn)];
}

const char* HookName(int i) { return kNames[i]; }

Runtime* GetRuntime() {
  static Runtime* const rt = CreateRuntime();
  return rt;
}

const char* SelfPath() { return g_self_path; }
const char* LedgerPathFromEnv() { return g_ledger_path[0] ? g_ledger_path : nullptr; }
bool IsWorkerAtLoad() { return g_worker_at_load; }

}  // namespace carve::interposer::shell
