#include "interposer/symbol_variant.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <utility>

namespace carve::interposer {
namespace {

std::string Select(std::string_view base, int version, bool per_thread = false) {
  auto v = SelectVariant(HookedSymbolVariants(), base, version, per_thread);
  return v ? std::string(*v) : "(none)";
}

// The risk this table settles: CUDA 11.3-11.8 runtimes ask for "cuGetProcAddress" and call it
// with four arguments; the five-argument _v2 would write a status through a garbage pointer.
TEST(SymbolVariant, ACuda11CallerGetsTheFourArgumentCuGetProcAddress) {
  EXPECT_EQ(Select("cuGetProcAddress", 11080), "cuGetProcAddress");
  EXPECT_EQ(Select("cuGetProcAddress", 12000), "cuGetProcAddress_v2");
  EXPECT_EQ(Select("cuGetProcAddress", 11020), "(none)");
}

TEST(SymbolVariant, TheVersionPicksTheNewestRevisionItKnows) {
  EXPECT_EQ(Select("cuMemAlloc", 3010), "cuMemAlloc");
  EXPECT_EQ(Select("cuMemAlloc", 13000), "cuMemAlloc_v2");
  EXPECT_EQ(Select("cuGraphInstantiate", 11080), "cuGraphInstantiate_v2");
  EXPECT_EQ(Select("cuGraphInstantiate", 12000), "cuGraphInstantiateWithFlags");
  EXPECT_EQ(Select("cuGraphAddNode", 12020), "cuGraphAddNode");
  EXPECT_EQ(Select("cuGraphAddNode", 12040), "cuGraphAddNode_v2");
}

TEST(SymbolVariant, PerThreadCallersGetThePtszRevisionWhereOneExists) {
  EXPECT_EQ(Select("cuLaunchKernel", 12000, true), "cuLaunchKernel_ptsz");
  EXPECT_EQ(Select("cuLaunchKernel", 12000, false), "cuLaunchKernel");
  EXPECT_EQ(Select("cuLaunchKernel", 6050, true), "cuLaunchKernel");  // before CUDA 7
  EXPECT_EQ(Select("cuMemAlloc", 12000, true), "cuMemAlloc_v2");      // no stream, no _ptsz
}

TEST(SymbolVariant, AnUnknownSymbolHasNoVariant) {
  EXPECT_EQ(Select("cuCtxCreate", 13000), "(none)");
}

// Properties of every row: no duplicates (one export may serve two base names:
// cuGraphInstantiateWithFlags is also what "cuGraphInstantiate" means since CUDA 12), versions
// sane, per-thread rows named _ptsz, and each revision selected at the version that introduced it.
TEST(SymbolVariant, EveryRowIsConsistent) {
  std::set<std::pair<std::string_view, std::string_view>> rows;
  for (const SymbolVariant& row : HookedSymbolVariants()) {
    SCOPED_TRACE(std::string(row.exported));
    EXPECT_TRUE(rows.insert({row.base, row.exported}).second) << "listed twice";
    EXPECT_TRUE(row.exported.starts_with(row.base));
    EXPECT_GE(row.since_version, 2000);
    EXPECT_LE(row.since_version, 13000);
    // cudaTypedefs.h's PFN_<name>_v<version>: 1000 x major + 10 x minor, never in between.
    EXPECT_EQ(row.since_version % 10, 0);
    EXPECT_EQ(row.per_thread, row.exported.ends_with("_ptsz"));
    auto chosen =
        SelectVariant(HookedSymbolVariants(), row.base, row.since_version, row.per_thread);
    ASSERT_TRUE(chosen.has_value());
    EXPECT_EQ(*chosen, row.exported) << "a revision is what its own version selects";
    auto before =
        SelectVariant(HookedSymbolVariants(), row.base, row.since_version - 10, row.per_thread);
    EXPECT_NE(before.value_or(""), row.exported) << "and no caller of an older version gets it";
  }
}

}  // namespace
}  // namespace carve::interposer
