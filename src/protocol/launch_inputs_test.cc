#include "protocol/launch_inputs.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace carve::protocol {
namespace {

namespace fs = std::filesystem;

TEST(CheckImageReference, AcceptsTheDistributionSpecForms) {
  const std::string digest = "sha256:" + std::string(64, 'a');
  for (const std::string& ref :
       {std::string("nginx"), std::string("docker.io/library/nginx:1.25"),
        "localhost:5000/a/b@" + digest, std::string("registry.example.com/x/y:tag"),
        std::string("carve/testmodel"), std::string("a__b/c-d/e.f_g---h:V1.2_x-y"),
        std::string("[::1]:5000/img"), "nginx:1.25@" + digest, std::string("Registry.io/x")}) {
    EXPECT_TRUE(CheckImageReference(ref).ok())
        << ref << ": " << CheckImageReference(ref).error().message;
  }
}

TEST(CheckImageReference, RefusesOptionsAndMalformedNames) {
  const std::vector<std::string> bad = {"--privileged",
                                        "-v=/:/host",
                                        "--volume=/:/host",
                                        "Nginx",
                                        "library/Nginx",
                                        "",
                                        "ng inx",
                                        "nginx ",
                                        "nginx\n",
                                        "a//b",
                                        "/nginx",
                                        "nginx/",
                                        "a..b",
                                        "a-",
                                        "-a",
                                        "a/-b",
                                        "nginx:",
                                        "nginx:-tag",
                                        "nginx@sha256:abc",
                                        "nginx@sha256:" + std::string(64, 'A'),
                                        "localhost:port/x",
                                        "a/b:c/d",
                                        "nginx:" + std::string(129, 't'),
                                        std::string(300, 'a'),
                                        "host/" + std::string(300, 'a') + ":1"};
  for (const auto& ref : bad) {
    auto status = CheckImageReference(ref);
    ASSERT_FALSE(status.ok()) << ref;
    EXPECT_EQ(status.error().code, ErrorCode::kInvalidArgument);
    EXPECT_NE(status.error().message.find("the rule: an OCI image reference"), std::string::npos)
        << status.error().message;
  }
}

TEST(CheckImageReference, NamesTheBoundBeforeMatchingALongValue) {
  auto status = CheckImageReference(std::string(10 * 1024 * 1024, 'a'));
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.error().message.find("more than 255"), std::string::npos);
  EXPECT_LT(status.error().message.size(), 1024u);  // A preview, not the value.
}

TEST(CheckEnvironment, AcceptsPlainVariablesAndDocumentedRuntimeInputs) {
  EXPECT_TRUE(CheckEnvironment({{"MODEL_VARIABLE", "x"},
                                {"_A1", ""},
                                {"CARVE_MODEL", "m"},
                                {"CARVE_TESTMODEL_SPEED", "1"}},
                               "Environment")
                  .ok());
}

TEST(CheckEnvironment, RefusesReservedNames) {
  for (const char* name : {"LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT", "CUDA_VISIBLE_DEVICES",
                           "CUDA_MPS_PIPE_DIRECTORY", "NVIDIA_VISIBLE_DEVICES", "PATH",
                           "SAGEMAKER_BIND_TO_PORT", "CARVE_TARGET", "CARVE_COPY", "CARVE_PORT",
                           "CARVE_MGPU_LEDGER", "CARVE_MODEL_DATA", "CARVE_ANYTHING_NEW"}) {
    auto status = CheckEnvironment({{name, "x"}}, "Environment");
    ASSERT_FALSE(status.ok()) << name;
    EXPECT_NE(status.error().message.find(std::string("Environment.") + name), std::string::npos);
    EXPECT_NE(status.error().message.find("reserved"), std::string::npos);
  }
}

TEST(CheckEnvironment, RefusesNamesOutsideThePattern) {
  for (const std::string& name : {std::string("A=B"), std::string("1A"), std::string(""),
                                  std::string("A-B"), std::string("A B"), std::string(1025, 'A')}) {
    auto status = CheckEnvironment({{name, "x"}}, "Environment");
    ASSERT_FALSE(status.ok()) << name;
    EXPECT_NE(status.error().message.find("[a-zA-Z_][a-zA-Z0-9_]*"), std::string::npos);
  }
}

