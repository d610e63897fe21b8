// A driver-API client for the interposer's CPU tests. It reaches the (fake) driver one of three
// ways, as real programs do, and checks what it sees:
//   mgpu_probe MODE ACTION [ARGS]
//   MODE: direct (linked symbols) | dlsym (dlopen + dlsym) | procaddress (cuGetProcAddress_v2,
//         base names) | procaddress-ptsz (same, per-thread default stream variants)
//   ACTION: exact LIMIT | paths | hold BYTES | alloc BYTES | getinfo | nvmlinfo |
//           launch SECONDS KIND (kernel|ex|coop|graph) | spawn-cleared BYTES
// Exit status 0 when every check passed; a failed check prints what it expected and got.
#include <dlfcn.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "interposer/cuda_abi.h"

using namespace carve::interposer;  // NOLINT: test program over the C ABI

extern "C" {
CuResult cuMemGetInfo_v2(size_t*, size_t*);
CuResult cuMemAlloc_v2(CuDevicePtr*, size_t);
CuResult cuMemAllocPitch_v2(CuDevicePtr*, size_t*, size_t, size_t, unsigned int);
CuResult cuMemAllocManaged(CuDevicePtr*, size_t, unsigned int);
CuResult cuMemAllocAsync(CuDevicePtr*, size_t, CuStream);
CuResult cuMemAllocFromPoolAsync(CuDevicePtr*, size_t, CuMemoryPool, CuStream);
CuResult cuMemFree_v2(CuDevicePtr);
CuResult cuMemFreeAsync(CuDevicePtr, CuStream);
CuResult cuMemPoolTrimTo(CuMemoryPool, size_t);
CuResult cuDeviceGetMemPool(CuMemoryPool*, CuDevice);
CuResult cuMemCreate(CuMemGenericAllocationHandle*, size_t, const CuMemAllocationProp*,
                     unsigned long long);
CuResult cuMemRelease(CuMemGenericAllocationHandle);
CuResult cuArrayCreate_v2(CuArray*, const CuArrayDescriptor*);
CuResult cuArray3DCreate_v2(CuArray*, const CuArray3DDescriptor*);
CuResult cuArrayDestroy(CuArray);
CuResult cuMipmappedArrayCreate(CuMipmappedArray*, const CuArray3DDescriptor*, unsigned int);
CuResult cuMipmappedArrayDestroy(CuMipmappedArray);
CuResult cuLaunchKernel(CuFunction, unsigned int, unsigned int, unsigned int, unsigned int,
                        unsigned int, unsigned int, unsigned int, CuStream, void**, void**);
CuResult cuLaunchKernelEx(const CuLaunchConfig*, CuFunction, void**, void**);
CuResult cuLaunchCooperativeKernel(CuFunction, unsigned int, unsigned int, unsigned int,
                                   unsigned int, unsigned int, unsigned int, unsigned int,
                                   CuStream, void**);
CuResult cuGraphLaunch(CuGraphExec, CuStream);
CuResult cuStreamBeginCapture_v2(CuStream, int);
CuResult cuStreamEndCapture(CuStream, CuGraph*);
CuResult cuGraphInstantiateWithFlags(CuGraphExec*, CuGraph, unsigned long long);
CuResult cuCtxSynchronize();
int64_t carveFakeBusyNs();
uint64_t carveFakeAllocatedBytes();
}

