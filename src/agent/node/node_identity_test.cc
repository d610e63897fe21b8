#include "agent/node/node_identity.h"

#include <gtest/gtest.h>

#include <vector>

#include "agent/nvml/fake_nvml.h"
#include "catalog/catalog.h"

namespace carve::agent::node {
namespace {

std::vector<const catalog::GpuModel*> Many(std::string_view name, int n) {
  return std::vector<const catalog::GpuModel*>(n, catalog::FindGpu(name).value());
}

TEST(DeriveInstanceType, EightA100_40gbAreAP4d) {
  auto t = DeriveInstanceType(Many("a100-40gb", 8), 96);
  ASSERT_TRUE(t.has_value()) << t.error().message;
  EXPECT_EQ(*t, "ml.p4d.24xlarge");
}

TEST(DeriveInstanceType, OneH100IsTheSingleGpuP5) {
  EXPECT_EQ(DeriveInstanceType(Many("h100-80gb", 1), 16).value(), "ml.p5.4xlarge");
}

TEST(DeriveInstanceType, PicksTheLargestTypeTheHostCpusCover) {
  EXPECT_EQ(DeriveInstanceType(Many("a10g", 1), 16).value(), "ml.g5.4xlarge");
  EXPECT_EQ(DeriveInstanceType(Many("a10g", 1), 2).value(), "ml.g5.xlarge");
}

TEST(DeriveInstanceType, MixedModelsAreRejectedNamingTheGpus) {
  auto gpus = Many("a100-40gb", 1);
  gpus.push_back(catalog::FindGpu("h100-80gb").value());
  auto t = DeriveInstanceType(gpus, 96);
  ASSERT_FALSE(t.has_value());
  EXPECT_EQ(t.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(t.error().message.find("a100-40gb, h100-80gb"), std::string::npos)
      << t.error().message;
}

TEST(DeriveInstanceType, ACountNoTypeHasIsRejectedNamingTheCount) {
  auto t = DeriveInstanceType(Many("a100-40gb", 3), 96);
  ASSERT_FALSE(t.has_value());
  EXPECT_NE(t.error().message.find("3 x a100-40gb"), std::string::npos) << t.error().message;
}

TEST(DeriveInstanceType, UncataloguedGpuAndNoGpuAreRejected) {
  std::vector<const catalog::GpuModel*> unknown{nullptr};
  EXPECT_NE(DeriveInstanceType(unknown, 8).error().message.find("uncatalogued"),
            std::string::npos);
  EXPECT_FALSE(DeriveInstanceType({}, 8).has_value());
}

TEST(SimConfigFor, NamesTheTypesGpus) {
  EXPECT_EQ(SimConfigFor("ml.p4d.24xlarge").value(), "gpus: 8 x a100-40gb");
  EXPECT_EQ(SimConfigFor("ml.nope").error().code, ErrorCode::kNotFound);
}

TEST(BuildRegistration, FillsInventoryFromDiscovery) {
  auto nvml = FakeNvml::FromText("gpus: 2 x a100-40gb, mig: pending-disable, driver: 550.54.15");
  ASSERT_TRUE(nvml.has_value());
  auto inv = DiscoverNode(**nvml);
  ASSERT_TRUE(inv.has_value());
  auto r = BuildRegistration({"n1", "ml.x", "nvml", "host", "/data"}, *inv);
  EXPECT_EQ(r.node_id, "n1");
  EXPECT_EQ(r.driver_version, "550.54.15");
  ASSERT_EQ(r.gpus.size(), 2u);
  EXPECT_EQ(r.gpus[1].index, 1);
  EXPECT_EQ(r.gpus[0].catalog_model, "a100-40gb");
  EXPECT_EQ(r.gpus[0].pci_device_id, 0x20B0u);
  EXPECT_TRUE(r.gpus[0].mig_capable);
  EXPECT_EQ(r.gpus[0].mig_mode_current, 1);
  EXPECT_EQ(r.gpus[0].mig_mode_pending, 0);
  EXPECT_EQ(r.gpus[0].uuid.rfind("GPU-", 0), 0u);
  EXPECT_GT(r.gpus[0].memory_mib, 0);
  EXPECT_EQ(BuildRegistration({"n1", "ml.x", "sim", "h", "/d"}, *inv).driver_version, "");
}

TEST(BuildRegistration, ReportsEachCatalogDifferenceAsALine) {
  NodeInventory inv;
  inv.differences.push_back({GpuIndex{3}, DifferenceKind::kPlacements, "1g.5gb", "{0,1}",
                             "{0}", "NVML allows fewer starts"});
  auto r = BuildRegistration({"n", "t", "nvml", "h", "/d"}, inv);
  ASSERT_EQ(r.catalog_diffs.size(), 1u);
  EXPECT_EQ(r.catalog_diffs[0],
            "gpu 3 1g.5gb placements: catalog {0,1}, live {0}: NVML allows fewer starts");
}

}  // namespace
}  // namespace carve::agent::node
