#include "interposer/floor/glibc_floor.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <exception>

namespace {

int AFunctionOfThisProgram() { return 7; }

// The replacement gives what glibc's own _dl_find_object (2.35+, present on this build host)
// gives, for an address in the program, in libc and in libstdc++.
TEST(GlibcFloor, TheFindObjectReplacementAgreesWithGlibc) {
  void* pcs[] = {reinterpret_cast<void*>(&AFunctionOfThisProgram),
                 reinterpret_cast<void*>(&std::printf),
                 reinterpret_cast<void*>(static_cast<void (*)()>(&std::terminate))};
  for (void* pc : pcs) {
    struct dl_find_object ours {
    }, theirs{};
    ASSERT_EQ(_dl_find_object(pc, &theirs), 0);
    ASSERT_EQ(CarveFindObject(pc, &ours), 0);
    EXPECT_EQ(ours.dlfo_eh_frame, theirs.dlfo_eh_frame) << pc;
    EXPECT_EQ(ours.dlfo_link_map, theirs.dlfo_link_map) << pc;
    EXPECT_LE(ours.dlfo_map_start, pc);
    EXPECT_GT(ours.dlfo_map_end, pc);
  }
}

TEST(GlibcFloor, AnAddressOutsideEveryObjectIsNotFound) {
  struct dl_find_object ours {};
  EXPECT_EQ(CarveFindObject(reinterpret_cast<void*>(16), &ours), -1);
}

// An exception thrown inside a library linked like libcarve-mgpu.so is caught there.
TEST(GlibcFloor, AnExceptionInsideAFloorLinkedLibraryIsCaught) {
  void* lib = dlopen(CARVE_UNWIND_PROBE_PATH, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(lib, nullptr) << dlerror();
  auto catch_fn = reinterpret_cast<int (*)(int)>(dlsym(lib, "carve_floor_catch"));
  ASSERT_NE(catch_fn, nullptr);
  EXPECT_EQ(catch_fn(41), 42);
}

}  // namespace
