// Memory hooks for plain allocations, pitched allocations, managed memory and arrays: every
// device allocation is admitted by the ledger before the driver sees it, and every free returns
// what was charged. The stream-ordered and graph paths are in hooks_pool.cc, VMM in
// hooks_vmm.cc. Each hook is noexcept: Guard turns a stray exception into CUDA_ERROR_UNKNOWN at
// the C boundary.
#include <algorithm>

#include "interposer/array_size.h"
#include "interposer/shell/hook_support.h"

namespace carve::interposer::shell {
namespace {

CuResult Legacy32BitAlloc() {
  // The CUDA <= 3.1 ABI (32-bit pointers and sizes). Refused for workers rather than left as a
  // blind spot; no toolkit since CUDA 3.2 emits calls to it.
  return ToCuResult(Unimplemented("32-bit legacy allocation entry points are not supported"));
}

// What a worker is told its device holds: the quota, bounded by the card.
uint64_t VirtualTotal(Runtime& rt, uint64_t card_total) {
  return std::min<uint64_t>(rt.account->LimitBytes(), card_total);
}

}  // namespace
}  // namespace carve::interposer::shell

using namespace carve;                     // NOLINT: C ABI shell
using namespace carve::interposer;         // NOLINT
using namespace carve::interposer::shell;  // NOLINT

CARVE_EXPORT CuResult cuMemAlloc_v2(CuDevicePtr* dptr, size_t bytes) {
  return Guard([&] {
    return Charged(bytes, AllocationKind::kDevicePointer, [&] {
      CuResult r = CallReal<PfnMemAlloc>(Fn::k_cuMemAlloc_v2, dptr, bytes);
      return std::pair{r, r == kCudaSuccess ? *dptr : 0};
    });
  });
}

CARVE_EXPORT CuResult cuMemAllocManaged(CuDevicePtr* dptr, size_t bytes, unsigned int flags) {
  return Guard([&] {
    return Charged(bytes, AllocationKind::kDevicePointer, [&] {
      CuResult r = CallReal<PfnMemAllocManaged>(Fn::k_cuMemAllocManaged, dptr, bytes, flags);
      return std::pair{r, r == kCudaSuccess ? *dptr : 0};
    });
  });
}

// The driver picks the pitch, so admit an upper bound (rows padded to 512 bytes, beyond any
// texture pitch alignment), then settle to pitch x height once it is known.
CARVE_EXPORT CuResult cuMemAllocPitch_v2(CuDevicePtr* dptr, size_t* pitch, size_t width,
                                         size_t height, unsigned int element_size) {
  return Guard([&]() -> CuResult {
    auto real = Real<PfnMemAllocPitch>(Fn::k_cuMemAllocPitch_v2);
    Runtime* rt = GetRuntime();
    if (rt == nullptr) return real(dptr, pitch, width, height, element_size);
    uint64_t bound = 0;
    if (__builtin_mul_overflow((width + 511) / 512 * 512, height, &bound)) {
      return ToCuResult(InvalidArgument("pitched allocation size overflows 64 bits"));
    }
    CuResult r = Charged(bound, AllocationKind::kDevicePointer, [&] {
      CuResult rr = real(dptr, pitch, width, height, element_size);
      return std::pair{rr, rr == kCudaSuccess ? *dptr : 0};
    });
    if (r != kCudaSuccess) return r;
    Status s =
        rt->account->Resize(AllocationKind::kDevicePointer, *dptr, uint64_t{*pitch} * height);
    if (!s.ok()) {  // a driver pitch beyond the bound that the quota cannot cover: undo
      CallReal<PfnMemFree>(Fn::k_cuMemFree_v2, *dptr);
      rt->account->Forget(AllocationKind::kDevicePointer, *dptr);
      return ToCuResult(s);
    }
    return r;
  });
}