namespace {

struct Api {
  PfnMemGetInfo mem_get_info;
  PfnMemAlloc mem_alloc;
  PfnMemAllocPitch mem_alloc_pitch;
  PfnMemAllocManaged mem_alloc_managed;
  PfnMemAllocAsync mem_alloc_async;
  PfnMemAllocFromPoolAsync mem_alloc_from_pool_async;
  PfnMemFree mem_free;
  PfnMemFreeAsync mem_free_async;
  PfnMemPoolTrimTo mem_pool_trim_to;
  PfnDeviceGetMemPool device_get_mem_pool;
  PfnMemCreate mem_create;
  PfnMemRelease mem_release;
  PfnArrayCreate array_create;
  PfnArray3DCreate array3d_create;
  PfnArrayDestroy array_destroy;
  PfnMipmappedArrayCreate mipmapped_array_create;
  PfnMipmappedArrayDestroy mipmapped_array_destroy;
  PfnLaunchKernel launch_kernel;
  PfnLaunchKernelEx launch_kernel_ex;
  PfnLaunchCooperativeKernel launch_cooperative_kernel;
  PfnGraphLaunch graph_launch;
  CuResult (*begin_capture)(CuStream, int);
  CuResult (*end_capture)(CuStream, CuGraph*);
  CuResult (*instantiate)(CuGraphExec*, CuGraph, unsigned long long);
  CuResult (*ctx_synchronize)();
  int64_t (*fake_busy_ns)();
  uint64_t (*fake_allocated)();
};

[[noreturn]] void Fail(const char* what) {
  std::fprintf(stderr, "mgpu_probe: %s\n", what);
  std::exit(1);
}

#define CHECK_EQ(got, want)                                                                    \
  do {                                                                                         \
    auto g_ = (got);                                                                           \
    auto w_ = (want);                                                                          \
    if (g_ != w_) {                                                                            \
      std::fprintf(stderr, "mgpu_probe: line %d: %s = %lld, want %lld\n", __LINE__, #got,      \
                   static_cast<long long>(g_), static_cast<long long>(w_));                    \
      std::exit(1);                                                                            \
    }                                                                                          \
  } while (0)

Api Direct() {
  return Api{&cuMemGetInfo_v2, &cuMemAlloc_v2, &cuMemAllocPitch_v2, &cuMemAllocManaged,
             &cuMemAllocAsync, &cuMemAllocFromPoolAsync, &cuMemFree_v2, &cuMemFreeAsync,
             &cuMemPoolTrimTo, &cuDeviceGetMemPool, &cuMemCreate, &cuMemRelease,
             &cuArrayCreate_v2, &cuArray3DCreate_v2, &cuArrayDestroy, &cuMipmappedArrayCreate,
             &cuMipmappedArrayDestroy, &cuLaunchKernel, &cuLaunchKernelEx,
             &cuLaunchCooperativeKernel, &cuGraphLaunch, &cuStreamBeginCapture_v2,
             &cuStreamEndCapture, &cuGraphInstantiateWithFlags, &cuCtxSynchronize,
             &carveFakeBusyNs, &carveFakeAllocatedBytes};
}

template <typename T>
void Load(T& slot, void* fn, const char* name) {
  if (fn == nullptr) {
    std::fprintf(stderr, "mgpu_probe: cannot resolve %s\n", name);
    std::exit(1);
  }
  slot = reinterpret_cast<T>(fn);
}

// `resolve(base, exact)` returns the entry point for a driver symbol.
template <typename Resolve>
Api Resolved(void* lib, Resolve resolve) {
  Api a{};
#define LOAD(field, base, exact) Load(a.field, resolve(base, exact), exact)
  LOAD(mem_get_info, "cuMemGetInfo", "cuMemGetInfo_v2");
  LOAD(mem_alloc, "cuMemAlloc", "cuMemAlloc_v2");
  LOAD(mem_alloc_pitch, "cuMemAllocPitch", "cuMemAllocPitch_v2");
  LOAD(mem_alloc_managed, "cuMemAllocManaged", "cuMemAllocManaged");
  LOAD(mem_alloc_async, "cuMemAllocAsync", "cuMemAllocAsync");
  LOAD(mem_alloc_from_pool_async, "cuMemAllocFromPoolAsync", "cuMemAllocFromPoolAsync");
  LOAD(mem_free, "cuMemFree", "cuMemFree_v2");
  LOAD(mem_free_async, "cuMemFreeAsync", "cuMemFreeAsync");
  LOAD(mem_pool_trim_to, "cuMemPoolTrimTo", "cuMemPoolTrimTo");
  LOAD(device_get_mem_pool, "cuDeviceGetMemPool", "cuDeviceGetMemPool");
  LOAD(mem_create, "cuMemCreate", "cuMemCreate");
  LOAD(mem_release, "cuMemRelease", "cuMemRelease");
  LOAD(array_create, "cuArrayCreate", "cuArrayCreate_v2");
  LOAD(array3d_create, "cuArray3DCreate", "cuArray3DCreate_v2");
  LOAD(array_destroy, "cuArrayDestroy", "cuArrayDestroy");
  LOAD(mipmapped_array_create, "cuMipmappedArrayCreate", "cuMipmappedArrayCreate");
  LOAD(mipmapped_array_destroy, "cuMipmappedArrayDestroy", "cuMipmappedArrayDestroy");
  LOAD(launch_kernel, "cuLaunchKernel", "cuLaunchKernel");
  LOAD(launch_kernel_ex, "cuLaunchKernelEx", "cuLaunchKernelEx");
  LOAD(launch_cooperative_kernel, "cuLaunchCooperativeKernel", "cuLaunchCooperativeKernel");
  LOAD(graph_launch, "cuGraphLaunch", "cuGraphLaunch");
  LOAD(begin_capture, "cuStreamBeginCapture", "cuStreamBeginCapture_v2");
  LOAD(end_capture, "cuStreamEndCapture", "cuStreamEndCapture");
  LOAD(instantiate, "cuGraphInstantiate", "cuGraphInstantiateWithFlags");
  LOAD(ctx_synchronize, "cuCtxSynchronize", "cuCtxSynchronize");
#undef LOAD
  Load(a.fake_busy_ns, dlsym(lib, "carveFakeBusyNs"), "carveFakeBusyNs");
  Load(a.fake_allocated, dlsym(lib, "carveFakeAllocatedBytes"), "carveFakeAllocatedBytes");
  return a;
}

Api ApiFor(const std::string& mode) {
  if (mode == "direct") return Direct();
  void* lib = dlopen("libcuda.so.1", RTLD_NOW);
  if (lib == nullptr) Fail(dlerror());
  if (mode == "dlsym") {
    return Resolved(lib, [lib](const char*, const char* exact) { return dlsym(lib, exact); });
  }
  auto get = reinterpret_cast<PfnGetProcAddressV2>(dlsym(lib, "cuGetProcAddress_v2"));
  if (get == nullptr) Fail("no cuGetProcAddress_v2");
  const CuUint64 flags = mode == "procaddress-ptsz" ? kCuGetProcAddressPerThreadDefaultStream : 0;
  return Resolved(lib, [get, flags](const char* base, const char*) -> void* {
    void* fn = nullptr;
    int status = 0;
    return get(base, &fn, 13000, flags, &status) == kCudaSuccess ? fn : nullptr;
  });
}

uint64_t Used(const Api& api) {
  size_t free_bytes = 0, total = 0;
  CHECK_EQ(api.mem_get_info(&free_bytes, &total), kCudaSuccess);
  return total - free_bytes;
}

int Exact(const Api& api, uint64_t limit) {
  CuDevicePtr a = 0, b = 0, c = 0;
  CHECK_EQ(api.mem_alloc(&a, limit - 1), kCudaSuccess);
  CHECK_EQ(api.mem_alloc(&b, 1), kCudaSuccess);  // the last byte fits
  const uint64_t device_before = api.fake_allocated();
  CHECK_EQ(api.mem_alloc(&c, 1), kCudaErrorOutOfMemory);  // one more does not
  CHECK_EQ(api.fake_allocated(), device_before);          // and nothing reached the driver
  CHECK_EQ(api.mem_free(b), kCudaSuccess);
  CHECK_EQ(api.mem_alloc(&c, 1), kCudaSuccess);
  CHECK_EQ(api.mem_free(a), kCudaSuccess);
  CHECK_EQ(api.mem_free(c), kCudaSuccess);
  CHECK_EQ(Used(api), 0u);
  std::printf("exact ok\n");
  return 0;
}

// Each allocation path charges exactly its size and each free path returns it.
int Paths(const Api& api) {
  size_t free_bytes = 0, limit = 0;
  CHECK_EQ(api.mem_get_info(&free_bytes, &limit), kCudaSuccess);
  CHECK_EQ(Used(api), 0u);
  CuDevicePtr p = 0;
  CHECK_EQ(api.mem_alloc(&p, 1000), kCudaSuccess);
  CHECK_EQ(Used(api), 1000u);
  CHECK_EQ(api.mem_free(p), kCudaSuccess);
  CHECK_EQ(Used(api), 0u);

  size_t pitch = 0;
  CHECK_EQ(api.mem_alloc_pitch(&p, &pitch, 100, 10, 4), kCudaSuccess);
  CHECK_EQ(Used(api), pitch * 10);  // the driver's pitch, not the requested width
  CHECK_EQ(api.mem_free(p), kCudaSuccess);
  CHECK_EQ(Used(api), 0u);

  CHECK_EQ(api.mem_alloc_managed(&p, 3000, 1), kCudaSuccess);
  CHECK_EQ(Used(api), 3000u);
  CHECK_EQ(api.mem_free(p), kCudaSuccess);
  CHECK_EQ(Used(api), 0u);

  CuMemGenericAllocationHandle h = 0;
  CHECK_EQ(api.mem_create(&h, 2 << 20, nullptr, 0), kCudaSuccess);
  CHECK_EQ(Used(api), 2u << 20);
  CHECK_EQ(api.mem_release(h), kCudaSuccess);
  CHECK_EQ(Used(api), 0u);

  CuArray arr = nullptr;
  CuArrayDescriptor d2{64, 32, kCuAdFormatFloat, 2};
  CHECK_EQ(api.array_create(&arr, &d2), kCudaSuccess);
  CHECK_EQ(Used(api), 64u * 32 * 2 * 4);
  CHECK_EQ(api.array_destroy(arr), kCudaSuccess);
  CuArray3DDescriptor d3{16, 16, 4, kCuAdFormatUnsignedInt8, 4, 0};
  CHECK_EQ(api.array3d_create(&arr, &d3), kCudaSuccess);
  CHECK_EQ(Used(api), 16u * 16 * 4 * 4);
  CHECK_EQ(api.array_destroy(arr), kCudaSuccess);
  CuMipmappedArray mip = nullptr;
  CuArray3DDescriptor dm{8, 8, 0, kCuAdFormatFloat, 1, 0};
  CHECK_EQ(api.mipmapped_array_create(&mip, &dm, 2), kCudaSuccess);
  CHECK_EQ(Used(api), 8u * 8 * 4 + 4u * 4 * 4);
  CHECK_EQ(api.mipmapped_array_destroy(mip), kCudaSuccess);
  CHECK_EQ(Used(api), 0u);

  // Stream-ordered: freed bytes stay charged while the pool holds them; a trim releases them.
  CuMemoryPool pool = nullptr;
  CHECK_EQ(api.device_get_mem_pool(&pool, 0), kCudaSuccess);
  CHECK_EQ(api.mem_alloc_async(&p, 5000, nullptr), kCudaSuccess);
  CHECK_EQ(Used(api), 5000u);
  CHECK_EQ(api.mem_free_async(p, nullptr), kCudaSuccess);
  CHECK_EQ(Used(api), 5000u);
  CHECK_EQ(api.mem_alloc_from_pool_async(&p, 4000, pool, nullptr), kCudaSuccess);
  CHECK_EQ(Used(api), 5000u);  // reused from the pool's cache
  CHECK_EQ(api.mem_free_async(p, nullptr), kCudaSuccess);
  CHECK_EQ(api.mem_pool_trim_to(pool, 0), kCudaSuccess);
  CHECK_EQ(Used(api), 0u);

  // Under quota pressure the interposer trims cached pool memory itself.
  CHECK_EQ(api.mem_alloc_async(&p, limit, nullptr), kCudaSuccess);
  CHECK_EQ(api.mem_free_async(p, nullptr), kCudaSuccess);
  CHECK_EQ(Used(api), limit);
  CHECK_EQ(api.mem_alloc(&p, limit), kCudaSuccess);
  CHECK_EQ(api.fake_allocated(), limit);  // the device holds the quota once, not twice
  CHECK_EQ(api.mem_free(p), kCudaSuccess);

  // Over the quota, every path says out of memory before the driver allocates anything.
  const uint64_t device_before = api.fake_allocated();
  CHECK_EQ(api.mem_alloc(&p, limit + 1), kCudaErrorOutOfMemory);
  CHECK_EQ(api.mem_alloc_pitch(&p, &pitch, limit, 2, 4), kCudaErrorOutOfMemory);
  CHECK_EQ(api.mem_alloc_managed(&p, limit + 1, 1), kCudaErrorOutOfMemory);
  CHECK_EQ(api.mem_alloc_async(&p, limit + 1, nullptr), kCudaErrorOutOfMemory);
  CHECK_EQ(api.mem_alloc_from_pool_async(&p, limit + 1, pool, nullptr), kCudaErrorOutOfMemory);
  CHECK_EQ(api.mem_create(&h, limit + 1, nullptr, 0), kCudaErrorOutOfMemory);
  CuArrayDescriptor big{limit, 1, kCuAdFormatUnsignedInt8, 2};
  CHECK_EQ(api.array_create(&arr, &big), kCudaErrorOutOfMemory);
  CuArray3DDescriptor big3{limit, 1, 1, kCuAdFormatUnsignedInt8, 2, 0};
  CHECK_EQ(api.array3d_create(&arr, &big3), kCudaErrorOutOfMemory);
  CHECK_EQ(api.mipmapped_array_create(&mip, &big3, 1), kCudaErrorOutOfMemory);
  CHECK_EQ(api.fake_allocated(), device_before);
  CHECK_EQ(Used(api), 0u);
  std::printf("paths ok\n");
  return 0;
}

double Seconds(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

int LaunchLoop(const Api& api, double seconds, const std::string& kind) {
  CuGraphExec exec = nullptr;
  if (kind == "graph") {
    CuStream s = reinterpret_cast<CuStream>(0x5);
    CHECK_EQ(api.begin_capture(s, 0), kCudaSuccess);
    for (int i = 0; i < 4; ++i) {
      CHECK_EQ(api.launch_kernel(nullptr, 1, 1, 1, 1, 1, 1, 0, s, nullptr, nullptr), kCudaSuccess);
    }
    CuGraph g = nullptr;
    CHECK_EQ(api.end_capture(s, &g), kCudaSuccess);
    CHECK_EQ(api.instantiate(&exec, g, 0), kCudaSuccess);
    CHECK_EQ(api.fake_busy_ns(), 0);  // capturing ran nothing
  }
  const auto start = std::chrono::steady_clock::now();
  const int64_t busy_start = api.fake_busy_ns();
  long launches = 0;
  CuLaunchConfig cfg{1, 1, 1, 1, 1, 1, 0, nullptr, nullptr, 0};
  while (Seconds(std::chrono::steady_clock::now() - start) < seconds) {
    CuResult r = kCudaSuccess;
    if (kind == "kernel") {
      r = api.launch_kernel(nullptr, 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr, nullptr);
    } else if (kind == "ex") {
      r = api.launch_kernel_ex(&cfg, nullptr, nullptr, nullptr);
    } else if (kind == "coop") {
      r = api.launch_cooperative_kernel(nullptr, 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr);
    } else {
      r = api.graph_launch(exec, nullptr);
    }
    CHECK_EQ(r, kCudaSuccess);
    ++launches;
  }
  CHECK_EQ(api.ctx_synchronize(), kCudaSuccess);
  const double wall = Seconds(std::chrono::steady_clock::now() - start);
  const double busy = static_cast<double>(api.fake_busy_ns() - busy_start) / 1e9;
  std::printf("busy_fraction=%.4f launches=%ld wall_s=%.3f\n", busy / wall, launches, wall);
  return 0;
}

int SpawnCleared(const char* self, const std::string& mode, const char* bytes) {
  pid_t pid = fork();
  if (pid == 0) {
    char* argv[] = {const_cast<char*>(self), const_cast<char*>(mode.c_str()),
                    const_cast<char*>("alloc"), const_cast<char*>(bytes), nullptr};
    char* envp[] = {nullptr};  // a cleared environment: no LD_PRELOAD, no ledger variable
    execve(self, argv, envp);
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) Fail("usage: mgpu_probe MODE ACTION [ARGS]");
  const std::string mode = argv[1];
  const std::string action = argv[2];
  if (action == "spawn-cleared" && argc == 4) return SpawnCleared(argv[0], mode, argv[3]);
  const Api api = ApiFor(mode);
  if (action == "exact" && argc == 4) return Exact(api, std::strtoull(argv[3], nullptr, 10));
  if (action == "paths") return Paths(api);
  if (action == "getinfo") {
    size_t free_bytes = 0, total = 0;
    CHECK_EQ(api.mem_get_info(&free_bytes, &total), kCudaSuccess);
    std::printf("free=%zu total=%zu\n", free_bytes, total);
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
  if ((action == "alloc" || action == "hold") && argc == 4) {
    CuDevicePtr p = 0;
    CuResult r = api.mem_alloc(&p, std::strtoull(argv[3], nullptr, 10));
    std::printf("alloc=%d\n", r);
    std::fflush(stdout);
    if (action == "hold" && r == kCudaSuccess) pause();
    return r == kCudaSuccess ? 0 : 3;
  }
  if (action == "launch" && argc == 5) return LaunchLoop(api, std::atof(argv[3]), argv[4]);
  Fail("unknown action or wrong arguments");
}
