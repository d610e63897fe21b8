// A test double for libcuda.so.1: devices, contexts, streams, capture, launches, events and
// graphs (memory is fake_cuda_memory.cc, symbol lookup fake_cuda_resolve.cc; the model is
// described in fake_cuda_state.h).
//
// Knobs (environment): CARVE_FAKE_KERNEL_US (default 1000), CARVE_FAKE_TOTAL_BYTES (per device,
// default 80 GiB), CARVE_FAKE_DEVICES (default 1), CARVE_FAKE_PITCH_ALIGN (default 256),
// CARVE_FAKE_PROC_INTERNAL=1 (cuGetProcAddress returns internal entry points, not the exports),
// CARVE_FAKE_NO_STREAM_GET_DEVICE=1 (cuStreamGetDevice fails, as before CUDA 12.8). Test-only
// exports: carveFakeBusyNs, carveFakeAllocatedBytes, carveFakeDeviceBytes, carveFakeHostBytes,
// carveFakeLegacyStreamOps, carveFakeGraphReservedBytes, carveFakeSetKernelNs.
#include <time.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "interposer/testing/fake_cuda_state.h"

namespace carve::fake_cuda {
namespace {

// A launch waits while the queue holds more than this many kernels' worth of work, as a real
// launch blocks when the device's queue (about a thousand entries) is full.
constexpr int64_t kQueueDepth = 16;

int legacy_key_storage;
struct Context {
  int device;
};
Context* ContextOf(int device) {
  static Context* contexts = [] {
    auto* c = new Context[64];
    for (int i = 0; i < 64; ++i) c[i].device = i;
    return c;
  }();
  return &contexts[device];
}

thread_local std::vector<int> context_stack;

}  // namespace

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

State::State() {
  if (const char* v = std::getenv("CARVE_FAKE_KERNEL_US")) kernel_ns = std::atoll(v) * 1000;
  if (const char* v = std::getenv("CARVE_FAKE_TOTAL_BYTES")) {
    total_bytes = std::strtoull(v, nullptr, 10);
  }
  if (const char* v = std::getenv("CARVE_FAKE_OTHERS_BYTES")) {
    others_bytes = std::strtoull(v, nullptr, 10);
  }
  if (const char* v = std::getenv("CARVE_FAKE_PITCH_ALIGN")) {
    pitch_align = std::strtoull(v, nullptr, 10);
  }
  proc_internal = std::getenv("CARVE_FAKE_PROC_INTERNAL") != nullptr;
  stream_get_device = std::getenv("CARVE_FAKE_NO_STREAM_GET_DEVICE") == nullptr;
  int count = 1;
  if (const char* v = std::getenv("CARVE_FAKE_DEVICES")) count = std::clamp(std::atoi(v), 1, 64);
  devices.resize(count);
  for (int i = 0; i < count; ++i) {
    devices[i].default_pool.device = i;
    devices[i].current_pool = &devices[i].default_pool;
  }
}

State& S() {
  static State* s = new State();
  return *s;
}

int& CurrentDevice() {
  thread_local int device = 0;
  return device;
}

int& ThreadCaptureMode() {
  thread_local int mode = kCuStreamCaptureModeGlobal;
  return mode;
}

const void* StreamKey(CuStream stream, bool per_thread_entry) {
  thread_local int per_thread_key_storage;
  const auto v = reinterpret_cast<uintptr_t>(stream);
  if (v == kCuStreamPerThread || (v == 0 && per_thread_entry)) return &per_thread_key_storage;
  if (v == 0 || v == kCuStreamLegacy) return &legacy_key_storage;
  return stream;
}

bool IsLegacy(const void* key) { return key == &legacy_key_storage; }

int StreamDeviceLocked(CuStream stream) {
  auto it = S().streams.find(stream);
  return it == S().streams.end() ? CurrentDevice() : it->second.device;
}

int StreamDevice(CuStream stream) {
  std::lock_guard<std::mutex> lock(S().mu);
  return StreamDeviceLocked(stream);
}

CuResult CheckUnsafeLocked() {
  const int mode = ThreadCaptureMode();
  if (mode == kCuStreamCaptureModeRelaxed) return kCudaSuccess;
  bool prohibited = false;
  for (auto& [key, c] : S().captures) {
    const bool own = c.thread == std::this_thread::get_id();
    if ((own && c.mode != kCuStreamCaptureModeRelaxed) ||
        (!own && mode == kCuStreamCaptureModeGlobal && c.mode == kCuStreamCaptureModeGlobal)) {
      c.invalidated = true;
      prohibited = true;
    }
  }
  return prohibited ? kCudaErrorStreamCaptureUnsupported : kCudaSuccess;
}

CuResult CheckStreamLocked(const void* key, Capture** capture) {
  *capture = nullptr;
  State& s = S();
  if (IsLegacy(key)) {
    ++s.legacy_ops;
    bool implicit = false;
    for (auto& [k, c] : s.captures) {
      if (c.blocking) {
        c.invalidated = true;
        implicit = true;
      }
    }
    return implicit ? kCudaErrorStreamCaptureImplicit : kCudaSuccess;
  }
  auto it = s.captures.find(key);
  if (it == s.captures.end()) return kCudaSuccess;
  if (it->second.invalidated) return kCudaErrorStreamCaptureInvalidated;
  *capture = &it->second;
  return kCudaSuccess;
}

uint64_t NewAddressLocked(uint64_t bytes) {
  uint64_t a = S().next_address;
  S().next_address += ((bytes + 0xFFFF) & ~uint64_t{0xFFFF}) + 0x10000;
  return a;
}

int64_t EnqueueLocked(int device, int64_t ns) {
  Device& d = S().devices[device];
  int64_t start = std::max(NowNs(), d.busy_until);
  d.busy_until = start + ns;
  d.busy_ns += ns;
  return d.busy_until;
}

void WaitForQueueRoom(int device) {
  State& s = S();
  int64_t until = 0;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    until = s.devices[device].busy_until - kQueueDepth * s.kernel_ns;
  }
  SleepUntil(until);
}

}  // namespace carve::fake_cuda

