// Real-GPU workload for tests/gpu/mgpu.sh (needs a GPU; not built by CMake).
//   mgpu_workload quota LIMIT_BYTES      cudaMalloc: the last byte fits, one more fails; then the
//                                        VMM path (cuMemCreate) the same way at granularity
//   mgpu_workload meminfo                prints cuMemGetInfo free/total
//   mgpu_workload run SECONDS MODE       MODE kernel|graph|bw: compute kernels launched one by one,
//                                        the same captured 8 to a CUDA graph, or a bandwidth
//                                        kernel; prints completed kernels per second
//   mgpu_workload latency N              host-side cost of N empty-kernel launches: median, p99
#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#define CHECK(x)                                                                        \
  do {                                                                                  \
    cudaError_t e_ = (x);                                                               \
    if (e_ != cudaSuccess) {                                                            \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      std::exit(1);                                                                     \
    }                                                                                   \
  } while (0)

__global__ void Compute(float* out, int iters) {
  float a = threadIdx.x * 1e-3f, b = 1.0001f;
  for (int i = 0; i < iters; ++i) a = a * b + 1e-7f;
  if (a == -1.0f) out[blockIdx.x] = a;  // never true; keeps the loop alive
}

__global__ void Bandwidth(const float4* in, float4* out, size_t n) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    out[i] = in[i];
  }
}

__global__ void Empty() {}

using Clock = std::chrono::steady_clock;
double Since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

int Quota(size_t limit) {
  void *a = nullptr, *b = nullptr, *c = nullptr;
  CHECK(cudaFree(nullptr));  // create the context first
  // Under the interposer cuMemGetInfo's free is the quota minus what the worker already holds
  // (the runtime may allocate during start-up); that is the room to fill to the last byte.
  size_t room = 0, total = 0;
  if (cuMemGetInfo(&room, &total) != CUDA_SUCCESS || total != limit) {
    std::printf("cuMemGetInfo total=%zu, expected the quota %zu\n", total, limit);
    return 1;
  }
  std::printf("quota %zu, already held %zu\n", limit, limit - room);
  limit = room;
  CHECK(cudaMalloc(&a, limit - 1));
  CHECK(cudaMalloc(&b, 1));
  cudaError_t over = cudaMalloc(&c, 1);
  std::printf("cudaMalloc: limit-1 ok, last byte ok, one more -> %s\n", cudaGetErrorName(over));
  if (over != cudaErrorMemoryAllocation) return 1;
  (void)cudaGetLastError();
  CHECK(cudaFree(a));
  CHECK(cudaFree(b));

  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = 0;
  size_t gran = 0;
  if (cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM) != CUDA_SUCCESS) {
    return 1;
  }
  const size_t fit = limit / gran * gran;
  CUmemGenericAllocationHandle h1 = 0, h2 = 0;
  CUresult r1 = cuMemCreate(&h1, fit, &prop, 0);
  CUresult r2 = cuMemCreate(&h2, gran, &prop, 0);
  std::printf("cuMemCreate: %zu bytes (quota rounded to %zu) -> %d, one more granule -> %d\n",
              fit, gran, r1, r2);
  if (r1 == CUDA_SUCCESS) cuMemRelease(h1);
  if (r2 == CUDA_SUCCESS) cuMemRelease(h2);
  return r1 == CUDA_SUCCESS && (fit + gran > limit ? r2 == CUDA_ERROR_OUT_OF_MEMORY : true) ? 0 : 1;
}

int MemInfo() {
  CHECK(cudaFree(nullptr));
  size_t free_bytes = 0, total = 0;
  if (cuMemGetInfo(&free_bytes, &total) != CUDA_SUCCESS) return 1;
  std::printf("cuMemGetInfo free=%zu total=%zu\n", free_bytes, total);
  return 0;
}

int Run(double seconds, const char* mode) {
  int sms = 0;
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  float* out = nullptr;
  CHECK(cudaMalloc(&out, sizeof(float) * sms * 4));
  const size_t n = size_t{64} << 20;  // 1 GiB of float4 in, 1 GiB out
  float4 *in = nullptr, *dst = nullptr;
  const bool bw = std::strcmp(mode, "bw") == 0;
  if (bw) {
    CHECK(cudaMalloc(&in, n * sizeof(float4)));
    CHECK(cudaMalloc(&dst, n * sizeof(float4)));
  }
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  const int iters = 20000;  // about 1 ms per compute kernel on an H100/H200-class part
  cudaGraphExec_t exec = nullptr;
  const int per_graph = 8;
  if (std::strcmp(mode, "graph") == 0) {
    cudaGraph_t g;
    CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    for (int i = 0; i < per_graph; ++i) Compute<<<sms * 4, 256, 0, s>>>(out, iters);
    CHECK(cudaStreamEndCapture(s, &g));
    CHECK(cudaGraphInstantiate(&exec, g, 0));
  }
  long kernels = 0;
  const auto start = Clock::now();
  while (Since(start) < seconds) {
    if (exec != nullptr) {
      CHECK(cudaGraphLaunch(exec, s));
      kernels += per_graph;
    } else if (bw) {
      Bandwidth<<<sms * 8, 512, 0, s>>>(in, dst, n);
      ++kernels;
    } else {
      Compute<<<sms * 4, 256, 0, s>>>(out, iters);
      ++kernels;
    }
  }
  CHECK(cudaStreamSynchronize(s));
  const double wall = Since(start);
  std::printf("mode=%s kernels=%ld wall_s=%.3f kernels_per_s=%.1f", mode, kernels, wall,
              kernels / wall);
  if (bw) std::printf(" GB_per_s=%.1f", kernels * 2.0 * n * sizeof(float4) / wall / 1e9);
  std::printf("\n");
  return 0;
}

int Latency(int n) {
  CHECK(cudaFree(nullptr));
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  std::vector<double> ns;
  ns.reserve(n);
  for (int i = 0; i < n + 1000; ++i) {
    auto t0 = Clock::now();
    Empty<<<1, 32, 0, s>>>();
    auto t1 = Clock::now();
    if (i >= 1000) ns.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count());
    if (i % 256 == 255) CHECK(cudaStreamSynchronize(s));  // keep the queue from filling
  }
  CHECK(cudaStreamSynchronize(s));
  std::sort(ns.begin(), ns.end());
  std::printf("launch_ns median=%.0f p99=%.0f\n", ns[ns.size() / 2], ns[ns.size() * 99 / 100]);
  return 0;
}

int main(int argc, char** argv) {
  if (argc == 3 && std::strcmp(argv[1], "quota") == 0) return Quota(std::strtoull(argv[2], 0, 10));
  if (argc == 2 && std::strcmp(argv[1], "meminfo") == 0) return MemInfo();
  if (argc == 4 && std::strcmp(argv[1], "run") == 0) return Run(std::atof(argv[2]), argv[3]);
  if (argc == 3 && std::strcmp(argv[1], "latency") == 0) return Latency(std::atoi(argv[2]));
  std::fprintf(stderr, "usage: see the header of mgpu_workload.cu\n");
  return 2;
}
