#include "server/ui/catalog_json.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace carve::server::ui {
namespace {

using nlohmann::json;

TEST(CatalogJson, ListsEveryInstanceTypeAndGpu) {
  json j = CatalogJson();
  EXPECT_EQ(j["instance_types"].size(), catalog::AllInstanceTypes().size());
  EXPECT_EQ(j["gpus"].size(), catalog::AllGpus().size());
}

// Every profile's pricing share is the planner's: max(compute fraction, memory fraction).
TEST(CatalogJson, GivesEveryProfileItsShareOfTheGpu) {
  const json catalog = CatalogJson();  // Not in the range: it would die before the loop body.
  for (const json& g : catalog["gpus"]) {
    for (const json& p : g["profiles"]) {
      const double want =
          std::max(p["compute_slices"].get<double>() / g["compute_slices"].get<double>(),
                   p["memory_slices"].get<double>() / g["memory_slices"].get<double>());
      EXPECT_DOUBLE_EQ(p["gpu_share"].get<double>(), want) << g["id"] << " " << p["name"];
      EXPECT_EQ(p["sagemaker_name"], "mig-" + p["name"].get<std::string>());
    }
  }
}

TEST(CatalogJson, DescribesTheSeedsInstanceType) {
  json j = CatalogJson();
  auto it = std::find_if(j["instance_types"].begin(), j["instance_types"].end(),
                         [](const json& t) { return t["id"] == "ml.p4d.24xlarge"; });
  ASSERT_NE(it, j["instance_types"].end());
  EXPECT_EQ((*it)["gpu"], "a100-40gb");
  EXPECT_EQ((*it)["gpu_count"], 8);
  EXPECT_GT((*it)["usd_per_hour"].get<double>(), 0);
}

TEST(CatalogJson, UsesAConfiguredPrice) {
  json j = CatalogJson({{"ml.p4d.24xlarge", 12.5}});
  for (const json& t : j["instance_types"]) {
    if (t["id"] == "ml.p4d.24xlarge") {
      EXPECT_DOUBLE_EQ(t["usd_per_hour"].get<double>(), 12.5);
      EXPECT_EQ(t["price_source"], "configured");
    }
  }
}

}  // namespace
}  // namespace carve::server::ui
