#include "agent/mps/mps_control.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

namespace carve::agent::mps {
namespace {

// A stand-in for nvidia-cuda-mps-control: with -d it starts a background "daemon" and writes
// its pid file; reading "quit" on stdin it stops it. Every call is logged with its environment.
constexpr const char* kStandIn = R"sh(#!/bin/sh
echo "args=$* visible=$CUDA_VISIBLE_DEVICES pipe=$CUDA_MPS_PIPE_DIRECTORY log=$CUDA_MPS_LOG_DIRECTORY" >> "$CUDA_MPS_LOG_DIRECTORY/calls"
if [ "$1" = "-d" ]; then
  sleep 60 >/dev/null 2>&1 &
  echo $! > "$CUDA_MPS_PIPE_DIRECTORY/nvidia-cuda-mps-control.pid"
  exit 0
fi
read cmd
echo "stdin=$cmd" >> "$CUDA_MPS_LOG_DIRECTORY/calls"
if [ "$cmd" = "quit" ]; then
  kill "$(cat "$CUDA_MPS_PIPE_DIRECTORY/nvidia-cuda-mps-control.pid")"
  rm -f "$CUDA_MPS_PIPE_DIRECTORY/nvidia-cuda-mps-control.pid"
fi
)sh";

class MpsControlTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/carve-mps-test-XXXXXX";
    root_ = mkdtemp(tmpl);
    binary_ = root_ + "/nvidia-cuda-mps-control";
    std::ofstream(binary_) << kStandIn;
    ::chmod(binary_.c_str(), 0755);
    dirs_ = *MpsDirsFor(root_ + "/mps", "GPU-1234");
  }
  void TearDown() override {
    (void)MpsControl(binary_).Stop(dirs_, "GPU-1234");
    std::filesystem::remove_all(root_);
  }
  std::string Calls() {
    std::stringstream s;
    s << std::ifstream(dirs_.log_dir + "/calls").rdbuf();
    return s.str();
  }

  std::string root_;
  std::string binary_;
  MpsDirs dirs_;
};

TEST_F(MpsControlTest, StartRunsTheDaemonForOneCardWithItsDirectories) {
  MpsControl control(binary_);
  ASSERT_TRUE(control.Start(dirs_, "GPU-1234").ok());
  EXPECT_TRUE(control.Running(dirs_));
  EXPECT_NE(Calls().find("args=-d visible=GPU-1234 pipe=" + dirs_.pipe_dir + " log=" +
                         dirs_.log_dir),
            std::string::npos);
}

TEST_F(MpsControlTest, StartingARunningDaemonAgainDoesNothing) {
  MpsControl control(binary_);
  ASSERT_TRUE(control.Start(dirs_, "GPU-1234").ok());
  ASSERT_TRUE(control.Start(dirs_, "GPU-1234").ok());
  const std::string calls = Calls();
  EXPECT_EQ(calls.find("args=-d"), calls.rfind("args=-d"));
}

TEST_F(MpsControlTest, StopSendsQuitAndTheDaemonIsGone) {
  MpsControl control(binary_);
  ASSERT_TRUE(control.Start(dirs_, "GPU-1234").ok());
  ASSERT_TRUE(control.Stop(dirs_, "GPU-1234").ok());
  EXPECT_NE(Calls().find("stdin=quit"), std::string::npos);
  EXPECT_FALSE(control.Running(dirs_));
}

TEST_F(MpsControlTest, AMissingBinaryIsAClearPreconditionError) {
  MpsControl control(root_ + "/no-such-binary");
  Status s = control.Start(dirs_, "GPU-1234");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_NE(s.error().message.find("no-such-binary is missing"), std::string::npos);
  EXPECT_NE(s.error().message.find("'interposer'"), std::string::npos);
}

TEST_F(MpsControlTest, AFailingBinaryReportsItsStatus) {
  std::ofstream(binary_) << "#!/bin/sh\nexit 3\n";
  Status s = MpsControl(binary_).Start(dirs_, "GPU-1234");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, ErrorCode::kInternal);
  EXPECT_NE(s.error().message.find("failed with status"), std::string::npos);
}

}  // namespace
}  // namespace carve::agent::mps
