// The pure parts of a component's pass (component_plan.h): status, why copies cannot be placed,
// which copies stay, and the pass's transaction, each without a Store, a pool or a clock.
#include "server/sagemaker/component_plan.h"

#include <gtest/gtest.h>

#include <variant>

#include "server/sagemaker/resources.h"

namespace carve::server::sagemaker {
namespace {

ComponentRecord Component(int desired) {
  ComponentRecord c;
  c.name = "ic";
  c.endpoint = "ep";
  c.desired = desired;
  return c;
}

LiveCopy Copy(int index, int64_t spec_version = 1) {
  LiveCopy copy;
  copy.record.component = "ic";
  copy.record.id = "id" + std::to_string(index);
  copy.record.index = index;
  copy.record.spec_version = spec_version;
  copy.record.placement.node = "p4d-0";
  copy.version = 10 + index;
  copy.allocation = core::AllocationId(static_cast<uint64_t>(index) + 1);
  return copy;
}

// A rollback applies the replaced specification whole (RollOut: c.Apply(d.from)), its
// placement strategy included, so copies placed after it are placed as before the update.
TEST(ComponentRecord, ApplyingASpecificationTakesEveryPartOfIt) {
  ComponentRecord c = Component(1);
  CopySpec spec{7, {{"ModelName", "m2"}}, 2, 4000, 8192, core::Strategy::kBinpack};
  c.Apply(spec);
  const CopySpec back = c.Current();
  EXPECT_EQ(back.version, 7);
  EXPECT_EQ(back.specification, spec.specification);
  EXPECT_EQ(back.devices, 2);
  EXPECT_EQ(back.cpu_milli, 4000);
  EXPECT_EQ(back.memory_mib, 8192);
  EXPECT_EQ(back.strategy, core::Strategy::kBinpack);
}

TEST(SetStatus, EveryCopyServingIsInServiceAndSaysNothing) {
  ComponentRecord c = Component(2);
  c.running = 2;
  c.status_message = "stale";
  EXPECT_FALSE(SetStatus(c, {.count = 2}));
  EXPECT_EQ(c.status, ComponentStatus::kInService);
  EXPECT_TRUE(c.ever_in_service);
  EXPECT_TRUE(c.status_message.empty());
}

TEST(SetStatus, CopiesNotPlacedOrNotServingSayWhyAndWhetherItEverServed) {
  ComponentRecord c = Component(3);
  c.running = 1;
  SetStatus(c, {.count = 2, .reason = "waiting for a mig-1g.5gb partition: no room"});
  EXPECT_EQ(c.status, ComponentStatus::kCreating);
  EXPECT_EQ(c.status_message,
            "1 of 3 copies are not placed: waiting for a mig-1g.5gb partition: no room");
  c.ever_in_service = true;
  SetStatus(c, {.count = 3, .starting = "copy 2 on p4d-0 is starting"});
  EXPECT_EQ(c.status, ComponentStatus::kUpdating);
  EXPECT_EQ(c.status_message, "2 of 3 copies are not serving yet: copy 2 on p4d-0 is starting");
}

TEST(SetStatus, AFailureIsRecordedOnceAndAFailedComponentStaysFailed) {
  ComponentRecord c = Component(1);
  SetStatus(c, {.fail_now = "copy 0 on p4d-0 could not start"});
  EXPECT_EQ(c.status, ComponentStatus::kFailed);
  EXPECT_EQ(c.failure_reason, "copy 0 on p4d-0 could not start");
  SetStatus(c, {.fail_now = "a later reason"});
  EXPECT_EQ(c.failure_reason, "copy 0 on p4d-0 could not start");
  c.running = 1;
  SetStatus(c, {.count = 1});
  EXPECT_EQ(c.status, ComponentStatus::kFailed) << "nothing brings a failed component back";
}

TEST(SetStatus, ADeploymentReportsItsProgressAndWhyCopiesWait) {
  ComponentRecord c = Component(2);
  c.deployment.emplace();
  SetStatus(c, {.count = 2, .reason = "no room", .progress = "batch 1 of 2"});
  EXPECT_EQ(c.status, ComponentStatus::kUpdating);
  EXPECT_EQ(c.status_message, "batch 1 of 2; no room");
}

TEST(SetStatus, ADeletingComponentGoesOnlyOnceEveryCopyIsReleased) {
  ComponentRecord c = Component(2);
  c.status = ComponentStatus::kDeleting;
  EXPECT_FALSE(SetStatus(c, {.all_released = false}));
  EXPECT_TRUE(SetStatus(c, {.all_released = true}));
  EXPECT_EQ(c.status, ComponentStatus::kDeleting);
}

TEST(BlockedReason, NamesWhatTheEndpointLacks) {
  const ComponentRecord c = Component(1);
  EXPECT_EQ(BlockedReason(nullptr, c, false), "waiting for endpoint ep, which does not exist");
  EndpointEntry ep;
  ep.endpoint.name = "ep";
  ep.endpoint.status = EndpointStatus::kCreating;
  EXPECT_EQ(BlockedReason(&ep, c, false),
            "waiting for endpoint ep to be InService (it is Creating)");
  ep.endpoint.status = EndpointStatus::kFailed;
  ep.endpoint.failure_reason = "no capacity";
  EXPECT_EQ(BlockedReason(&ep, c, false), "endpoint ep failed: no capacity");
  ep.endpoint.status = EndpointStatus::kInService;
  EXPECT_EQ(BlockedReason(&ep, c, false),
            "waiting for the endpoint's instances to be carved and Ready");
  EXPECT_EQ(BlockedReason(&ep, c, true), "");
}

// Without a pool no copy is placed, so none stays, and none is "lost" either (nothing is known
// of its node); a stopped component keeps none; a copy of a specification the component no
// longer runs goes.
TEST(TriageCopies, WithoutAPoolOrWhenStoppedNothingStays) {
  ComponentRecord c = Component(2);
  const std::vector<LiveCopy> copies{Copy(0), Copy(1, /*spec_version=*/7)};
  CopyTriage none = TriageCopies(c, copies, nullptr, /*stopped=*/false);
  EXPECT_TRUE(none.keep.empty());
  EXPECT_EQ(none.release, (std::vector<size_t>{0, 1}));
  EXPECT_TRUE(none.lost.empty());
  CopyTriage stopped = TriageCopies(c, copies, nullptr, /*stopped=*/true);
  EXPECT_EQ(stopped.release.size(), 2u);
}

TEST(PassWrites, ReleasedCopiesGoPlacedOnesComeAndTheRecordOnlyWhenItChanged) {
  store::Record record;
  record.key = {"111111111111", std::string(kInferenceComponent), "ic"};
  record.version = 5;
  ComponentRecord c = Component(1);
  const std::string before = c.ToJson().dump();
  const std::vector<LiveCopy> copies{Copy(0), Copy(1)};
  const std::vector<size_t> release{1};
  const std::vector<LiveCopy> placed{Copy(2)};

  auto writes = PassWrites(record, before, c, false, copies, release, placed);
  ASSERT_EQ(writes.size(), 2u) << "the record did not change";
  const auto& removed = std::get<store::Remove>(writes[0]);
  EXPECT_EQ(removed.key, copies[1].record.Key("111111111111"));
  EXPECT_EQ(removed.expected_version, 11);
  EXPECT_EQ(std::get<store::Put>(writes[1]).key, placed[0].record.Key("111111111111"));

  c.status = ComponentStatus::kInService;
  writes = PassWrites(record, before, c, false, copies, {}, {});
  ASSERT_EQ(writes.size(), 1u);
  EXPECT_EQ(std::get<store::Put>(writes[0]).key, record.key);
  writes = PassWrites(record, before, c, /*remove_record=*/true, copies, {}, {});
  ASSERT_EQ(writes.size(), 1u);
  EXPECT_EQ(std::get<store::Remove>(writes[0]).expected_version, 5);
}

}  // namespace
}  // namespace carve::server::sagemaker
