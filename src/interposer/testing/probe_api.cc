#include "interposer/testing/probe_api.h"

#include <dlfcn.h>

#include <type_traits>

using namespace carve::interposer;         // NOLINT: the C ABI's types
using namespace carve::interposer::probe;  // NOLINT

// The linked exports of libcuda.so.1, declared with the probe's function types.
#define CARVE_DECLARE(field, type, base, plain, ptsz) extern "C" std::remove_pointer_t<type> plain;
CARVE_PROBE_API(CARVE_DECLARE)
#undef CARVE_DECLARE
extern "C" std::remove_pointer_t<PfnLaunchKernel> cuLaunchKernel_ptsz;
extern "C" std::remove_pointer_t<PfnLaunchKernelEx> cuLaunchKernelEx_ptsz;
extern "C" std::remove_pointer_t<PfnLaunchCooperativeKernel> cuLaunchCooperativeKernel_ptsz;
extern "C" std::remove_pointer_t<PfnGraphLaunch> cuGraphLaunch_ptsz;
extern "C" std::remove_pointer_t<PfnMemAllocAsync> cuMemAllocAsync_ptsz;
extern "C" std::remove_pointer_t<PfnMemAllocFromPoolAsync> cuMemAllocFromPoolAsync_ptsz;
extern "C" std::remove_pointer_t<PfnMemFreeAsync> cuMemFreeAsync_ptsz;
extern "C" std::remove_pointer_t<PfnStreamBeginCapture> cuStreamBeginCapture_v2_ptsz;
extern "C" std::remove_pointer_t<PfnStreamEndCapture> cuStreamEndCapture_ptsz;

namespace carve::interposer::probe {
namespace {

template <typename T>
void Load(T& slot, void* fn, const char* name) {
  if (fn == nullptr) {
    std::fprintf(stderr, "mgpu_probe: cannot resolve %s\n", name);
    std::exit(1);
  }
  slot = reinterpret_cast<T>(fn);
}

void LoadFakeExports(Api& a) {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW);
  if (lib == nullptr) Fail(dlerror());
  Load(a.fake_busy_ns, dlsym(lib, "carveFakeBusyNs"), "carveFakeBusyNs");
  Load(a.fake_allocated, dlsym(lib, "carveFakeAllocatedBytes"), "carveFakeAllocatedBytes");
  Load(a.fake_device_bytes, dlsym(lib, "carveFakeDeviceBytes"), "carveFakeDeviceBytes");
  Load(a.fake_host_bytes, dlsym(lib, "carveFakeHostBytes"), "carveFakeHostBytes");
  Load(a.fake_legacy_ops, dlsym(lib, "carveFakeLegacyStreamOps"), "carveFakeLegacyStreamOps");
  Load(a.fake_graph_reserved, dlsym(lib, "carveFakeGraphReservedBytes"),
       "carveFakeGraphReservedBytes");
}

}  // namespace

[[noreturn]] void Fail(const char* what) {
  std::fprintf(stderr, "mgpu_probe: %s\n", what);
  std::exit(1);
}

Api ApiFor(const std::string& mode) {
  Api a;
  if (mode == "direct" || mode == "direct-ptsz") {
    const bool ptsz = mode == "direct-ptsz";
#define CARVE_LINKED(field, type, base, plain, ptsz_name) a.field = ptsz ? &ptsz_name : &plain;
    CARVE_PROBE_API(CARVE_LINKED)
#undef CARVE_LINKED
  } else if (mode == "dlsym") {
    void* lib = dlopen("libcuda.so.1", RTLD_NOW);
    if (lib == nullptr) Fail(dlerror());
#define CARVE_DLSYM(field, type, base, plain, ptsz) Load(a.field, dlsym(lib, #plain), #plain);
    CARVE_PROBE_API(CARVE_DLSYM)
#undef CARVE_DLSYM
  } else if (mode == "procaddress" || mode == "procaddress-ptsz") {
    void* lib = dlopen("libcuda.so.1", RTLD_NOW);
    if (lib == nullptr) Fail(dlerror());
    auto get = reinterpret_cast<PfnGetProcAddressV2>(dlsym(lib, "cuGetProcAddress_v2"));
    if (get == nullptr) Fail("no cuGetProcAddress_v2");
    const CuUint64 flags = mode == "procaddress-ptsz" ? kCuGetProcAddressPerThreadDefaultStream : 0;
    auto resolve = [&](const char* base) -> void* {
      void* fn = nullptr;
      int status = 0;
      return get(base, &fn, 13000, flags, &status) == kCudaSuccess ? fn : nullptr;
    };
#define CARVE_PROC(field, type, base, plain, ptsz) Load(a.field, resolve(#base), #base);
    CARVE_PROBE_API(CARVE_PROC)
#undef CARVE_PROC
  } else {
    Fail(("unknown mode " + mode).c_str());
  }
  LoadFakeExports(a);
  return a;
}

uint64_t Used(const Api& api) {
  size_t free_bytes = 0, total = 0;
  CHECK_EQ(api.mem_get_info(&free_bytes, &total), kCudaSuccess);
  return total - free_bytes;
}

}  // namespace carve::interposer::probe
