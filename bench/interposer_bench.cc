// Added latency of an interposed cuLaunchKernel over a direct call into the driver (the fake
// libcuda.so.1, whose own launch is a clock read and a mutex). Each scenario runs in its own
// process (the interposer reads its configuration when it is loaded):
//   passthrough  the library is loaded but the process is no worker
//   quota        a worker with a memory quota, core 100% (limiter off): the usual fast path
//   limiter      a worker at core 99%: events around every launch, never throttled
// Every call is timed alone (two clock reads); the same timing wraps the direct calls, so the
// clock's cost cancels in the difference (the clock ticks in ~10 ns steps on some VMs). Prints
// median and p99 per path and their difference.
#include <dlfcn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "interposer/cuda_abi.h"

using carve::interposer::PfnLaunchKernel;

namespace {

constexpr int kSamples = 200'000;
constexpr int kRounds = 10;

struct Stats {
  double median_ns;
  double p99_ns;
};

Stats Measure(PfnLaunchKernel launch, std::vector<double>& samples) {
  samples.clear();
  for (int i = 0; i < kSamples; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    launch(nullptr, 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr, nullptr);
    auto t1 = std::chrono::steady_clock::now();
    samples.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count());
  }
  std::sort(samples.begin(), samples.end());
  return {samples[samples.size() / 2], samples[samples.size() * 99 / 100]};
}

int RunScenario(const char* name) {
  void* fake = dlopen(CARVE_FAKE_CUDA, RTLD_NOW | RTLD_GLOBAL);
  void* mgpu = dlopen(CARVE_MGPU_LIB, RTLD_NOW | RTLD_LOCAL);
  if (fake == nullptr || mgpu == nullptr) {
    std::fprintf(stderr, "interposer_bench: %s\n", dlerror());
    return 1;
  }
  auto set_kernel_ns = reinterpret_cast<void (*)(int64_t)>(dlsym(fake, "carveFakeSetKernelNs"));
  set_kernel_ns(1);  // 1 ns fake kernels: the queue never fills and a 99% share never throttles
  auto direct = reinterpret_cast<PfnLaunchKernel>(dlsym(fake, "cuLaunchKernel"));
  auto interposed = reinterpret_cast<PfnLaunchKernel>(dlsym(mgpu, "cuLaunchKernel"));
  std::vector<double> samples;
  samples.reserve(kSamples);
  Measure(interposed, samples);  // warm up: runtime creation, first measurement
  std::vector<Stats> d, i;
  for (int r = 0; r < kRounds; ++r) {  // alternate to share drift and frequency changes
    d.push_back(Measure(direct, samples));
    i.push_back(Measure(interposed, samples));
  }
  auto mid = [](std::vector<Stats> v, double Stats::*f) {
    std::sort(v.begin(), v.end(), [f](const Stats& a, const Stats& b) { return a.*f < b.*f; });
    return v[v.size() / 2].*f;
  };
  const double dm = mid(d, &Stats::median_ns), dp = mid(d, &Stats::p99_ns);
  const double im = mid(i, &Stats::median_ns), ip = mid(i, &Stats::p99_ns);
  std::printf("%-12s direct median %5.0f p99 %5.0f | interposed median %5.0f p99 %5.0f"
              " | added median %4.0f p99 %4.0f (ns, median of %d rounds of %d calls)\n",
              name, dm, dp, im, ip, im - dm, ip - dp, kRounds, kSamples);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 2) return RunScenario(argv[1]);
  char dir[] = "/tmp/carve-bench-XXXXXX";
  if (mkdtemp(dir) == nullptr) return 1;
  struct Scenario {
    const char* name;
    const char* core;  // nullptr: no ledger
  };
  const Scenario scenarios[] = {{"passthrough", nullptr}, {"quota", "100"}, {"limiter", "99"}};
  int failures = 0;
  for (const Scenario& s : scenarios) {
    std::string ledger = std::string(dir) + "/" + s.name + ".ledger";
    pid_t pid = fork();
    if (pid == 0) {
      if (s.core != nullptr) {
        std::string cmd = std::string(CARVE_MGPU_LEDGER_TOOL) + " create " + ledger + " bench " +
                          std::to_string(80ULL << 30) + " " + s.core + " 100";
        if (std::system(cmd.c_str()) != 0) _exit(1);
        setenv("CARVE_MGPU_LEDGER", ledger.c_str(), 1);
      }
      execl(argv[0], argv[0], s.name, static_cast<char*>(nullptr));
      _exit(127);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    failures += !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    unlink(ledger.c_str());
  }
  rmdir(dir);
  return failures == 0 ? 0 : 1;
}