// cuda.h cuMemFree: dptr "must have been returned by a previous call to one of the following
// memory allocation APIs - cuMemAlloc(), cuMemAllocPitch(), cuMemAllocManaged(),
// cuMemAllocAsync(), cuMemAllocFromPoolAsync()"; a stream-ordered allocation freed this way goes
// back to its pool (graph allocations to the graph pool), exactly as with cuMemFreeAsync.
CARVE_EXPORT CuResult cuMemFree_v2(CuDevicePtr dptr) {
  return Guard([&] {
    CuResult r = CallReal<PfnMemFree>(Fn::k_cuMemFree_v2, dptr);
    Runtime* rt = GetRuntime();
    if (r == kCudaSuccess && rt != nullptr && rt->account != nullptr &&
        rt->account->Forget(AllocationKind::kDevicePointer, dptr) == 0) {
      (void)rt->account->ForgetToPool(dptr);
    }
    return r;
  });
}

CARVE_EXPORT CuResult cuArrayCreate_v2(CuArray* array, const CuArrayDescriptor* desc) {
  return Guard([&]() -> CuResult {
    auto real = Real<PfnArrayCreate>(Fn::k_cuArrayCreate_v2);
    if (GetRuntime() == nullptr || desc == nullptr) return real(array, desc);
    Result<uint64_t> bytes = ArrayBytes(*desc);
    if (!bytes) return ToCuResult(bytes.error());
    return Charged(*bytes, AllocationKind::kArray, [&] {
      CuResult r = real(array, desc);
      return std::pair{r, r == kCudaSuccess ? reinterpret_cast<uint64_t>(*array) : 0};
    });
  });
}
CARVE_EXPORT CuResult cuArray3DCreate_v2(CuArray* array, const CuArray3DDescriptor* desc) {
  return Guard([&]() -> CuResult {
    auto real = Real<PfnArray3DCreate>(Fn::k_cuArray3DCreate_v2);
    if (GetRuntime() == nullptr || desc == nullptr) return real(array, desc);
    Result<uint64_t> bytes = Array3DBytes(*desc);
    if (!bytes) return ToCuResult(bytes.error());
    return Charged(*bytes, AllocationKind::kArray, [&] {
      CuResult r = real(array, desc);
      return std::pair{r, r == kCudaSuccess ? reinterpret_cast<uint64_t>(*array) : 0};
    });
  });
}
CARVE_EXPORT CuResult cuArrayDestroy(CuArray array) {
  return Guard([&] {
    return Released(AllocationKind::kArray, reinterpret_cast<uint64_t>(array),
                    [&] { return CallReal<PfnArrayDestroy>(Fn::k_cuArrayDestroy, array); });
  });
}
CARVE_EXPORT CuResult cuMipmappedArrayCreate(CuMipmappedArray* array,
                                             const CuArray3DDescriptor* desc, unsigned int levels) {
  return Guard([&]() -> CuResult {
    auto real = Real<PfnMipmappedArrayCreate>(Fn::k_cuMipmappedArrayCreate);
    if (GetRuntime() == nullptr || desc == nullptr) return real(array, desc, levels);
    Result<uint64_t> bytes = MipmappedArrayBytes(*desc, levels);
    if (!bytes) return ToCuResult(bytes.error());
    return Charged(*bytes, AllocationKind::kMipmappedArray, [&] {
      CuResult r = real(array, desc, levels);
      return std::pair{r, r == kCudaSuccess ? reinterpret_cast<uint64_t>(*array) : 0};
    });
  });
}
CARVE_EXPORT CuResult cuMipmappedArrayDestroy(CuMipmappedArray array) {
  return Guard([&] {
    return Released(AllocationKind::kMipmappedArray, reinterpret_cast<uint64_t>(array), [&] {
      return CallReal<PfnMipmappedArrayDestroy>(Fn::k_cuMipmappedArrayDestroy, array);
    });
  });
}

