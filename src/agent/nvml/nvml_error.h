// The one place NVML return codes become carve errors.
#pragma once

#include <string_view>

#include "agent/nvml/nvml_abi.h"
#include "common/result.h"

namespace carve::agent {

// "NVML_ERROR_GPU_IS_LOST"; "NVML_RETURN_<n>" for values this build does not know.
std::string_view NvmlReturnName(nvmlReturn_t rc);

// Maps a failed NVML call to a carve Error. `call` names the call and its arguments, e.g.
// "nvmlDeviceCreateGpuInstanceWithPlacement(gpu 0, profile 9, start 4)"; the message becomes
// "<call>: NVML_ERROR_INSUFFICIENT_RESOURCES (23)". The code table:
//   INVALID_ARGUMENT                                  -> kInvalidArgument
//   NOT_FOUND, GPU_NOT_FOUND, NO_DATA                 -> kNotFound
//   NOT_SUPPORTED, FUNCTION_NOT_FOUND, DEPRECATED,
//   FREQ_NOT_SUPPORTED, VGPU_ECC_NOT_SUPPORTED        -> kUnimplemented
//   INSUFFICIENT_RESOURCES, MEMORY                    -> kResourceExhausted
//   IN_USE, NO_PERMISSION, RESET_REQUIRED, UNINITIALIZED, INVALID_STATE, INSUFFICIENT_POWER,
//   LIB_RM_VERSION_MISMATCH, ARGUMENT_VERSION_MISMATCH -> kFailedPrecondition
//   GPU_IS_LOST, DRIVER_NOT_LOADED, LIBRARY_NOT_FOUND, TIMEOUT, NOT_READY -> kUnavailable
//   anything else (UNKNOWN, INSUFFICIENT_SIZE, ...)   -> kInternal
// Precondition: rc != NVML_SUCCESS.
Error NvmlError(nvmlReturn_t rc, std::string_view call);

}  // namespace carve::agent
