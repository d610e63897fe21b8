// EndpointLifecycle over a FakeStore, NodeClaims and a scripted NodeDriver, with explicit passes.
#include "server/sagemaker/endpoint_lifecycle.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <condition_variable>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "common/fake_clock.h"
#include "server/sagemaker/endpoint_record.h"
#include "server/sagemaker/resources.h"
#include "store/fake_store.h"

namespace carve::server::sagemaker {
namespace {

using ::testing::HasSubstr;
constexpr char kAccount[] = "111111111111";

// Records every carve and reset (a carve with no instances is a reset, as on an agent); fails
// every carve or reset of one (node, GPU) when told to.
class ScriptedDriver final : public nodes::NodeDriver {
 public:
  Status CarveGpu(const NodeId& node, GpuIndex gpu, const core::Layout& layout) override {
    std::unique_lock lock(mu_);
    if (hold_) {  // Hold(): the carve waits, as one on a slow agent does, until Release().
      ++held_;
      cv_.notify_all();
      cv_.wait(lock, [&] { return !hold_; });
    }
    if (fail_ == std::make_pair(node.value(), gpu.value())) {
      return Internal("NVML_ERROR_INSUFFICIENT_RESOURCES");
    }
    if (layout.instances.empty()) {
      carved_.erase({node.value(), gpu.value()});
      ++resets_;
      return OkStatus();
    }
    std::vector<std::string> names;
    for (const auto& inst : layout.instances) names.emplace_back(inst.profile->name);
    carved_[{node.value(), gpu.value()}] = names;
    return OkStatus();
  }
  Status ResetGpu(const NodeId& node, GpuIndex gpu) override {
    std::lock_guard lock(mu_);
    carved_.erase({node.value(), gpu.value()});
    ++resets_;
    return OkStatus();
  }
  void Hold() {
    std::lock_guard lock(mu_);
    hold_ = true;
  }
  // Whether a carve is waiting in Hold() (within 10 s).
  bool WaitHeld() {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(10), [&] { return held_ > 0; });
  }
  void Release() {
    {
      std::lock_guard lock(mu_);
      hold_ = false;
    }
    cv_.notify_all();
  }
  void FailCarve(std::string node, uint32_t gpu) {
    std::lock_guard lock(mu_);
    fail_ = {std::move(node), gpu};
  }
  size_t carved() const {
    std::lock_guard lock(mu_);
    return carved_.size();
  }
  std::vector<std::string> At(const std::string& node, uint32_t gpu) const {
    std::lock_guard lock(mu_);
    auto it = carved_.find({node, gpu});
    return it == carved_.end() ? std::vector<std::string>{} : it->second;
  }
  int resets() const {
    std::lock_guard lock(mu_);
    return resets_;
  }

