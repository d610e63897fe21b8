// Virtual memory management hooks (cuMemCreate and friends). A device-located allocation is
// admitted by its size before the driver sees it and stays charged until the driver frees its
// physical memory: after the last cuMemRelease of every reference (cuMemRetainAllocationHandle
// adds one) and the last cuMemUnmap (vmm_table.h). Host-located allocations (cuda.h:
// CU_MEM_LOCATION_TYPE_HOST, _HOST_NUMA, _HOST_NUMA_CURRENT; NCCL's ncclCuMemHostAlloc) are not
// GPU memory and pass through uncharged.
#include "interposer/shell/hook_support.h"

using namespace carve;                     // NOLINT: C ABI shell
using namespace carve::interposer;         // NOLINT
using namespace carve::interposer::shell;  // NOLINT

CARVE_EXPORT CuResult cuMemCreate(CuMemGenericAllocationHandle* handle, size_t bytes,
                                  const CuMemAllocationProp* prop, unsigned long long flags) {
  return Guard([&] {
    auto create = [&] {
      return CallReal<PfnMemCreate>(Fn::k_cuMemCreate, handle, bytes, prop, flags);
    };
    Runtime* rt = GetRuntime();
    // No properties: the driver refuses the call (CUDA_ERROR_INVALID_VALUE) and allocates nothing.
    if (rt == nullptr || prop == nullptr || !ChargedLocation(prop->location)) return create();
    if (rt->broken) return ToCuResult(FailedPrecondition(rt->broken_reason));
    if (Status s = AdmitWithTrim(*rt, bytes); !s.ok()) return ToCuResult(s);
    CuResult r = create();
    if (r != kCudaSuccess) {
      rt->account->Abort(bytes);
      return r;
    }
    rt->account->RecordVmm(*handle, bytes);
    return r;
  });
}

CARVE_EXPORT CuResult cuMemRelease(CuMemGenericAllocationHandle handle) {
  return Guard([&] {
    CuResult r = CallReal<PfnMemRelease>(Fn::k_cuMemRelease, handle);
    Runtime* rt = GetRuntime();
    if (r == kCudaSuccess && rt != nullptr && rt->account != nullptr) {
      rt->account->ReleaseVmm(handle);
    }
    return r;
  });
}

CARVE_EXPORT CuResult cuMemRetainAllocationHandle(CuMemGenericAllocationHandle* handle,
                                                  void* addr) {
  return Guard([&] {
    CuResult r =
        CallReal<PfnMemRetainAllocationHandle>(Fn::k_cuMemRetainAllocationHandle, handle, addr);
    Runtime* rt = GetRuntime();
    if (r == kCudaSuccess && rt != nullptr && rt->account != nullptr) {
      rt->account->RetainVmm(*handle);
    }
    return r;
  });
}

CARVE_EXPORT CuResult cuMemMap(CuDevicePtr ptr, size_t size, size_t offset,
                               CuMemGenericAllocationHandle handle, unsigned long long flags) {
  return Guard([&] {
    CuResult r = CallReal<PfnMemMap>(Fn::k_cuMemMap, ptr, size, offset, handle, flags);
    Runtime* rt = GetRuntime();
    if (r == kCudaSuccess && rt != nullptr && rt->account != nullptr) {
      rt->account->MapVmm(ptr, size, handle);
    }
    return r;
  });
}

CARVE_EXPORT CuResult cuMemUnmap(CuDevicePtr ptr, size_t size) {
  return Guard([&] {
    CuResult r = CallReal<PfnMemUnmap>(Fn::k_cuMemUnmap, ptr, size);
    Runtime* rt = GetRuntime();
    if (r == kCudaSuccess && rt != nullptr && rt->account != nullptr) {
      rt->account->UnmapVmm(ptr, size);
    }
    return r;
  });
}
