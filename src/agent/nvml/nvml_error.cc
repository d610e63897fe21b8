#include "agent/nvml/nvml_error.h"

#include <fmt/format.h>

namespace carve::agent {

std::string_view NvmlReturnName(nvmlReturn_t rc) {
  switch (rc) {
    case NVML_SUCCESS:
      return "NVML_SUCCESS";
    case NVML_ERROR_UNINITIALIZED:
      return "NVML_ERROR_UNINITIALIZED";
    case NVML_ERROR_INVALID_ARGUMENT:
      return "NVML_ERROR_INVALID_ARGUMENT";
    case NVML_ERROR_NOT_SUPPORTED:
      return "NVML_ERROR_NOT_SUPPORTED";
    case NVML_ERROR_NO_PERMISSION:
      return "NVML_ERROR_NO_PERMISSION";
    case NVML_ERROR_ALREADY_INITIALIZED:
      return "NVML_ERROR_ALREADY_INITIALIZED";
    case NVML_ERROR_NOT_FOUND:
      return "NVML_ERROR_NOT_FOUND";
    case NVML_ERROR_INSUFFICIENT_SIZE:
      return "NVML_ERROR_INSUFFICIENT_SIZE";
    case NVML_ERROR_INSUFFICIENT_POWER:
      return "NVML_ERROR_INSUFFICIENT_POWER";
    case NVML_ERROR_DRIVER_NOT_LOADED:
      return "NVML_ERROR_DRIVER_NOT_LOADED";
    case NVML_ERROR_TIMEOUT:
      return "NVML_ERROR_TIMEOUT";
    case NVML_ERROR_IRQ_ISSUE:
      return "NVML_ERROR_IRQ_ISSUE";
    case NVML_ERROR_LIBRARY_NOT_FOUND:
      return "NVML_ERROR_LIBRARY_NOT_FOUND";
    case NVML_ERROR_FUNCTION_NOT_FOUND:
      return "NVML_ERROR_FUNCTION_NOT_FOUND";
    case NVML_ERROR_CORRUPTED_INFOROM:
      return "NVML_ERROR_CORRUPTED_INFOROM";
    case NVML_ERROR_GPU_IS_LOST:
      return "NVML_ERROR_GPU_IS_LOST";
    case NVML_ERROR_RESET_REQUIRED:
      return "NVML_ERROR_RESET_REQUIRED";
    case NVML_ERROR_OPERATING_SYSTEM:
      return "NVML_ERROR_OPERATING_SYSTEM";
    case NVML_ERROR_LIB_RM_VERSION_MISMATCH:
      return "NVML_ERROR_LIB_RM_VERSION_MISMATCH";
    case NVML_ERROR_IN_USE:
      return "NVML_ERROR_IN_USE";
    case NVML_ERROR_MEMORY:
      return "NVML_ERROR_MEMORY";
    case NVML_ERROR_NO_DATA:
      return "NVML_ERROR_NO_DATA";
    case NVML_ERROR_VGPU_ECC_NOT_SUPPORTED:
      return "NVML_ERROR_VGPU_ECC_NOT_SUPPORTED";
    case NVML_ERROR_INSUFFICIENT_RESOURCES:
      return "NVML_ERROR_INSUFFICIENT_RESOURCES";
    case NVML_ERROR_FREQ_NOT_SUPPORTED:
      return "NVML_ERROR_FREQ_NOT_SUPPORTED";
    case NVML_ERROR_ARGUMENT_VERSION_MISMATCH:
      return "NVML_ERROR_ARGUMENT_VERSION_MISMATCH";
    case NVML_ERROR_DEPRECATED:
      return "NVML_ERROR_DEPRECATED";
    case NVML_ERROR_NOT_READY:
      return "NVML_ERROR_NOT_READY";
    case NVML_ERROR_GPU_NOT_FOUND:
      return "NVML_ERROR_GPU_NOT_FOUND";
    case NVML_ERROR_INVALID_STATE:
      return "NVML_ERROR_INVALID_STATE";
    case NVML_ERROR_UNKNOWN:
      return "NVML_ERROR_UNKNOWN";
  }
  return "NVML_RETURN_UNRECOGNISED";
}

namespace {

ErrorCode CodeFor(nvmlReturn_t rc) {
  switch (rc) {
    case NVML_ERROR_INVALID_ARGUMENT:
      return ErrorCode::kInvalidArgument;
    case NVML_ERROR_NOT_FOUND:
    case NVML_ERROR_GPU_NOT_FOUND:
    case NVML_ERROR_NO_DATA:
      return ErrorCode::kNotFound;
    case NVML_ERROR_NOT_SUPPORTED:
    case NVML_ERROR_FUNCTION_NOT_FOUND:
    case NVML_ERROR_DEPRECATED:
    case NVML_ERROR_FREQ_NOT_SUPPORTED:
    case NVML_ERROR_VGPU_ECC_NOT_SUPPORTED:
      return ErrorCode::kUnimplemented;
    case NVML_ERROR_INSUFFICIENT_RESOURCES:
    case NVML_ERROR_MEMORY:
      return ErrorCode::kResourceExhausted;
    case NVML_ERROR_IN_USE:
    case NVML_ERROR_NO_PERMISSION:
    case NVML_ERROR_RESET_REQUIRED:
    case NVML_ERROR_UNINITIALIZED:
    case NVML_ERROR_INVALID_STATE:
    case NVML_ERROR_INSUFFICIENT_POWER:
    case NVML_ERROR_LIB_RM_VERSION_MISMATCH:
    case NVML_ERROR_ARGUMENT_VERSION_MISMATCH:
      return ErrorCode::kFailedPrecondition;
    // A lost GPU needs a reset or reboot, not a code fix: the agent reports the GPU unhealthy
    // and may retry after recovery, so it is Unavailable rather than Internal.
    case NVML_ERROR_GPU_IS_LOST:
    case NVML_ERROR_DRIVER_NOT_LOADED:
    case NVML_ERROR_LIBRARY_NOT_FOUND:
    case NVML_ERROR_TIMEOUT:
    case NVML_ERROR_NOT_READY:
      return ErrorCode::kUnavailable;
    default:
      return ErrorCode::kInternal;
  }
}

}  // namespace

Error NvmlError(nvmlReturn_t rc, std::string_view call) {
  return Error{CodeFor(rc),
               fmt::format("{}: {} ({})", call, NvmlReturnName(rc), static_cast<int>(rc))};
}

}  // namespace carve::agent
