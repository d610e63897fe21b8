// device_check's compute and resolution modes (device_check.h).
#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <thread>
#include <vector>

#include "device_check.h"

namespace device_check {
namespace {

// Occupies one SM for `cycles` clock cycles: a kernel whose length does not depend on the part.
__global__ void Spin(long long cycles) {
  const long long start = clock64();
  while (clock64() - start < cycles) {
  }
}

__global__ void Empty() {}

// About 2 ms on an H200 (1.98 GHz boost), like the fake driver's kernels in the CPU tests.
constexpr long long kSpinCycles = 4'000'000;

// Whether `fn` lies in libcarve-mgpu.so.
bool InInterposer(void* fn) {
  Dl_info info{};
  return fn != nullptr && dladdr(fn, &info) != 0 && info.dli_fname != nullptr &&
         std::strstr(info.dli_fname, "libcarve-mgpu") != nullptr;
}

}  // namespace

int Run(double seconds) {
  DC_CHECK(cudaFree(nullptr));
  cudaStream_t s;
  DC_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  Spin<<<1, 32, 0, s>>>(kSpinCycles);  // load the module before timing
  DC_CHECK(cudaStreamSynchronize(s));
  cudaEvent_t a, b;
  DC_CHECK(cudaEventCreate(&a));
  DC_CHECK(cudaEventCreate(&b));
  DC_CHECK(cudaEventRecord(a, s));
  Spin<<<1, 32, 0, s>>>(kSpinCycles);
  DC_CHECK(cudaEventRecord(b, s));
  DC_CHECK(cudaEventSynchronize(b));
  float kernel_ms = 0;
  DC_CHECK(cudaEventElapsedTime(&kernel_ms, a, b));
  long kernels = 0;
  const auto start = Clock::now();
  while (Since(start) < seconds) {
    Spin<<<1, 32, 0, s>>>(kSpinCycles);
    ++kernels;
  }
  DC_CHECK(cudaStreamSynchronize(s));
  const double wall = Since(start);
  std::printf("kernels=%ld wall_s=%.3f kernels_per_s=%.2f kernel_ms=%.3f busy_fraction=%.4f\n",
              kernels, wall, kernels / wall, kernel_ms, kernels * kernel_ms / 1e3 / wall);
  return kPass;
}

// torch.cuda.graph captures in global mode; the interposer polls its timing events from
// whichever thread launches. That must not invalidate the capture.
int CaptureElsewhere(double seconds) {
  DC_CHECK(cudaFree(nullptr));
  cudaStream_t mine, theirs;
  DC_CHECK(cudaStreamCreateWithFlags(&mine, cudaStreamNonBlocking));
  DC_CHECK(cudaStreamCreateWithFlags(&theirs, cudaStreamNonBlocking));
  Spin<<<1, 32, 0, mine>>>(1000);  // lazy module loading must not happen during the capture
  DC_CHECK(cudaStreamSynchronize(mine));
  std::atomic<int> phase{0};
  cudaError_t ended = cudaErrorUnknown;
  std::thread capturer([&] {
    DC_CHECK(cudaStreamBeginCapture(theirs, cudaStreamCaptureModeGlobal));
    Spin<<<1, 32, 0, theirs>>>(1000);
    phase = 1;
    while (phase.load() != 2) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    cudaGraph_t g = nullptr;
    ended = cudaStreamEndCapture(theirs, &g);
    if (g != nullptr) cudaGraphDestroy(g);
  });
  while (phase.load() != 1) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  long kernels = 0;
  const auto start = Clock::now();
  while (Since(start) < seconds) {
    Spin<<<1, 32, 0, mine>>>(kSpinCycles);
    ++kernels;
  }
  phase = 2;
  capturer.join();
  DC_CHECK(cudaStreamSynchronize(mine));  // the capture has ended: no longer prohibited
  std::printf("capture=%s kernels=%ld wall_s=%.3f\n", cudaGetErrorName(ended), kernels,
              Since(start));
  return ended == cudaSuccess ? kPass : kFail;
}

// The address cuGetProcAddress and the runtime's cudaGetDriverEntryPointByVersion hand out is carve's
// hook, for the symbols the quota and the limiter depend on.
int Identity() {
  DC_CHECK(cudaFree(nullptr));
  const char* symbols[] = {"cuMemAlloc", "cuMemAllocAsync", "cuMemFree", "cuMemCreate",
                           "cuMemRelease", "cuLaunchKernel", "cuLaunchKernelEx", "cuGraphLaunch",
                           "cuGraphAddMemAllocNode"};
  int driver = 0;
  DC_CU(cuDriverGetVersion(&driver));
  int ok = 0, total = 0;
  std::printf("driver_api=%d", driver);
  for (const char* sym : symbols) {
    void* via_driver = nullptr;
    CUdriverProcAddressQueryResult q1{};
    (void)cuGetProcAddress(sym, &via_driver, 12000, CU_GET_PROC_ADDRESS_DEFAULT, &q1);
    void* via_runtime = nullptr;
    cudaDriverEntryPointQueryResult q2{};
    (void)cudaGetDriverEntryPointByVersion(sym, &via_runtime, CUDART_VERSION, cudaEnableDefault,
                                           &q2);
    const bool hooked = InInterposer(via_driver) && InInterposer(via_runtime);
    std::printf(" %s=%s", sym, hooked ? "hook" : "NOT-HOOKED");
    ok += hooked ? 1 : 0;
    ++total;
  }
  std::printf(" hooked=%d/%d\n", ok, total);
  return ok == total ? kPass : kFail;
}

int Latency(int n) {
  DC_CHECK(cudaFree(nullptr));
  cudaStream_t s;
  DC_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  std::vector<double> ns;
  ns.reserve(n);
  for (int i = 0; i < n + 1000; ++i) {
    const auto t0 = Clock::now();
    Empty<<<1, 32, 0, s>>>();
    const auto t1 = Clock::now();
    if (i >= 1000) ns.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count());
    if (i % 256 == 255) DC_CHECK(cudaStreamSynchronize(s));  // keep the queue from filling
  }
  DC_CHECK(cudaStreamSynchronize(s));
  std::sort(ns.begin(), ns.end());
  std::printf("median_ns=%.0f p99_ns=%.0f launches=%d\n", ns[ns.size() / 2],
              ns[ns.size() * 99 / 100], n);
  return kPass;
}

}  // namespace device_check
