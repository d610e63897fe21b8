// The CUDA program tests/gpu/device-check.sh runs on a GPU host, one check per invocation:
//   device_check MODE [ARGS]
// Memory (device_check_memory.cu), each against the quota the worker's ledger sets:
//   quota-malloc        cudaMalloc to the last byte of the room cuMemGetInfo reports, one more fails
//   quota-async-free    cudaMallocAsync freed with cudaFree leaves no charge behind
//   quota-vmm           cuMemCreate at granularity; NCCL's retain/release/unmap/release order
//   quota-host          host-located cuMemCreate (HOST_NUMA, else HOST) beyond the quota succeeds
//   quota-graph         a captured cudaMallocAsync and a cudaGraphAddMemAllocNode are charged
//                       while their graph lives, and released once it is gone
//   meminfo QUOTA       cuMemGetInfo, cuDeviceTotalMem and NVML's memory total report the share
// Compute and resolution (device_check_compute.cu):
//   run SECONDS         spin kernels back to back on one stream; kernels per second
//   capture-elsewhere SECONDS
//                       a global-mode capture on one thread while this one launches: the capture
//                       must end valid
//   identity            cuGetProcAddress and cudaGetDriverEntryPointByVersion hand out
//                       libcarve-mgpu.so's hooks
//   latency N           host-side time of N empty-kernel launches, median and p99
// Every mode prints one line of key=value pairs. Exit status: 0 the check passed, 1 it failed,
// 77 the driver or device cannot do what the check needs (a skip, with the reason printed).
#pragma once

#include <cuda.h>
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

namespace device_check {

constexpr int kPass = 0;
constexpr int kFail = 1;
constexpr int kUnsupported = 77;

#define DC_CHECK(x)                                                                       \
  do {                                                                                    \
    cudaError_t e_ = (x);                                                                 \
    if (e_ != cudaSuccess) {                                                              \
      std::printf("error=%s at=%s:%d call=%s\n", cudaGetErrorName(e_), __FILE__, __LINE__, \
                  #x);                                                                    \
      std::exit(device_check::kFail);                                                     \
    }                                                                                     \
  } while (0)

#define DC_CU(x)                                                                           \
  do {                                                                                     \
    CUresult r_ = (x);                                                                     \
    if (r_ != CUDA_SUCCESS) {                                                              \
      const char* n_ = nullptr;                                                            \
      cuGetErrorName(r_, &n_);                                                             \
      std::printf("error=%s at=%s:%d call=%s\n", n_ ? n_ : "?", __FILE__, __LINE__, #x);   \
      std::exit(device_check::kFail);                                                      \
    }                                                                                      \
  } while (0)

using Clock = std::chrono::steady_clock;
inline double Since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// Creates the context and returns the room the worker has: what cuMemGetInfo calls free (the
// quota less what the worker already holds, e.g. the runtime's own start-up allocations).
size_t Room();

int QuotaMalloc();
int QuotaAsyncFree();
int QuotaVmm();
int QuotaHost();
int QuotaGraph();
int MemInfo(size_t quota);
int Run(double seconds);
int CaptureElsewhere(double seconds);
int Identity();
int Latency(int n);

}  // namespace device_check
