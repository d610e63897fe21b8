// Memory hooks: every device allocation is admitted by the ledger before the driver sees it, and
// every free returns what was charged. Each hook is noexcept: Guard turns a stray exception into
// CUDA_ERROR_UNKNOWN at the C boundary.
#include "interposer/array_size.h"
#include "interposer/cuda_status.h"
#include "interposer/shell/hooks.h"

namespace carve::interposer::shell {
namespace {

template <typename F>
CuResult Guard(F&& f) noexcept {
  try {
    return f();
  } catch (...) {
    return kCudaErrorUnknown;
  }
}

// Trims every pool that holds freed-but-cached bytes and releases what the driver gave back.
void TrimPools(Runtime& rt) {
  static const auto trim = Real<PfnMemPoolTrimTo>(Fn::k_cuMemPoolTrimTo);
  static const auto get = Real<PfnMemPoolGetAttribute>(Fn::k_cuMemPoolGetAttribute);
  if (trim == nullptr || get == nullptr) return;
  for (uint64_t pool : rt.account->PoolsWithCache()) {
    auto handle = reinterpret_cast<CuMemoryPool>(pool);
    CuUint64 reserved = 0;
    if (trim(handle, 0) == kCudaSuccess &&
        get(handle, kCuMempoolAttrReservedMemCurrent, &reserved) == kCudaSuccess) {
      rt.account->SyncPool(pool, reserved);
    }
  }
}

Status AdmitWithTrim(Runtime& rt, uint64_t bytes) {
  Status s = rt.account->Admit(bytes);
  if (s.ok() || rt.account->PoolsWithCache().empty()) return s;
  TrimPools(rt);
  return rt.account->Admit(bytes);
}

// Admit, allocate, then record or undo. `alloc` returns the driver's result and the handle.
template <typename Alloc>
CuResult Charged(uint64_t bytes, AllocationKind kind, Alloc&& alloc) {
  Runtime* rt = GetRuntime();
  if (rt == nullptr) return alloc().first;
  if (rt->broken) return ToCuResult(FailedPrecondition(rt->broken_reason));
  if (Status s = AdmitWithTrim(*rt, bytes); !s.ok()) return ToCuResult(s);
  auto [r, handle] = alloc();
  if (r != kCudaSuccess) {
    rt->account->Abort(bytes);
    return r;
  }
  rt->account->Record(kind, handle, bytes);
  return r;
}

template <typename Free>
CuResult Released(AllocationKind kind, uint64_t handle, Free&& free_fn) {
  CuResult r = free_fn();
  Runtime* rt = GetRuntime();
  if (r == kCudaSuccess && rt != nullptr && rt->account != nullptr) {
    rt->account->Forget(kind, handle);
  }
  return r;
}

CuResult PoolAlloc(CuDevicePtr* dptr, size_t bytes, CuMemoryPool pool, CuStream stream,
                   Fn fn) {
  Runtime* rt = GetRuntime();
  auto call = [&]() -> CuResult {
    if (fn == Fn::k_cuMemAllocAsync || fn == Fn::k_cuMemAllocAsync_ptsz) {
      return Real<PfnMemAllocAsync>(fn)(dptr, bytes, stream);
    }
    return Real<PfnMemAllocFromPoolAsync>(fn)(dptr, bytes, pool, stream);
  };
  if (rt == nullptr) return call();
  if (rt->broken) return ToCuResult(FailedPrecondition(rt->broken_reason));
  if (pool == nullptr) {  // cuMemAllocAsync: the current device's current pool
    static const auto get_device = Real<PfnCtxGetDevice>(Fn::k_cuCtxGetDevice);
    static const auto get_pool = Real<PfnDeviceGetMemPool>(Fn::k_cuDeviceGetMemPool);
    CuDevice dev = 0;
    if (get_device == nullptr || get_pool == nullptr || get_device(&dev) != kCudaSuccess ||
        get_pool(&pool, dev) != kCudaSuccess) {
      pool = nullptr;
    }
  }
  const auto key = reinterpret_cast<uint64_t>(pool);
  Status s = rt->account->AdmitFromPool(key, bytes);
  if (!s.ok() && !rt->account->PoolsWithCache().empty()) {
    TrimPools(*rt);
    s = rt->account->AdmitFromPool(key, bytes);
  }
  if (!s.ok()) return ToCuResult(s);
  CuResult r = call();
  if (r != kCudaSuccess) {
    rt->account->AbortFromPool(key, bytes);
    return r;
  }
  rt->account->RecordFromPool(key, *dptr, bytes);
  return r;
}

CuResult FreeAsync(CuDevicePtr dptr, CuStream stream, Fn fn) {
  CuResult r = Real<PfnMemFreeAsync>(fn)(dptr, stream);
  Runtime* rt = GetRuntime();
  if (r == kCudaSuccess && rt != nullptr && rt->account != nullptr &&
      !rt->account->ForgetToPool(dptr)) {
    rt->account->Forget(AllocationKind::kDevicePointer, dptr);
  }
  return r;
}

CuResult Legacy32BitAlloc() {
  // The CUDA <= 3.1 ABI (32-bit pointers and sizes). Refused for workers rather than left as a
  // blind spot; no toolkit since CUDA 3.2 emits calls to it.
  return ToCuResult(Unimplemented("32-bit legacy allocation entry points are not supported"));
}

}  // namespace
}  // namespace carve::interposer::shell