// cuMemGetInfo reports the share: total = quota (bounded by the card), free = total - what the
// worker's processes hold (bounded by what the card really has free).
CARVE_EXPORT CuResult cuMemGetInfo_v2(size_t* free_bytes, size_t* total) {
  return Guard([&] {
    CuResult r = CallReal<PfnMemGetInfo>(Fn::k_cuMemGetInfo_v2, free_bytes, total);
    Runtime* rt = GetRuntime();
    if (r != kCudaSuccess || rt == nullptr || rt->account == nullptr) return r;
    const uint64_t quota = VirtualTotal(*rt, *total);
    const uint64_t used = rt->account->LedgerUsedBytes();
    *total = quota;
    *free_bytes = std::min<uint64_t>(quota > used ? quota - used : 0, *free_bytes);
    return r;
  });
}

CARVE_EXPORT CuResult cuMemGetInfo(unsigned int* free_bytes, unsigned int* total) {
  return Guard([&] {
    size_t f = 0;
    size_t t = 0;
    CuResult r = cuMemGetInfo_v2(&f, &t);
    if (r != kCudaSuccess) return r;
    *free_bytes = static_cast<unsigned int>(std::min<size_t>(f, 0xFFFFFFFFu));
    *total = static_cast<unsigned int>(std::min<size_t>(t, 0xFFFFFFFFu));
    return r;
  });
}

// cuDeviceTotalMem is what frameworks read as the device's size (PyTorch's
// torch.cuda.get_device_properties().total_memory, vLLM's memory profiling): the share, like
// cuMemGetInfo's total.
CARVE_EXPORT CuResult cuDeviceTotalMem_v2(size_t* bytes, CuDevice dev) {
  return Guard([&] {
    CuResult r = CallReal<PfnDeviceTotalMem>(Fn::k_cuDeviceTotalMem_v2, bytes, dev);
    Runtime* rt = GetRuntime();
    if (r == kCudaSuccess && rt != nullptr && rt->account != nullptr) {
      *bytes = VirtualTotal(*rt, *bytes);
    }
    return r;
  });
}

CARVE_EXPORT CuResult cuDeviceTotalMem(unsigned int* bytes, CuDevice dev) {
  using Pfn = CuResult (*)(unsigned int*, CuDevice);
  return Guard([&] {
    if (GetRuntime() == nullptr) return CallReal<Pfn>(Fn::k_cuDeviceTotalMem, bytes, dev);
    size_t total = 0;
    CuResult r = cuDeviceTotalMem_v2(&total, dev);
    if (r == kCudaSuccess) *bytes = static_cast<unsigned int>(std::min<size_t>(total, 0xFFFFFFFFu));
    return r;
  });
}

// 32-bit legacy entry points: pass through for non-workers, refused for workers.
CARVE_EXPORT CuResult cuMemAlloc(unsigned int* dptr, unsigned int bytes) {
  using Pfn = CuResult (*)(unsigned int*, unsigned int);
  if (GetRuntime() == nullptr) return Real<Pfn>(Fn::k_cuMemAlloc)(dptr, bytes);
  return Legacy32BitAlloc();
}
CARVE_EXPORT CuResult cuMemAllocPitch(unsigned int* dptr, unsigned int* pitch, unsigned int w,
                                      unsigned int h, unsigned int e) {
  using Pfn = CuResult (*)(unsigned int*, unsigned int*, unsigned int, unsigned int, unsigned int);
  if (GetRuntime() == nullptr) return Real<Pfn>(Fn::k_cuMemAllocPitch)(dptr, pitch, w, h, e);
  return Legacy32BitAlloc();
}
CARVE_EXPORT CuResult cuArrayCreate(CuArray* array, const void* desc) {
  using Pfn = CuResult (*)(CuArray*, const void*);
  if (GetRuntime() == nullptr) return Real<Pfn>(Fn::k_cuArrayCreate)(array, desc);
  return Legacy32BitAlloc();
}
CARVE_EXPORT CuResult cuArray3DCreate(CuArray* array, const void* desc) {
  using Pfn = CuResult (*)(CuArray*, const void*);
  if (GetRuntime() == nullptr) return Real<Pfn>(Fn::k_cuArray3DCreate)(array, desc);
  return Legacy32BitAlloc();
}
