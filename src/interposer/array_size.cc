#include "interposer/array_size.h"

namespace carve::interposer {
namespace {

// Bytes per channel element of the CUarray_format values an array can be created with
// (cuda.h CUarray_format_enum; the block-compressed and video formats are not accepted here).
Result<uint64_t> ElementBytes(int format) {
  switch (format) {
    case kCuAdFormatUnsignedInt8:
    case kCuAdFormatSignedInt8:
      return uint64_t{1};
    case kCuAdFormatUnsignedInt16:
    case kCuAdFormatSignedInt16:
    case kCuAdFormatHalf:
      return uint64_t{2};
    case kCuAdFormatUnsignedInt32:
    case kCuAdFormatSignedInt32:
    case kCuAdFormatFloat:
      return uint64_t{4};
    default:
      // Packed, video and block-compressed formats: 4 bytes per channel bounds them all, so the
      // quota over-charges rather than lets an unknown format through.
      return uint64_t{4};
  }
}

Result<uint64_t> Multiply(std::initializer_list<uint64_t> factors) {
  uint64_t product = 1;
  for (uint64_t f : factors) {
    if (__builtin_mul_overflow(product, f, &product)) {
      return InvalidArgument("array extent overflows 64 bits");
    }
  }
  return product;
}

uint64_t AtLeastOne(uint64_t v) { return v == 0 ? 1 : v; }

}  // namespace

Result<uint64_t> ArrayBytes(const CuArrayDescriptor& d) {
  CARVE_ASSIGN_OR_RETURN(uint64_t element, ElementBytes(d.Format));
  return Multiply({d.Width, AtLeastOne(d.Height), d.NumChannels, element});
}

Result<uint64_t> Array3DBytes(const CuArray3DDescriptor& d) {
  CARVE_ASSIGN_OR_RETURN(uint64_t element, ElementBytes(d.Format));
  return Multiply({d.Width, AtLeastOne(d.Height), AtLeastOne(d.Depth), d.NumChannels, element});
}

Result<uint64_t> MipmappedArrayBytes(const CuArray3DDescriptor& d, unsigned int levels) {
  if (levels == 0) return InvalidArgument("a mipmapped array needs at least 1 level");
  CuArray3DDescriptor level = d;
  uint64_t total = 0;
  for (unsigned int i = 0; i < levels; ++i) {
    CARVE_ASSIGN_OR_RETURN(uint64_t bytes, Array3DBytes(level));
    if (__builtin_add_overflow(total, bytes, &total)) {
      return InvalidArgument("mipmapped array size overflows 64 bits");
    }
    auto halve = [](size_t v) -> size_t { return v > 1 ? v / 2 : v; };
    level.Width = halve(level.Width);
    level.Height = halve(level.Height);
    level.Depth = halve(level.Depth);
  }
  return total;
}

}  // namespace carve::interposer
