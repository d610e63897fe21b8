// How programs reach the driver, covered: direct symbols (exported by this library, which
// LD_PRELOAD puts first), cuGetProcAddress / cuGetProcAddress_v2 (what the CUDA runtime uses),
// and dlsym on libcuda. Every path hands out the same wrappers; unhooked symbols pass through.
#include <dlfcn.h>

#include <cstring>
#include <string>

#include "interposer/shell/hooks.h"

namespace carve::interposer::shell {
namespace {

constexpr const char* kNvmlHooks[] = {"nvmlDeviceGetMemoryInfo", "nvmlDeviceGetMemoryInfo_v2"};
constexpr int kNvmlCount = 2;

// Our own exported wrappers, looked up in this library by name (so no declaration has to repeat
// each signature).
struct WrapperTable {
  void* cuda[kHookCount] = {};
  void* nvml[kNvmlCount] = {};
  WrapperTable() {
    void* self = dlopen(SelfPath(), RTLD_NOW | RTLD_NOLOAD);
    if (self == nullptr) return;
    for (int i = 0; i < kHookCount; ++i) cuda[i] = RealDlsym(self, HookName(i));
    for (int i = 0; i < kNvmlCount; ++i) nvml[i] = RealDlsym(self, kNvmlHooks[i]);
  }
};

const WrapperTable& Wrappers() {
  static const WrapperTable* table = new WrapperTable();
  return *table;
}

// The wrapper standing for what the driver returned for `symbol`: first by identity with a real
// entry point we hook (the driver already chose the version and stream variant), then by name.
void* Substitute(const char* symbol, void* real_pfn, int version, CuUint64 flags) {
  for (int i = 0; i < kHookCount; ++i) {
    if (RealFn(static_cast<Fn>(i)) == real_pfn) {
      return Wrappers().cuda[i] != nullptr ? Wrappers().cuda[i] : real_pfn;
    }
  }
  const std::string base(symbol);
  std::string tries[4];
  int n = 0;
  if (flags & kCuGetProcAddressPerThreadDefaultStream) {
    tries[n++] = base + "_v2_ptsz";
    tries[n++] = base + "_ptsz";
  }
  if (version >= 3020) tries[n++] = base + "_v2";
  tries[n++] = base;
  for (int t = 0; t < n; ++t) {
    for (int i = 0; i < kHookCount; ++i) {
      if (tries[t] == HookName(i) && RealFn(static_cast<Fn>(i)) != nullptr &&
          Wrappers().cuda[i] != nullptr) {
        return Wrappers().cuda[i];
      }
    }
  }
  return real_pfn;
}

bool CalledFromDriver(const void* caller) {
  Dl_info info{};
  return dladdr(caller, &info) != 0 && info.dli_fname != nullptr &&
         (std::strstr(info.dli_fname, "libcuda.so") != nullptr ||
          std::strstr(info.dli_fname, "libnvidia-ml.so") != nullptr);
}

}  // namespace

void* WrapperFor(const char* name) {
  if (name == nullptr) return nullptr;
  if (name[0] == 'c' && name[1] == 'u') {
    for (int i = 0; i < kHookCount; ++i) {
      if (std::strcmp(name, HookName(i)) == 0) return Wrappers().cuda[i];
    }
  } else if (std::strncmp(name, "nvml", 4) == 0) {
    for (int i = 0; i < kNvmlCount; ++i) {
      if (std::strcmp(name, kNvmlHooks[i]) == 0) return Wrappers().nvml[i];
    }
  }
  return nullptr;
}

}  // namespace carve::interposer::shell

using namespace carve;                      // NOLINT: C ABI shell
using namespace carve::interposer;         // NOLINT
using namespace carve::interposer::shell;  // NOLINT

CARVE_EXPORT CuResult cuGetProcAddress_v2(const char* symbol, void** pfn, int version,
                                          CuUint64 flags, int* status) {
  try {
    auto real = Real<PfnGetProcAddressV2>(Fn::k_cuGetProcAddress_v2);
    if (real == nullptr) return kCudaErrorNotInitialized;
    CuResult r = real(symbol, pfn, version, flags, status);
    if (r == kCudaSuccess && symbol != nullptr && pfn != nullptr && *pfn != nullptr) {
      *pfn = Substitute(symbol, *pfn, version, flags);
    }
    return r;
  } catch (...) {
    return kCudaErrorUnknown;
  }
}

CARVE_EXPORT CuResult cuGetProcAddress(const char* symbol, void** pfn, int version,
                                       CuUint64 flags) {
  try {
    auto real = Real<PfnGetProcAddressV1>(Fn::k_cuGetProcAddress);
    if (real == nullptr) return kCudaErrorNotInitialized;
    CuResult r = real(symbol, pfn, version, flags);
    if (r == kCudaSuccess && symbol != nullptr && pfn != nullptr && *pfn != nullptr) {
      *pfn = Substitute(symbol, *pfn, version, flags);
    }
    return r;
  } catch (...) {
    return kCudaErrorUnknown;
  }
}

// dlsym: a lookup that finds a hooked libcuda/NVML symbol gets the wrapper instead. A lookup
// made by the driver itself gets the real symbol. RTLD_NEXT is resolved relative to this
// library, which LD_PRELOAD places right after the program: the same answer for every symbol
// the program could mean, except that hooked ones come back wrapped.
CARVE_EXPORT void* dlsym(void* handle, const char* name) {
  void* real = RealDlsym(handle, name);
  if (real == nullptr) return real;
  void* wrapper = WrapperFor(name);
  if (wrapper == nullptr || CalledFromDriver(__builtin_return_address(0))) return real;
  return wrapper;
}
