#include "interposer/cuda_status.h"

#include <gtest/gtest.h>

namespace carve::interposer {
namespace {

TEST(CudaStatus, AQuotaRefusalIsOutOfMemory) {
  EXPECT_EQ(ToCuResult(ResourceExhausted("over")), kCudaErrorOutOfMemory);
}

TEST(CudaStatus, EveryCodeMapsToADriverError) {
  EXPECT_EQ(ToCuResult(OkStatus()), kCudaSuccess);
  EXPECT_EQ(ToCuResult(InvalidArgument("x")), kCudaErrorInvalidValue);
  EXPECT_EQ(ToCuResult(NotFound("x")), kCudaErrorNotFound);
  EXPECT_EQ(ToCuResult(Unimplemented("x")), kCudaErrorNotSupported);
  EXPECT_EQ(ToCuResult(FailedPrecondition("x")), kCudaErrorNotInitialized);
  EXPECT_EQ(ToCuResult(Internal("x")), kCudaErrorUnknown);
  EXPECT_EQ(ToCuResult(Unavailable("x")), kCudaErrorUnknown);
  EXPECT_EQ(ToCuResult(AlreadyExists("x")), kCudaErrorUnknown);
}

}  // namespace
}  // namespace carve::interposer
