#include "agent/node/share_guard.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace carve::agent::node {
namespace {

using ::testing::HasSubstr;

protocol::GpuStatus Gpu(int index, std::vector<protocol::ProcessMemory> processes) {
  protocol::GpuStatus g;
  g.index = index;
  g.processes = std::move(processes);
  return g;
}

TEST(ShareGuard, AShareOverItsQuotaPlusTheSlackIsNamedWithWhatItHeld) {
  const std::vector<ShareHolding> shares = {{"a/ic/1", 0, 1024, {10, 11}},
                                            {"b/ic/1", 0, 1024, {20}}};
  // a's two processes together pass 1024 + 512; b, alone on its quota plus a context, does not.
  const std::vector<protocol::GpuStatus> gpus = {
      Gpu(0, {{10, 900}, {11, 700}, {20, 1536}, {30, 20000}})};
  const auto over = FindShareOverruns(shares, gpus, 512);
  ASSERT_EQ(over.size(), 1u);
  EXPECT_EQ(over[0].workload, "a/ic/1");
  EXPECT_EQ(over[0].used_mib, 1600);
  EXPECT_EQ(over[0].pids, (std::vector<int>{10, 11}));
  EXPECT_THAT(DescribeOverrun(over[0], 512),
              HasSubstr("held 1600 MiB of device memory on GPU 0 (pids 10, 11) as NVML counts it, "
                        "over its quota of 1024 MiB plus the 512 MiB"));
}

TEST(ShareGuard, OnlyTheSharesOwnGpuAndProcessesCount) {
  const std::vector<ShareHolding> shares = {{"a/ic/1", 1, 256, {10}}};
  // Pid 10 holds a lot on GPU 0 (another share's card in this picture) and little on GPU 1;
  // pid 99, not the share's, holds a lot on GPU 1.
  const std::vector<protocol::GpuStatus> gpus = {Gpu(0, {{10, 50000}}),
                                                 Gpu(1, {{10, 200}, {99, 50000}})};
  EXPECT_TRUE(FindShareOverruns(shares, gpus, 0).empty());
}

TEST(ShareGuard, TheBoundaryIsQuotaPlusSlackExactly) {
  const std::vector<ShareHolding> shares = {{"a/ic/1", 0, 1024, {10}}};
  EXPECT_TRUE(FindShareOverruns(shares, std::vector{Gpu(0, {{10, 1536}})}, 512).empty());
  EXPECT_EQ(FindShareOverruns(shares, std::vector{Gpu(0, {{10, 1537}})}, 512).size(), 1u);
}

TEST(ShareGuard, AGpuWithoutAProcessListStopsNobody) {
  const std::vector<ShareHolding> shares = {{"a/ic/1", 3, 256, {10}}};
  EXPECT_TRUE(FindShareOverruns(shares, std::vector{Gpu(0, {{10, 90000}})}, 0).empty());
}

}  // namespace
}  // namespace carve::agent::node
