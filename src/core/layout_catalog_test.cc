// The layout engine over the real catalog tables (src/catalog/data/): the acceptance
// examples and the property that slice sums and placement search agree on every MIG GPU.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "catalog/catalog.h"
#include "core/layout_enumerator.h"
#include "core/layout_placer.h"
#include "core/layout_search.h"
#include "core/layout_validator.h"

namespace carve::core {
namespace {

using catalog::GpuModel;
using catalog::MigProfile;
using ::testing::HasSubstr;

using Names = std::vector<std::string>;

const GpuModel& Gpu(std::string_view id) { return *catalog::FindGpu(id).value(); }

std::vector<const GpuModel*> MigGpus() {
  std::vector<const GpuModel*> out;
  for (const GpuModel& g : catalog::AllGpus()) {
    if (g.mig_capable()) out.push_back(&g);
  }
  return out;
}

TEST(LayoutCatalog, SeedLayoutIsValidOnA100AndAP4dYieldsTwentyFourPartitions) {
  Result<Layout> layout =
      ValidateLayout(Gpu("a100-40gb"), Names{"mig-4g.20gb", "mig-2g.10gb", "mig-1g.5gb"});
  ASSERT_TRUE(layout.has_value()) << layout.error().message;
  const catalog::InstanceType& p4d = *catalog::FindInstanceType("ml.p4d.24xlarge").value();
  Result<InstancePartitions> parts = PartitionsPerInstance(p4d, *layout);
  ASSERT_TRUE(parts.has_value()) << parts.error().message;
  EXPECT_EQ(parts->total, 24);
  ASSERT_EQ(parts->counts.size(), 3u);
  for (const auto& c : parts->counts) EXPECT_EQ(c.per_instance, 8) << c.profile->name;
}

TEST(LayoutCatalog, TwoThreeGsFillAnH100AndNothingElseFitsBesideThem) {
  Result<Layout> layout = ValidateLayout(Gpu("h100-80gb"), Names{"mig-3g.40gb", "mig-3g.40gb"});
  ASSERT_TRUE(layout.has_value()) << layout.error().message;
  Result<std::vector<Opening>> openings = OpenProfiles(*layout);
  ASSERT_TRUE(openings.has_value()) << openings.error().message;
  EXPECT_TRUE(openings->empty());
}

TEST(LayoutCatalog, OverCapacityOnH100NamesProvidedAgainstRequested) {
  Result<Layout> layout = ValidateLayout(Gpu("h100-80gb"), Names{"mig-4g.40gb", "mig-4g.40gb"});
  ASSERT_FALSE(layout.has_value());
  EXPECT_THAT(layout.error().message,
              HasSubstr("h100-80gb provides 7 compute slices and 8 memory slices; layout "
                        "[mig-4g.40gb, mig-4g.40gb] requests 8 compute slices and 8 memory "
                        "slices"));
}

TEST(LayoutCatalog, P4dDefaultDriverRefusesOneGTenGbNamingR525) {
  // Seed: the default P4d image ships 470.256.02; mig-1g.10gb needs R525.
  LayoutOptions options;
  options.driver = catalog::DriverVersion::Parse("470.256.02").value();
  Result<Layout> layout = ValidateLayout(Gpu("a100-40gb"), Names{"mig-1g.10gb"}, options);
  ASSERT_FALSE(layout.has_value());
  EXPECT_THAT(layout.error().message, HasSubstr("mig-1g.10gb needs driver R525 or newer"));
}

TEST(LayoutCatalog, A100ClassicProfilesGiveTheMigGuidesNineteenLayouts) {
  const GpuModel& a100 = Gpu("a100-40gb");
  EnumerateOptions options;
  for (const char* name : {"1g.5gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb"}) {
    options.profiles.push_back(catalog::FindProfile(a100, name).value());
  }
  auto layouts = EnumerateMaximalLayouts(a100, options);
  ASSERT_TRUE(layouts.has_value());
  EXPECT_EQ(layouts->size(), 19u);
}

TEST(LayoutCatalog, EveryMigGpuEnumeratesValidMaximalLayouts) {
  for (const GpuModel* gpu : MigGpus()) {
    auto layouts = EnumerateMaximalLayouts(*gpu);
    ASSERT_TRUE(layouts.has_value()) << gpu->id << ": " << layouts.error().message;
    EXPECT_FALSE(layouts->empty()) << gpu->id;
    for (const Layout& l : *layouts) {
      EXPECT_TRUE(CheckPinned(l).ok()) << gpu->id << " " << LayoutText(l.instances);
      auto openings = OpenProfiles(l);
      ASSERT_TRUE(openings.has_value());
      EXPECT_TRUE(openings->empty()) << gpu->id << " " << LayoutText(l.instances);
    }
  }
}

TEST(LayoutCatalog, EveryMigInstanceTypeCarvedWholeYieldsOnePartitionPerGpu) {
  for (const catalog::InstanceType& type : catalog::AllInstanceTypes()) {
    const GpuModel& gpu = Gpu(type.gpu_id);
    if (!gpu.mig_capable()) continue;
    // The profile that takes every compute slice.
    const MigProfile* whole = nullptr;
    for (const MigProfile& p : gpu.profiles) {
      if (p.compute_slices == gpu.compute_slices && p.suffix == catalog::ProfileSuffix::kNone) {
        whole = &p;
      }
    }
    ASSERT_NE(whole, nullptr) << gpu.id;
    const MigProfile* one[] = {whole};
    Result<Layout> layout = ValidateProfiles(gpu, one);
    ASSERT_TRUE(layout.has_value()) << type.id << ": " << layout.error().message;
    Result<InstancePartitions> parts = PartitionsPerInstance(type, *layout);
    ASSERT_TRUE(parts.has_value());
    EXPECT_EQ(parts->total, type.gpu_count) << type.id;
  }
}

// Calls `visit` with every multiset of the GPU's profiles, each profile 0..max_count times.
void ForEachMultiset(const GpuModel& gpu,
                     const std::function<void(std::vector<const MigProfile*>&)>& visit) {
  std::vector<const MigProfile*> current;
  std::function<void(size_t)> recurse = [&](size_t i) {
    if (i == gpu.profiles.size()) {
      visit(current);
      return;
    }
    const MigProfile& p = gpu.profiles[i];
    for (int n = 0; n <= p.max_count; ++n) {
      recurse(i + 1);
      current.push_back(&p);
    }
    current.resize(current.size() - static_cast<size_t>(p.max_count) - 1);
  };
  recurse(0);
}

// Where the reference geometry makes slice sums and placement disagree. Empty: the reference
// (mig-catalog.md section 3) and this test find none on any MIG GPU in the catalog.
const std::vector<std::string> kKnownSumPlacementDisagreements = {};

TEST(LayoutCatalog, SliceSumsAgreeWithPlacementSearchOnEveryMigGpu) {
  for (const GpuModel* gpu : MigGpus()) {
    ASSERT_TRUE(HasPlacementGeometry(*gpu)) << gpu->id;
    int multisets = 0;
    std::vector<std::string> disagreements;
    ForEachMultiset(*gpu, [&](std::vector<const MigProfile*>& profiles) {
      ++multisets;
      ProfileTally tally(*gpu);
      for (const MigProfile* p : profiles) tally.Add(*p);
      const bool by_sums = KeepsRules(tally, {}, RuleScope::kWithSums);
      const bool by_placement = KeepsRules(tally, {}, RuleScope::kMultiset) &&
                                FindPlacement(*gpu, 0, profiles).has_value();
      if (by_sums != by_placement) {
        disagreements.push_back(fmt::format("{} {} sums={} placement={}", gpu->id,
                                            LayoutText(profiles), by_sums, by_placement));
      }
    });
    EXPECT_GT(multisets, 1) << gpu->id;
    for (const std::string& d : disagreements) {
      const bool known =
          std::find(kKnownSumPlacementDisagreements.begin(), kKnownSumPlacementDisagreements.end(),
                    d) != kKnownSumPlacementDisagreements.end();
      EXPECT_TRUE(known) << "slice sums and placement disagree: " << d;
    }
  }
}

}  // namespace
}  // namespace carve::core
