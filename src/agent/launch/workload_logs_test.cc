#include "agent/launch/workload_logs.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>

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

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TEST(CapLog, LeavesALogWithinTheCapAlone) {
  const std::string path = testing::TempDir() + "/stdout.log";
  std::ofstream(path) << "0123456789";
  EXPECT_EQ(CapLog(path, 10).value(), false);
  EXPECT_EQ(Slurp(path), "0123456789");
  EXPECT_FALSE(std::filesystem::exists(path + ".1"));
  EXPECT_EQ(CapLog(path + ".missing", 10).value(), false);
}

// Past the cap, the newest cap bytes move to .1 and the live log starts again; a writer that
// holds it open with O_APPEND (as a copy's stdout does) goes on at the new end, not at a hole.
TEST(CapLog, MovesTheNewestBytesAsideAndTheWriterGoesOnAtTheStart) {
  const std::string path = testing::TempDir() + "/stdout.log";
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::write(fd, "old-0123456789", 14), 14);
  std::ofstream(path + ".1") << "older output";
  ASSERT_EQ(CapLog(path, 10).value(), true);
  EXPECT_EQ(Slurp(path + ".1"), "0123456789");
  EXPECT_EQ(Slurp(path), "");
  ASSERT_EQ(::write(fd, "new", 3), 3);
  ::close(fd);
  EXPECT_EQ(Slurp(path), "new");
}

TEST(WorkloadLogs, TailReadsIntoTheRotatedLogWhenTheLiveOneIsShort) {
  const std::string dir = testing::TempDir();
  auto p = LogPathsFor(dir, "ic-a", 0).value();
  std::filesystem::create_directories(p.dir);
  std::ofstream(p.stdout_path + ".1") << "1\n2\n3\n";
  std::ofstream(p.stdout_path) << "4\n";
  EXPECT_EQ(TailCopyLogs(dir, "ic-a", 0, 3).value(), "==> stdout <==\n2\n3\n4\n==> stderr <==\n");
}

}  // namespace
}  // namespace carve::launch
