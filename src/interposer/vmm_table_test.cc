#include "interposer/vmm_table.h"

#include <gtest/gtest.h>

namespace carve::interposer {
namespace {

TEST(VmmTable, ReleasingTheOnlyReferenceOfAnUnmappedAllocationFreesIt) {
  VmmTable t;
  t.Create(7, 2 << 20);
  EXPECT_EQ(t.Release(7), 2u << 20);
  EXPECT_EQ(t.live_count(), 0u);
}

// The CUDA samples release the handle right after mapping: the memory lives until the unmap.
TEST(VmmTable, AMappedAllocationOutlivesItsLastReference) {
  VmmTable t;
  t.Create(7, 2 << 20);
  t.Map(0x1000000, 2 << 20, 7);
  EXPECT_EQ(t.Release(7), 0u);
  EXPECT_EQ(t.live_count(), 1u);
  EXPECT_EQ(t.Unmap(0x1000000, 2 << 20), 2u << 20);
  EXPECT_EQ(t.live_count(), 0u);
}

// ncclCuMemFree: retain the handle by address, release it, unmap, release the original.
TEST(VmmTable, EachRetainNeedsItsOwnRelease) {
  VmmTable t;
  t.Create(7, 4 << 20);
  t.Map(0x2000000, 4 << 20, 7);
  EXPECT_TRUE(t.Retain(7));
  EXPECT_EQ(t.Release(7), 0u);
  EXPECT_EQ(t.Unmap(0x2000000, 4 << 20), 0u);
  EXPECT_EQ(t.Release(7), 4u << 20);
}

TEST(VmmTable, OneUnmapCoversEveryMappingInsideItsRange) {
  VmmTable t;
  t.Create(1, 2 << 20);
  t.Create(2, 2 << 20);
  t.Map(0x4000000, 2 << 20, 1);
  t.Map(0x4200000, 2 << 20, 2);
  t.Create(3, 2 << 20);
  t.Map(0x4400000, 2 << 20, 3);  // outside the range unmapped below
  EXPECT_EQ(t.Release(1) + t.Release(2) + t.Release(3), 0u);
  EXPECT_EQ(t.Unmap(0x4000000, 4 << 20), 4u << 20);
  EXPECT_EQ(t.live_count(), 1u);
}

TEST(VmmTable, HandlesItDidNotCreateAreIgnored) {
  VmmTable t;
  EXPECT_FALSE(t.Retain(9));
  t.Map(0x1000, 0x1000, 9);
  EXPECT_EQ(t.Unmap(0x1000, 0x1000), 0u);
  EXPECT_EQ(t.Release(9), 0u);
}

TEST(VmmTable, AnExtraReleaseOfAFreedHandleFreesNothingTwice) {
  VmmTable t;
  t.Create(7, 100);
  EXPECT_EQ(t.Release(7), 100u);
  EXPECT_EQ(t.Release(7), 0u);
}

}  // namespace
}  // namespace carve::interposer
