// The subset of the CUDA driver API and NVML that the interposer hooks, declared here so that
// carve builds where the CUDA toolkit is absent. Types, values and signatures copy the C ABI of
// cuda.h (CUDA 12/13) exactly; cuda_abi_check.cc static_asserts them against the real header
// whenever the toolkit is found. Names carry a `Cu`/`Nvml` prefix inside carve::interposer so
// that they can sit next to cuda.h (whose macros rename cuMemAlloc to cuMemAlloc_v2 etc.).
#pragma once

#include <cstddef>
#include <cstdint>

namespace carve::interposer {

using CuResult = int;  // CUresult is a C enum: int-sized, values below.
inline constexpr CuResult kCudaSuccess = 0;
inline constexpr CuResult kCudaErrorInvalidValue = 1;
inline constexpr CuResult kCudaErrorOutOfMemory = 2;
inline constexpr CuResult kCudaErrorNotInitialized = 3;
inline constexpr CuResult kCudaErrorInvalidHandle = 400;
inline constexpr CuResult kCudaErrorNotFound = 500;
inline constexpr CuResult kCudaErrorNotReady = 600;
inline constexpr CuResult kCudaErrorNotPermitted = 800;
inline constexpr CuResult kCudaErrorNotSupported = 801;
inline constexpr CuResult kCudaErrorStreamCaptureUnsupported = 900;
inline constexpr CuResult kCudaErrorStreamCaptureInvalidated = 901;
inline constexpr CuResult kCudaErrorStreamCaptureImplicit = 906;
inline constexpr CuResult kCudaErrorCapturedEvent = 907;
inline constexpr CuResult kCudaErrorStreamCaptureWrongThread = 908;
inline constexpr CuResult kCudaErrorUnknown = 999;

using CuDevicePtr = unsigned long long;  // CUdeviceptr (v2)
using CuDevice = int;                    // CUdevice
using CuMemGenericAllocationHandle = unsigned long long;
using CuUint64 = uint64_t;  // cuuint64_t
using CuContext = struct CUctx_st*;
using CuStream = struct CUstream_st*;
using CuEvent = struct CUevent_st*;
using CuFunction = struct CUfunc_st*;
using CuArray = struct CUarray_st*;
using CuMipmappedArray = struct CUmipmappedArray_st*;
using CuGraph = struct CUgraph_st*;
using CuGraphExec = struct CUgraphExec_st*;
using CuGraphNode = struct CUgraphNode_st*;
using CuMemoryPool = struct CUmemPoolHandle_st*;
struct CuLaunchAttribute;         // only passed through
struct CuGraphEdgeData;           // only passed through
struct CuGraphInstantiateParams;  // only passed through

// The special stream handles of cuda.h (CU_STREAM_LEGACY, CU_STREAM_PER_THREAD). A NULL stream
// means the legacy default stream for the plain entry points and the calling thread's
// per-thread default stream for the _ptsz ones.
inline constexpr uintptr_t kCuStreamLegacy = 0x1;
inline constexpr uintptr_t kCuStreamPerThread = 0x2;

// CUstreamCaptureMode and CUstreamCaptureStatus.
inline constexpr int kCuStreamCaptureModeGlobal = 0;
inline constexpr int kCuStreamCaptureModeThreadLocal = 1;
inline constexpr int kCuStreamCaptureModeRelaxed = 2;
inline constexpr int kCuStreamCaptureStatusActive = 1;
inline constexpr int kCuStreamCaptureStatusInvalidated = 2;

// CUmemLocationType values: only device-located memory counts against a GPU quota.
inline constexpr int kCuMemLocationTypeInvalid = 0x0;
inline constexpr int kCuMemLocationTypeDevice = 0x1;
inline constexpr int kCuMemLocationTypeHost = 0x2;
inline constexpr int kCuMemLocationTypeHostNuma = 0x3;
inline constexpr int kCuMemLocationTypeHostNumaCurrent = 0x4;
inline constexpr int kCuMemAllocationTypePinned = 0x1;

struct CuMemLocation {  // CUmemLocation
  int type;             // CUmemLocationType
  int id;
};

// CUmemAllocationProp. The interposer reads `location` only; the layout is asserted against
// cuda.h (cuda_abi_check.cc), so reading it is as safe as the driver's own read (HAMi-core#187
// crashed on a hand-written layout that was never checked).
struct CuMemAllocationProp {
  int type;                  // CUmemAllocationType
  int requestedHandleTypes;  // CUmemAllocationHandleType
  CuMemLocation location;
  void* win32HandleMetaData;
  struct {
    unsigned char compressionType;
    unsigned char gpuDirectRDMACapable;
    unsigned short usage;
    unsigned char reserved[4];
  } allocFlags;
};

struct CuMemPoolProps {  // CUmemPoolProps
  int allocType;         // CUmemAllocationType
  int handleTypes;       // CUmemAllocationHandleType
  CuMemLocation location;
  void* win32SecurityAttributes;
  size_t maxSize;
  unsigned short usage;
  unsigned char reserved[54];
};

struct CuMemAllocNodeParams {  // CUDA_MEM_ALLOC_NODE_PARAMS (v1 and v2 share the layout)
  CuMemPoolProps poolProps;
  const void* accessDescs;  // const CUmemAccessDesc*
  size_t accessDescCount;
  size_t bytesize;
  CuDevicePtr dptr;  // out
};

struct CuMemFreeNodeParams {  // CUDA_MEM_FREE_NODE_PARAMS
  CuDevicePtr dptr;
};

// CUgraphNodeParams (cuGraphAddNode): the node type, then a union of per-type parameters; only
// the two memory node types are read.
inline constexpr int kCuGraphNodeTypeMemAlloc = 10;
inline constexpr int kCuGraphNodeTypeMemFree = 11;
struct CuGraphNodeParams {
  int type;  // CUgraphNodeType
  int reserved0[3];
  union {
    long long reserved1[29];
    CuMemAllocNodeParams alloc;
    CuMemFreeNodeParams free;
  };
  long long reserved2;
};

// CUgraphMem_attribute values (cuDeviceGetGraphMemAttribute).
inline constexpr int kCuGraphMemAttrUsedMemCurrent = 0;
inline constexpr int kCuGraphMemAttrReservedMemCurrent = 2;

// CUarray_format values whose element size the quota needs (cuda.h CUarray_format_enum).
inline constexpr int kCuAdFormatUnsignedInt8 = 0x01;
inline constexpr int kCuAdFormatUnsignedInt16 = 0x02;
inline constexpr int kCuAdFormatUnsignedInt32 = 0x03;
inline constexpr int kCuAdFormatSignedInt8 = 0x08;
inline constexpr int kCuAdFormatSignedInt16 = 0x09;
inline constexpr int kCuAdFormatSignedInt32 = 0x0a;
inline constexpr int kCuAdFormatHalf = 0x10;
inline constexpr int kCuAdFormatFloat = 0x20;

struct CuArrayDescriptor {  // CUDA_ARRAY_DESCRIPTOR (v2)
  size_t Width;
  size_t Height;
  int Format;  // CUarray_format
  unsigned int NumChannels;
};

struct CuArray3DDescriptor {  // CUDA_ARRAY3D_DESCRIPTOR (v2)
  size_t Width;
  size_t Height;
  size_t Depth;
  int Format;  // CUarray_format
  unsigned int NumChannels;
  unsigned int Flags;
};

struct CuLaunchConfig {  // CUlaunchConfig
  unsigned int gridDimX;
  unsigned int gridDimY;
  unsigned int gridDimZ;
  unsigned int blockDimX;
  unsigned int blockDimY;
  unsigned int blockDimZ;
  unsigned int sharedMemBytes;
  CuStream hStream;
  CuLaunchAttribute* attrs;
  unsigned int numAttrs;
};

inline constexpr unsigned int kCuEventDefault = 0x0;
inline constexpr int kCuStreamCaptureStatusNone = 0;
inline constexpr int kCuMempoolAttrReservedMemCurrent = 5;  // CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT
inline constexpr CuUint64 kCuGetProcAddressPerThreadDefaultStream = 1 << 1;
inline constexpr int kCuGetProcAddressSuccess = 0;

// Function types, one per hooked entry point (the _ptsz/_ptds variants share them).
using PfnMemGetInfo = CuResult (*)(size_t* free, size_t* total);
using PfnMemAlloc = CuResult (*)(CuDevicePtr* dptr, size_t bytesize);
using PfnMemAllocPitch = CuResult (*)(CuDevicePtr* dptr, size_t* pitch, size_t width_bytes,
                                      size_t height, unsigned int element_size_bytes);
using PfnMemAllocManaged = CuResult (*)(CuDevicePtr* dptr, size_t bytesize, unsigned int flags);
using PfnMemAllocAsync = CuResult (*)(CuDevicePtr* dptr, size_t bytesize, CuStream stream);
using PfnMemAllocFromPoolAsync = CuResult (*)(CuDevicePtr* dptr, size_t bytesize, CuMemoryPool pool,
                                              CuStream stream);
using PfnMemFree = CuResult (*)(CuDevicePtr dptr);
using PfnMemFreeAsync = CuResult (*)(CuDevicePtr dptr, CuStream stream);
using PfnMemPoolTrimTo = CuResult (*)(CuMemoryPool pool, size_t min_bytes_to_keep);
using PfnMemPoolGetAttribute = CuResult (*)(CuMemoryPool pool, int attr, void* value);
using PfnCtxGetDevice = CuResult (*)(CuDevice* device);
using PfnDeviceGetMemPool = CuResult (*)(CuMemoryPool* pool, CuDevice dev);
using PfnMemCreate = CuResult (*)(CuMemGenericAllocationHandle* handle, size_t size,
                                  const CuMemAllocationProp* prop, unsigned long long flags);
using PfnMemRelease = CuResult (*)(CuMemGenericAllocationHandle handle);
using PfnMemRetainAllocationHandle = CuResult (*)(CuMemGenericAllocationHandle* handle, void* addr);
using PfnMemMap = CuResult (*)(CuDevicePtr ptr, size_t size, size_t offset,
                               CuMemGenericAllocationHandle handle, unsigned long long flags);
using PfnMemUnmap = CuResult (*)(CuDevicePtr ptr, size_t size);
using PfnMemPoolCreate = CuResult (*)(CuMemoryPool* pool, const CuMemPoolProps* props);
using PfnDeviceTotalMem = CuResult (*)(size_t* bytes, CuDevice dev);
using PfnStreamGetDevice = CuResult (*)(CuStream stream, CuDevice* device);
using PfnStreamGetCtx = CuResult (*)(CuStream stream, CuContext* ctx);
using PfnCtxPushCurrent = CuResult (*)(CuContext ctx);
using PfnCtxPopCurrent = CuResult (*)(CuContext* ctx);
using PfnThreadExchangeStreamCaptureMode = CuResult (*)(int* mode);  // CUstreamCaptureMode*
using PfnStreamGetCaptureInfoV2 = CuResult (*)(CuStream stream, int* status, CuUint64* id,
                                               CuGraph* graph, const CuGraphNode** deps,
                                               size_t* num_deps);
using PfnStreamGetCaptureInfoV3 = CuResult (*)(CuStream stream, int* status, CuUint64* id,
                                               CuGraph* graph, const CuGraphNode** deps,
                                               const CuGraphEdgeData** edges, size_t* num_deps);
using PfnGraphAddMemAllocNode = CuResult (*)(CuGraphNode* node, CuGraph graph,
                                             const CuGraphNode* deps, size_t num_deps,
                                             CuMemAllocNodeParams* params);
using PfnGraphAddMemFreeNode = CuResult (*)(CuGraphNode* node, CuGraph graph,
                                            const CuGraphNode* deps, size_t num_deps,
                                            CuDevicePtr dptr);
using PfnGraphAddNodeV1 = CuResult (*)(CuGraphNode* node, CuGraph graph, const CuGraphNode* deps,
                                       size_t num_deps, CuGraphNodeParams* params);
using PfnGraphAddNodeV2 = CuResult (*)(CuGraphNode* node, CuGraph graph, const CuGraphNode* deps,
                                       const CuGraphEdgeData* edges, size_t num_deps,
                                       CuGraphNodeParams* params);
using PfnGraphInstantiateLegacy = CuResult (*)(CuGraphExec* exec, CuGraph graph,
                                               CuGraphNode* error_node, char* log, size_t log_size);
using PfnGraphInstantiateWithFlags = CuResult (*)(CuGraphExec* exec, CuGraph graph,
                                                  unsigned long long flags);
using PfnGraphInstantiateWithParams = CuResult (*)(CuGraphExec* exec, CuGraph graph,
                                                   CuGraphInstantiateParams* params);
using PfnGraphDestroy = CuResult (*)(CuGraph graph);
using PfnGraphExecDestroy = CuResult (*)(CuGraphExec exec);
using PfnDeviceGraphMemTrim = CuResult (*)(CuDevice device);
using PfnDeviceGetGraphMemAttribute = CuResult (*)(CuDevice device, int attr, void* value);
using PfnArrayCreate = CuResult (*)(CuArray* handle, const CuArrayDescriptor* desc);
using PfnArray3DCreate = CuResult (*)(CuArray* handle, const CuArray3DDescriptor* desc);
using PfnArrayDestroy = CuResult (*)(CuArray handle);
using PfnMipmappedArrayCreate = CuResult (*)(CuMipmappedArray* handle,
                                             const CuArray3DDescriptor* desc,
                                             unsigned int num_levels);
using PfnMipmappedArrayDestroy = CuResult (*)(CuMipmappedArray handle);
using PfnLaunchKernel = CuResult (*)(CuFunction f, unsigned int grid_x, unsigned int grid_y,
                                     unsigned int grid_z, unsigned int block_x,
                                     unsigned int block_y, unsigned int block_z,
                                     unsigned int shared_mem_bytes, CuStream stream, void** params,
                                     void** extra);
using PfnLaunchKernelEx = CuResult (*)(const CuLaunchConfig* config, CuFunction f, void** params,
                                       void** extra);
using PfnLaunchCooperativeKernel = CuResult (*)(CuFunction f, unsigned int grid_x,
                                                unsigned int grid_y, unsigned int grid_z,
                                                unsigned int block_x, unsigned int block_y,
                                                unsigned int block_z, unsigned int shared_mem_bytes,
                                                CuStream stream, void** params);
using PfnGraphLaunch = CuResult (*)(CuGraphExec exec, CuStream stream);
using PfnEventCreate = CuResult (*)(CuEvent* event, unsigned int flags);
using PfnEventDestroy = CuResult (*)(CuEvent event);
using PfnEventSynchronize = CuResult (*)(CuEvent event);
using PfnEventRecord = CuResult (*)(CuEvent event, CuStream stream);
using PfnEventQuery = CuResult (*)(CuEvent event);
using PfnEventElapsedTime = CuResult (*)(float* ms, CuEvent start, CuEvent end);
using PfnStreamIsCapturing = CuResult (*)(CuStream stream, int* status);
using PfnGetProcAddressV1 = CuResult (*)(const char* symbol, void** pfn, int cuda_version,
                                         CuUint64 flags);
using PfnGetProcAddressV2 = CuResult (*)(const char* symbol, void** pfn, int cuda_version,
                                         CuUint64 flags, int* symbol_status);

// NVML (nvml.h is not shipped with the toolkit): the two memory queries that are virtualized.
using NvmlReturn = int;  // nvmlReturn_t
inline constexpr NvmlReturn kNvmlSuccess = 0;
using NvmlDevice = struct nvmlDevice_st*;
struct NvmlMemory {  // nvmlMemory_t
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};
struct NvmlMemoryV2 {  // nvmlMemory_v2_t
  unsigned int version;
  unsigned long long total;
  unsigned long long reserved;
  unsigned long long free;
  unsigned long long used;
};
using PfnNvmlDeviceGetMemoryInfo = NvmlReturn (*)(NvmlDevice device, NvmlMemory* memory);
using PfnNvmlDeviceGetMemoryInfoV2 = NvmlReturn (*)(NvmlDevice device, NvmlMemoryV2* memory);

}  // namespace carve::interposer