TEST(CheckEnvironment, RefusesLongValuesLineBreaksAndTooManyEntries) {
  auto big = CheckEnvironment({{"A", std::string(10 * 1024 * 1024, 'x')}}, "Environment");
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.error().message.find("at most 1024"), std::string::npos);
  EXPECT_LT(big.error().message.size(), 1024u);
  EXPECT_FALSE(CheckEnvironment({{"A", "x\nB=y"}}, "Environment").ok());
  EXPECT_FALSE(CheckEnvironment({{"A", std::string("x\0y", 3)}}, "Environment").ok());
  std::map<std::string, std::string> many;
  for (int i = 0; i < 101; ++i) many["V" + std::to_string(i)] = "";
  EXPECT_FALSE(CheckEnvironment(many, "Environment").ok());
  std::map<std::string, std::string> heavy;
  for (int i = 0; i < 40; ++i) heavy["V" + std::to_string(i)] = std::string(1000, 'x');
  EXPECT_FALSE(CheckEnvironment(heavy, "Environment").ok());  // 40 KB > 32 KiB in all
}

class ResolveModelDataTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/carve-model-root-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = fs::path(tmpl);
    fs::create_directories(dir_ / "models" / "m1");
    fs::create_directories(dir_ / "models-other");
    fs::create_directories(dir_ / "secret");
    roots_ = {(dir_ / "models").string()};
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
  std::vector<std::string> roots_;
};

TEST_F(ResolveModelDataTest, AcceptsADirectoryInsideARoot) {
  for (bool must_exist : {true, false}) {
    auto r = ResolveModelData("file://" + (dir_ / "models" / "m1").string(), roots_, must_exist);
    ASSERT_TRUE(r.has_value()) << r.error().message;
    EXPECT_EQ(*r, fs::canonical(dir_ / "models" / "m1").string());
    const std::string bare = (dir_ / "models" / "m1").string();
    EXPECT_TRUE(ResolveModelData(bare, roots_, must_exist).has_value());
  }
}

TEST_F(ResolveModelDataTest, RefusesDotDotOutOfTheRoot) {
  const std::string url = (dir_ / "models" / "m1" / ".." / ".." / "secret").string();
  for (bool must_exist : {true, false}) {
    auto r = ResolveModelData(url, roots_, must_exist);
    ASSERT_FALSE(r.has_value());
    EXPECT_NE(r.error().message.find("outside every model root"), std::string::npos);
  }
  EXPECT_FALSE(ResolveModelData("file:///", roots_, false).has_value());
  EXPECT_FALSE(ResolveModelData("file:///etc", roots_, false).has_value());
  EXPECT_FALSE(ResolveModelData("/../../..", roots_, false).has_value());
  EXPECT_FALSE(ResolveModelData((dir_ / "models-other").string(), roots_, false).has_value());
}

TEST_F(ResolveModelDataTest, RefusesASymlinkThatLeavesTheRoot) {
  fs::create_directory_symlink(dir_ / "secret", dir_ / "models" / "link");
  for (bool must_exist : {true, false}) {
    auto r = ResolveModelData((dir_ / "models" / "link").string(), roots_, must_exist);
    ASSERT_FALSE(r.has_value());
    EXPECT_NE(r.error().message.find((dir_ / "secret").string()), std::string::npos);
  }
}

TEST_F(ResolveModelDataTest, RefusesColonsRelativePathsAndNoRoots) {
  auto colon = ResolveModelData((dir_ / "models" / "m1:/x").string(), roots_, false);
  ASSERT_FALSE(colon.has_value());
  EXPECT_NE(colon.error().message.find("holds ':'"), std::string::npos);
  EXPECT_NE(colon.error().message.find("the rule: "), std::string::npos);
  EXPECT_FALSE(ResolveModelData("file://models/m1", roots_, false).has_value());
  EXPECT_FALSE(ResolveModelData("file:" + (dir_ / "models").string(), roots_, false).has_value());
  EXPECT_FALSE(ResolveModelData((dir_ / "models" / "m1").string(), {}, false).has_value());
}

TEST_F(ResolveModelDataTest, AtLaunchTheDataMustExist) {
  const std::string later = (dir_ / "models" / "later").string();
  EXPECT_TRUE(ResolveModelData(later, roots_, false).has_value());
  EXPECT_FALSE(ResolveModelData(later, roots_, true).has_value());
}

}  // namespace
}  // namespace carve::protocol
