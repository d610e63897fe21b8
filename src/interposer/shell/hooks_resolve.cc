// How programs reach the driver, covered: direct symbols (exported by this library, which
// LD_PRELOAD puts first), cuGetProcAddress / cuGetProcAddress_v2 (what the CUDA runtime uses),
// and dlsym on libcuda. Every path hands out the same wrappers; unhooked symbols pass through.
#include <dlfcn.h>

#include <cstring>
#include <optional>
#include <string_view>

#include "interposer/shell/hooks.h"
#include "interposer/symbol_variant.h"

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
// entry point we hook (the driver already chose the version and stream variant), then, for a
// driver that hands out internal pointers, by the revision a caller of `version` means
// (symbol_variant.h): never a wrapper with another signature than the one the caller will use.
void* Substitute(const char* symbol, void* real_pfn, int version, CuUint64 flags) {
  for (int i = 0; i < kHookCount; ++i) {
    if (RealFn(static_cast<Fn>(i)) == real_pfn) {
      return Wrappers().cuda[i] != nullptr ? Wrappers().cuda[i] : real_pfn;
    }
  }
  std::optional<std::string_view> exported =
      SelectVariant(HookedSymbolVariants(), symbol, version,
                    (flags & kCuGetProcAddressPerThreadDefaultStream) != 0);
  if (!exported) return real_pfn;
  for (int i = 0; i < kHookCount; ++i) {
    if (*exported == HookName(i) && RealFn(static_cast<Fn>(i)) != nullptr &&
        Wrappers().cuda[i] != nullptr) {
      return Wrappers().cuda[i];
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

using namespace carve;                     // NOLINT: C ABI shell
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

// The decision half of our dlsym (shell/dlsym_entry.cc holds the entry point): the wrapper for a
// hooked libcuda/NVML name the lookup finds, or nullptr to let glibc's dlsym answer the caller
// directly. A lookup made by the driver itself gets the real symbol.
extern "C" __attribute__((visibility("hidden"))) void* CarveDlsymSubstitute(void* handle,
                                                                            const char* name,
                                                                            const void* caller) {
  (void)RealDlsym(nullptr, nullptr);  // resolves carve_real_dlsym before the entry jumps to it
  void* wrapper = WrapperFor(name);
  if (wrapper == nullptr || CalledFromDriver(caller)) return nullptr;
  if (RealDlsym(handle, name) == nullptr) return nullptr;  // not found there: glibc says so
  return wrapper;
}
