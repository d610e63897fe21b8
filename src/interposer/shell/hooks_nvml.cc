// NVML memory queries, virtualized like cuMemGetInfo when NVML is used from a worker process
// (nvidia-smi inside the container, frameworks sizing caches through NVML).
#include <dlfcn.h>

#include <algorithm>

#include "interposer/shell/hooks.h"

namespace carve::interposer::shell {
namespace {

constexpr NvmlReturn kNvmlErrorLibraryNotFound = 12;

void* RealNvml(const char* name) {
  void* handle = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (handle == nullptr) handle = dlopen("libnvidia-ml.so.1", RTLD_NOW);
  return handle == nullptr ? nullptr : RealDlsym(handle, name);
}

// Rewrites total/free/used to the worker's share; `reserved` (v2) is the driver's and is kept.
template <typename Memory>
void Virtualize(Runtime& rt, Memory* m) {
  const uint64_t quota = std::min<uint64_t>(rt.account->LimitBytes(), m->total);
  const uint64_t used = std::min<uint64_t>(rt.account->LedgerUsedBytes(), quota);
  m->total = quota;
  m->used = used;
  m->free = std::min<uint64_t>(quota - used, m->free);
}

}  // namespace
}  // namespace carve::interposer::shell

using namespace carve;                      // NOLINT: C ABI shell
using namespace carve::interposer;         // NOLINT
using namespace carve::interposer::shell;  // NOLINT

CARVE_EXPORT NvmlReturn nvmlDeviceGetMemoryInfo(NvmlDevice device, NvmlMemory* memory) {
  try {
    static const auto real =
        reinterpret_cast<PfnNvmlDeviceGetMemoryInfo>(RealNvml("nvmlDeviceGetMemoryInfo"));
    if (real == nullptr) return kNvmlErrorLibraryNotFound;
    NvmlReturn r = real(device, memory);
    Runtime* rt = GetRuntime();
    if (r == kNvmlSuccess && rt != nullptr && rt->account != nullptr) Virtualize(*rt, memory);
    return r;
  } catch (...) {
    return kNvmlErrorLibraryNotFound;
  }
}

CARVE_EXPORT NvmlReturn nvmlDeviceGetMemoryInfo_v2(NvmlDevice device, NvmlMemoryV2* memory) {
  try {
    static const auto real =
        reinterpret_cast<PfnNvmlDeviceGetMemoryInfoV2>(RealNvml("nvmlDeviceGetMemoryInfo_v2"));
    if (real == nullptr) return kNvmlErrorLibraryNotFound;
    NvmlReturn r = real(device, memory);
    Runtime* rt = GetRuntime();
    if (r == kNvmlSuccess && rt != nullptr && rt->account != nullptr) Virtualize(*rt, memory);
    return r;
  } catch (...) {
    return kNvmlErrorLibraryNotFound;
  }
}
