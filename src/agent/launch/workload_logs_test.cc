#include "agent/launch/workload_logs.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <vector>

#include "agent/launch/test_util.h"

namespace carve::launch {
namespace {

TEST(WorkloadLogs, PathsAreOneDirectoryPerWorkloadId) {
  auto p = LogPathsFor("/data", "acct/ic-a/1f2e");
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->dir, "/data/logs/acct+ic-a+1f2e");
  EXPECT_EQ(p->stdout_path, "/data/logs/acct+ic-a+1f2e/stdout.log");
  EXPECT_EQ(p->stderr_path, "/data/logs/acct+ic-a+1f2e/stderr.log");
}

TEST(LogDirName, IsOnePathComponentThatNeverClimbs) {
  for (const char* id : {"..", ".", "../etc", "a/../../etc", "/abs/path", "a//b", "a/./b",
                         "acct/..\x01/x", "a\\b/c", "a b/c%2F"}) {
    Result<std::string> name = LogDirName(id);
    ASSERT_TRUE(name.has_value()) << id;
    EXPECT_EQ(name->find('/'), std::string::npos) << *name;
    EXPECT_FALSE(name->starts_with(".")) << *name;
    EXPECT_EQ(name->find("+."), std::string::npos) << *name;  // No segment starts with '.'.
    EXPECT_EQ(WorkloadIdOfLogDir(*name).value(), id);
  }
  EXPECT_EQ(LogDirName("a/../b").value(), "a+%2E.+b");
  EXPECT_EQ(LogDirName("q/job-0001/task-0.0").value(), "q+job-0001+task-0.0");
}

// Ids that a lossy mapping would fold together ('/' vs '_' vs '+', case, escapes) stay apart.
TEST(LogDirName, IsInjective) {
  const std::vector<std::string> ids = {"a/b/c", "a_b/c",  "a+b/c",  "a/b+c", "a%2Fb/c", "a%2fb/c",
                                        "A/b/c", "a/b/c/", "/a/b/c", "a/b.c", "a/.b/c",  "a/%2Eb/c",
                                        "ab/c",  "a/bc",   "a b/c",  "a\tb/c"};
  std::set<std::string> names;
  for (const auto& id : ids) {
    Result<std::string> name = LogDirName(id);
    ASSERT_TRUE(name.has_value()) << id;
    EXPECT_TRUE(names.insert(*name).second) << id << " -> " << *name;
    EXPECT_EQ(WorkloadIdOfLogDir(*name).value(), id);
  }
}

TEST(LogDirName, ALongIdIsRejectedNotTruncated) {
  const std::string prefix(kMaxLogDirName, 'a');
  EXPECT_TRUE(LogDirName(prefix).has_value());
  Result<std::string> longer = LogDirName(prefix + "/1");
  ASSERT_FALSE(longer.has_value());
  EXPECT_EQ(longer.error().code, ErrorCode::kInvalidArgument);
  EXPECT_FALSE(LogDirName(std::string(kMaxLogDirName / 3 + 1, '~')).has_value());  // Escapes count.
  EXPECT_FALSE(LogDirName("").has_value());
}

TEST(WorkloadIdOfLogDir, RejectsNamesLogDirNameNeverMakes) {
  for (const char* name :
       {"", "..", ".x", "a+.b", "a%2Fb", "a%61", "a%2", "a%zz", "a b", "a/b", "a%2e"}) {
    EXPECT_FALSE(WorkloadIdOfLogDir(name).has_value()) << name;
  }
}

TEST(WorkloadLogs, TailReturnsTheLastLinesOfBothStreams) {
  const std::string dir = testing::TempDir();
  auto p = LogPathsFor(dir, "acct/ic-a/1").value();
  std::filesystem::create_directories(p.dir);
  std::ofstream(p.stdout_path) << "1\n2\n3\n4\n";
  std::ofstream(p.stderr_path) << "boom\n";
  auto tail = TailWorkloadLogs(dir, "acct/ic-a/1", 2);
  ASSERT_TRUE(tail.has_value());
  EXPECT_EQ(*tail, "==> stdout <==\n3\n4\n==> stderr <==\nboom\n");
}

TEST(WorkloadLogs, AWorkloadNeverStartedIsNotFound) {
  auto tail = TailWorkloadLogs(testing::TempDir(), "acct/ic-a/5", 10);
  ASSERT_FALSE(tail.has_value());
  EXPECT_EQ(tail.error().code, ErrorCode::kNotFound);
}

TEST(WorkloadLogs, RemoveDeletesBothStreamsAndTheirRotationsAndOnlyThose) {
  const std::string dir = testing::TempDir() + "/remove";
  auto mine = LogPathsFor(dir, "acct/ic-a/1").value();
  auto other = LogPathsFor(dir, "acct/ic-a/2").value();
  for (const auto& p : {mine, other}) {
    std::filesystem::create_directories(p.dir);
    std::ofstream(p.stdout_path) << "x\n";
    std::ofstream(p.stdout_path + ".1") << "y\n";
  }
  ASSERT_TRUE(RemoveWorkloadLogs(dir, "acct/ic-a/1").has_value());
  EXPECT_FALSE(std::filesystem::exists(mine.dir));
  EXPECT_TRUE(std::filesystem::exists(other.stdout_path));
  EXPECT_TRUE(RemoveWorkloadLogs(dir, "acct/ic-a/1").has_value());  // Already gone: fine.
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
  auto p = LogPathsFor(dir, "acct/ic-a/1").value();
  std::filesystem::create_directories(p.dir);
  std::ofstream(p.stdout_path + ".1") << "1\n2\n3\n";
  std::ofstream(p.stdout_path) << "4\n";
  EXPECT_EQ(TailWorkloadLogs(dir, "acct/ic-a/1", 3).value(),
            "==> stdout <==\n2\n3\n4\n==> stderr <==\n");
}

}  // namespace
}  // namespace carve::launch
