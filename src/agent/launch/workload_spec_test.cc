#include "agent/launch/workload_spec.h"

#include <gtest/gtest.h>

namespace carve::launch {
namespace {

TEST(WorkloadSpec, ExpandsPortAndModelDataPlaceholders) {
  auto argv = ExpandCommand({"serve", "--port={port}", "{model_data}/w", "{\"json\": 1}"},
                            {{"port", "8080"}, {"model_data", "/m"}});
  ASSERT_TRUE(argv.has_value()) << argv.error().message;
  EXPECT_EQ(*argv, (std::vector<std::string>{"serve", "--port=8080", "/m/w", "{\"json\": 1}"}));
}

TEST(WorkloadSpec, AnUnknownPlaceholderNamesItAndTheKnownOnes) {
  auto argv = ExpandCommand({"serve", "{gpu}"}, {{"port", "1"}});
  ASSERT_FALSE(argv.has_value());
  EXPECT_NE(argv.error().message.find("{gpu}"), std::string::npos);
  EXPECT_NE(argv.error().message.find("{port}"), std::string::npos);
}

TEST(WorkloadSpec, BindingOverridesAUserVariableAndLogsGoPerWorkloadId) {
  WorkloadSpec spec;
  spec.workload_id = "acct/ic-a/7f3a";
  spec.command_template = {"carve", "testmodel", "--port", "{port}"};
  spec.values = {{"port", "9001"}};
  spec.environment = {{"CUDA_VISIBLE_DEVICES", "0"}, {"HF_MODEL", "x"}};
  spec.binding = MigBinding{"MIG-1"};
  spec.data_dir = "/data";
  auto r = MakeLaunchRequest(spec);
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_EQ(r->argv.back(), "9001");
  int cvd = 0;
  for (const auto& [k, v] : r->env) {
    if (k == "CUDA_VISIBLE_DEVICES") {
      ++cvd;
      EXPECT_EQ(v, "MIG-1");
    }
  }
  EXPECT_EQ(cvd, 1);
  EXPECT_EQ(r->stdout_path, "/data/logs/acct+ic-a+7f3a/stdout.log");
}

}  // namespace
}  // namespace carve::launch
