#include "agent/launch/pid_file.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "agent/launch/process_launcher.h"
#include "agent/launch/test_util.h"

namespace carve::launch {
namespace {

using testing::Shell;
using testing::TempDir;
using namespace std::chrono_literals;

TEST(PidFile, RoundTrips) {
  const std::string path = TempDir() + "/copies/ic-a-0.pid";
  PidRecord r{{1234, 987654321}, 8080, {{"dashboard", 8265}, {"serve", 8000}}};
  ASSERT_TRUE(WritePidFile(path, r).ok());
  auto back = ReadPidFile(path);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->value(), r);
}

TEST(PidFile, ReadsAFileWrittenBeforeNamedPortsAndRefusesABadPortsMap) {
  const std::string dir = TempDir();
  std::ofstream(dir + "/old.pid") << R"({"pid": 7, "start_time": 9, "port": 8080})";
  auto old = ReadPidFile(dir + "/old.pid");
  ASSERT_TRUE(old.has_value()) << old.error().message;
  EXPECT_EQ(old->value().port, 8080);
  EXPECT_TRUE(old->value().ports.empty());

  std::ofstream(dir + "/bad.pid") << R"({"pid": 7, "start_time": 9, "ports": {"serve": "x"}})";
  auto bad = ReadPidFile(dir + "/bad.pid");
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message.find("'ports'"), std::string::npos) << bad.error().message;
}

TEST(PidFile, RejectsAFileThatIsNotARecord) {
  const std::string path = TempDir() + "/x.pid";
  std::ofstream(path) << "garbage";
  auto r = ReadPidFile(path);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, ErrorCode::kInvalidArgument);
}

TEST(PidFile, AdoptsALiveWantedCopyWithoutStartingAnother) {
  const std::string dir = TempDir();
  ProcessLauncher launcher;
  auto p = launcher.Start(Shell(dir, "sleep 60")).value();
  ASSERT_TRUE(WritePidFile(dir + "/c.pid", {p, 9000, {}}).ok());
  auto r = ReconcilePidFile(dir + "/c.pid", launcher, /*wanted=*/true, 2s);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->outcome, Reconcile::kAdopted);
  EXPECT_EQ(r->record->port, 9000);
  EXPECT_TRUE(launcher.Alive(p));
  ASSERT_TRUE(launcher.Stop(p, 2s).has_value());
}

TEST(PidFile, KillsALiveCopyThatIsNoLongerWanted) {
  const std::string dir = TempDir();
  ProcessLauncher launcher;
  auto p = launcher.Start(Shell(dir, "sleep 60 & wait")).value();
  ASSERT_TRUE(WritePidFile(dir + "/c.pid", {p, 0, {}}).ok());
  auto r = ReconcilePidFile(dir + "/c.pid", launcher, /*wanted=*/false, 2s);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->outcome, Reconcile::kKilled);
  EXPECT_TRUE(LiveGroupMembers(p.pid).empty());
  EXPECT_FALSE(std::filesystem::exists(dir + "/c.pid"));
}

// The pid is live but its start time differs: it is another process, never adopted or killed.
TEST(PidFile, NeverAdoptsAStrangerThatReusedThePid) {
  const std::string dir = TempDir();
  ProcessLauncher launcher;
  auto p = launcher.Start(Shell(dir, "sleep 60")).value();
  ASSERT_TRUE(WritePidFile(dir + "/c.pid", {{p.pid, p.start_time + 1}, 0, {}}).ok());
  auto r = ReconcilePidFile(dir + "/c.pid", launcher, /*wanted=*/false, 2s);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->outcome, Reconcile::kGone);
  EXPECT_TRUE(launcher.Alive(p));  // the stranger was left alone
  EXPECT_FALSE(std::filesystem::exists(dir + "/c.pid"));
  ASSERT_TRUE(launcher.Stop(p, 2s).has_value());
}

TEST(PidFile, NoFileMeansStartTheCopy) {
  ProcessLauncher launcher;
  auto r = ReconcilePidFile(TempDir() + "/none.pid", launcher, true, 2s);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->outcome, Reconcile::kNoRecord);
}

}  // namespace
}  // namespace carve::launch
