// Device bytes charged for CUDA arrays, whose size the driver does not report before allocating.
// The estimate is width x height x depth x channels x element size, summed over mip levels; the
// driver may pad beyond it, which the NVML cross-check (ledger_gap.h) makes visible.
#pragma once

#include <cstdint>

#include "common/result.h"
#include "interposer/cuda_abi.h"

namespace carve::interposer {

// Formats without a listed element size are charged 4 bytes per channel, an upper bound for
// every CUarray_format. InvalidArgument when the size overflows 64 bits.
Result<uint64_t> ArrayBytes(const CuArrayDescriptor& desc);
Result<uint64_t> Array3DBytes(const CuArray3DDescriptor& desc);
// Sum over `levels` mip levels, each halving every non-zero extent (never below 1).
Result<uint64_t> MipmappedArrayBytes(const CuArray3DDescriptor& desc, unsigned int levels);

}  // namespace carve::interposer
