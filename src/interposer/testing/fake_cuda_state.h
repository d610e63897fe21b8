// Internal to the fake libcuda.so.1 (fake_cuda*.cc): the simulated driver's state and the rules
// its entry points share. The fake models what the interposer's correctness depends on, each
// after cuda.h (CUDA 13):
//   - devices (CARVE_FAKE_DEVICES, default 1), each with its own memory, default pool, graph pool
//     and kernel timeline; a current device per thread, set through primary contexts;
//   - streams: created ones (blocking or CU_STREAM_NON_BLOCKING), the legacy NULL stream and a
//     per-thread default stream per thread (NULL through a _ptsz entry, or CU_STREAM_PER_THREAD);
//     every operation on the legacy stream is counted, and one made while a blocking stream
//     captures fails with CUDA_ERROR_STREAM_CAPTURE_IMPLICIT and invalidates that capture;
//   - stream capture with its three modes and the per-thread interaction mode
//     (cuThreadExchangeStreamCaptureMode): a "potentially unsafe" call (event and stream
//     queries and synchronization, cuMemAlloc, cuMemFree) that the modes prohibit fails with
//     CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED and invalidates the capture that prohibited it;
//   - memory: plain allocations, pitched ones (pitch aligned to CARVE_FAKE_PITCH_ALIGN, default
//     256: not the interposer's 512-byte bound), stream-ordered pools (per device, user pools,
//     host-located pools), VMM allocations with references and mappings, host-located ones, and
//     graph memory (allocation and free nodes, mapped when a graph launches, reserved until
//     trimmed).
// Nothing executes: a launch occupies its device's timeline for the fake kernel time
// (CARVE_FAKE_KERNEL_US, default 1000); events record points on it.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <thread>
#include <unordered_map>
#include <vector>

#include "interposer/cuda_abi.h"

#define FAKE_API extern "C" __attribute__((visibility("default")))

namespace carve::fake_cuda {

using namespace carve::interposer;  // NOLINT: every name here is a CUDA one

int64_t NowNs();
void SleepUntil(int64_t t);

struct Pool {
  int device = 0;  // -1: a host-located pool
  uint64_t in_use = 0;
  uint64_t cached = 0;  // freed to the pool, still reserved until trimmed
};

struct GraphNode {
  enum class Kind { kKernel, kAlloc, kFree };
  Kind kind = Kind::kKernel;
  int64_t ns = 0;    // kKernel
  uint64_t ptr = 0;  // kAlloc, kFree
};

// A CUgraph, and the CUgraphExec instantiated from it (a copy).
struct Graph {
  std::vector<GraphNode> nodes;
};

struct Capture {
  Graph* graph = nullptr;
  int mode = kCuStreamCaptureModeGlobal;
  std::thread::id thread;
  bool invalidated = false;
  bool blocking = true;  // not on a CU_STREAM_NON_BLOCKING stream
  uint64_t id = 0;
};

struct Event {
  int64_t at = -1;        // timeline point; -1 = never recorded
  bool captured = false;  // last recorded inside a capture
};

struct GraphAllocation {
  int device = 0;
  uint64_t bytes = 0;
  bool live = false;  // mapped by a launch and not freed since
};

struct VmmAllocation {
  int device = 0;  // -1: host memory
  uint64_t bytes = 0;
  int64_t references = 1;
  int64_t mappings = 0;
};

struct Device {
  int64_t busy_until = 0;
  int64_t busy_ns = 0;
  uint64_t plain_bytes = 0;
  uint64_t vmm_bytes = 0;
  Pool default_pool;
  Pool* current_pool = nullptr;
  uint64_t graph_live = 0;
  uint64_t graph_reserved = 0;
};

struct StreamInfo {
  int device = 0;
  bool non_blocking = false;
};

struct State {
  State();

