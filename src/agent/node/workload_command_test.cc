#include "agent/node/workload_command.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "agent/node/test_support.h"

namespace carve::agent::node {
namespace {

std::string Env(const launch::LaunchRequest& r, const std::string& key) {
  auto it = std::find_if(r.env.begin(), r.env.end(), [&](auto& kv) { return kv.first == key; });
  return it == r.env.end() ? "<unset>" : it->second;
}

protocol::WorkloadDesired Image(const std::string& ref) {
  protocol::WorkloadDesired w;
  w.id = "acct/ic/1";
  w.name = "ic";
  w.image = ref;
  w.environment = {{"MODEL", "llama"}};
  return w;
}

TEST(BuildLaunchRequest, ExpandsTheTemplateWithPortModelDataAndCarve) {
  protocol::WorkloadDesired w;
  w.id = "a/ic/1";
  w.name = "ic";
  w.command = {"{carve}", "testmodel", "--port", "{port}", "--data", "{model_data}"};
  w.values = {{"model_data", "s3://bucket/m"}};
  auto r = BuildLaunchRequest(w, 8123, launch::MigBinding{"MIG-x"},
                              {"n", "/data", "/opt/carve", "/usr/bin"});
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_EQ(r->argv, (std::vector<std::string>{"/opt/carve", "testmodel", "--port", "8123",
                                               "--data", "s3://bucket/m"}));
  EXPECT_EQ(Env(*r, "CUDA_VISIBLE_DEVICES"), "MIG-x");
  EXPECT_EQ(Env(*r, "CARVE_PORT"), "8123");
  EXPECT_EQ(r->stdout_path, "/data/logs/ic/copy-0/stdout.log");
}

TEST(BuildLaunchRequest, AnImageRunsThroughPodmanWithItsEnvironmentByName) {
  const std::string dir = testing::TempDir();
  const std::string podman = dir + "/podman";
  std::ofstream(podman) << "#!/bin/sh\n";
  ::chmod(podman.c_str(), 0755);
  auto r = BuildLaunchRequest(Image("reg/m:1"), 9000, launch::MigBinding{"MIG-y"},
                              {"n", "/data", "/opt/carve", "/nowhere:" + dir});
  ASSERT_TRUE(r.has_value()) << r.error().message;
  ASSERT_GE(r->argv.size(), 3u);
  EXPECT_EQ(r->argv[0], podman);
  EXPECT_EQ(r->argv[1], "run");
  EXPECT_EQ(r->argv.back(), "reg/m:1");
  auto has = [&](const std::string& a) {
    return std::find(r->argv.begin(), r->argv.end(), a) != r->argv.end();
  };
  EXPECT_TRUE(has("127.0.0.1:9000:8080"));
  EXPECT_TRUE(has("MODEL"));
  EXPECT_TRUE(has("CUDA_VISIBLE_DEVICES"));
  EXPECT_EQ(Env(*r, "MODEL"), "llama");
  std::filesystem::remove_all(dir);
}

TEST(BuildLaunchRequest, AnImageWithoutAContainerRuntimeIsAClearError) {
  auto r = BuildLaunchRequest(Image("reg/m:1"), 9000, std::monostate{},
                              {"node-7", "/data", "/opt/carve", "/nowhere"});
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_EQ(r.error().message,
            "image reg/m:1 needs podman or docker on node node-7; neither is installed");
}

TEST(BuildLaunchRequest, NeitherCommandNorImageIsRejected) {
  protocol::WorkloadDesired w;
  w.id = "a/b/c";
  w.name = "b";
  EXPECT_EQ(BuildLaunchRequest(w, 1, std::monostate{}, {}).error().code,
            ErrorCode::kInvalidArgument);
}

TEST(WorkloadDirName, IsAPlainStableNameThatKeepsIdsApart) {
  const std::string a = WorkloadDirName("acct/ic-a/0");
  EXPECT_EQ(a.rfind("acct_ic-a_0-", 0), 0u) << a;
  EXPECT_EQ(a, WorkloadDirName("acct/ic-a/0"));
  EXPECT_NE(a, WorkloadDirName("acct_ic-a_0"));
  EXPECT_EQ(a.find('/'), std::string::npos);
}

TEST(FindOnPath, FindsOnlyExecutables) {
  EXPECT_EQ(FindOnPath("sh", "/nowhere:/bin"), "/bin/sh");
  EXPECT_EQ(FindOnPath("no-such-tool-here", "/bin:/usr/bin"), "");
}

}  // namespace
}  // namespace carve::agent::node
