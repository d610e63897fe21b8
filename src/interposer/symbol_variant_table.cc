// The revisions of every hooked symbol. Source: CUDA 13.0 cudaTypedefs.h (PFN_<base>_v<version>
// typedefs; the export of each revision is the name cuda.h declares for it).
#include "interposer/symbol_variant.h"

namespace carve::interposer {
namespace {

constexpr SymbolVariant kRows[] = {
    {"cuMemGetInfo", "cuMemGetInfo", 2000, false},
    {"cuMemGetInfo", "cuMemGetInfo_v2", 3020, false},
    {"cuDeviceTotalMem", "cuDeviceTotalMem", 2000, false},
    {"cuDeviceTotalMem", "cuDeviceTotalMem_v2", 3020, false},
    {"cuMemAlloc", "cuMemAlloc", 2000, false},
    {"cuMemAlloc", "cuMemAlloc_v2", 3020, false},
    {"cuMemAllocPitch", "cuMemAllocPitch", 2000, false},
    {"cuMemAllocPitch", "cuMemAllocPitch_v2", 3020, false},
    {"cuMemAllocManaged", "cuMemAllocManaged", 6000, false},
    {"cuMemFree", "cuMemFree_v2", 3020, false},
    {"cuMemAllocAsync", "cuMemAllocAsync", 11020, false},
    {"cuMemAllocAsync", "cuMemAllocAsync_ptsz", 11020, true},
    {"cuMemAllocFromPoolAsync", "cuMemAllocFromPoolAsync", 11020, false},
    {"cuMemAllocFromPoolAsync", "cuMemAllocFromPoolAsync_ptsz", 11020, true},
    {"cuMemFreeAsync", "cuMemFreeAsync", 11020, false},
    {"cuMemFreeAsync", "cuMemFreeAsync_ptsz", 11020, true},
    {"cuMemPoolTrimTo", "cuMemPoolTrimTo", 11020, false},
    {"cuMemPoolCreate", "cuMemPoolCreate", 11020, false},
    {"cuMemCreate", "cuMemCreate", 10020, false},
    {"cuMemRelease", "cuMemRelease", 10020, false},
    {"cuMemMap", "cuMemMap", 10020, false},
    {"cuMemUnmap", "cuMemUnmap", 10020, false},
    {"cuMemRetainAllocationHandle", "cuMemRetainAllocationHandle", 11000, false},
    {"cuArrayCreate", "cuArrayCreate", 2000, false},
    {"cuArrayCreate", "cuArrayCreate_v2", 3020, false},
    {"cuArray3DCreate", "cuArray3DCreate", 2000, false},
    {"cuArray3DCreate", "cuArray3DCreate_v2", 3020, false},
    {"cuArrayDestroy", "cuArrayDestroy", 2000, false},
    {"cuMipmappedArrayCreate", "cuMipmappedArrayCreate", 5000, false},
    {"cuMipmappedArrayDestroy", "cuMipmappedArrayDestroy", 5000, false},
    {"cuLaunchKernel", "cuLaunchKernel", 4000, false},
    {"cuLaunchKernel", "cuLaunchKernel_ptsz", 7000, true},
    {"cuLaunchKernelEx", "cuLaunchKernelEx", 11060, false},
    {"cuLaunchKernelEx", "cuLaunchKernelEx_ptsz", 11060, true},
    {"cuLaunchCooperativeKernel", "cuLaunchCooperativeKernel", 9000, false},
    {"cuLaunchCooperativeKernel", "cuLaunchCooperativeKernel_ptsz", 9000, true},
    {"cuGraphLaunch", "cuGraphLaunch", 10000, false},
    {"cuGraphLaunch", "cuGraphLaunch_ptsz", 10000, true},
    {"cuGraphAddMemAllocNode", "cuGraphAddMemAllocNode", 11040, false},
    {"cuGraphAddMemFreeNode", "cuGraphAddMemFreeNode", 11040, false},
    {"cuGraphAddNode", "cuGraphAddNode", 12020, false},
    {"cuGraphAddNode", "cuGraphAddNode_v2", 12030, false},
    {"cuDeviceGraphMemTrim", "cuDeviceGraphMemTrim", 11040, false},
    {"cuGraphInstantiate", "cuGraphInstantiate", 10000, false},
    {"cuGraphInstantiate", "cuGraphInstantiate_v2", 11000, false},
    {"cuGraphInstantiate", "cuGraphInstantiateWithFlags", 12000, false},
    {"cuGraphInstantiateWithFlags", "cuGraphInstantiateWithFlags", 11040, false},
    {"cuGraphInstantiateWithParams", "cuGraphInstantiateWithParams", 12000, false},
    {"cuGraphInstantiateWithParams", "cuGraphInstantiateWithParams_ptsz", 12000, true},
    {"cuGraphDestroy", "cuGraphDestroy", 10000, false},
    {"cuGraphExecDestroy", "cuGraphExecDestroy", 10000, false},
    {"cuGetProcAddress", "cuGetProcAddress", 11030, false},
    {"cuGetProcAddress", "cuGetProcAddress_v2", 12000, false},
};

}  // namespace

std::span<const SymbolVariant> HookedSymbolVariants() { return kRows; }

}  // namespace carve::interposer
