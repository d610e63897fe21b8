#include "interposer/array_size.h"

#include <gtest/gtest.h>

namespace carve::interposer {
namespace {

TEST(ArraySize, IsWidthTimesHeightTimesChannelsTimesElementSize) {
  EXPECT_EQ(*ArrayBytes({100, 0, kCuAdFormatFloat, 1}), 400u);  // height 0 means 1D
  EXPECT_EQ(*ArrayBytes({100, 10, kCuAdFormatHalf, 4}), 8000u);
  EXPECT_EQ(*Array3DBytes({8, 8, 8, kCuAdFormatUnsignedInt8, 2, 0}), 1024u);
}

TEST(ArraySize, AnUnlistedFormatIsChargedFourBytesPerChannel) {
  EXPECT_EQ(*ArrayBytes({10, 10, 0x91 /* BC1 */, 4}), 1600u);
}

TEST(ArraySize, MipLevelsHalveEveryExtentDownToOne) {
  // 8x4x1 float: 128 + 4x2 (32) + 2x1 (8) + 1x1 (4) bytes.
  EXPECT_EQ(*MipmappedArrayBytes({8, 4, 0, kCuAdFormatFloat, 1, 0}, 4), 172u);
  EXPECT_FALSE(MipmappedArrayBytes({8, 4, 0, kCuAdFormatFloat, 1, 0}, 0).has_value());
}

TEST(ArraySize, OverflowIsAnErrorNotAWrap) {
  auto r = Array3DBytes({SIZE_MAX, 2, 2, kCuAdFormatFloat, 4, 0});
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, ErrorCode::kInvalidArgument);
}

}  // namespace
}  // namespace carve::interposer