 private:
  mutable std::mutex mu_;
  std::map<std::pair<std::string, uint32_t>, std::vector<std::string>> carved_;
  std::pair<std::string, uint32_t> fail_{"", 0};
  int resets_ = 0;
  std::condition_variable cv_;
  bool hold_ = false;
  int held_ = 0;
};

class EndpointLifecycleTest : public ::testing::Test {
 protected:
  EndpointLifecycleTest() {
    for (const char* n : {"p4d-0", "p4d-1", "p4d-2"}) {
      EXPECT_TRUE(claims_.Upsert(NodeId(n), "ml.p4d.24xlarge", true).ok());
    }
  }
  void CreateEndpoint(const std::string& name, int instances) {
    VariantSpec v;
    v.name = "AllTraffic";
    v.instance_type = "ml.p4d.24xlarge";
    v.instance_count = instances;
    v.partition_types = std::vector<std::string>{"mig-4g.20gb", "mig-2g.10gb", "mig-1g.5gb"};
    v.layout_entries = 1;
    v.layout = CheckVariantLayout(v).value();
    EndpointRecord ep;
    ep.name = name;
    ep.config_name = name;
    ep.status = EndpointStatus::kCreating;
    ep.variants = {v};
    ASSERT_TRUE(
        store_.Create({kAccount, std::string(kEndpoint), name}, ep.ToJson().dump()).has_value());
  }
  std::vector<EndpointEntry> Load() {
    std::vector<EndpointEntry> out;
    const auto records = store_.ListAllAccounts(std::string(kEndpoint)).value();
    for (const auto& r : records) out.push_back({r, EndpointRecord::FromRecord(r).value()});
    return out;
  }
  void Pass() {
    auto endpoints = Load();
    {
      std::lock_guard lock(mu_);
      lifecycle_.Reconcile(endpoints);
    }
    lifecycle_.Wait();
  }
  EndpointRecord Get(const std::string& name) {
    return EndpointRecord::FromRecord(store_.Get({kAccount, std::string(kEndpoint), name}).value())
        .value();
  }
  void MarkDeleting(const std::string& name) {
    auto rec = store_.Get({kAccount, std::string(kEndpoint), name}).value();
    EndpointRecord ep = EndpointRecord::FromRecord(rec).value();
    ep.status = EndpointStatus::kDeleting;
    ASSERT_TRUE(store_.Update(rec.key, ep.ToJson().dump(), rec.version).has_value());
  }
  void MarkUpdating(const std::string& name, int count) {
    auto rec = store_.Get({kAccount, std::string(kEndpoint), name}).value();
    EndpointRecord ep = EndpointRecord::FromRecord(rec).value();
    ep.status = EndpointStatus::kUpdating;
    ep.variants[0].instance_count = count;
    ASSERT_TRUE(store_.Update(rec.key, ep.ToJson().dump(), rec.version).has_value());
  }
  // `node`, whose agent refused its reset (FailCarve), is held for the reset; it is not tried
  // again before kResetRetry, and once the agent stops refusing it is, and the node goes free.
  void ExpectTheRefusedResetRetriedOnlyAfterTheInterval(const std::string& node) {
    EXPECT_EQ(claims_.Find(NodeId(node))->owner, nodes::Owner::Reset(NodeId(node)));
    const int resets = driver_.resets();
    Pass();  // Not before the retry interval.
    EXPECT_EQ(driver_.resets(), resets);
    driver_.FailCarve("", 0);
    clock_.Advance(EndpointLifecycle::kResetRetry);
    Pass();
    EXPECT_GT(driver_.resets(), resets);
    EXPECT_FALSE(claims_.Find(NodeId(node))->owner.has_value());
    EXPECT_TRUE(lifecycle_.PendingResets().empty());
  }
  nodes::Owner Owner(const std::string& name) {
    return nodes::Owner::Endpoint(kAccount, name, "AllTraffic");
  }

