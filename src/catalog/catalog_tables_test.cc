// Property tests over every row of the built-in catalog tables.
#include <gtest/gtest.h>

#include <algorithm>
#include <charconv>
#include <set>
#include <string>

#include "catalog/catalog.h"
#include "catalog/lookup.h"

namespace carve::catalog {
namespace {

// Profile "3g.40gb+me" -> 3: the compute slices NVIDIA spells in the name.
int ComputeSlicesInName(std::string_view name) {
  int value = 0;
  std::from_chars(name.data(), name.data() + name.size(), value);
  return value;
}

TEST(CatalogTables, CanonicalIdsAreExactlyTheIssueList) {
  const std::set<std::string> expected = {"a30-24gb",     "a100-40gb",      "a100-80gb",
                                          "h100-80gb",    "h100-pcie-80gb", "h100-nvl-94gb",
                                          "gh200-96gb",   "gh200-144gb",    "h20-96gb",
                                          "h200-141gb",   "b200-180gb",     "gb200-186gb",
                                          "b300-288gb",   "gb300-288gb",    "rtx-pro-6000",
                                          "rtx-pro-5000", "rtx-pro-4500",   "l4",
                                          "l40s",         "a10g",           "t4"};
  std::set<std::string> ids;
  for (const GpuModel& g : AllGpus()) {
    EXPECT_TRUE(ids.insert(std::string(g.id)).second) << "duplicate GPU id " << g.id;
  }
  EXPECT_EQ(ids, expected);
}

TEST(CatalogTables, SeventeenGpusSupportMigAndFourDoNot) {
  int mig = 0;
  for (const GpuModel& g : AllGpus()) {
    mig += g.mig_capable() ? 1 : 0;
  }
  EXPECT_EQ(mig, 17);
  for (const char* whole : {"l4", "l40s", "a10g", "t4"}) {
    auto gpu = FindGpu(whole);
    ASSERT_TRUE(gpu) << whole;
    EXPECT_FALSE((*gpu)->mig_capable()) << whole;
    EXPECT_EQ((*gpu)->compute_slices, 0) << whole;
  }
}

TEST(CatalogTables, EveryAllowedStartFitsInThePlacementSpace) {
  for (const GpuModel& g : AllGpus()) {
    for (const MigProfile& p : g.profiles) {
      EXPECT_GT(p.placement_size, 0) << g.id << " " << p.name;
      EXPECT_FALSE(p.starts.empty()) << g.id << " " << p.name;
      EXPECT_TRUE(std::ranges::is_sorted(p.starts)) << g.id << " " << p.name;
      for (uint8_t start : p.starts) {
        EXPECT_LE(start + p.placement_size, g.placement_units)
            << g.id << " " << p.name << " start " << int{start};
      }
    }
  }
}

TEST(CatalogTables, ProfileNamesAndIdsAreUniquePerGpu) {
  for (const GpuModel& g : AllGpus()) {
    std::set<std::string> names;
    std::set<uint32_t> ids;
    for (const MigProfile& p : g.profiles) {
      EXPECT_TRUE(names.insert(std::string(p.name)).second) << g.id << " " << p.name;
      EXPECT_TRUE(ids.insert(p.id.value()).second) << g.id << " id " << p.id.value();
    }
  }
}

TEST(CatalogTables, ProfileNamesRoundTripThroughBothSpellings) {
  for (const GpuModel& g : AllGpus()) {
    for (const MigProfile& p : g.profiles) {
      auto nvml = FindProfile(g, p.name);
      ASSERT_TRUE(nvml) << nvml.error().message;
      EXPECT_EQ(*nvml, &p);
      auto sagemaker = FindProfile(g, SageMakerName(p));
      ASSERT_TRUE(sagemaker) << sagemaker.error().message;
      EXPECT_EQ(*sagemaker, &p);
      EXPECT_EQ(FindProfileById(g, p.id), &p);
    }
  }
}

TEST(CatalogTables, GpuNamesAndAliasesResolveBackToTheirGpu) {
  std::set<std::string> seen;
  for (const GpuModel& g : AllGpus()) {
    EXPECT_EQ(FindGpu(g.id).value_or(nullptr), &g) << g.id;
    EXPECT_EQ(FindGpu(g.display_name).value_or(nullptr), &g) << g.display_name;
    for (std::string_view alias : g.aliases) {
      EXPECT_EQ(FindGpu(alias).value_or(nullptr), &g) << g.id << " alias " << alias;
    }
  }
}

TEST(CatalogTables, EveryPciIdIsNvidiasAndMapsBackToItsGpu) {
  for (const GpuModel& g : AllGpus()) {
    for (uint32_t pci : g.pci_device_ids) {
      EXPECT_EQ(pci & 0xFFFFu, 0x10DEu) << g.id << " " << std::hex << pci;
      EXPECT_EQ(FindGpuByPciDeviceId(pci).value_or(nullptr), &g) << g.id << " " << std::hex << pci;
    }
  }
}

TEST(CatalogTables, ProfileSlicesAreWithinTheGpus) {
  for (const GpuModel& g : AllGpus()) {
    for (const MigProfile& p : g.profiles) {
      EXPECT_GE(p.compute_slices, 1) << g.id << " " << p.name;
      EXPECT_LE(p.compute_slices, g.compute_slices) << g.id << " " << p.name;
      EXPECT_GE(p.memory_slices, 1) << g.id << " " << p.name;
      EXPECT_LE(p.memory_slices, g.memory_slices) << g.id << " " << p.name;
      EXPECT_EQ(ComputeSlicesInName(p.name), p.compute_slices) << g.id << " " << p.name;
    }
  }
}

TEST(CatalogTables, ProfileCapsFitTheGpu) {
  for (const GpuModel& g : AllGpus()) {
    for (const MigProfile& p : g.profiles) {
      EXPECT_GE(p.max_count, 1) << g.id << " " << p.name;
      EXPECT_LE(p.max_count, g.max_gpu_instances) << g.id << " " << p.name;
      EXPECT_LE(p.max_count, static_cast<int>(p.starts.size())) << g.id << " " << p.name;
      EXPECT_LE(p.max_count * p.compute_slices, g.compute_slices) << g.id << " " << p.name;
      EXPECT_LE(p.max_count * p.memory_slices, g.memory_slices) << g.id << " " << p.name;
    }
  }
}

TEST(CatalogTables, ProfileMemoryAndSmsAreWithinTheGpus) {
  for (const GpuModel& g : AllGpus()) {
    for (const MigProfile& p : g.profiles) {
      EXPECT_GT(p.memory_mib, 0) << g.id << " " << p.name;
      EXPECT_LE(p.memory_mib, g.memory_mib) << g.id << " " << p.name;
      if (g.sms > 0) {
        EXPECT_LE(p.sms, g.sms) << g.id << " " << p.name;
      }
    }
  }
}

TEST(CatalogTables, SuffixFieldMatchesTheName) {
  for (const GpuModel& g : AllGpus()) {
    for (const MigProfile& p : g.profiles) {
      EXPECT_EQ(p.suffix, SuffixOfName(p.name)) << g.id << " " << p.name;
    }
  }
}

TEST(CatalogTables, ProfileMinimumDriversAreNewerThanTheGpus) {
  for (const GpuModel& g : AllGpus()) {
    if (!g.mig_capable()) {
      continue;
    }
    EXPECT_FALSE(g.min_driver.IsUnset()) << g.id;
    for (const MigProfile& p : g.profiles) {
      if (!p.min_driver.IsUnset()) {
        EXPECT_GT(p.min_driver, g.min_driver) << g.id << " " << p.name;
      }
    }
  }
}

TEST(CatalogTables, RowsBelowHighConfidenceSayWhy) {
  for (const GpuModel& g : AllGpus()) {
    EXPECT_FALSE(g.sources.empty()) << g.id;
    if (g.placement_confidence != Confidence::kHigh) {
      EXPECT_FALSE(g.notes.empty()) << g.id;
    }
    for (const MigProfile& p : g.profiles) {
      if (p.confidence != Confidence::kHigh) {
        EXPECT_FALSE(p.note.empty()) << g.id << " " << p.name;
      }
      if (p.sms == 0) {
        EXPECT_NE(p.note.find("SMs not known"), std::string_view::npos) << p.name;
      }
    }
  }
}

TEST(CatalogTables, EveryInstanceTypeNamesAKnownGpuAndHasAShape) {
  std::set<std::string> ids;
  for (const InstanceType& t : AllInstanceTypes()) {
    EXPECT_TRUE(ids.insert(std::string(t.id)).second) << "duplicate " << t.id;
    EXPECT_TRUE(FindGpu(t.gpu_id)) << t.id << " names unknown GPU " << t.gpu_id;
    EXPECT_GE(t.gpu_count, 1) << t.id;
    EXPECT_GE(t.vcpus, t.gpu_count) << t.id;
    EXPECT_GE(t.memory_mib, 1024) << t.id;
    EXPECT_GE(t.usd_per_hour, 0) << t.id;
    EXPECT_FALSE(t.price_source.empty()) << t.id << " must say where its price comes from";
  }
}

TEST(CatalogTables, IssueInstanceTypesArePresent) {
  for (const char* id : {"ml.p4d.24xlarge", "ml.p4de.24xlarge", "ml.p5.48xlarge", "ml.p5.4xlarge",
                         "ml.p5e.48xlarge", "ml.p5en.48xlarge", "ml.p6-b200.48xlarge",
                         "ml.g5.xlarge", "ml.g6.xlarge", "ml.g6e.xlarge"}) {
    EXPECT_TRUE(FindInstanceType(id)) << id;
  }
  for (std::string_view family : {"ml.g7e.", "ml.g7.", "ml.g5.", "ml.g6.", "ml.g6e."}) {
    int sizes = 0;
    for (const InstanceType& t : AllInstanceTypes()) {
      sizes += t.id.starts_with(family) ? 1 : 0;
    }
    EXPECT_GE(sizes, 4) << family;
  }
}

}  // namespace
}  // namespace carve::catalog
