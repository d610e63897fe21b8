#include "agent/nvml/nvml_error.h"

#include <gtest/gtest.h>

namespace carve::agent {
namespace {

TEST(NvmlError, NamesTheCallAndTheReturnCode) {
  Error e = NvmlError(NVML_ERROR_INSUFFICIENT_RESOURCES,
                      "nvmlDeviceCreateGpuInstanceWithPlacement(gpu 0, profile 9, start 4)");
  EXPECT_EQ(e.code, ErrorCode::kResourceExhausted);
  EXPECT_EQ(e.message,
            "nvmlDeviceCreateGpuInstanceWithPlacement(gpu 0, profile 9, start 4): "
            "NVML_ERROR_INSUFFICIENT_RESOURCES (23)");
}

TEST(NvmlError, LostGpuIsUnavailable) {
  Error e = NvmlError(NVML_ERROR_GPU_IS_LOST, "nvmlDeviceGetMigMode(gpu 3)");
  EXPECT_EQ(e.code, ErrorCode::kUnavailable);
  EXPECT_NE(e.message.find("GPU_IS_LOST"), std::string::npos);
}

TEST(NvmlError, InUseIsAFailedPrecondition) {
  EXPECT_EQ(NvmlError(NVML_ERROR_IN_USE, "x").code, ErrorCode::kFailedPrecondition);
}

TEST(NvmlError, NotSupportedIsUnimplemented) {
  EXPECT_EQ(NvmlError(NVML_ERROR_NOT_SUPPORTED, "x").code, ErrorCode::kUnimplemented);
}

TEST(NvmlError, UnknownValuesAreInternal) {
  Error e = NvmlError(static_cast<nvmlReturn_t>(500), "x");
  EXPECT_EQ(e.code, ErrorCode::kInternal);
  EXPECT_EQ(e.message, "x: NVML_RETURN_UNRECOGNISED (500)");
}

}  // namespace
}  // namespace carve::agent