using namespace carve::fake_cuda;  // NOLINT: a C ABI shim

namespace {

CuResult Launch(CuStream stream, bool per_thread) {
  WaitForQueueRoom(StreamDevice(stream));
  return WithStream(stream, per_thread, [&](Capture* capture) {
    State& s = S();
    if (capture != nullptr) {
      capture->graph->nodes.push_back({GraphNode::Kind::kKernel, s.kernel_ns, 0});
    } else {
      EnqueueLocked(StreamDeviceLocked(stream), s.kernel_ns);
    }
    return kCudaSuccess;
  });
}

// Maps the graph's allocations and runs its kernels; an allocation still live from an earlier
// launch makes the launch fail, as for a real graph with unfreed allocations. Requires mu.
CuResult RunGraphLocked(const Graph& exec, int device) {
  State& s = S();
  for (const GraphNode& n : exec.nodes) {
    if (n.kind == GraphNode::Kind::kAlloc && s.graph_ptrs.at(n.ptr).live) {
      return kCudaErrorInvalidValue;
    }
  }
  int64_t ns = 0;
  for (const GraphNode& n : exec.nodes) {
    ns += n.ns;
    if (n.kind == GraphNode::Kind::kKernel) continue;
    GraphAllocation& a = s.graph_ptrs.at(n.ptr);
    Device& d = s.devices[a.device];
    if (n.kind == GraphNode::Kind::kAlloc) {
      a.live = true;
      d.graph_live += a.bytes;
      d.graph_reserved = std::max(d.graph_reserved, d.graph_live);
    } else if (a.live) {
      a.live = false;
      d.graph_live -= a.bytes;
    }
  }
  EnqueueLocked(device, ns);
  return kCudaSuccess;
}

CuResult LaunchGraph(Graph* exec, CuStream stream, bool per_thread) {
  WaitForQueueRoom(StreamDevice(stream));
  return WithStream(stream, per_thread, [&](Capture* capture) {
    if (capture == nullptr) return RunGraphLocked(*exec, StreamDeviceLocked(stream));
    int64_t ns = 0;  // a graph launched into a capture: a child graph's time, as one node
    for (const GraphNode& n : exec->nodes) ns += n.ns;
    capture->graph->nodes.push_back({GraphNode::Kind::kKernel, ns, 0});
    return kCudaSuccess;
  });
}

CuResult BeginCapture(CuStream stream, int mode, bool per_thread) {
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  const void* key = StreamKey(stream, per_thread);
  if (IsLegacy(key) || mode < 0 || mode > kCuStreamCaptureModeRelaxed) {
    return kCudaErrorInvalidValue;  // capture may not be initiated on CU_STREAM_LEGACY
  }
  if (s.captures.contains(key)) return kCudaErrorInvalidValue;
  auto info = s.streams.find(stream);
  Capture c;
  c.graph = new Graph();
  c.mode = mode;
  c.thread = std::this_thread::get_id();
  c.blocking = info == s.streams.end() || !info->second.non_blocking;
  c.id = s.next_capture_id++;
  s.captures[key] = c;
  return kCudaSuccess;
}

CuResult EndCapture(CuStream stream, CuGraph* graph, bool per_thread) {
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  auto it = s.captures.find(StreamKey(stream, per_thread));
  if (it == s.captures.end()) return kCudaErrorInvalidValue;
  if (it->second.mode != kCuStreamCaptureModeRelaxed &&
      it->second.thread != std::this_thread::get_id()) {
    return kCudaErrorStreamCaptureWrongThread;
  }
  const bool invalidated = it->second.invalidated;
  Graph* g = it->second.graph;
  s.captures.erase(it);
  if (invalidated) {
    delete g;
    *graph = nullptr;
    return kCudaErrorStreamCaptureInvalidated;
  }
  *graph = reinterpret_cast<CuGraph>(g);
  return kCudaSuccess;
}

CuResult IsCapturing(CuStream stream, int* status, bool per_thread) {
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  const void* key = StreamKey(stream, per_thread);
  if (IsLegacy(key)) {
    for (const auto& [k, c] : s.captures) {
      if (c.blocking) return kCudaErrorStreamCaptureImplicit;  // the capture stays valid
    }
    *status = kCuStreamCaptureStatusNone;
    return kCudaSuccess;
  }
  auto it = s.captures.find(key);
  *status = it == s.captures.end()   ? kCuStreamCaptureStatusNone
            : it->second.invalidated ? kCuStreamCaptureStatusInvalidated
                                     : kCuStreamCaptureStatusActive;
  return kCudaSuccess;
}

CuResult CaptureInfo(CuStream stream, int* status, CuUint64* id, CuGraph* graph, bool per_thread) {
  if (CuResult r = IsCapturing(stream, status, per_thread); r != kCudaSuccess) return r;
  std::lock_guard<std::mutex> lock(S().mu);
  auto it = S().captures.find(StreamKey(stream, per_thread));
  if (id != nullptr) *id = it == S().captures.end() ? 0 : it->second.id;
  if (graph != nullptr) {
    *graph = it == S().captures.end() ? nullptr : reinterpret_cast<CuGraph>(it->second.graph);
  }
  return kCudaSuccess;
}

CuResult RecordEvent(CuEvent e, CuStream stream, bool per_thread) {
  return WithStream(stream, per_thread, [&](Capture* capture) {
    auto* ev = reinterpret_cast<Event*>(e);
    ev->captured = capture != nullptr;
    if (capture == nullptr) {
      ev->at = std::max(NowNs(), S().devices[StreamDeviceLocked(stream)].busy_until);
    }
    return kCudaSuccess;
  });
}

CuResult SynchronizeDevice(int device) {
  int64_t until = 0;
  {
    std::lock_guard<std::mutex> lock(S().mu);
    if (CuResult r = CheckUnsafeLocked(); r != kCudaSuccess) return r;
    until = S().devices[device].busy_until;
  }
  SleepUntil(until);
  return kCudaSuccess;
}

CuResult Instantiate(CuGraphExec* exec, CuGraph graph) {
  if (graph == nullptr) return kCudaErrorInvalidValue;
  *exec = reinterpret_cast<CuGraphExec>(new Graph(*reinterpret_cast<Graph*>(graph)));
  return kCudaSuccess;
}

}  // namespace