using namespace carve;                      // NOLINT: C ABI shell
using namespace carve::interposer;         // NOLINT
using namespace carve::interposer::shell;  // NOLINT

CARVE_EXPORT CuResult cuMemAlloc_v2(CuDevicePtr* dptr, size_t bytes) {
  return Guard([&] {
    return Charged(bytes, AllocationKind::kDevicePointer, [&] {
      CuResult r = Real<PfnMemAlloc>(Fn::k_cuMemAlloc_v2)(dptr, bytes);
      return std::pair{r, r == kCudaSuccess ? *dptr : 0};
    });
  });
}

CARVE_EXPORT CuResult cuMemAllocManaged(CuDevicePtr* dptr, size_t bytes, unsigned int flags) {
  return Guard([&] {
    return Charged(bytes, AllocationKind::kDevicePointer, [&] {
      CuResult r = Real<PfnMemAllocManaged>(Fn::k_cuMemAllocManaged)(dptr, bytes, flags);
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
    Status s = rt->account->Resize(AllocationKind::kDevicePointer, *dptr, uint64_t{*pitch} * height);
    if (!s.ok()) {  // a driver pitch beyond the bound that the quota cannot cover: undo
      Real<PfnMemFree>(Fn::k_cuMemFree_v2)(*dptr);
      rt->account->Forget(AllocationKind::kDevicePointer, *dptr);
      return ToCuResult(s);
    }
    return r;
  });
}

CARVE_EXPORT CuResult cuMemFree_v2(CuDevicePtr dptr) {
  return Guard([&] {
    return Released(AllocationKind::kDevicePointer, dptr,
                    [&] { return Real<PfnMemFree>(Fn::k_cuMemFree_v2)(dptr); });
  });
}

CARVE_EXPORT CuResult cuMemAllocAsync(CuDevicePtr* dptr, size_t bytes, CuStream stream) {
  return Guard([&] { return PoolAlloc(dptr, bytes, nullptr, stream, Fn::k_cuMemAllocAsync); });
}
CARVE_EXPORT CuResult cuMemAllocAsync_ptsz(CuDevicePtr* dptr, size_t bytes, CuStream stream) {
  return Guard(
      [&] { return PoolAlloc(dptr, bytes, nullptr, stream, Fn::k_cuMemAllocAsync_ptsz); });
}
CARVE_EXPORT CuResult cuMemAllocFromPoolAsync(CuDevicePtr* dptr, size_t bytes, CuMemoryPool pool,
                                              CuStream stream) {
  return Guard(
      [&] { return PoolAlloc(dptr, bytes, pool, stream, Fn::k_cuMemAllocFromPoolAsync); });
}
CARVE_EXPORT CuResult cuMemAllocFromPoolAsync_ptsz(CuDevicePtr* dptr, size_t bytes,
                                                   CuMemoryPool pool, CuStream stream) {
  return Guard(
      [&] { return PoolAlloc(dptr, bytes, pool, stream, Fn::k_cuMemAllocFromPoolAsync_ptsz); });
}
CARVE_EXPORT CuResult cuMemFreeAsync(CuDevicePtr dptr, CuStream stream) {
  return Guard([&] { return FreeAsync(dptr, stream, Fn::k_cuMemFreeAsync); });
}
CARVE_EXPORT CuResult cuMemFreeAsync_ptsz(CuDevicePtr dptr, CuStream stream) {
  return Guard([&] { return FreeAsync(dptr, stream, Fn::k_cuMemFreeAsync_ptsz); });
}
CARVE_EXPORT CuResult cuMemPoolTrimTo(CuMemoryPool pool, size_t keep) {
  return Guard([&] {
    CuResult r = Real<PfnMemPoolTrimTo>(Fn::k_cuMemPoolTrimTo)(pool, keep);
    Runtime* rt = GetRuntime();
    auto get = Real<PfnMemPoolGetAttribute>(Fn::k_cuMemPoolGetAttribute);
    CuUint64 reserved = 0;
    if (r == kCudaSuccess && rt != nullptr && rt->account != nullptr && get != nullptr &&
        get(pool, kCuMempoolAttrReservedMemCurrent, &reserved) == kCudaSuccess) {
      rt->account->SyncPool(reinterpret_cast<uint64_t>(pool), reserved);
    }
    return r;
  });
}

CARVE_EXPORT CuResult cuMemCreate(CuMemGenericAllocationHandle* handle, size_t bytes,
                                  const CuMemAllocationProp* prop, unsigned long long flags) {
  return Guard([&] {
    return Charged(bytes, AllocationKind::kVmmHandle, [&] {
      CuResult r = Real<PfnMemCreate>(Fn::k_cuMemCreate)(handle, bytes, prop, flags);
      return std::pair{r, r == kCudaSuccess ? *handle : 0};
    });
  });
}
CARVE_EXPORT CuResult cuMemRelease(CuMemGenericAllocationHandle handle) {
  return Guard([&] {
    return Released(AllocationKind::kVmmHandle, handle,
                    [&] { return Real<PfnMemRelease>(Fn::k_cuMemRelease)(handle); });
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
                    [&] { return Real<PfnArrayDestroy>(Fn::k_cuArrayDestroy)(array); });
  });
}
CARVE_EXPORT CuResult cuMipmappedArrayCreate(CuMipmappedArray* array,
                                             const CuArray3DDescriptor* desc,
                                             unsigned int levels) {
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
      return Real<PfnMipmappedArrayDestroy>(Fn::k_cuMipmappedArrayDestroy)(array);
    });
  });
}

