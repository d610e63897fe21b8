// A test double for libnvidia-ml.so.1: the two memory queries the interposer virtualizes, for a
// card of CARVE_FAKE_TOTAL_BYTES (default 80 GiB) with 1 GiB in use by others.
#include <cstdlib>

#include "interposer/cuda_abi.h"

using carve::interposer::NvmlDevice;
using carve::interposer::NvmlMemory;
using carve::interposer::NvmlMemoryV2;
using carve::interposer::NvmlReturn;

namespace {

unsigned long long Total() {
  const char* v = std::getenv("CARVE_FAKE_TOTAL_BYTES");
  return v != nullptr ? std::strtoull(v, nullptr, 10) : 80ULL << 30;
}
constexpr unsigned long long kUsedByOthers = 1ULL << 30;

}  // namespace

extern "C" __attribute__((visibility("default"))) NvmlReturn nvmlDeviceGetMemoryInfo(
    NvmlDevice, NvmlMemory* m) {
  m->total = Total();
  m->used = kUsedByOthers;
  m->free = m->total - m->used;
  return 0;
}

extern "C" __attribute__((visibility("default"))) NvmlReturn nvmlDeviceGetMemoryInfo_v2(
    NvmlDevice, NvmlMemoryV2* m) {
  m->total = Total();
  m->reserved = 512ULL << 20;
  m->used = kUsedByOthers;
  m->free = m->total - m->used - m->reserved;
  return 0;
}