FAKE_API int64_t carveFakeBusyNs() {
  std::lock_guard<std::mutex> lock(S().mu);
  int64_t busy = 0;
  for (const Device& d : S().devices) busy += d.busy_ns;
  return busy;
}
FAKE_API uint64_t carveFakeLegacyStreamOps() {
  std::lock_guard<std::mutex> lock(S().mu);
  return S().legacy_ops;
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
FAKE_API CuResult cuDeviceGetCount(int* n) {
  *n = static_cast<int>(S().devices.size());
  return kCudaSuccess;
}
FAKE_API CuResult cuDeviceGet(CuDevice* dev, int ordinal) {
  if (ordinal < 0 || ordinal >= static_cast<int>(S().devices.size())) {
    return kCudaErrorInvalidValue;
  }
  *dev = ordinal;
  return kCudaSuccess;
}
FAKE_API CuResult cuDevicePrimaryCtxRetain(CuContext* ctx, CuDevice dev) {
  if (dev < 0 || dev >= static_cast<int>(S().devices.size())) return kCudaErrorInvalidValue;
  *ctx = reinterpret_cast<CuContext>(ContextOf(dev));
  return kCudaSuccess;
}
FAKE_API CuResult cuCtxSetCurrent(CuContext ctx) {
  if (ctx != nullptr) CurrentDevice() = reinterpret_cast<Context*>(ctx)->device;
  return kCudaSuccess;
}
FAKE_API CuResult cuCtxGetCurrent(CuContext* ctx) {
  *ctx = reinterpret_cast<CuContext>(ContextOf(CurrentDevice()));
  return kCudaSuccess;
}
FAKE_API CuResult cuCtxPushCurrent_v2(CuContext ctx) {
  if (ctx == nullptr) return kCudaErrorInvalidValue;
  context_stack.push_back(CurrentDevice());
  CurrentDevice() = reinterpret_cast<Context*>(ctx)->device;
  return kCudaSuccess;
}
FAKE_API CuResult cuCtxPopCurrent_v2(CuContext* ctx) {
  if (context_stack.empty()) return kCudaErrorInvalidValue;
  if (ctx != nullptr) *ctx = reinterpret_cast<CuContext>(ContextOf(CurrentDevice()));
  CurrentDevice() = context_stack.back();
  context_stack.pop_back();
  return kCudaSuccess;
}
FAKE_API CuResult cuCtxGetDevice(CuDevice* d) {
  *d = CurrentDevice();
  return kCudaSuccess;
}
FAKE_API CuResult cuCtxSynchronize() { return SynchronizeDevice(CurrentDevice()); }

FAKE_API CuResult cuStreamCreate(CuStream* stream, unsigned int flags) {
  std::lock_guard<std::mutex> lock(S().mu);
  *stream = reinterpret_cast<CuStream>(NewAddressLocked(1));  // NOLINT(performance-no-int-to-ptr)
  S().streams[*stream] = {CurrentDevice(), (flags & 0x1) != 0};  // CU_STREAM_NON_BLOCKING
  return kCudaSuccess;
}
FAKE_API CuResult cuStreamDestroy_v2(CuStream stream) {
  std::lock_guard<std::mutex> lock(S().mu);
  return S().streams.erase(stream) == 1 ? kCudaSuccess : kCudaErrorInvalidHandle;
}
FAKE_API CuResult cuStreamGetDevice(CuStream stream, CuDevice* dev) {
  if (!S().stream_get_device) return kCudaErrorNotSupported;
  std::lock_guard<std::mutex> lock(S().mu);
  *dev = StreamDeviceLocked(stream);
  return kCudaSuccess;
}
FAKE_API CuResult cuStreamGetCtx(CuStream stream, CuContext* ctx) {
  std::lock_guard<std::mutex> lock(S().mu);
  *ctx = reinterpret_cast<CuContext>(ContextOf(StreamDeviceLocked(stream)));
  return kCudaSuccess;
}
FAKE_API CuResult cuStreamSynchronize(CuStream stream) {
  int device = 0;
  {
    std::lock_guard<std::mutex> lock(S().mu);
    device = StreamDeviceLocked(stream);
  }
  return SynchronizeDevice(device);
}
FAKE_API CuResult cuStreamSynchronize_ptsz(CuStream stream) { return cuStreamSynchronize(stream); }

FAKE_API CuResult cuThreadExchangeStreamCaptureMode(int* mode) {
  if (mode == nullptr || *mode < 0 || *mode > kCuStreamCaptureModeRelaxed) {
    return kCudaErrorInvalidValue;
  }
  std::swap(*mode, ThreadCaptureMode());
  return kCudaSuccess;
}
FAKE_API CuResult cuStreamBeginCapture_v2(CuStream stream, int mode) {
  return BeginCapture(stream, mode, false);
}
FAKE_API CuResult cuStreamBeginCapture_v2_ptsz(CuStream stream, int mode) {
  return BeginCapture(stream, mode, true);
}
FAKE_API CuResult cuStreamEndCapture(CuStream stream, CuGraph* graph) {
  return EndCapture(stream, graph, false);
}
FAKE_API CuResult cuStreamEndCapture_ptsz(CuStream stream, CuGraph* graph) {
  return EndCapture(stream, graph, true);
}
FAKE_API CuResult cuStreamIsCapturing(CuStream stream, int* status) {
  return IsCapturing(stream, status, false);
}
FAKE_API CuResult cuStreamIsCapturing_ptsz(CuStream stream, int* status) {
  return IsCapturing(stream, status, true);
}
FAKE_API CuResult cuStreamGetCaptureInfo_v2(CuStream stream, int* status, CuUint64* id,
                                            CuGraph* graph, const CuGraphNode** deps,
                                            size_t* num_deps) {
  if (deps != nullptr) *deps = nullptr;
  if (num_deps != nullptr) *num_deps = 0;
  return CaptureInfo(stream, status, id, graph, false);
}
FAKE_API CuResult cuStreamGetCaptureInfo_v3(CuStream stream, int* status, CuUint64* id,
                                            CuGraph* graph, const CuGraphNode** deps,
                                            const CuGraphEdgeData** edges, size_t* num_deps) {
  if (edges != nullptr) *edges = nullptr;
  return cuStreamGetCaptureInfo_v2(stream, status, id, graph, deps, num_deps);
}
FAKE_API CuResult cuStreamGetCaptureInfo_v3_ptsz(CuStream stream, int* status, CuUint64* id,
                                                 CuGraph* graph, const CuGraphNode** deps,
                                                 const CuGraphEdgeData** edges, size_t* num_deps) {
  if (edges != nullptr) *edges = nullptr;
  if (deps != nullptr) *deps = nullptr;
  if (num_deps != nullptr) *num_deps = 0;
  return CaptureInfo(stream, status, id, graph, true);
}

#define FAKE_LAUNCH_KERNEL(name, per_thread)                                                 \
  FAKE_API CuResult name(CuFunction, unsigned int, unsigned int, unsigned int, unsigned int, \
                         unsigned int, unsigned int, unsigned int, CuStream stream, void**,  \
                         void**) {                                                           \
    return Launch(stream, per_thread);                                                       \
  }
FAKE_LAUNCH_KERNEL(cuLaunchKernel, false)
FAKE_LAUNCH_KERNEL(cuLaunchKernel_ptsz, true)
FAKE_API CuResult cuLaunchKernelEx(const CuLaunchConfig* c, CuFunction, void**, void**) {
  return Launch(c->hStream, false);
}
FAKE_API CuResult cuLaunchKernelEx_ptsz(const CuLaunchConfig* c, CuFunction, void**, void**) {
  return Launch(c->hStream, true);
}
#define FAKE_LAUNCH_COOPERATIVE(name, per_thread)                                             \
  FAKE_API CuResult name(CuFunction, unsigned int, unsigned int, unsigned int, unsigned int,  \
                         unsigned int, unsigned int, unsigned int, CuStream stream, void**) { \
    return Launch(stream, per_thread);                                                        \
  }
FAKE_LAUNCH_COOPERATIVE(cuLaunchCooperativeKernel, false)
FAKE_LAUNCH_COOPERATIVE(cuLaunchCooperativeKernel_ptsz, true)

FAKE_API CuResult cuGraphCreate(CuGraph* graph, unsigned int) {
  *graph = reinterpret_cast<CuGraph>(new Graph());
  return kCudaSuccess;
}
FAKE_API CuResult cuGraphInstantiateWithFlags(CuGraphExec* exec, CuGraph graph,
                                              unsigned long long) {
  return Instantiate(exec, graph);
}
FAKE_API CuResult cuGraphInstantiate(CuGraphExec* exec, CuGraph graph, CuGraphNode*, char*,
                                     size_t) {
  return Instantiate(exec, graph);
}
FAKE_API CuResult cuGraphInstantiate_v2(CuGraphExec* exec, CuGraph graph, CuGraphNode*, char*,
                                        size_t) {
  return Instantiate(exec, graph);
}
FAKE_API CuResult cuGraphInstantiateWithParams(CuGraphExec* exec, CuGraph graph,
                                               CuGraphInstantiateParams*) {
  return Instantiate(exec, graph);
}
FAKE_API CuResult cuGraphInstantiateWithParams_ptsz(CuGraphExec* exec, CuGraph graph,
                                                    CuGraphInstantiateParams*) {
  return Instantiate(exec, graph);
}
FAKE_API CuResult cuGraphLaunch(CuGraphExec exec, CuStream stream) {
  return LaunchGraph(reinterpret_cast<Graph*>(exec), stream, false);
}
FAKE_API CuResult cuGraphLaunch_ptsz(CuGraphExec exec, CuStream stream) {
  return LaunchGraph(reinterpret_cast<Graph*>(exec), stream, true);
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
FAKE_API CuResult cuEventRecord(CuEvent e, CuStream stream) {
  return RecordEvent(e, stream, false);
}
FAKE_API CuResult cuEventRecord_ptsz(CuEvent e, CuStream stream) {
  return RecordEvent(e, stream, true);
}
// cuda.h: "CUDA_SUCCESS if all captured work has been completed, or if cuEventRecord() has not
// been called on hEvent"; an event last recorded in a capture cannot be queried in any mode.
FAKE_API CuResult cuEventQuery(CuEvent e) {
  std::lock_guard<std::mutex> lock(S().mu);
  if (CuResult r = CheckUnsafeLocked(); r != kCudaSuccess) return r;
  const Event* ev = reinterpret_cast<Event*>(e);
  if (ev->captured) return kCudaErrorCapturedEvent;
  return NowNs() >= ev->at ? kCudaSuccess : kCudaErrorNotReady;
}
FAKE_API CuResult cuEventSynchronize(CuEvent e) {
  int64_t at = 0;
  {
    std::lock_guard<std::mutex> lock(S().mu);
    if (CuResult r = CheckUnsafeLocked(); r != kCudaSuccess) return r;
    const Event* ev = reinterpret_cast<Event*>(e);
    if (ev->captured) return kCudaErrorCapturedEvent;
    at = ev->at;
  }
  SleepUntil(at);
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

namespace carve::fake_cuda {
namespace {

#define FAKE_ENTRY(n, ...) \
  Entry { #n, reinterpret_cast < void*>(&n), ##__VA_ARGS__ }
const Entry kCoreEntries[] = {
    FAKE_ENTRY(cuInit),
    FAKE_ENTRY(cuDriverGetVersion),
    FAKE_ENTRY(cuDeviceGetCount),
    FAKE_ENTRY(cuDeviceGet),
    FAKE_ENTRY(cuDevicePrimaryCtxRetain),
    FAKE_ENTRY(cuCtxSetCurrent),
    FAKE_ENTRY(cuCtxGetCurrent),
    FAKE_ENTRY(cuCtxPushCurrent_v2, 4000),
    FAKE_ENTRY(cuCtxPopCurrent_v2, 4000),
    FAKE_ENTRY(cuCtxGetDevice),
    FAKE_ENTRY(cuCtxSynchronize),
    FAKE_ENTRY(cuStreamCreate),
    FAKE_ENTRY(cuStreamDestroy_v2, 4000),
    FAKE_ENTRY(cuStreamGetDevice, 12080),
    FAKE_ENTRY(cuStreamGetCtx),
    FAKE_ENTRY(cuStreamSynchronize),
    FAKE_ENTRY(cuStreamSynchronize_ptsz, 7000),
    FAKE_ENTRY(cuThreadExchangeStreamCaptureMode),
    FAKE_ENTRY(cuStreamBeginCapture_v2, 10010),
    FAKE_ENTRY(cuStreamBeginCapture_v2_ptsz, 10010),
    FAKE_ENTRY(cuStreamEndCapture),
    FAKE_ENTRY(cuStreamEndCapture_ptsz, 10000),
    FAKE_ENTRY(cuStreamIsCapturing),
    FAKE_ENTRY(cuStreamIsCapturing_ptsz, 10000),
    FAKE_ENTRY(cuStreamGetCaptureInfo_v2, 11030),
    FAKE_ENTRY(cuStreamGetCaptureInfo_v3, 12030),
    FAKE_ENTRY(cuStreamGetCaptureInfo_v3_ptsz, 12030),
    FAKE_ENTRY(cuLaunchKernel),
    FAKE_ENTRY(cuLaunchKernel_ptsz, 7000),
    FAKE_ENTRY(cuLaunchKernelEx),
    FAKE_ENTRY(cuLaunchKernelEx_ptsz),
    FAKE_ENTRY(cuLaunchCooperativeKernel),
    FAKE_ENTRY(cuLaunchCooperativeKernel_ptsz),
    FAKE_ENTRY(cuGraphCreate),
    FAKE_ENTRY(cuGraphInstantiate, 10000),
    FAKE_ENTRY(cuGraphInstantiate_v2, 11000),
    FAKE_ENTRY(cuGraphInstantiateWithFlags, 12000, "cuGraphInstantiate"),
    FAKE_ENTRY(cuGraphInstantiateWithFlags),
    FAKE_ENTRY(cuGraphInstantiateWithParams),
    FAKE_ENTRY(cuGraphInstantiateWithParams_ptsz),
    FAKE_ENTRY(cuGraphLaunch),
    FAKE_ENTRY(cuGraphLaunch_ptsz),
    FAKE_ENTRY(cuGraphExecDestroy),
    FAKE_ENTRY(cuGraphDestroy),
    FAKE_ENTRY(cuEventCreate),
    FAKE_ENTRY(cuEventDestroy_v2, 4000),
    FAKE_ENTRY(cuEventRecord),
    FAKE_ENTRY(cuEventRecord_ptsz, 7000),
    FAKE_ENTRY(cuEventQuery),
    FAKE_ENTRY(cuEventSynchronize),
    FAKE_ENTRY(cuEventElapsedTime, 2000),
    FAKE_ENTRY(cuEventElapsedTime_v2, 12080),
};

}  // namespace

std::span<const Entry> CoreEntries() { return kCoreEntries; }

}  // namespace carve::fake_cuda
