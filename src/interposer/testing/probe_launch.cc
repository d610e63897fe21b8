// mgpu_probe's launch actions: busy time under the compute limiter, on every launch path, and
// while another thread captures a graph.
#include <atomic>
#include <chrono>
#include <thread>

#include "interposer/testing/probe_api.h"

namespace carve::interposer::probe {
namespace {

double Seconds(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

// A graph of four kernels, captured on a stream of its own.
CuGraphExec FourKernelGraph(const Api& api) {
  CuStream s = nullptr;
  CHECK_EQ(api.stream_create(&s, 0), kCudaSuccess);
  CHECK_EQ(api.begin_capture(s, kCuStreamCaptureModeGlobal), kCudaSuccess);
  for (int i = 0; i < 4; ++i) {
    CHECK_EQ(api.launch_kernel(nullptr, 1, 1, 1, 1, 1, 1, 0, s, nullptr, nullptr), kCudaSuccess);
  }
  CuGraph g = nullptr;
  CHECK_EQ(api.end_capture(s, &g), kCudaSuccess);
  CuGraphExec exec = nullptr;
  CHECK_EQ(api.instantiate(&exec, g, 0), kCudaSuccess);
  CHECK_EQ(api.graph_destroy(g), kCudaSuccess);  // The exec keeps what it needs.
  return exec;
}

struct Measured {
  double busy_fraction = 0;
  long launches = 0;
  double wall_s = 0;
};

// Launches `kind` on `stream` (NULL: the default stream of the entry point's kind) until
// `seconds` have passed; busy time over wall time, the device drained.
Measured Run(const Api& api, double seconds, const std::string& kind, CuGraphExec exec,
             CuStream stream) {
  const auto start = std::chrono::steady_clock::now();
  const int64_t busy_start = api.fake_busy_ns();
  Measured m;
  CuLaunchConfig cfg{1, 1, 1, 1, 1, 1, 0, stream, nullptr, 0};
  while (Seconds(std::chrono::steady_clock::now() - start) < seconds) {
    CuResult r = kCudaSuccess;
    if (kind == "kernel") {
      r = api.launch_kernel(nullptr, 1, 1, 1, 1, 1, 1, 0, stream, nullptr, nullptr);
    } else if (kind == "ex") {
      r = api.launch_kernel_ex(&cfg, nullptr, nullptr, nullptr);
    } else if (kind == "coop") {
      r = api.launch_cooperative_kernel(nullptr, 1, 1, 1, 1, 1, 1, 0, stream, nullptr);
    } else if (kind == "graph") {
      r = api.graph_launch(exec, stream);
    } else {
      Fail("unknown launch kind");
    }
    CHECK_EQ(r, kCudaSuccess);
    ++m.launches;
  }
  // Waits for the device without a call another thread's capture would forbid.
  int relaxed = kCuStreamCaptureModeRelaxed;
  CHECK_EQ(api.thread_exchange_capture_mode(&relaxed), kCudaSuccess);
  CHECK_EQ(api.ctx_synchronize(), kCudaSuccess);
  CHECK_EQ(api.thread_exchange_capture_mode(&relaxed), kCudaSuccess);
  m.wall_s = Seconds(std::chrono::steady_clock::now() - start);
  m.busy_fraction = static_cast<double>(api.fake_busy_ns() - busy_start) / 1e9 / m.wall_s;
  return m;
}

void Print(const Api& api, const Measured& m, const std::string& extra) {
  std::printf("busy_fraction=%.4f launches=%ld wall_s=%.3f legacy_ops=%llu%s\n", m.busy_fraction,
              m.launches, m.wall_s, static_cast<unsigned long long>(api.fake_legacy_ops()),
              extra.c_str());
}

}  // namespace

int LaunchLoop(const Api& api, double seconds, const std::string& kind) {
  CuGraphExec exec = kind == "graph" ? FourKernelGraph(api) : nullptr;
  Print(api, Run(api, seconds, kind, exec, nullptr), "");
  if (exec != nullptr) CHECK_EQ(api.graph_exec_destroy(exec), kCudaSuccess);
  return 0;
}

// Another thread holds a capture in global mode (torch.cuda.graph's default) on a stream of its
// own for the whole loop, while this thread launches: on its per-thread default stream when
// `per_thread_default`, else on a stream of its own (the legacy stream would take part in a
// blocking stream's capture). The capture must still end as a valid graph: printed as
// capture=<cuStreamEndCapture's result>.
int CaptureElsewhere(const Api& api, double seconds, const std::string& kind,
                     bool per_thread_default) {
  CuGraphExec exec = kind == "graph" ? FourKernelGraph(api) : nullptr;
  CuStream stream = nullptr;
  if (!per_thread_default) CHECK_EQ(api.stream_create(&stream, 0), kCudaSuccess);
  std::atomic<int> phase{0};
  CuResult end_result = kCudaErrorUnknown;
  std::thread capturer([&] {
    CuStream s = nullptr;
    CHECK_EQ(api.stream_create(&s, 0), kCudaSuccess);
    CHECK_EQ(api.begin_capture(s, kCuStreamCaptureModeGlobal), kCudaSuccess);
    CHECK_EQ(api.launch_kernel(nullptr, 1, 1, 1, 1, 1, 1, 0, s, nullptr, nullptr), kCudaSuccess);
    phase = 1;
    while (phase.load() != 2) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    CuGraph g = nullptr;
    end_result = api.end_capture(s, &g);
    if (g != nullptr) CHECK_EQ(api.graph_destroy(g), kCudaSuccess);
  });
  while (phase.load() != 1) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  const Measured m = Run(api, seconds, kind, exec, stream);
  phase = 2;
  capturer.join();
  Print(api, m, " capture=" + std::to_string(end_result));
  if (exec != nullptr) CHECK_EQ(api.graph_exec_destroy(exec), kCudaSuccess);
  return 0;
}

}  // namespace carve::interposer::probe
