// device_check's entry: one mode per invocation (device_check.h).
#include <cstring>
#include <string>

#include "device_check.h"

int main(int argc, char** argv) {
  using namespace device_check;  // NOLINT: a test program
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "quota-malloc") return QuotaMalloc();
  if (mode == "quota-async-free") return QuotaAsyncFree();
  if (mode == "quota-vmm") return QuotaVmm();
  if (mode == "quota-host") return QuotaHost();
  if (mode == "quota-graph") return QuotaGraph();
  if (mode == "meminfo" && argc == 3) return MemInfo(std::strtoull(argv[2], nullptr, 10));
  if (mode == "run" && argc == 3) return Run(std::atof(argv[2]));
  if (mode == "capture-elsewhere" && argc == 3) return CaptureElsewhere(std::atof(argv[2]));
  if (mode == "identity") return Identity();
  if (mode == "latency" && argc == 3) return Latency(std::atoi(argv[2]));
  std::fprintf(stderr, "usage: device_check MODE [ARGS]; the modes are in device_check.h\n");
  return 2;
}