// cuMemGetInfo reports the share: total = quota (bounded by the card), free = total - what the
// worker's processes hold (bounded by what the card really has free).
CARVE_EXPORT CuResult cuMemGetInfo_v2(size_t* free_bytes, size_t* total) {
  return Guard([&] {
    CuResult r = Real<PfnMemGetInfo>(Fn::k_cuMemGetInfo_v2)(free_bytes, total);
    Runtime* rt = GetRuntime();
    if (r != kCudaSuccess || rt == nullptr || rt->account == nullptr) return r;
    const uint64_t quota = std::min<uint64_t>(rt->account->LimitBytes(), *total);
    const uint64_t used = rt->account->LedgerUsedBytes();
    *total = quota;
    *free_bytes = std::min<uint64_t>(quota > used ? quota - used : 0, *free_bytes);
    return r;
  });
}

CARVE_EXPORT CuResult cuMemGetInfo(unsigned int* free_bytes, unsigned int* total) {
  return Guard([&] {
    size_t f = 0, t = 0;
    CuResult r = cuMemGetInfo_v2(&f, &t);
    if (r != kCudaSuccess) return r;
    *free_bytes = static_cast<unsigned int>(std::min<size_t>(f, 0xFFFFFFFFu));
    *total = static_cast<unsigned int>(std::min<size_t>(t, 0xFFFFFFFFu));
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
