// The one mapping from carve's error codes to CUresult, used by every hook of the interposer.
#pragma once

#include "common/result.h"
#include "interposer/cuda_abi.h"

namespace carve::interposer {

// ResourceExhausted -> CUDA_ERROR_OUT_OF_MEMORY (the quota said no), InvalidArgument ->
// CUDA_ERROR_INVALID_VALUE, NotFound -> CUDA_ERROR_NOT_FOUND, Unimplemented ->
// CUDA_ERROR_NOT_SUPPORTED, FailedPrecondition -> CUDA_ERROR_NOT_INITIALIZED (the interposer was
// told to enforce a ledger it cannot open), anything else -> CUDA_ERROR_UNKNOWN.
CuResult ToCuResult(const Error& error);
// kCudaSuccess for an ok status, ToCuResult(error) otherwise.
CuResult ToCuResult(const Status& status);

}  // namespace carve::interposer