  std::mutex mu;
  int64_t kernel_ns = 1'000'000;
  uint64_t total_bytes = 80ULL << 30;
  uint64_t others_bytes = 0;  // held on every card by other processes (CARVE_FAKE_OTHERS_BYTES)
  uint64_t pitch_align = 256;
  bool proc_internal = false;     // cuGetProcAddress hands out internal entry points
  bool stream_get_device = true;  // false: cuStreamGetDevice fails like a pre-12.8 driver
  std::vector<Device> devices;    // guarded by mu
  std::vector<std::unique_ptr<Pool>> user_pools;                       // guarded by mu
  std::unordered_map<uint64_t, std::pair<int, uint64_t>> plain;        // ptr -> device, bytes; mu
  std::unordered_map<uint64_t, std::pair<Pool*, uint64_t>> pool_ptrs;  // guarded by mu
  std::unordered_map<uint64_t, GraphAllocation> graph_ptrs;            // guarded by mu
  std::unordered_map<uint64_t, VmmAllocation> vmm;                     // guarded by mu
  std::map<uint64_t, std::pair<uint64_t, uint64_t>> mappings;          // va -> size, handle; mu
  std::unordered_map<CuStream, StreamInfo> streams;                    // created; guarded by mu
  std::unordered_map<const void*, Capture> captures;                   // by stream key; mu
  uint64_t host_bytes = 0;                                             // guarded by mu
  uint64_t legacy_ops = 0;                                             // guarded by mu
  uint64_t next_address = 0x10000;                                     // guarded by mu
  uint64_t next_capture_id = 1;                                        // guarded by mu
};

State& S();

// The calling thread's current device and capture interaction mode.
int& CurrentDevice();
int& ThreadCaptureMode();

// The identity of the stream an operation names: a created stream, the legacy stream, or the
// calling thread's per-thread default stream. `per_thread_entry`: called through a _ptsz export.
const void* StreamKey(CuStream stream, bool per_thread_entry);
bool IsLegacy(const void* key);
// Requires mu. The device a stream belongs to.
int StreamDeviceLocked(CuStream stream);

// Requires mu. For a "potentially unsafe" call from this thread: CUDA_SUCCESS, or
// CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED after invalidating the capture(s) whose mode prohibits it.
CuResult CheckUnsafeLocked();
// Requires mu. For an operation on `key`: counts legacy-stream use; fails (and invalidates) when
// it is the legacy stream while a blocking stream captures. The capture on `key`, if any, or
// nullptr.
CuResult CheckStreamLocked(const void* key, Capture** capture);

// Calls f(capture) with mu held once the stream check above passed; `capture` is the capture on
// the stream, or nullptr. Returns the check's failure or f's result.
template <typename F>
CuResult WithStream(CuStream stream, bool per_thread_entry, F&& f) {
  std::lock_guard<std::mutex> lock(S().mu);
  Capture* capture = nullptr;
  const void* key = StreamKey(stream, per_thread_entry);
  if (CuResult r = CheckStreamLocked(key, &capture); r != kCudaSuccess) return r;
  return f(capture);
}
// The device a stream belongs to (takes mu).
int StreamDevice(CuStream stream);

// Requires mu. Device memory in use on `device`, every kind together.
uint64_t DeviceBytesLocked(int device);
// What the card really has free: its total less this process's bytes and the other processes'.
uint64_t CardFreeLocked(int device);
// Requires mu. A fresh device address range of `bytes`.
uint64_t NewAddressLocked(uint64_t bytes);

// Kernel time on `device`'s timeline after everything queued; returns the end time. Requires mu.
int64_t EnqueueLocked(int device, int64_t ns);
// Sleeps while `device`'s queue is full, as a real launch blocks. Called without mu.
void WaitForQueueRoom(int device);

// An export, as cuGetProcAddress finds it: `since` is the CUDA version that introduced this
// revision (cudaTypedefs.h, PFN_<base>_v<since>; 0 where the symbol has one revision); `base` is
// the name callers ask for, when it is not `name` without its _v<N>/_ptsz suffixes.
struct Entry {
  const char* name;
  void* fn;
  int since = 0;
  const char* base = nullptr;
};
std::span<const Entry> CoreEntries();     // fake_cuda.cc
std::span<const Entry> MemoryEntries();   // fake_cuda_memory.cc
std::span<const Entry> ResolveEntries();  // fake_cuda_resolve.cc

}  // namespace carve::fake_cuda
