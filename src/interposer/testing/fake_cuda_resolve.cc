// cuGetProcAddress of the fake libcuda.so.1, like the real driver's: the caller names a base
// symbol, a CUDA version and whether it wants per-thread default-stream semantics, and gets the
// newest revision of that symbol no newer than the version it was built for (cudaTypedefs.h,
// PFN_<base>_v<version>). With CARVE_FAKE_PROC_INTERNAL=1 it hands out internal entry points (a
// jump stub per export) instead of the exported addresses, as a driver may: then no pointer it
// returns equals what dlsym finds, and the interposer has to recognise the symbol by name.
#include <string>
#include <string_view>
#include <vector>

#include "interposer/testing/fake_cuda_state.h"

namespace carve::fake_cuda {

constexpr int kMaxStubs = 256;
extern "C" __attribute__((visibility("hidden"))) void* carve_fake_stub_targets[kMaxStubs];
void* carve_fake_stub_targets[kMaxStubs];
extern "C" __attribute__((visibility("hidden"))) char carve_fake_stubs[];

// kMaxStubs jump stubs, 16 bytes apart: stub i jumps to carve_fake_stub_targets[i].
#if defined(__x86_64__)
__asm__(R"(
  .text
  .p2align 4
carve_fake_stubs:
  .set carve_fake_i, 0
  .rept 256
  .p2align 4
  jmp *(carve_fake_stub_targets + 8 * carve_fake_i)(%rip)
  .set carve_fake_i, carve_fake_i + 1
  .endr
)");
#elif defined(__aarch64__)
__asm__(R"(
  .text
  .p2align 4
carve_fake_stubs:
  .set carve_fake_i, 0
  .rept 256
  .p2align 4
  adrp x16, carve_fake_stub_targets + 8 * carve_fake_i
  ldr x16, [x16, :lo12:carve_fake_stub_targets + 8 * carve_fake_i]
  br x16
  .set carve_fake_i, carve_fake_i + 1
  .endr
)");
#endif

namespace {

struct Export {
  Entry entry;
  std::string base;
  bool per_thread;
  void* internal;
};

std::string BaseOf(std::string_view name) {
  for (std::string_view suffix : {"_ptsz", "_ptds"}) {
    if (name.ends_with(suffix)) name.remove_suffix(suffix.size());
  }
  if (size_t v = name.rfind("_v"); v != std::string_view::npos && v + 2 < name.size() &&
                                   name.find_first_not_of("0123456789", v + 2) == name.npos) {
    name = name.substr(0, v);
  }
  return std::string(name);
}

const std::vector<Export>& Exports() {
  static const std::vector<Export>* exports = [] {
    auto* v = new std::vector<Export>();
    for (auto part : {CoreEntries(), MemoryEntries(), ResolveEntries()}) {
      for (const Entry& e : part) {
        const std::string_view name = e.name;
        const int i = static_cast<int>(v->size());
        carve_fake_stub_targets[i] = e.fn;
        v->push_back({e, e.base != nullptr ? e.base : BaseOf(name),
                      name.ends_with("_ptsz") || name.ends_with("_ptds"),
                      carve_fake_stubs + 16 * i});
      }
    }
    return v;
  }();
  return *exports;
}

}  // namespace
}  // namespace carve::fake_cuda

using namespace carve::fake_cuda;  // NOLINT: a C ABI shim

FAKE_API CuResult cuGetProcAddress_v2(const char* symbol, void** pfn, int version, CuUint64 flags,
                                      int* status);
FAKE_API CuResult cuGetProcAddress(const char* symbol, void** pfn, int version, CuUint64 flags);

std::span<const Entry> carve::fake_cuda::ResolveEntries() {
  static const Entry entries[] = {
      {"cuGetProcAddress", reinterpret_cast<void*>(&cuGetProcAddress), 11030},
      {"cuGetProcAddress_v2", reinterpret_cast<void*>(&cuGetProcAddress_v2), 12000},
  };
  return entries;
}

namespace {

const Export* Select(const char* symbol, int version, bool per_thread) {
  const Export* plain = nullptr;
  const Export* threaded = nullptr;
  for (const Export& e : Exports()) {
    if (e.base != symbol || e.entry.since > version) continue;
    const Export*& best = e.per_thread ? threaded : plain;
    if (best == nullptr || e.entry.since > best->entry.since) best = &e;
  }
  return per_thread && threaded != nullptr ? threaded : plain;
}

void* Resolve(const char* symbol, int version, CuUint64 flags) {
  const Export* e = Select(symbol, version, (flags & kCuGetProcAddressPerThreadDefaultStream) != 0);
  if (e == nullptr) return nullptr;
  return S().proc_internal ? e->internal : e->entry.fn;
}

}  // namespace

FAKE_API CuResult cuGetProcAddress_v2(const char* symbol, void** pfn, int version, CuUint64 flags,
                                      int* status) {
  *pfn = symbol == nullptr ? nullptr : Resolve(symbol, version, flags);
  if (status != nullptr) *status = *pfn != nullptr ? kCuGetProcAddressSuccess : 1;
  return *pfn != nullptr ? kCudaSuccess : kCudaErrorNotFound;  // 1: SYMBOL_NOT_FOUND
}
FAKE_API CuResult cuGetProcAddress(const char* symbol, void** pfn, int version, CuUint64 flags) {
  return cuGetProcAddress_v2(symbol, pfn, version, flags, nullptr);
}
