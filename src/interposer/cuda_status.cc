#include "interposer/cuda_status.h"

namespace carve::interposer {

CuResult ToCuResult(const Error& error) {
  switch (error.code) {
    case ErrorCode::kResourceExhausted:
      return kCudaErrorOutOfMemory;
    case ErrorCode::kInvalidArgument:
      return kCudaErrorInvalidValue;
    case ErrorCode::kNotFound:
      return kCudaErrorNotFound;
    case ErrorCode::kUnimplemented:
      return kCudaErrorNotSupported;
    case ErrorCode::kFailedPrecondition:
      return kCudaErrorNotInitialized;
    case ErrorCode::kAlreadyExists:
    case ErrorCode::kUnavailable:
    case ErrorCode::kInternal:
      return kCudaErrorUnknown;
  }
  return kCudaErrorUnknown;
}

CuResult ToCuResult(const Status& status) {
  return status.ok() ? kCudaSuccess : ToCuResult(status.error());
}

}  // namespace carve::interposer