  FakeClock clock_;
  store::FakeStore store_{clock_};
  nodes::NodeClaims claims_;
  ScriptedDriver driver_;
  std::mutex mu_;
  int wakes_ = 0;
  EndpointLifecycle lifecycle_{store_, claims_, driver_, clock_, mu_, [this] { ++wakes_; }};
};

TEST(JoinNodes, NamesAFewAndCountsTheRest) {
  EXPECT_EQ(JoinNodes({}), "");
  EXPECT_EQ(JoinNodes({"a", "b"}), "a, b");
  std::vector<std::string> fleet;
  for (int i = 0; i < 5000; ++i) fleet.push_back("node-" + std::to_string(i));
  const std::string joined = JoinNodes(fleet);
  EXPECT_TRUE(joined.starts_with("node-0, node-1, ")) << joined;
  EXPECT_TRUE(joined.ends_with(", node-9 and 4990 more")) << joined;
}

TEST_F(EndpointLifecycleTest, ClaimsRecordsAndCarvesEveryGpuThenGoesInService) {
  CreateEndpoint("ep", 2);
  Pass();
  EndpointRecord ep = Get("ep");
  EXPECT_EQ(ep.status, EndpointStatus::kInService);
  EXPECT_EQ(ep.variants[0].nodes, (std::vector<std::string>{"p4d-0", "p4d-1"}));
  EXPECT_EQ(driver_.carved(), 16u);
  EXPECT_EQ(driver_.At("p4d-1", 7), (std::vector<std::string>{"4g.20gb", "2g.10gb", "1g.5gb"}));
  EXPECT_EQ(claims_.NodesOf(Owner("ep")).size(), 2u);
  EXPECT_GE(wakes_, 1);  // The carve's outcome wakes the reconciler.
}

TEST_F(EndpointLifecycleTest, TooFewInstancesFailsNamingWhatIsMissingAndKeepsNoClaim) {
  CreateEndpoint("ep", 4);
  Pass();
  EndpointRecord ep = Get("ep");
  EXPECT_EQ(ep.status, EndpointStatus::kFailed);
  EXPECT_THAT(ep.failure_reason, HasSubstr("the fleet has 3, 3 free. Missing: 1 x ml.p4d"));
  EXPECT_TRUE(ep.variants[0].nodes.empty());
  EXPECT_TRUE(claims_.NodesOf(Owner("ep")).empty());
  EXPECT_EQ(driver_.carved(), 0u);
}

TEST_F(EndpointLifecycleTest, InstancesThatAreNotReadyMakeItWaitNotFail) {
  ASSERT_TRUE(claims_.Upsert(NodeId("p4d-2"), "ml.p4d.24xlarge", false).ok());
  CreateEndpoint("ep", 3);
  Pass();
  EXPECT_EQ(Get("ep").status, EndpointStatus::kCreating);
  EXPECT_TRUE(claims_.NodesOf(Owner("ep")).empty());
  ASSERT_TRUE(claims_.Upsert(NodeId("p4d-2"), "ml.p4d.24xlarge", true).ok());
  Pass();
  EXPECT_EQ(Get("ep").status, EndpointStatus::kInService);
}

TEST_F(EndpointLifecycleTest, ACarveFailureFailsWithTheDriversReasonAndReleasesTheInstances) {
  driver_.FailCarve("p4d-0", 3);
  CreateEndpoint("ep", 1);
  Pass();
  EndpointRecord ep = Get("ep");
  EXPECT_EQ(ep.status, EndpointStatus::kFailed);
  EXPECT_EQ(ep.failure_reason, "carving GPU 3 of p4d-0 failed: NVML_ERROR_INSUFFICIENT_RESOURCES");
  EXPECT_TRUE(claims_.NodesOf(Owner("ep")).empty());
}

TEST_F(EndpointLifecycleTest, DeletingResetsEveryGpuRemovesTheRecordAndThenReleases) {
  CreateEndpoint("ep", 2);
  Pass();
  MarkDeleting("ep");
  Pass();
  EXPECT_EQ(driver_.resets(), 16);
  EXPECT_EQ(driver_.carved(), 0u);
  EXPECT_FALSE(store_.Get({kAccount, std::string(kEndpoint), "ep"}).has_value());
  EXPECT_TRUE(claims_.NodesOf(Owner("ep")).empty());
  EXPECT_TRUE(store_.ListAllAccounts(std::string(EndpointLifecycle::kNodeReset))->empty());
  EXPECT_TRUE(lifecycle_.PendingResets().empty());
}

TEST_F(EndpointLifecycleTest, ANodeNotReadyWhenDeletingIsHeldAndResetWhenItReturns) {
  CreateEndpoint("ep", 2);
  Pass();
  ASSERT_TRUE(claims_.Upsert(NodeId("p4d-1"), "ml.p4d.24xlarge", false).ok());
  MarkDeleting("ep");
  Pass();
  // The delete does not wait for the lost node: the record is gone, p4d-0 is whole and free.
  EXPECT_FALSE(store_.Get({kAccount, std::string(kEndpoint), "ep"}).has_value());
  EXPECT_EQ(driver_.resets(), 8);
  EXPECT_TRUE(driver_.At("p4d-0", 0).empty());
  EXPECT_FALSE(claims_.Find(NodeId("p4d-0"))->owner.has_value());
  // p4d-1 is still carved, so no new owner may take it; its reset is on record.
  EXPECT_FALSE(driver_.At("p4d-1", 7).empty());
  EXPECT_EQ(claims_.Find(NodeId("p4d-1"))->owner, nodes::Owner::Reset(NodeId("p4d-1")));
  auto pending = store_.Get({"", std::string(EndpointLifecycle::kNodeReset), "p4d-1"});
  ASSERT_TRUE(pending.has_value());
  EXPECT_EQ(nlohmann::json::parse(pending->body)["gpus"], 8);

  ASSERT_TRUE(claims_.Upsert(NodeId("p4d-1"), "ml.p4d.24xlarge", true).ok());
  Pass();
  EXPECT_EQ(driver_.resets(), 16);
  EXPECT_EQ(driver_.carved(), 0u);
  EXPECT_FALSE(claims_.Find(NodeId("p4d-1"))->owner.has_value());
  EXPECT_FALSE(store_.Get({"", std::string(EndpointLifecycle::kNodeReset), "p4d-1"}).has_value());
  EXPECT_TRUE(lifecycle_.PendingResets().empty());
}

TEST_F(EndpointLifecycleTest, APendingResetSurvivesARestart) {
  CreateEndpoint("ep", 2);
  Pass();
  ASSERT_TRUE(claims_.Upsert(NodeId("p4d-1"), "ml.p4d.24xlarge", false).ok());
  MarkDeleting("ep");
  Pass();
  ASSERT_EQ(lifecycle_.PendingResets(), std::vector<NodeId>{NodeId("p4d-1")});

  nodes::NodeClaims fresh;
  for (const char* n : {"p4d-0", "p4d-1", "p4d-2"}) {
    ASSERT_TRUE(fresh.Upsert(NodeId(n), "ml.p4d.24xlarge", true).ok());
  }
  EndpointLifecycle restarted(store_, fresh, driver_, clock_, mu_, [] {});
  ASSERT_TRUE(restarted.Recover(Load()).ok());
  EXPECT_EQ(fresh.Find(NodeId("p4d-1"))->owner, nodes::Owner::Reset(NodeId("p4d-1")));
  std::vector<EndpointEntry> none;
  {
    std::lock_guard lock(mu_);
    restarted.Reconcile(none);
  }
  restarted.Wait();
  EXPECT_EQ(driver_.carved(), 0u);
  EXPECT_FALSE(fresh.Find(NodeId("p4d-1"))->owner.has_value());
  EXPECT_TRUE(store_.ListAllAccounts(std::string(EndpointLifecycle::kNodeReset))->empty());
}

TEST_F(EndpointLifecycleTest, AResetTheAgentRefusesStillDeletesAndIsRetriedLater) {
  CreateEndpoint("ep", 1);
  Pass();
  driver_.FailCarve("p4d-0", 3);
  MarkDeleting("ep");
  Pass();
  EXPECT_FALSE(store_.Get({kAccount, std::string(kEndpoint), "ep"}).has_value());
  ExpectTheRefusedResetRetriedOnlyAfterTheInterval("p4d-0");
  EXPECT_EQ(driver_.carved(), 0u);
}

// The same on scale-in: a leaving instance whose agent refuses its reset is held, and its reset
// is tried again only after the retry interval, not on every pass.
TEST_F(EndpointLifecycleTest, ALeavingInstanceWhoseResetIsRefusedIsRetriedOnlyAfterTheInterval) {
  CreateEndpoint("ep", 2);
  Pass();
  driver_.FailCarve("p4d-1", 3);
  MarkUpdating("ep", 1);
  for (int i = 0; i < 3 && lifecycle_.PendingResets().empty(); ++i) Pass();  // Drain, then reset.
  ASSERT_EQ(lifecycle_.PendingResets().size(), 1u) << "p4d-1 should be the one leaving";
  ExpectTheRefusedResetRetriedOnlyAfterTheInterval("p4d-1");
}

// A server shutting down mid-carve leaves the endpoint Creating, so that it is carved again
// after the restart: a carve cut short is neither InService nor Failed.
TEST_F(EndpointLifecycleTest, AnAbortMidCarveLeavesTheEndpointCreating) {
  CreateEndpoint("ep", 1);
  driver_.Hold();
  auto endpoints = Load();
  {
    std::lock_guard lock(mu_);
    lifecycle_.Reconcile(endpoints);
  }
  ASSERT_TRUE(driver_.WaitHeld());
  lifecycle_.Abort();
  driver_.Release();
  lifecycle_.Wait();
  EXPECT_EQ(Get("ep").status, EndpointStatus::kCreating);
  EXPECT_TRUE(Get("ep").failure_reason.empty());
  EXPECT_LT(driver_.carved(), 8u) << "the carve went on past the abort";
}

// On etcd one commit writes at most 127 keys; an endpoint of more instances than that, whose
// agents all refused their reset, still goes, and every one of its nodes is held.
TEST_F(EndpointLifecycleTest, MoreResetsThanOneCommitHoldsStillDeleteAndHoldEveryNode) {
  CreateEndpoint("ep", 3);
  Pass();
  driver_.FailCarve("p4d-1", 3);
  store_.set_max_commit_keys(2);  // The endpoint's record and one reset.
  MarkDeleting("ep");
  Pass();
  EXPECT_FALSE(store_.Get({kAccount, std::string(kEndpoint), "ep"}).has_value());
  EXPECT_EQ(store_.ListAllAccounts(std::string(EndpointLifecycle::kNodeReset))->size(), 3u);
  EXPECT_EQ(lifecycle_.PendingResets().size(), 3u);
  for (const char* n : {"p4d-0", "p4d-1", "p4d-2"}) {
    EXPECT_EQ(claims_.Find(NodeId(n))->owner, nodes::Owner::Reset(NodeId(n))) << n;
  }
}

TEST_F(EndpointLifecycleTest, AFailedDeleteCommitKeepsTheInstancesClaimed) {
  CreateEndpoint("ep", 1);
  Pass();
  MarkDeleting("ep");
  store_.FailNthCommit(1, Unavailable("disk"));
  Pass();
  EXPECT_EQ(Get("ep").status, EndpointStatus::kDeleting);
  EXPECT_EQ(claims_.NodesOf(Owner("ep")).size(), 1u);
  Pass();  // The next pass commits it.
  EXPECT_FALSE(store_.Get({kAccount, std::string(kEndpoint), "ep"}).has_value());
  EXPECT_TRUE(claims_.NodesOf(Owner("ep")).empty());
}

TEST_F(EndpointLifecycleTest, RecoverClaimsTheRecordedInstancesAgain) {
  CreateEndpoint("ep", 2);
  Pass();
  nodes::NodeClaims fresh;
  for (const char* n : {"p4d-0", "p4d-1", "p4d-2"}) {
    ASSERT_TRUE(fresh.Upsert(NodeId(n), "ml.p4d.24xlarge", true).ok());
  }
  EndpointLifecycle restarted(store_, fresh, driver_, clock_, mu_, [] {});
  ASSERT_TRUE(restarted.Recover(Load()).ok());
  auto held = fresh.NodesOf(Owner("ep"));
  ASSERT_EQ(held.size(), 2u);
  EXPECT_EQ(held[0].id, NodeId("p4d-0"));
  EXPECT_EQ(held[1].id, NodeId("p4d-1"));
}

TEST_F(EndpointLifecycleTest, GrowingCarvesTheAddedInstancesBeforeTheyJoin) {
  CreateEndpoint("ep", 1);
  Pass();
  ASSERT_EQ(driver_.carved(), 8u);
  MarkUpdating("ep", 2);
  Pass();  // Claims p4d-1 and carves it; it joins the record once carved.
  EXPECT_EQ(Get("ep").variants[0].nodes, (std::vector<std::string>{"p4d-0", "p4d-1"}));
  EXPECT_EQ(driver_.At("p4d-1", 7), (std::vector<std::string>{"4g.20gb", "2g.10gb", "1g.5gb"}));
  EXPECT_EQ(claims_.NodesOf(Owner("ep")).size(), 2u);
  Pass();
  EXPECT_EQ(Get("ep").status, EndpointStatus::kInService);
  EXPECT_TRUE(Get("ep").failure_reason.empty());
}

TEST_F(EndpointLifecycleTest, TooFewFreeInstancesKeepTheCapacityAndSayWhy) {
  CreateEndpoint("ep", 1);
  Pass();
  MarkUpdating("ep", 4);
  Pass();
  EndpointRecord ep = Get("ep");
  EXPECT_EQ(ep.status, EndpointStatus::kInService);
  EXPECT_EQ(ep.variants[0].instance_count, 1);
  EXPECT_EQ(ep.variants[0].nodes.size(), 1u);
  EXPECT_THAT(ep.failure_reason, HasSubstr("Variant AllTraffic could not grow to 4 instances: "));
  EXPECT_THAT(ep.failure_reason, HasSubstr("Missing: 1 x ml.p4d.24xlarge"));
  EXPECT_EQ(claims_.NodesOf(Owner("ep")).size(), 1u);
}

TEST_F(EndpointLifecycleTest, ShrinkingDrainsTheInstanceWithFewestCopiesThenResetsAndReleasesIt) {
  std::map<std::string, size_t> copies{{"p4d-0", 2}, {"p4d-1", 1}, {"p4d-2", 3}};
  lifecycle_.set_copies_per_node([&](const nodes::Owner&) {
    std::map<std::string, size_t> placed;
    for (const auto& [n, c] : copies) {
      if (c > 0) placed[n] = c;
    }
    return placed;
  });
  CreateEndpoint("ep", 3);
  Pass();
  MarkUpdating("ep", 2);
  Pass();
  EXPECT_EQ(Get("ep").variants[0].draining, std::vector<std::string>{"p4d-1"});
  Pass();  // Its copy has not moved yet: it stays, carved and claimed.
  EXPECT_EQ(Get("ep").variants[0].nodes.size(), 3u);
  EXPECT_FALSE(driver_.At("p4d-1", 0).empty());
  EXPECT_EQ(Get("ep").status, EndpointStatus::kUpdating);

  copies["p4d-1"] = 0;
  Pass();
  EndpointRecord ep = Get("ep");
  EXPECT_EQ(ep.variants[0].nodes, (std::vector<std::string>{"p4d-0", "p4d-2"}));
  EXPECT_TRUE(ep.variants[0].draining.empty());
  EXPECT_TRUE(driver_.At("p4d-1", 0).empty());
  EXPECT_FALSE(claims_.Find(NodeId("p4d-1"))->owner.has_value());
  Pass();
  EXPECT_EQ(Get("ep").status, EndpointStatus::kInService);
}

TEST_F(EndpointLifecycleTest, ALeavingInstanceThatIsNotReadyIsHeldForItsReset) {
  CreateEndpoint("ep", 2);
  Pass();
  MarkUpdating("ep", 1);
  Pass();
  ASSERT_EQ(Get("ep").variants[0].draining, std::vector<std::string>{"p4d-1"});
  ASSERT_TRUE(claims_.Upsert(NodeId("p4d-1"), "ml.p4d.24xlarge", false).ok());
  Pass();
  EXPECT_EQ(Get("ep").variants[0].nodes, std::vector<std::string>{"p4d-0"});
  EXPECT_EQ(claims_.Find(NodeId("p4d-1"))->owner, nodes::Owner::Reset(NodeId("p4d-1")));
  EXPECT_EQ(lifecycle_.PendingResets(), std::vector<NodeId>{NodeId("p4d-1")});
}

TEST_F(EndpointLifecycleTest, UpdatingGoesBackInService) {
  CreateEndpoint("ep", 1);
  Pass();
  auto rec = store_.Get({kAccount, std::string(kEndpoint), "ep"}).value();
  EndpointRecord ep = Get("ep");
  ep.status = EndpointStatus::kUpdating;
  ASSERT_TRUE(store_.Update(rec.key, ep.ToJson().dump(), rec.version).has_value());
  Pass();
  EXPECT_EQ(Get("ep").status, EndpointStatus::kInService);
}

}  // namespace
}  // namespace carve::server::sagemaker
