#include "agent/node/gpu_applier.h"

#include <gtest/gtest.h>

#include "agent/nvml/fake_nvml.h"
#include "common/fake_clock.h"

namespace carve::agent::node {
namespace {

using protocol::GpuDesired;

GpuDesired Mig(int index, std::vector<protocol::PartitionSpec> parts) {
  return GpuDesired{index, true, std::move(parts)};
}

struct Fixture {
  explicit Fixture(std::string_view config = "gpus: 2 x a100-40gb")
      : nvml(FakeNvml::FromText(config).value()), gpus(*nvml, clock, std::chrono::minutes(5)) {
    EXPECT_TRUE(gpus.Init().ok());
  }
  FakeClock clock;
  std::unique_ptr<FakeNvml> nvml;
  GpuApplier gpus;
};

TEST(GpuApplier, CarvesTheDesiredPartitionsAndNamesTheirMigDevices) {
  Fixture f;
  auto events = f.gpus.Apply({Mig(1, {{"3g.20gb", 4}, {"3g.20gb", 0}})}, {});
  EXPECT_TRUE(events.empty());
  auto uuid = f.gpus.PartitionUuid(1, 4);  // Named by its start, not its place in the list.
  ASSERT_TRUE(uuid.has_value()) << uuid.error().message;
  EXPECT_EQ(uuid->rfind("MIG-", 0), 0u);
  EXPECT_NE(*uuid, f.gpus.PartitionUuid(1, 0).value());
  auto status = f.gpus.Statuses(false);
  ASSERT_EQ(status.size(), 2u);
  EXPECT_TRUE(status[1].applied);
  ASSERT_EQ(status[1].partitions.size(), 2u);
  EXPECT_EQ(status[1].partitions[0].start, 4);  // Desired order.
  EXPECT_EQ(status[1].partitions[0].uuid, *uuid);
  EXPECT_TRUE(status[0].partitions.empty());   // Nothing desired, nothing touched.
  auto none = f.gpus.PartitionUuid(1, 2);      // Inside the 3g@0: no partition starts there.
  ASSERT_FALSE(none.has_value());
  EXPECT_EQ(none.error().code, ErrorCode::kNotFound);
  EXPECT_NE(none.error().message.find("3g.20gb@4, 3g.20gb@0"), std::string::npos)
      << none.error().message;
}

TEST(GpuApplier, ApplyingTheSameStateTwiceChangesNothing) {
  Fixture f;
  const std::vector<GpuDesired> want{Mig(0, {{"1g.5gb", 0}, {"2g.10gb", 2}})};
  (void)f.gpus.Apply(want, {});
  const std::string uuid = f.gpus.PartitionUuid(0, 2).value();
  const size_t journal = f.nvml->core().journal().size();
  EXPECT_TRUE(f.gpus.Apply(want, {}).empty());
  EXPECT_EQ(f.nvml->core().journal().size(), journal);
  EXPECT_EQ(f.gpus.PartitionUuid(0, 2).value(), uuid);
}

TEST(GpuApplier, AStopDuringASimulatedCarveReturnsAtOnceAndTouchesNoGpuLeft) {
  Fixture f;
  const std::vector<GpuDesired> want{Mig(0, {{"1g.5gb", 0}}), Mig(1, {{"1g.5gb", 0}})};
  int waits = 0;
  bool stopping = false;
  f.gpus.set_carve_delay(std::chrono::seconds(30), [&](std::chrono::milliseconds d) {
    EXPECT_EQ(d, std::chrono::seconds(30));
    ++waits;
    return !stopping;  // Each wait stands for the 30 s a carve would take.
  });
  (void)f.gpus.Apply({want[0]}, {});
  EXPECT_EQ(waits, 1);
  EXPECT_TRUE(f.gpus.PartitionUuid(0, 0).has_value());
  const size_t journal = f.nvml->core().journal().size();

  stopping = true;  // The agent stops while GPU 1 waits for its carve.
  EXPECT_TRUE(f.gpus.Apply(want, {}).empty());
  EXPECT_EQ(waits, 2);  // GPU 0 was applied already; GPU 1 waited once, then gave up.
  EXPECT_EQ(f.nvml->core().journal().size(), journal);
  EXPECT_FALSE(f.gpus.AllApplied());
  EXPECT_TRUE(f.gpus.PartitionUuid(0, 0).has_value());
  EXPECT_FALSE(f.gpus.Statuses(false)[1].applied);
}

TEST(GpuApplier, AnotherApplierAdoptsTheLiveCarveWithoutChanges) {
  Fixture f;
  const std::vector<GpuDesired> want{Mig(0, {{"3g.20gb", 0}})};
  (void)f.gpus.Apply(want, {});
  const size_t journal = f.nvml->core().journal().size();
  GpuApplier restarted(*f.nvml, f.clock);
  ASSERT_TRUE(restarted.Init().ok());
  // Our (adopted) workload runs on GPU 0, but the live carve already matches: no refusal.
  EXPECT_TRUE(restarted.Apply(want, {{0, {"acct/ic/1"}}}).empty());
  EXPECT_EQ(restarted.PartitionUuid(0, 0).value(), f.gpus.PartitionUuid(0, 0).value());
  EXPECT_EQ(f.nvml->core().journal().size(), journal);
}

TEST(GpuApplier, AGpuWithOurWorkIsNotReCarvedAndTheErrorIsReportedOnce) {
  Fixture f;
  (void)f.gpus.Apply({Mig(0, {{"7g.40gb", 0}})}, {});
  const std::string before = f.gpus.PartitionUuid(0, 0).value();
  const std::vector<GpuDesired> next{Mig(0, {{"3g.20gb", 0}, {"3g.20gb", 4}})};
  const std::map<int, std::vector<std::string>> busy{{0, {"acct/ic/7"}}};
  auto events = f.gpus.Apply(next, busy);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_NE(events[0].find("acct/ic/7"), std::string::npos) << events[0];
  EXPECT_TRUE(f.gpus.Apply(next, busy).empty());  // Not retried in a loop.
  EXPECT_TRUE(f.gpus.Apply(next, busy).empty());
  auto status = f.gpus.Statuses(false)[0];
  EXPECT_FALSE(status.applied);
  EXPECT_NE(status.error.find("never re-carved"), std::string::npos) << status.error;
  ASSERT_EQ(status.partitions.size(), 1u);  // Still the old carve.
  EXPECT_EQ(status.partitions[0].uuid, before);
  EXPECT_EQ(f.gpus.PartitionUuid(0, 0).error().code, ErrorCode::kFailedPrecondition);

  // Once the work is gone, the same entry is carved.
  EXPECT_TRUE(f.gpus.Apply(next, {}).empty());
  EXPECT_TRUE(f.gpus.Statuses(false)[0].applied);
  EXPECT_EQ(f.gpus.Statuses(false)[0].partitions.size(), 2u);
}

TEST(GpuApplier, APendingMigResetIsReportedAndNotRetried) {
  Fixture f;
  f.nvml->core().SetMigMode(0, false);  // Pending disable until a reset.
  const std::vector<GpuDesired> want{Mig(0, {{"7g.40gb", 0}})};
  ASSERT_EQ(f.gpus.Apply(want, {}).size(), 1u);
  const int creates = f.nvml->core().gpu_instance_create_calls();
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(f.gpus.Apply(want, {}).empty());
  EXPECT_EQ(f.nvml->core().gpu_instance_create_calls(), creates);
  auto status = f.gpus.Statuses(false)[0];
  EXPECT_TRUE(status.pending_reset);
  EXPECT_NE(status.error.find("reset"), std::string::npos) << status.error;
}

TEST(GpuApplier, AFailedEntryIsRetriedAfterTheLongBackoff) {
  Fixture f;
  f.nvml->core().FailNthCreate(1);
  const std::vector<GpuDesired> want{Mig(0, {{"7g.40gb", 0}})};
  ASSERT_EQ(f.gpus.Apply(want, {}).size(), 1u);
  EXPECT_TRUE(f.gpus.Apply(want, {}).empty());
  EXPECT_FALSE(f.gpus.Statuses(false)[0].applied);
  f.clock.Advance(std::chrono::minutes(6));
  EXPECT_TRUE(f.gpus.Apply(want, {}).empty());
  EXPECT_TRUE(f.gpus.Statuses(false)[0].applied);
}

TEST(GpuApplier, AChangedEntryIsTriedAtOnce) {
  Fixture f;
  f.nvml->core().FailNthCreate(1);
  ASSERT_EQ(f.gpus.Apply({Mig(0, {{"7g.40gb", 0}})}, {}).size(), 1u);
  EXPECT_TRUE(f.gpus.Apply({Mig(0, {{"4g.20gb", 0}})}, {}).empty());
  EXPECT_TRUE(f.gpus.Statuses(false)[0].applied);
}

TEST(GpuApplier, AWholeGpuEntryClearsItsInstances) {
  Fixture f;
  (void)f.gpus.Apply({Mig(0, {{"1g.5gb", 0}, {"1g.5gb", 1}})}, {});
  EXPECT_TRUE(f.gpus.Apply({GpuDesired{0, false, {}}}, {}).empty());
  auto status = f.gpus.Statuses(false)[0];
  EXPECT_TRUE(status.applied);
  EXPECT_TRUE(status.partitions.empty());
  EXPECT_EQ(f.gpus.PartitionUuid(0, 0).error().code, ErrorCode::kFailedPrecondition);
}

TEST(GpuApplier, MetricsCarryUtilizationAndProcessMemory) {
  Fixture f;
  f.nvml->core().SetUtilization(1, 42, 10);
  f.nvml->core().AddProcess(1, 4242, 512);
  auto status = f.gpus.Statuses(true)[1];
  EXPECT_EQ(status.utilization_percent, 42);
  ASSERT_EQ(status.processes.size(), 1u);
  EXPECT_EQ(status.processes[0].pid, 4242u);
  EXPECT_EQ(status.processes[0].used_mib, 512);
  EXPECT_EQ(f.gpus.Statuses(false)[1].utilization_percent, -1);
}

}  // namespace
}  // namespace carve::agent::node
