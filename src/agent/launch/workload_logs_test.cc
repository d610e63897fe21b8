#include "agent/launch/workload_logs.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "agent/launch/test_util.h"

namespace carve::launch {
namespace {

TEST(WorkloadLogs, PathsAreOneDirectoryPerCopy) {
  auto p = LogPathsFor("/data", "ic-a", 2);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->stdout_path, "/data/logs/ic-a/copy-2/stdout.log");
  EXPECT_EQ(p->stderr_path, "/data/logs/ic-a/copy-2/stderr.log");
}

TEST(WorkloadLogs, RejectsAComponentNameThatEscapesTheDataDir) {
  auto p = LogPathsFor("/data", "../etc", 0);
  ASSERT_FALSE(p.has_value());
  EXPECT_NE(p.error().message.find("../etc"), std::string::npos);
}

TEST(WorkloadLogs, TailReturnsTheLastLinesOfBothStreams) {
  const std::string dir = testing::TempDir();
  auto p = LogPathsFor(dir, "ic-a", 0).value();
  std::filesystem::create_directories(p.dir);
  std::ofstream(p.stdout_path) << "1\n2\n3\n4\n";
  std::ofstream(p.stderr_path) << "boom\n";
  auto tail = TailCopyLogs(dir, "ic-a", 0, 2);
  ASSERT_TRUE(tail.has_value());
  EXPECT_EQ(*tail, "==> stdout <==\n3\n4\n==> stderr <==\nboom\n");
}

TEST(WorkloadLogs, ACopyNeverStartedIsNotFound) {
  auto tail = TailCopyLogs(testing::TempDir(), "ic-a", 5, 10);
  ASSERT_FALSE(tail.has_value());
  EXPECT_EQ(tail.error().code, ErrorCode::kNotFound);
}

}  // namespace
}  // namespace carve::launch
