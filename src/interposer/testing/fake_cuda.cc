// A test double for libcuda.so.1: the driver-API subset the interposer hooks, over host memory,
// with one simulated device that runs kernels one after another for a tunable fake kernel time.
// Nothing executes; a timeline says when each launch would start and end, events record points
// on it, and synchronization sleeps until the timeline has passed. Graph capture records launches
// into a graph whose launch takes the sum of their times.
//
// Knobs (environment): CARVE_FAKE_KERNEL_US (default 1000), CARVE_FAKE_TOTAL_BYTES (default
// 80 GiB). Test-only exports: carveFakeBusyNs, carveFakeAllocatedBytes, carveFakeSetKernelNs.
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "interposer/cuda_abi.h"

using namespace carve::interposer;  // NOLINT: a C ABI shim, every name below is a CUDA one

#define FAKE_API extern "C" __attribute__((visibility("default")))

namespace {

int64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

void SleepUntil(int64_t t) {
  for (int64_t now = NowNs(); now < t; now = NowNs()) {
    timespec ts{static_cast<time_t>((t - now) / 1'000'000'000),
                static_cast<long>((t - now) % 1'000'000'000)};
    nanosleep(&ts, nullptr);
  }
}

struct Pool {
  uint64_t in_use = 0;
  uint64_t cached = 0;
};

struct Graph {
  int64_t duration_ns = 0;
};

struct State {
  std::mutex mu;
  int64_t kernel_ns = 1'000'000;
  uint64_t total_bytes = 80ULL << 30;
  uint64_t allocated = 0;                              // guarded by mu
  std::unordered_map<uint64_t, uint64_t> allocations;  // handle -> bytes, guarded by mu
  std::unordered_map<uint64_t, uint64_t> pool_ptrs;    // async ptr -> bytes, guarded by mu
  Pool default_pool;                                   // guarded by mu
  int64_t busy_until = 0;                              // guarded by mu
  int64_t busy_ns = 0;                                 // guarded by mu
  CuStream capturing = nullptr;                        // guarded by mu
  bool capture_active = false;                         // guarded by mu
  Graph* capture_graph = nullptr;                      // guarded by mu
  uint64_t next_handle = 0x10000;                      // guarded by mu
  State() {
    if (const char* v = std::getenv("CARVE_FAKE_KERNEL_US")) kernel_ns = std::atoll(v) * 1000;
    if (const char* v = std::getenv("CARVE_FAKE_TOTAL_BYTES")) total_bytes = std::strtoull(v, nullptr, 10);
  }
};

State& S() {
  static State* s = new State();
  return *s;
}

CuResult Allocate(unsigned long long* handle, size_t bytes) {
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  if (bytes == 0) return kCudaErrorInvalidValue;
  if (bytes > s.total_bytes - s.allocated) return kCudaErrorOutOfMemory;
  s.allocated += bytes;
  uint64_t h = s.next_handle;
  s.next_handle += (bytes + 0xFFF) & ~uint64_t{0xFFF};
  s.next_handle += 0x1000;
  s.allocations[h] = bytes;
  *handle = h;
  return kCudaSuccess;
}

CuResult Deallocate(uint64_t handle) {
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  auto it = s.allocations.find(handle);
  if (it == s.allocations.end()) return kCudaErrorInvalidValue;
  s.allocated -= it->second;
  s.allocations.erase(it);
  return kCudaSuccess;
}

// A launch waits while the queue holds more than this many kernels' worth of work, as a real
// launch blocks when the device's queue (about a thousand entries) is full.
constexpr int64_t kQueueDepth = 16;

// Sleeps until the device queue has room. Called without the lock held.
void WaitForQueueRoom() {
  State& s = S();
  int64_t until = 0;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    until = s.busy_until - kQueueDepth * s.kernel_ns;
  }
  SleepUntil(until);
}

// Runs `ns` of device time after everything already queued; returns the end time.
int64_t Enqueue(int64_t ns) {
  State& s = S();
  int64_t start = std::max(NowNs(), s.busy_until);
  s.busy_until = start + ns;
  s.busy_ns += ns;
  return s.busy_until;
}

CuResult Launch(CuStream stream) {
  WaitForQueueRoom();
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  if (s.capture_active && stream == s.capturing) {
    s.capture_graph->duration_ns += s.kernel_ns;
    return kCudaSuccess;
  }
  Enqueue(s.kernel_ns);
  return kCudaSuccess;
}

struct Event {
  int64_t at = -1;  // timeline point; -1 = never recorded
};

}  // namespace

FAKE_API int64_t carveFakeBusyNs() {
  std::lock_guard<std::mutex> lock(S().mu);
  return S().busy_ns;
}
FAKE_API uint64_t carveFakeAllocatedBytes() {
  std::lock_guard<std::mutex> lock(S().mu);
  return S().allocated + S().default_pool.in_use + S().default_pool.cached;
}
FAKE_API void carveFakeSetKernelNs(int64_t ns) {
  std::lock_guard<std::mutex> lock(S().mu);
  S().kernel_ns = ns;
}

FAKE_API CuResult cuInit(unsigned int) { return kCudaSuccess; }
FAKE_API CuResult cuDriverGetVersion(int* v) {
  *v = 13000;
  return kCudaSuccess;
}
FAKE_API CuResult cuCtxGetDevice(CuDevice* d) {
  *d = 0;
  return kCudaSuccess;
}
FAKE_API CuResult cuDeviceGetMemPool(CuMemoryPool* pool, CuDevice) {
  *pool = reinterpret_cast<CuMemoryPool>(&S().default_pool);
  return kCudaSuccess;
}
FAKE_API CuResult cuMemGetInfo_v2(size_t* free_bytes, size_t* total) {
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  uint64_t used = s.allocated + s.default_pool.in_use + s.default_pool.cached;
  *total = s.total_bytes;
  *free_bytes = s.total_bytes - used;
  return kCudaSuccess;
}
FAKE_API CuResult cuMemGetInfo(unsigned int* free_bytes, unsigned int* total) {
  size_t f = 0, t = 0;
  cuMemGetInfo_v2(&f, &t);
  *free_bytes = static_cast<unsigned int>(std::min<size_t>(f, 0xFFFFFFFFu));
  *total = static_cast<unsigned int>(std::min<size_t>(t, 0xFFFFFFFFu));
  return kCudaSuccess;
}
FAKE_API CuResult cuMemAlloc_v2(CuDevicePtr* p, size_t n) { return Allocate(p, n); }
FAKE_API CuResult cuMemAlloc(unsigned int* p, unsigned int n) {
  unsigned long long h = 0;
  CuResult r = Allocate(&h, n);
  *p = static_cast<unsigned int>(h);
  return r;
}
FAKE_API CuResult cuMemAllocPitch_v2(CuDevicePtr* p, size_t* pitch, size_t w, size_t h,
                                     unsigned int) {
  *pitch = (w + 511) & ~size_t{511};  // real pitches are aligned; the fake uses 512 bytes
  return Allocate(p, *pitch * h);
}
FAKE_API CuResult cuMemAllocManaged(CuDevicePtr* p, size_t n, unsigned int) {
  return Allocate(p, n);
}
FAKE_API CuResult cuMemFree_v2(CuDevicePtr p) { return Deallocate(p); }
FAKE_API CuResult cuMemCreate(CuMemGenericAllocationHandle* h, size_t n,
                              const CuMemAllocationProp*, unsigned long long) {
  return Allocate(h, n);
}
FAKE_API CuResult cuMemRelease(CuMemGenericAllocationHandle h) { return Deallocate(h); }
FAKE_API CuResult cuArrayCreate_v2(CuArray* a, const CuArrayDescriptor* d) {
  unsigned long long h = 0;
  size_t bytes = d->Width * (d->Height ? d->Height : 1) * d->NumChannels * 4;
  CuResult r = Allocate(&h, bytes);
  *a = reinterpret_cast<CuArray>(h);
  return r;
}
FAKE_API CuResult cuArray3DCreate_v2(CuArray* a, const CuArray3DDescriptor* d) {
  unsigned long long h = 0;
  size_t bytes = d->Width * (d->Height ? d->Height : 1) * (d->Depth ? d->Depth : 1) *
                 d->NumChannels * 4;
  CuResult r = Allocate(&h, bytes);
  *a = reinterpret_cast<CuArray>(h);
  return r;
}
FAKE_API CuResult cuArrayDestroy(CuArray a) { return Deallocate(reinterpret_cast<uint64_t>(a)); }
FAKE_API CuResult cuMipmappedArrayCreate(CuMipmappedArray* a, const CuArray3DDescriptor* d,
                                         unsigned int levels) {
  unsigned long long h = 0;
  size_t bytes = d->Width * (d->Height ? d->Height : 1) * (d->Depth ? d->Depth : 1) *
                 d->NumChannels * 4 * levels;
  CuResult r = Allocate(&h, bytes);
  *a = reinterpret_cast<CuMipmappedArray>(h);
  return r;
}
FAKE_API CuResult cuMipmappedArrayDestroy(CuMipmappedArray a) {
  return Deallocate(reinterpret_cast<uint64_t>(a));
}

// Stream-ordered allocation from the single default pool (any pool handle is treated as it).
FAKE_API CuResult cuMemAllocFromPoolAsync(CuDevicePtr* p, size_t n, CuMemoryPool, CuStream) {
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  Pool& pool = s.default_pool;
  uint64_t reuse = std::min<uint64_t>(pool.cached, n);
  if (n - reuse > s.total_bytes - s.allocated - pool.in_use - pool.cached) {
    return kCudaErrorOutOfMemory;
  }
  pool.cached -= reuse;
  pool.in_use += n;
  *p = s.next_handle;
  s.next_handle += ((n + 0xFFF) & ~uint64_t{0xFFF}) + 0x1000;
  s.pool_ptrs[*p] = n;
  return kCudaSuccess;
}
FAKE_API CuResult cuMemAllocFromPoolAsync_ptsz(CuDevicePtr* p, size_t n, CuMemoryPool pool,
                                               CuStream st) {
  return cuMemAllocFromPoolAsync(p, n, pool, st);
}
FAKE_API CuResult cuMemAllocAsync(CuDevicePtr* p, size_t n, CuStream st) {
  return cuMemAllocFromPoolAsync(p, n, nullptr, st);
}
FAKE_API CuResult cuMemAllocAsync_ptsz(CuDevicePtr* p, size_t n, CuStream st) {
  return cuMemAllocFromPoolAsync(p, n, nullptr, st);
}
FAKE_API CuResult cuMemFreeAsync(CuDevicePtr p, CuStream) {
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  auto it = s.pool_ptrs.find(p);
  if (it == s.pool_ptrs.end()) return kCudaErrorInvalidValue;
  s.default_pool.in_use -= it->second;
  s.default_pool.cached += it->second;  // a pool keeps freed memory until trimmed
  s.pool_ptrs.erase(it);
  return kCudaSuccess;
}
FAKE_API CuResult cuMemFreeAsync_ptsz(CuDevicePtr p, CuStream st) { return cuMemFreeAsync(p, st); }
FAKE_API CuResult cuMemPoolTrimTo(CuMemoryPool, size_t keep) {
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  Pool& pool = s.default_pool;
  uint64_t may_cache = keep > pool.in_use ? keep - pool.in_use : 0;
  pool.cached = std::min(pool.cached, may_cache);
  return kCudaSuccess;
}
FAKE_API CuResult cuMemPoolGetAttribute(CuMemoryPool, int attr, void* value) {
  if (attr != kCuMempoolAttrReservedMemCurrent) return kCudaErrorInvalidValue;
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  *static_cast<CuUint64*>(value) = s.default_pool.in_use + s.default_pool.cached;
  return kCudaSuccess;
}

FAKE_API CuResult cuLaunchKernel(CuFunction, unsigned int, unsigned int, unsigned int,
                                 unsigned int, unsigned int, unsigned int, unsigned int,
                                 CuStream stream, void**, void**) {
  return Launch(stream);
}
FAKE_API CuResult cuLaunchKernel_ptsz(CuFunction f, unsigned int gx, unsigned int gy,
                                      unsigned int gz, unsigned int bx, unsigned int by,
                                      unsigned int bz, unsigned int sm, CuStream stream,
                                      void** p, void** e) {
  return cuLaunchKernel(f, gx, gy, gz, bx, by, bz, sm, stream, p, e);
}
FAKE_API CuResult cuLaunchKernelEx(const CuLaunchConfig* c, CuFunction, void**, void**) {
  return Launch(c->hStream);
}
FAKE_API CuResult cuLaunchKernelEx_ptsz(const CuLaunchConfig* c, CuFunction f, void** p,
                                        void** e) {
  return cuLaunchKernelEx(c, f, p, e);
}
FAKE_API CuResult cuLaunchCooperativeKernel(CuFunction, unsigned int, unsigned int,
                                            unsigned int, unsigned int, unsigned int,
                                            unsigned int, unsigned int, CuStream stream,
                                            void**) {
  return Launch(stream);
}
FAKE_API CuResult cuLaunchCooperativeKernel_ptsz(CuFunction f, unsigned int gx, unsigned int gy,
                                                 unsigned int gz, unsigned int bx,
                                                 unsigned int by, unsigned int bz,
                                                 unsigned int sm, CuStream stream, void** p) {
  return cuLaunchCooperativeKernel(f, gx, gy, gz, bx, by, bz, sm, stream, p);
}

FAKE_API CuResult cuStreamBeginCapture_v2(CuStream stream, int) {
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  if (s.capture_active) return kCudaErrorNotPermitted;
  s.capture_active = true;
  s.capturing = stream;
  s.capture_graph = new Graph();
  return kCudaSuccess;
}
FAKE_API CuResult cuStreamEndCapture(CuStream stream, CuGraph* graph) {
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  if (!s.capture_active || s.capturing != stream) return kCudaErrorInvalidValue;
  *graph = reinterpret_cast<CuGraph>(s.capture_graph);
  s.capture_active = false;
  s.capture_graph = nullptr;
  return kCudaSuccess;
}
FAKE_API CuResult cuStreamIsCapturing(CuStream stream, int* status) {
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  *status = (s.capture_active && s.capturing == stream) ? 1 : kCuStreamCaptureStatusNone;
  return kCudaSuccess;
}
FAKE_API CuResult cuGraphInstantiateWithFlags(CuGraphExec* exec, CuGraph graph,
                                              unsigned long long) {
  *exec = reinterpret_cast<CuGraphExec>(new Graph(*reinterpret_cast<Graph*>(graph)));
  return kCudaSuccess;
}
FAKE_API CuResult cuGraphInstantiate(CuGraphExec* exec, CuGraph graph, unsigned long long f) {
  return cuGraphInstantiateWithFlags(exec, graph, f);
}
FAKE_API CuResult cuGraphLaunch(CuGraphExec exec, CuStream) {
  WaitForQueueRoom();
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  Enqueue(reinterpret_cast<Graph*>(exec)->duration_ns);
  return kCudaSuccess;
}
FAKE_API CuResult cuGraphLaunch_ptsz(CuGraphExec exec, CuStream st) {
  return cuGraphLaunch(exec, st);
}
FAKE_API CuResult cuGraphExecDestroy(CuGraphExec exec) {
  delete reinterpret_cast<Graph*>(exec);
  return kCudaSuccess;
}
FAKE_API CuResult cuGraphDestroy(CuGraph graph) {
  delete reinterpret_cast<Graph*>(graph);
  return kCudaSuccess;
}

FAKE_API CuResult cuEventCreate(CuEvent* e, unsigned int) {
  *e = reinterpret_cast<CuEvent>(new Event());
  return kCudaSuccess;
}
FAKE_API CuResult cuEventDestroy_v2(CuEvent e) {
  delete reinterpret_cast<Event*>(e);
  return kCudaSuccess;
}
FAKE_API CuResult cuEventRecord(CuEvent e, CuStream) {
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  reinterpret_cast<Event*>(e)->at = std::max(NowNs(), s.busy_until);
  return kCudaSuccess;
}
FAKE_API CuResult cuEventRecord_ptsz(CuEvent e, CuStream st) { return cuEventRecord(e, st); }
FAKE_API CuResult cuEventQuery(CuEvent e) {
  int64_t at = reinterpret_cast<Event*>(e)->at;
  if (at < 0) return kCudaErrorInvalidHandle;
  return NowNs() >= at ? kCudaSuccess : kCudaErrorNotReady;
}
FAKE_API CuResult cuEventSynchronize(CuEvent e) {
  SleepUntil(reinterpret_cast<Event*>(e)->at);
  return kCudaSuccess;
}
FAKE_API CuResult cuEventElapsedTime_v2(float* ms, CuEvent a, CuEvent b) {
  const Event* ea = reinterpret_cast<Event*>(a);
  const Event* eb = reinterpret_cast<Event*>(b);
  if (ea->at < 0 || eb->at < 0) return kCudaErrorInvalidHandle;
  if (NowNs() < eb->at) return kCudaErrorNotReady;
  *ms = static_cast<float>(eb->at - ea->at) / 1e6f;
  return kCudaSuccess;
}
FAKE_API CuResult cuEventElapsedTime(float* ms, CuEvent a, CuEvent b) {
  return cuEventElapsedTime_v2(ms, a, b);
}
FAKE_API CuResult cuStreamSynchronize(CuStream) {
  int64_t until = 0;
  {
    std::lock_guard<std::mutex> lock(S().mu);
    until = S().busy_until;
  }
  SleepUntil(until);
  return kCudaSuccess;
}
FAKE_API CuResult cuCtxSynchronize() { return cuStreamSynchronize(nullptr); }

namespace {

struct Entry {
  const char* name;
  void* fn;
};

#define FAKE_ENTRY(n) {#n, reinterpret_cast<void*>(&n)}
const Entry kEntries[] = {
    FAKE_ENTRY(cuInit), FAKE_ENTRY(cuDriverGetVersion), FAKE_ENTRY(cuCtxGetDevice),
    FAKE_ENTRY(cuDeviceGetMemPool), FAKE_ENTRY(cuMemGetInfo_v2), FAKE_ENTRY(cuMemGetInfo),
    FAKE_ENTRY(cuMemAlloc_v2), FAKE_ENTRY(cuMemAlloc), FAKE_ENTRY(cuMemAllocPitch_v2),
    FAKE_ENTRY(cuMemAllocManaged), FAKE_ENTRY(cuMemFree_v2), FAKE_ENTRY(cuMemCreate),
    FAKE_ENTRY(cuMemRelease), FAKE_ENTRY(cuArrayCreate_v2), FAKE_ENTRY(cuArray3DCreate_v2),
    FAKE_ENTRY(cuArrayDestroy), FAKE_ENTRY(cuMipmappedArrayCreate),
    FAKE_ENTRY(cuMipmappedArrayDestroy), FAKE_ENTRY(cuMemAllocFromPoolAsync),
    FAKE_ENTRY(cuMemAllocFromPoolAsync_ptsz), FAKE_ENTRY(cuMemAllocAsync),
    FAKE_ENTRY(cuMemAllocAsync_ptsz), FAKE_ENTRY(cuMemFreeAsync), FAKE_ENTRY(cuMemFreeAsync_ptsz),
    FAKE_ENTRY(cuMemPoolTrimTo), FAKE_ENTRY(cuMemPoolGetAttribute), FAKE_ENTRY(cuLaunchKernel),
    FAKE_ENTRY(cuLaunchKernel_ptsz), FAKE_ENTRY(cuLaunchKernelEx), FAKE_ENTRY(cuLaunchKernelEx_ptsz),
    FAKE_ENTRY(cuLaunchCooperativeKernel), FAKE_ENTRY(cuLaunchCooperativeKernel_ptsz),
    FAKE_ENTRY(cuStreamBeginCapture_v2), FAKE_ENTRY(cuStreamEndCapture),
    FAKE_ENTRY(cuStreamIsCapturing), FAKE_ENTRY(cuGraphInstantiateWithFlags),
    FAKE_ENTRY(cuGraphInstantiate), FAKE_ENTRY(cuGraphLaunch), FAKE_ENTRY(cuGraphLaunch_ptsz),
    FAKE_ENTRY(cuGraphExecDestroy), FAKE_ENTRY(cuGraphDestroy), FAKE_ENTRY(cuEventCreate),
    FAKE_ENTRY(cuEventDestroy_v2), FAKE_ENTRY(cuEventRecord), FAKE_ENTRY(cuEventRecord_ptsz),
    FAKE_ENTRY(cuEventQuery), FAKE_ENTRY(cuEventSynchronize), FAKE_ENTRY(cuEventElapsedTime_v2),
    FAKE_ENTRY(cuEventElapsedTime), FAKE_ENTRY(cuStreamSynchronize), FAKE_ENTRY(cuCtxSynchronize),
};

void* Find(const std::string& name) {
  for (const Entry& e : kEntries) {
    if (name == e.name) return e.fn;
  }
  return nullptr;
}

}  // namespace

// Like the real driver: `symbol` is a base name; the variant follows the version and flags.
FAKE_API CuResult cuGetProcAddress_v2(const char* symbol, void** pfn, int version, CuUint64 flags,
                                      int* status) {
  std::string base(symbol);
  std::vector<std::string> tries;
  if (flags & kCuGetProcAddressPerThreadDefaultStream) {
    tries = {base + "_v2_ptsz", base + "_ptsz", base + "_ptds"};
  }
  if (version >= 3020) tries.push_back(base + "_v2");
  if (base == "cuGraphInstantiate" && version >= 12000) tries.push_back("cuGraphInstantiateWithFlags");
  tries.push_back(base);
  for (const std::string& t : tries) {
    if (void* fn = Find(t)) {
      *pfn = fn;
      if (status) *status = kCuGetProcAddressSuccess;
      return kCudaSuccess;
    }
  }
  *pfn = nullptr;
  if (status) *status = 1;  // CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND
  return kCudaErrorNotFound;
}
FAKE_API CuResult cuGetProcAddress(const char* symbol, void** pfn, int version, CuUint64 flags) {
  return cuGetProcAddress_v2(symbol, pfn, version, flags, nullptr);
}
