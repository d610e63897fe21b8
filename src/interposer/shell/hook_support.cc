#include "interposer/shell/hook_support.h"

namespace carve::interposer::shell {
namespace {

bool IsSpecialStream(CuStream stream) {
  const auto v = reinterpret_cast<uintptr_t>(stream);
  return v == 0 || v == kCuStreamLegacy || v == kCuStreamPerThread;
}

CuDevice CurrentDevice() {
  static const auto get = Real<PfnCtxGetDevice>(Fn::k_cuCtxGetDevice);
  CuDevice dev = -1;
  if (get == nullptr || get(&dev) != kCudaSuccess) return -1;
  return dev;
}

// Drivers before CUDA 12.8 have no cuStreamGetDevice: ask with the stream's context current.
CuDevice DeviceOfStreamContext(CuStream stream) {
  static const auto get_ctx = Real<PfnStreamGetCtx>(Fn::k_cuStreamGetCtx);
  static const auto push = Real<PfnCtxPushCurrent>(Fn::k_cuCtxPushCurrent_v2);
  static const auto pop = Real<PfnCtxPopCurrent>(Fn::k_cuCtxPopCurrent_v2);
  CuContext ctx = nullptr;
  if (get_ctx == nullptr || push == nullptr || pop == nullptr ||
      get_ctx(stream, &ctx) != kCudaSuccess || push(ctx) != kCudaSuccess) {
    return -1;
  }
  const CuDevice dev = CurrentDevice();
  CuContext popped = nullptr;
  (void)pop(&popped);
  return dev;
}

// Releases the cache of `pool` down to what the driver still reserves for it.
void SyncPoolWithDriver(Runtime& rt, uint64_t pool) {
  CuUint64 reserved = 0;
  if (MemoryAccount::IsGraphPoolKey(pool)) {
    static const auto trim = Real<PfnDeviceGraphMemTrim>(Fn::k_cuDeviceGraphMemTrim);
    static const auto get = Real<PfnDeviceGetGraphMemAttribute>(Fn::k_cuDeviceGetGraphMemAttribute);
    // A live graph or executable graph may map its allocations again at its next launch,
    // whatever the driver reserves now: its bytes stay charged until it is destroyed.
    if (trim == nullptr || get == nullptr || rt.account->HasGraphOwners()) return;
    const CuDevice dev = MemoryAccount::GraphPoolDevice(pool);
    if (trim(dev) != kCudaSuccess ||
        get(dev, kCuGraphMemAttrReservedMemCurrent, &reserved) != kCudaSuccess) {
      return;
    }
  } else {
    static const auto trim = Real<PfnMemPoolTrimTo>(Fn::k_cuMemPoolTrimTo);
    static const auto get = Real<PfnMemPoolGetAttribute>(Fn::k_cuMemPoolGetAttribute);
    auto* handle = reinterpret_cast<CuMemoryPool>(pool);  // NOLINT(performance-no-int-to-ptr)
    if (trim == nullptr || get == nullptr || trim(handle, 0) != kCudaSuccess ||
        get(handle, kCuMempoolAttrReservedMemCurrent, &reserved) != kCudaSuccess) {
      return;
    }
  }
  rt.account->SyncPool(pool, reserved);
}

}  // namespace

std::optional<int> CaptureStatus(CuStream stream) {
  static const auto is_capturing = Real<PfnStreamIsCapturing>(Fn::k_cuStreamIsCapturing);
  int status = kCuStreamCaptureStatusNone;
  if (is_capturing == nullptr) return kCuStreamCaptureStatusNone;
  if (is_capturing(stream, &status) != kCudaSuccess) return std::nullopt;
  return status;
}

std::optional<CuGraph> CapturedGraph(CuStream stream) {
  std::optional<int> status = CaptureStatus(stream);
  if (status.has_value() && *status == kCuStreamCaptureStatusNone) return std::nullopt;
  static const auto info3 = Real<PfnStreamGetCaptureInfoV3>(Fn::k_cuStreamGetCaptureInfo_v3);
  static const auto info2 = Real<PfnStreamGetCaptureInfoV2>(Fn::k_cuStreamGetCaptureInfo_v2);
  int st = kCuStreamCaptureStatusNone;
  CuUint64 id = 0;
  CuGraph graph = nullptr;
  CuResult r = kCudaErrorNotSupported;
  if (info3 != nullptr) {
    r = info3(stream, &st, &id, &graph, nullptr, nullptr, nullptr);
  } else if (info2 != nullptr) {
    r = info2(stream, &st, &id, &graph, nullptr, nullptr);
  }
  if (r == kCudaSuccess && st == kCuStreamCaptureStatusNone) return std::nullopt;
  return r == kCudaSuccess ? graph : nullptr;
}

CuDevice StreamDevice(CuStream stream) {
  if (IsSpecialStream(stream)) return CurrentDevice();
  static const auto get = Real<PfnStreamGetDevice>(Fn::k_cuStreamGetDevice);
  CuDevice dev = -1;
  if (get != nullptr && get(stream, &dev) == kCudaSuccess) return dev;
  dev = DeviceOfStreamContext(stream);
  return dev >= 0 ? dev : CurrentDevice();
}

RelaxedCaptureMode::RelaxedCaptureMode() {
  static const auto exchange =
      Real<PfnThreadExchangeStreamCaptureMode>(Fn::k_cuThreadExchangeStreamCaptureMode);
  saved_ = kCuStreamCaptureModeRelaxed;
  swapped_ = exchange != nullptr && exchange(&saved_) == kCudaSuccess;
}

RelaxedCaptureMode::~RelaxedCaptureMode() {
  static const auto exchange =
      Real<PfnThreadExchangeStreamCaptureMode>(Fn::k_cuThreadExchangeStreamCaptureMode);
  if (swapped_) (void)exchange(&saved_);
}

bool ChargedLocation(const CuMemLocation& location) {
  switch (location.type) {
    case kCuMemLocationTypeHost:
    case kCuMemLocationTypeHostNuma:
    case kCuMemLocationTypeHostNumaCurrent:
      return false;
    default:
      return true;
  }
}

void TrimPools(Runtime& rt) {
  for (uint64_t pool : rt.account->PoolsWithCache()) SyncPoolWithDriver(rt, pool);
}

Status AdmitWithTrim(Runtime& rt, uint64_t bytes) {
  Status s = rt.account->Admit(bytes);
  if (s.ok() || rt.account->PoolsWithCache().empty()) return s;
  TrimPools(rt);
  return rt.account->Admit(bytes);
}

}  // namespace carve::interposer::shell
