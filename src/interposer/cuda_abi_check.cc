// Compile-time proof that cuda_abi.h matches the real cuda.h: built only when the CUDA toolkit is
// found (target carve_cuda_abi_check). Every declared value, layout and signature is compared.
#include <cuda.h>

#include <cstddef>
#include <string_view>
#include <type_traits>

#include "interposer/cuda_abi.h"

namespace ci = carve::interposer;

static_assert(ci::kCudaSuccess == CUDA_SUCCESS);
static_assert(ci::kCudaErrorInvalidValue == CUDA_ERROR_INVALID_VALUE);
static_assert(ci::kCudaErrorOutOfMemory == CUDA_ERROR_OUT_OF_MEMORY);
static_assert(ci::kCudaErrorNotInitialized == CUDA_ERROR_NOT_INITIALIZED);
static_assert(ci::kCudaErrorInvalidHandle == CUDA_ERROR_INVALID_HANDLE);
static_assert(ci::kCudaErrorNotFound == CUDA_ERROR_NOT_FOUND);
static_assert(ci::kCudaErrorNotReady == CUDA_ERROR_NOT_READY);
static_assert(ci::kCudaErrorNotPermitted == CUDA_ERROR_NOT_PERMITTED);
static_assert(ci::kCudaErrorNotSupported == CUDA_ERROR_NOT_SUPPORTED);
static_assert(ci::kCudaErrorStreamCaptureUnsupported == CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
static_assert(ci::kCudaErrorStreamCaptureInvalidated == CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
static_assert(ci::kCudaErrorStreamCaptureImplicit == CUDA_ERROR_STREAM_CAPTURE_IMPLICIT);
static_assert(ci::kCudaErrorCapturedEvent == CUDA_ERROR_CAPTURED_EVENT);
static_assert(ci::kCudaErrorStreamCaptureWrongThread == CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD);
static_assert(ci::kCudaErrorUnknown == CUDA_ERROR_UNKNOWN);
static_assert(sizeof(CUresult) == sizeof(ci::CuResult));
static_assert(std::is_same_v<CUdeviceptr, ci::CuDevicePtr>);
static_assert(std::is_same_v<CUdevice, ci::CuDevice>);
static_assert(std::is_same_v<CUmemGenericAllocationHandle, ci::CuMemGenericAllocationHandle>);
static_assert(std::is_same_v<cuuint64_t, ci::CuUint64>);
static_assert(std::is_same_v<CUstream, ci::CuStream>);
static_assert(std::is_same_v<CUevent, ci::CuEvent>);
static_assert(std::is_same_v<CUfunction, ci::CuFunction>);
static_assert(std::is_same_v<CUarray, ci::CuArray>);
static_assert(std::is_same_v<CUmipmappedArray, ci::CuMipmappedArray>);
static_assert(std::is_same_v<CUgraphExec, ci::CuGraphExec>);
static_assert(std::is_same_v<CUmemoryPool, ci::CuMemoryPool>);
static_assert(std::is_same_v<CUgraph, ci::CuGraph>);
static_assert(std::is_same_v<CUgraphNode, ci::CuGraphNode>);
static_assert(std::is_same_v<CUcontext, ci::CuContext>);

static_assert(ci::kCuAdFormatUnsignedInt8 == CU_AD_FORMAT_UNSIGNED_INT8);
static_assert(ci::kCuAdFormatUnsignedInt16 == CU_AD_FORMAT_UNSIGNED_INT16);
static_assert(ci::kCuAdFormatUnsignedInt32 == CU_AD_FORMAT_UNSIGNED_INT32);
static_assert(ci::kCuAdFormatSignedInt8 == CU_AD_FORMAT_SIGNED_INT8);
static_assert(ci::kCuAdFormatSignedInt16 == CU_AD_FORMAT_SIGNED_INT16);
static_assert(ci::kCuAdFormatSignedInt32 == CU_AD_FORMAT_SIGNED_INT32);
static_assert(ci::kCuAdFormatHalf == CU_AD_FORMAT_HALF);
static_assert(ci::kCuAdFormatFloat == CU_AD_FORMAT_FLOAT);
static_assert(ci::kCuEventDefault == CU_EVENT_DEFAULT);
static_assert(ci::kCuStreamCaptureStatusNone == CU_STREAM_CAPTURE_STATUS_NONE);
static_assert(ci::kCuMempoolAttrReservedMemCurrent == CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT);
static_assert(ci::kCuGetProcAddressPerThreadDefaultStream ==
              CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM);
static_assert(ci::kCuGetProcAddressSuccess == CU_GET_PROC_ADDRESS_SUCCESS);
// The special stream handles are casts, not constants: compare cuda.h's spelling of them.
#define CARVE_SPELLING(x) #x
#define CARVE_EXPANDED(x) CARVE_SPELLING(x)
static_assert(std::string_view(CARVE_EXPANDED(CU_STREAM_LEGACY)) == "((CUstream)0x1)" &&
              ci::kCuStreamLegacy == 0x1);
static_assert(std::string_view(CARVE_EXPANDED(CU_STREAM_PER_THREAD)) == "((CUstream)0x2)" &&
              ci::kCuStreamPerThread == 0x2);
static_assert(ci::kCuStreamCaptureModeGlobal == CU_STREAM_CAPTURE_MODE_GLOBAL);
static_assert(ci::kCuStreamCaptureModeThreadLocal == CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
static_assert(ci::kCuStreamCaptureModeRelaxed == CU_STREAM_CAPTURE_MODE_RELAXED);
static_assert(ci::kCuStreamCaptureStatusActive == CU_STREAM_CAPTURE_STATUS_ACTIVE);
static_assert(ci::kCuStreamCaptureStatusInvalidated == CU_STREAM_CAPTURE_STATUS_INVALIDATED);
static_assert(ci::kCuMemLocationTypeInvalid == CU_MEM_LOCATION_TYPE_INVALID);
static_assert(ci::kCuMemLocationTypeDevice == CU_MEM_LOCATION_TYPE_DEVICE);
static_assert(ci::kCuMemLocationTypeHost == CU_MEM_LOCATION_TYPE_HOST);
static_assert(ci::kCuMemLocationTypeHostNuma == CU_MEM_LOCATION_TYPE_HOST_NUMA);
static_assert(ci::kCuMemLocationTypeHostNumaCurrent == CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT);
static_assert(ci::kCuMemAllocationTypePinned == CU_MEM_ALLOCATION_TYPE_PINNED);
static_assert(ci::kCuGraphNodeTypeMemAlloc == CU_GRAPH_NODE_TYPE_MEM_ALLOC);
static_assert(ci::kCuGraphNodeTypeMemFree == CU_GRAPH_NODE_TYPE_MEM_FREE);
static_assert(ci::kCuGraphMemAttrUsedMemCurrent == CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT);
static_assert(ci::kCuGraphMemAttrReservedMemCurrent == CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT);

#define CARVE_SAME_LAYOUT(ours, theirs, field)                             \
  static_assert(offsetof(ours, field) == offsetof(theirs, field), #field); \
  static_assert(sizeof(((ours*)nullptr)->field) == sizeof(((theirs*)nullptr)->field), #field)

static_assert(sizeof(ci::CuArrayDescriptor) == sizeof(CUDA_ARRAY_DESCRIPTOR));
CARVE_SAME_LAYOUT(ci::CuArrayDescriptor, CUDA_ARRAY_DESCRIPTOR, Width);
CARVE_SAME_LAYOUT(ci::CuArrayDescriptor, CUDA_ARRAY_DESCRIPTOR, Height);
CARVE_SAME_LAYOUT(ci::CuArrayDescriptor, CUDA_ARRAY_DESCRIPTOR, Format);
CARVE_SAME_LAYOUT(ci::CuArrayDescriptor, CUDA_ARRAY_DESCRIPTOR, NumChannels);
static_assert(sizeof(ci::CuArray3DDescriptor) == sizeof(CUDA_ARRAY3D_DESCRIPTOR));
CARVE_SAME_LAYOUT(ci::CuArray3DDescriptor, CUDA_ARRAY3D_DESCRIPTOR, Width);
CARVE_SAME_LAYOUT(ci::CuArray3DDescriptor, CUDA_ARRAY3D_DESCRIPTOR, Height);
CARVE_SAME_LAYOUT(ci::CuArray3DDescriptor, CUDA_ARRAY3D_DESCRIPTOR, Depth);
CARVE_SAME_LAYOUT(ci::CuArray3DDescriptor, CUDA_ARRAY3D_DESCRIPTOR, Format);
CARVE_SAME_LAYOUT(ci::CuArray3DDescriptor, CUDA_ARRAY3D_DESCRIPTOR, NumChannels);
CARVE_SAME_LAYOUT(ci::CuArray3DDescriptor, CUDA_ARRAY3D_DESCRIPTOR, Flags);
static_assert(sizeof(ci::CuLaunchConfig) == sizeof(CUlaunchConfig));
CARVE_SAME_LAYOUT(ci::CuLaunchConfig, CUlaunchConfig, gridDimX);
CARVE_SAME_LAYOUT(ci::CuLaunchConfig, CUlaunchConfig, sharedMemBytes);
CARVE_SAME_LAYOUT(ci::CuLaunchConfig, CUlaunchConfig, hStream);
CARVE_SAME_LAYOUT(ci::CuLaunchConfig, CUlaunchConfig, attrs);
CARVE_SAME_LAYOUT(ci::CuLaunchConfig, CUlaunchConfig, numAttrs);

static_assert(sizeof(ci::CuMemLocation) == sizeof(CUmemLocation));
CARVE_SAME_LAYOUT(ci::CuMemLocation, CUmemLocation, type);
CARVE_SAME_LAYOUT(ci::CuMemLocation, CUmemLocation, id);
static_assert(sizeof(ci::CuMemAllocationProp) == sizeof(CUmemAllocationProp));
CARVE_SAME_LAYOUT(ci::CuMemAllocationProp, CUmemAllocationProp, type);
CARVE_SAME_LAYOUT(ci::CuMemAllocationProp, CUmemAllocationProp, requestedHandleTypes);
CARVE_SAME_LAYOUT(ci::CuMemAllocationProp, CUmemAllocationProp, location);
CARVE_SAME_LAYOUT(ci::CuMemAllocationProp, CUmemAllocationProp, win32HandleMetaData);
CARVE_SAME_LAYOUT(ci::CuMemAllocationProp, CUmemAllocationProp, allocFlags);
static_assert(sizeof(ci::CuMemPoolProps) == sizeof(CUmemPoolProps));
CARVE_SAME_LAYOUT(ci::CuMemPoolProps, CUmemPoolProps, allocType);
CARVE_SAME_LAYOUT(ci::CuMemPoolProps, CUmemPoolProps, location);
CARVE_SAME_LAYOUT(ci::CuMemPoolProps, CUmemPoolProps, maxSize);
CARVE_SAME_LAYOUT(ci::CuMemPoolProps, CUmemPoolProps, usage);
CARVE_SAME_LAYOUT(ci::CuMemPoolProps, CUmemPoolProps, reserved);
static_assert(sizeof(ci::CuMemAllocNodeParams) == sizeof(CUDA_MEM_ALLOC_NODE_PARAMS_v1));
static_assert(sizeof(ci::CuMemAllocNodeParams) == sizeof(CUDA_MEM_ALLOC_NODE_PARAMS_v2));
CARVE_SAME_LAYOUT(ci::CuMemAllocNodeParams, CUDA_MEM_ALLOC_NODE_PARAMS_v1, poolProps);
CARVE_SAME_LAYOUT(ci::CuMemAllocNodeParams, CUDA_MEM_ALLOC_NODE_PARAMS_v1, accessDescCount);
CARVE_SAME_LAYOUT(ci::CuMemAllocNodeParams, CUDA_MEM_ALLOC_NODE_PARAMS_v1, bytesize);
CARVE_SAME_LAYOUT(ci::CuMemAllocNodeParams, CUDA_MEM_ALLOC_NODE_PARAMS_v1, dptr);
CARVE_SAME_LAYOUT(ci::CuMemAllocNodeParams, CUDA_MEM_ALLOC_NODE_PARAMS_v2, bytesize);
CARVE_SAME_LAYOUT(ci::CuMemAllocNodeParams, CUDA_MEM_ALLOC_NODE_PARAMS_v2, dptr);
static_assert(sizeof(ci::CuMemFreeNodeParams) == sizeof(CUDA_MEM_FREE_NODE_PARAMS));
static_assert(sizeof(ci::CuGraphNodeParams) == sizeof(CUgraphNodeParams));
CARVE_SAME_LAYOUT(ci::CuGraphNodeParams, CUgraphNodeParams, type);
CARVE_SAME_LAYOUT(ci::CuGraphNodeParams, CUgraphNodeParams, alloc);
CARVE_SAME_LAYOUT(ci::CuGraphNodeParams, CUgraphNodeParams, free);
CARVE_SAME_LAYOUT(ci::CuGraphNodeParams, CUgraphNodeParams, reserved2);

// Signatures: the real prototypes, spelled with cuda.h's own types (our Pfn types differ only
// where cuda.h names an int-sized enum, checked at the end).
static_assert(std::is_same_v<decltype(&cuMemAlloc_v2), CUresult (*)(CUdeviceptr*, size_t)>);
static_assert(std::is_same_v<decltype(&cuMemAllocPitch_v2),
                             CUresult (*)(CUdeviceptr*, size_t*, size_t, size_t, unsigned int)>);
static_assert(
    std::is_same_v<decltype(&cuMemAllocManaged), CUresult (*)(CUdeviceptr*, size_t, unsigned int)>);
static_assert(
    std::is_same_v<decltype(&cuMemAllocAsync), CUresult (*)(CUdeviceptr*, size_t, CUstream)>);
static_assert(std::is_same_v<decltype(&cuMemAllocFromPoolAsync),
                             CUresult (*)(CUdeviceptr*, size_t, CUmemoryPool, CUstream)>);
static_assert(std::is_same_v<decltype(&cuMemFree_v2), CUresult (*)(CUdeviceptr)>);
static_assert(std::is_same_v<decltype(&cuMemFreeAsync), CUresult (*)(CUdeviceptr, CUstream)>);
static_assert(std::is_same_v<decltype(&cuMemGetInfo_v2), CUresult (*)(size_t*, size_t*)>);
static_assert(std::is_same_v<decltype(&cuMemPoolTrimTo), CUresult (*)(CUmemoryPool, size_t)>);
static_assert(std::is_same_v<decltype(&cuMemPoolGetAttribute),
                             CUresult (*)(CUmemoryPool, CUmemPool_attribute, void*)>);
static_assert(std::is_same_v<decltype(&cuCtxGetDevice), CUresult (*)(CUdevice*)>);
static_assert(std::is_same_v<decltype(&cuDeviceGetMemPool), CUresult (*)(CUmemoryPool*, CUdevice)>);
static_assert(std::is_same_v<decltype(&cuMemCreate),
                             CUresult (*)(CUmemGenericAllocationHandle*, size_t,
                                          const CUmemAllocationProp*, unsigned long long)>);
static_assert(std::is_same_v<decltype(&cuMemRelease), CUresult (*)(CUmemGenericAllocationHandle)>);
static_assert(std::is_same_v<decltype(&cuArrayCreate_v2),
                             CUresult (*)(CUarray*, const CUDA_ARRAY_DESCRIPTOR*)>);
static_assert(std::is_same_v<decltype(&cuArray3DCreate_v2),
                             CUresult (*)(CUarray*, const CUDA_ARRAY3D_DESCRIPTOR*)>);
static_assert(std::is_same_v<decltype(&cuArrayDestroy), CUresult (*)(CUarray)>);
static_assert(
    std::is_same_v<decltype(&cuMipmappedArrayCreate),
                   CUresult (*)(CUmipmappedArray*, const CUDA_ARRAY3D_DESCRIPTOR*, unsigned int)>);
static_assert(std::is_same_v<decltype(&cuMipmappedArrayDestroy), CUresult (*)(CUmipmappedArray)>);
static_assert(std::is_same_v<decltype(&cuLaunchKernel),
                             CUresult (*)(CUfunction, unsigned int, unsigned int, unsigned int,
                                          unsigned int, unsigned int, unsigned int, unsigned int,
                                          CUstream, void**, void**)>);
static_assert(std::is_same_v<decltype(&cuLaunchKernelEx),
                             CUresult (*)(const CUlaunchConfig*, CUfunction, void**, void**)>);
static_assert(
    std::is_same_v<decltype(&cuLaunchCooperativeKernel),
                   CUresult (*)(CUfunction, unsigned int, unsigned int, unsigned int, unsigned int,
                                unsigned int, unsigned int, unsigned int, CUstream, void**)>);
static_assert(std::is_same_v<decltype(&cuGraphLaunch), CUresult (*)(CUgraphExec, CUstream)>);
static_assert(std::is_same_v<decltype(&cuEventCreate), CUresult (*)(CUevent*, unsigned int)>);
static_assert(std::is_same_v<decltype(&cuEventRecord), CUresult (*)(CUevent, CUstream)>);
static_assert(std::is_same_v<decltype(&cuEventQuery), CUresult (*)(CUevent)>);
static_assert(std::is_same_v<decltype(&cuEventSynchronize), CUresult (*)(CUevent)>);
static_assert(std::is_same_v<decltype(&cuEventDestroy_v2), CUresult (*)(CUevent)>);
static_assert(
    std::is_same_v<decltype(&cuEventElapsedTime_v2), CUresult (*)(float*, CUevent, CUevent)>);
static_assert(
    std::is_same_v<decltype(&cuStreamIsCapturing), CUresult (*)(CUstream, CUstreamCaptureStatus*)>);
static_assert(std::is_same_v<decltype(&cuGetProcAddress_v2),
                             CUresult (*)(const char*, void**, int, cuuint64_t,
                                          CUdriverProcAddressQueryResult*)>);
static_assert(std::is_same_v<decltype(&cuMemRetainAllocationHandle),
                             CUresult (*)(CUmemGenericAllocationHandle*, void*)>);
static_assert(std::is_same_v<decltype(&cuMemMap),
                             CUresult (*)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle,
                                          unsigned long long)>);
static_assert(std::is_same_v<decltype(&cuMemUnmap), CUresult (*)(CUdeviceptr, size_t)>);
static_assert(
    std::is_same_v<decltype(&cuMemPoolCreate), CUresult (*)(CUmemoryPool*, const CUmemPoolProps*)>);
static_assert(std::is_same_v<decltype(&cuDeviceTotalMem_v2), CUresult (*)(size_t*, CUdevice)>);
static_assert(std::is_same_v<decltype(&cuStreamGetDevice), CUresult (*)(CUstream, CUdevice*)>);
static_assert(std::is_same_v<decltype(&cuStreamGetCtx), CUresult (*)(CUstream, CUcontext*)>);
static_assert(std::is_same_v<decltype(&cuCtxPushCurrent_v2), CUresult (*)(CUcontext)>);
static_assert(std::is_same_v<decltype(&cuCtxPopCurrent_v2), CUresult (*)(CUcontext*)>);
static_assert(std::is_same_v<decltype(&cuThreadExchangeStreamCaptureMode),
                             CUresult (*)(CUstreamCaptureMode*)>);
static_assert(std::is_same_v<decltype(&cuStreamGetCaptureInfo_v3),
                             CUresult (*)(CUstream, CUstreamCaptureStatus*, cuuint64_t*, CUgraph*,
                                          const CUgraphNode**, const CUgraphEdgeData**, size_t*)>);
static_assert(std::is_same_v<decltype(&cuGraphAddMemAllocNode),
                             CUresult (*)(CUgraphNode*, CUgraph, const CUgraphNode*, size_t,
                                          CUDA_MEM_ALLOC_NODE_PARAMS*)>);
static_assert(
    std::is_same_v<decltype(&cuGraphAddMemFreeNode),
                   CUresult (*)(CUgraphNode*, CUgraph, const CUgraphNode*, size_t, CUdeviceptr)>);
static_assert(std::is_same_v<decltype(&cuGraphAddNode_v2),
                             CUresult (*)(CUgraphNode*, CUgraph, const CUgraphNode*,
                                          const CUgraphEdgeData*, size_t, CUgraphNodeParams*)>);
static_assert(std::is_same_v<decltype(&cuGraphInstantiateWithFlags),
                             CUresult (*)(CUgraphExec*, CUgraph, unsigned long long)>);
static_assert(std::is_same_v<decltype(&cuGraphInstantiateWithParams),
                             CUresult (*)(CUgraphExec*, CUgraph, CUDA_GRAPH_INSTANTIATE_PARAMS*)>);
static_assert(std::is_same_v<decltype(&cuGraphDestroy), CUresult (*)(CUgraph)>);
static_assert(std::is_same_v<decltype(&cuGraphExecDestroy), CUresult (*)(CUgraphExec)>);
static_assert(std::is_same_v<decltype(&cuDeviceGraphMemTrim), CUresult (*)(CUdevice)>);
static_assert(std::is_same_v<decltype(&cuDeviceGetGraphMemAttribute),
                             CUresult (*)(CUdevice, CUgraphMem_attribute, void*)>);

// The enums that our declarations spell as int must be int-sized.
static_assert(sizeof(CUarray_format) == sizeof(int));
static_assert(sizeof(CUmemPool_attribute) == sizeof(int));
static_assert(sizeof(CUstreamCaptureStatus) == sizeof(int));
static_assert(sizeof(CUdriverProcAddressQueryResult) == sizeof(int));
static_assert(sizeof(CUstreamCaptureMode) == sizeof(int));
static_assert(sizeof(CUgraphMem_attribute) == sizeof(int));
static_assert(sizeof(CUmemLocationType) == sizeof(int));
static_assert(sizeof(CUgraphNodeType) == sizeof(int));
