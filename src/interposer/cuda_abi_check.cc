// Compile-time proof that cuda_abi.h matches the real cuda.h: built only when the CUDA toolkit is
// found (target carve_cuda_abi_check). Every declared value, layout and signature is compared.
#include <cuda.h>

#include <cstddef>
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

#define CARVE_SAME_LAYOUT(ours, theirs, field)                                 \
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

// Signatures: the real prototypes, spelled with cuda.h's own types (our Pfn types differ only
// where cuda.h names an int-sized enum, checked at the end).
static_assert(std::is_same_v<decltype(&cuMemAlloc_v2),
                             CUresult (*)(CUdeviceptr*, size_t)>);
static_assert(std::is_same_v<decltype(&cuMemAllocPitch_v2),
                             CUresult (*)(CUdeviceptr*, size_t*, size_t, size_t, unsigned int)>);
static_assert(std::is_same_v<decltype(&cuMemAllocManaged),
                             CUresult (*)(CUdeviceptr*, size_t, unsigned int)>);
static_assert(std::is_same_v<decltype(&cuMemAllocAsync),
                             CUresult (*)(CUdeviceptr*, size_t, CUstream)>);
static_assert(std::is_same_v<decltype(&cuMemAllocFromPoolAsync),
                             CUresult (*)(CUdeviceptr*, size_t, CUmemoryPool, CUstream)>);
static_assert(std::is_same_v<decltype(&cuMemFree_v2), CUresult (*)(CUdeviceptr)>);
static_assert(std::is_same_v<decltype(&cuMemFreeAsync), CUresult (*)(CUdeviceptr, CUstream)>);
static_assert(std::is_same_v<decltype(&cuMemGetInfo_v2), CUresult (*)(size_t*, size_t*)>);
static_assert(std::is_same_v<decltype(&cuMemPoolTrimTo), CUresult (*)(CUmemoryPool, size_t)>);
static_assert(std::is_same_v<decltype(&cuMemPoolGetAttribute),
                             CUresult (*)(CUmemoryPool, CUmemPool_attribute, void*)>);
static_assert(std::is_same_v<decltype(&cuCtxGetDevice), CUresult (*)(CUdevice*)>);
static_assert(std::is_same_v<decltype(&cuDeviceGetMemPool),
                             CUresult (*)(CUmemoryPool*, CUdevice)>);
static_assert(std::is_same_v<decltype(&cuMemCreate),
                             CUresult (*)(CUmemGenericAllocationHandle*, size_t,
                                          const CUmemAllocationProp*, unsigned long long)>);
static_assert(std::is_same_v<decltype(&cuMemRelease),
                             CUresult (*)(CUmemGenericAllocationHandle)>);
static_assert(std::is_same_v<decltype(&cuArrayCreate_v2),
                             CUresult (*)(CUarray*, const CUDA_ARRAY_DESCRIPTOR*)>);
static_assert(std::is_same_v<decltype(&cuArray3DCreate_v2),
                             CUresult (*)(CUarray*, const CUDA_ARRAY3D_DESCRIPTOR*)>);
static_assert(std::is_same_v<decltype(&cuArrayDestroy), CUresult (*)(CUarray)>);
static_assert(std::is_same_v<decltype(&cuMipmappedArrayCreate),
                             CUresult (*)(CUmipmappedArray*, const CUDA_ARRAY3D_DESCRIPTOR*,
                                          unsigned int)>);
static_assert(std::is_same_v<decltype(&cuMipmappedArrayDestroy),
                             CUresult (*)(CUmipmappedArray)>);
static_assert(std::is_same_v<decltype(&cuLaunchKernel),
                             CUresult (*)(CUfunction, unsigned int, unsigned int, unsigned int,
                                          unsigned int, unsigned int, unsigned int, unsigned int,
                                          CUstream, void**, void**)>);
static_assert(std::is_same_v<decltype(&cuLaunchKernelEx),
                             CUresult (*)(const CUlaunchConfig*, CUfunction, void**, void**)>);
static_assert(std::is_same_v<decltype(&cuLaunchCooperativeKernel),
                             CUresult (*)(CUfunction, unsigned int, unsigned int, unsigned int,
                                          unsigned int, unsigned int, unsigned int, unsigned int,
                                          CUstream, void**)>);
static_assert(std::is_same_v<decltype(&cuGraphLaunch), CUresult (*)(CUgraphExec, CUstream)>);
static_assert(std::is_same_v<decltype(&cuEventCreate), CUresult (*)(CUevent*, unsigned int)>);
static_assert(std::is_same_v<decltype(&cuEventRecord), CUresult (*)(CUevent, CUstream)>);
static_assert(std::is_same_v<decltype(&cuEventQuery), CUresult (*)(CUevent)>);
static_assert(std::is_same_v<decltype(&cuEventSynchronize), CUresult (*)(CUevent)>);
static_assert(std::is_same_v<decltype(&cuEventDestroy_v2), CUresult (*)(CUevent)>);
static_assert(std::is_same_v<decltype(&cuEventElapsedTime_v2),
                             CUresult (*)(float*, CUevent, CUevent)>);
static_assert(std::is_same_v<decltype(&cuStreamIsCapturing),
                             CUresult (*)(CUstream, CUstreamCaptureStatus*)>);
static_assert(std::is_same_v<decltype(&cuGetProcAddress_v2),
                             CUresult (*)(const char*, void**, int, cuuint64_t,
                                          CUdriverProcAddressQueryResult*)>);
// The enums that our declarations spell as int must be int-sized.
static_assert(sizeof(CUarray_format) == sizeof(int));
static_assert(sizeof(CUmemPool_attribute) == sizeof(int));
static_assert(sizeof(CUstreamCaptureStatus) == sizeof(int));
static_assert(sizeof(CUdriverProcAddressQueryResult) == sizeof(int));
