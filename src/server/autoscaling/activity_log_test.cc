#include "server/autoscaling/activity_log.h"

#include <gtest/gtest.h>

#include "common/fake_clock.h"
#include "store/fake_store.h"

namespace carve::server::autoscaling {
namespace {

using nlohmann::json;

constexpr char kAccount[] = "111111111111";
const ScalableKey kKey{std::string(kCopyCount), "inference-component/ic"};

class OneResource final : public ScalableResources {
 public:
  Result<Capacity> Get(const std::string&, const ScalableKey&) override { return capacity; }
  Status Set(const std::string&, const ScalableKey&, int desired) override {
    if (refuse) return FailedPrecondition("the endpoint is Updating");
    capacity.desired = desired;
    return OkStatus();
  }
  Capacity capacity{1, 1, "ep", ""};
  bool refuse = false;
};

class ActivityLogTest : public ::testing::Test {
 protected:
  ActivityLogTest() : store_(clock_), log_(store_, clock_, 3) {}
  std::vector<ScalingActivity> Activities() {
    store::ListOptions lo;
    lo.name_prefix = kKey.Name() + " ";
    std::vector<ScalingActivity> out;
    const std::vector<store::Record> records =
        store_.List(kAccount, std::string(kActivityKind), lo).value();
    for (const auto& r : records) {
      out.push_back(ScalingActivity::FromJson(json::parse(r.body)).value());
    }
    return out;
  }
  FakeClock clock_;
  store::FakeStore store_;
  ActivityLog log_;
  OneResource resource_;
};

TEST_F(ActivityLogTest, AScaleIsInProgressUntilTheResourceReachesIt) {
  ASSERT_TRUE(log_.Scale(resource_, kAccount, kKey, 1, 3, "At now a test"));
  auto a = Activities();
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].status, "InProgress");
  EXPECT_EQ(a[0].description, "Setting desired copy count to 3.");
  EXPECT_EQ(a[0].cause, "At now a test changing the desired capacity from 1 to 3.");
  log_.Update(kAccount, kKey, {3, 2, "ep", ""});
  EXPECT_EQ(Activities()[0].status_message, "2 of 3 in service");
  log_.Update(kAccount, kKey, {3, 2, "ep", "1 copy waits for a mig-1g.10gb partition"});
  EXPECT_EQ(Activities()[0].status_message, "1 copy waits for a mig-1g.10gb partition");
  clock_.Advance(std::chrono::seconds(5));
  log_.Update(kAccount, kKey, {3, 3, "ep", ""});
  a = Activities();
  EXPECT_EQ(a[0].status, "Successful");
  EXPECT_EQ(a[0].end_ms - a[0].start_ms, 5000);
}

TEST_F(ActivityLogTest, ARefusedScaleIsFailedWithTheResourcesReason) {
  resource_.refuse = true;
  EXPECT_FALSE(log_.Scale(resource_, kAccount, kKey, 1, 3, "At now a test"));
  auto a = Activities();
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].status, "Failed");
  EXPECT_EQ(a[0].status_message, "the endpoint is Updating");
}

TEST_F(ActivityLogTest, ALaterChangeOverridesAnActivityStillInProgress) {
  ASSERT_TRUE(log_.Scale(resource_, kAccount, kKey, 1, 3, "first"));
  clock_.Advance(std::chrono::milliseconds(1));
  ASSERT_TRUE(log_.Scale(resource_, kAccount, kKey, 3, 5, "second"));
  log_.Update(kAccount, kKey, {5, 3, "ep", ""});
  auto a = Activities();
  ASSERT_EQ(a.size(), 2u);
  EXPECT_EQ(a[0].status, "Overridden");
  EXPECT_EQ(a[1].status, "InProgress");
}

TEST_F(ActivityLogTest, KeepsTheNewestActivitiesOfATargetOnly) {
  for (int i = 0; i < 5; ++i) {
    clock_.Advance(std::chrono::milliseconds(1));
    ScalingActivity a;
    a.key = kKey;
    a.id = ActivityId();
    a.description = "activity " + std::to_string(i);
    a.status = "Successful";
    a.start_ms = clock_.UnixMillis();
    log_.Record(kAccount, a);
  }
  auto a = Activities();
  ASSERT_EQ(a.size(), 3u);
  EXPECT_EQ(a[0].description, "activity 2");
  EXPECT_EQ(a[2].description, "activity 4");
}

TEST(UtcTime, QuotesTheMomentAsTheServiceDoes) {
  EXPECT_EQ(UtcTime(1'780'000'000'123), "2026-05-28T20:26:40Z");
}

}  // namespace
}  // namespace carve::server::autoscaling
