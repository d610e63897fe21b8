// WorkloadPublisher: the desired state agents receive and the route table the router reads, from
// endpoints, components and placed copies; over a real NodeRegistry and FakeStore.
#include "server/sagemaker/workload_publisher.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/fake_clock.h"
#include "server/sagemaker/resources.h"
#include "server/sagemaker/route_table.h"
#include "store/fake_store.h"

namespace carve::server::sagemaker {
namespace {

using namespace std::chrono_literals;
constexpr char kAccount[] = "111111111111";

class WorkloadPublisherTest : public ::testing::Test {
 protected:
  WorkloadPublisherTest() {
    protocol::Registration r;
    r.node_id = "p4d-0";
    r.instance_type = "ml.p4d.24xlarge";
    r.driver = "sim";
    EXPECT_TRUE(registry_.Register(r).has_value());
    nodes::SyncFromRegistry(registry_, claims_);
    EXPECT_TRUE(claims_
                    .ClaimSpecific(nodes::Owner::Endpoint(kAccount, "ep", "AllTraffic"),
                                   std::vector<NodeId>{NodeId("p4d-0")})
                    .ok());
    EXPECT_TRUE(store_
                    .Create({kAccount, std::string(kModel), "m"},
                            R"({"PrimaryContainer": {"Image": "carve/testmodel",
                                "Environment": {"MODEL_ID": "llama-3.1-8b"}}})")
                    .has_value());
  }
  nodes::NodeRegistryOptions RegistryOptions() {
    nodes::NodeRegistryOptions o;
    o.clock = &clock_;
    return o;
  }
  // The endpoint, carved with `types` on its one instance.
  void Endpoint(std::vector<std::string> types) {
    VariantSpec v;
    v.name = "AllTraffic";
    v.instance_type = "ml.p4d.24xlarge";
    v.partition_types = std::move(types);
    v.layout_entries = 1;
    v.layout = CheckVariantLayout(v).value();
    v.nodes = {"p4d-0"};
    EndpointRecord ep;
    ep.name = "ep";
    ep.config_name = "ep";
    ep.status = EndpointStatus::kInService;
    ep.variants = {v};
    auto rec = store_.Create({kAccount, std::string(kEndpoint), "ep"}, ep.ToJson().dump());
    endpoints_ = {{rec.value(), ep}};
  }
  // keep_model: the component keeps its model's container, as CreateInferenceComponent does;
  // without it, a record written before components kept one.
  void Component(const std::string& name, const std::string& type, int copies,
                 bool keep_model = true) {
    ComponentRecord c;
    c.name = name;
    c.endpoint = "ep";
    c.variant = "AllTraffic";
    c.specification = {{"ModelName", "m"}};
    if (keep_model) {
      c.KeepModelContainer(1, store_.Get({kAccount, std::string(kModel), "m"}).value().body);
    }
    c.partition_type = type;
    c.cpu_milli = 1500;
    c.memory_mib = 2048;
    c.desired = copies;
    ASSERT_TRUE(store_.Create({kAccount, std::string(kInferenceComponent), name}, c.ToJson().dump())
                    .has_value());
  }
  void Pass() {
    components_.clear();
    const auto records = store_.ListAllAccounts(std::string(kInferenceComponent)).value();
    for (const auto& r : records)
      components_.push_back({r, ComponentRecord::FromRecord(r).value()});
    placement_.SyncPools(endpoints_, claims_, PassChanges{});
    placement_.Reconcile(endpoints_, components_, PassChanges{});
    publisher_.Publish(endpoints_, components_, placement_, PassChanges{});
  }
  protocol::DesiredState Desired() {
    return registry_.WaitDesired("p4d-0", registry_.epoch(), 0, 0ms).value();
  }

  FakeClock clock_;
  store::FakeStore store_{clock_};
  nodes::NodeRegistry registry_{store_, RegistryOptions()};
  nodes::NodeClaims claims_;
  RuntimeCatalog runtimes_ = BuiltinRuntimes(false);
  RouteTable routes_;
  ComponentPlacement placement_{store_, &registry_, clock_};
  WorkloadPublisher publisher_{registry_, runtimes_, routes_};
  std::vector<EndpointEntry> endpoints_;
  std::vector<ComponentEntry> components_;
};

TEST_F(WorkloadPublisherTest, EveryGpuOfACarvedInstanceIsAskedForTheVariantsLayout) {
  Endpoint({"mig-4g.20gb", "mig-2g.10gb", "mig-1g.5gb"});
  Pass();
  auto d = Desired();
  ASSERT_EQ(d.gpus.size(), 8u);
  for (const auto& g : d.gpus) {
    EXPECT_TRUE(g.mig);
    EXPECT_EQ(g.partitions, (std::vector<protocol::PartitionSpec>{
                                {"4g.20gb", 0}, {"2g.10gb", 4}, {"1g.5gb", 6}}));
  }
}

TEST_F(WorkloadPublisherTest, ACopyIsAProcessWithTheModelsContainerAndItsHostLimits) {
  Endpoint({"mig-4g.20gb", "mig-2g.10gb", "mig-1g.5gb"});
  Component("ic", "mig-2g.10gb", 1);
  Pass();
  auto d = Desired();
  ASSERT_EQ(d.workloads.size(), 1u);
  const protocol::WorkloadDesired& w = d.workloads[0];
  const auto copy = placement_.CopiesOf(kAccount, "ic")[0].record;
  EXPECT_EQ(w.id, std::string(kAccount) + "/ic/" + copy.id);
  EXPECT_EQ(w.kind, protocol::WorkloadKind::kCopy);
  EXPECT_EQ(w.device.gpus, copy.placement.gpu_indexes);
  EXPECT_EQ(w.device.partition_start, copy.placement.partition_start);
  EXPECT_EQ(w.device.partition_start, 4);  // The 2g.10gb, after the 4g.20gb at slice 0.
  EXPECT_EQ(w.cpu_milli, 1500);
  EXPECT_EQ(w.memory_mib, 2048);
  EXPECT_EQ(w.environment.at("MODEL_ID"), "llama-3.1-8b");
  EXPECT_EQ(w.environment.at("CARVE_INFERENCE_COMPONENT"), "ic");
  EXPECT_EQ(w.environment.at("CARVE_TARGET"), "a100-40gb:mig-2g.10gb");
  EXPECT_FALSE(w.command.empty());  // carve/testmodel is a built-in runtime.
}

// DeleteModel removes the model's entry only: a server that starts after it (a new publisher)
// still builds the running copy's workload, from the container its component kept.
TEST_F(WorkloadPublisherTest, ACopyOfADeletedModelRunsTheContainerItsComponentKept) {
  Endpoint({"mig-4g.20gb", "mig-2g.10gb", "mig-1g.5gb"});
  Component("ic", "mig-2g.10gb", 1, /*keep_model=*/true);
  Pass();
  const auto before = Desired().workloads;
  ASSERT_EQ(before.size(), 1u);
  ASSERT_TRUE(store_.Delete({kAccount, std::string(kModel), "m"}).ok());

  WorkloadPublisher restarted{registry_, runtimes_, routes_};
  restarted.Publish(endpoints_, components_, placement_, PassChanges{});
  const auto after = Desired().workloads;
  ASSERT_EQ(after.size(), 1u);
  EXPECT_EQ(after[0].id, before[0].id);
  EXPECT_EQ(after[0].environment, before[0].environment);
  EXPECT_EQ(after[0].environment.at("MODEL_ID"), "llama-3.1-8b");
  EXPECT_EQ(after[0].command, before[0].command);
}

// One copy's workload as a pure plan: an image a runtime serves runs that runtime's command in
// place of the image; the model's variables win over the runtime's and CARVE_TARGET is only a
// default; the partition is named by its start, with the host limits of the placement.
TEST(PlanCopyWorkload, ARuntimeServesItsImageAndTheModelsVariablesWin) {
  ComponentRecord c;
  c.name = "ic";
  c.endpoint = "ep";
  CopyRecord copy;
  copy.index = 3;
  copy.spec_version = 2;
  copy.placement.kind = core::RequestKind::kPartition;
  copy.placement.gpu_indexes = {5};
  copy.placement.partition_start = 4;
  copy.placement.cpu_milli = 1500;
  copy.placement.host_memory_mib = 2048;
  ContainerSpec container{"carve/testmodel",
                          "s3://b/m.tar.gz",
                          {{"CARVE_TARGET", "h100:mig-3g.40gb"}, {"MODE", "model"}}};
  const Runtime runtime{"carve/testmodel", {"{carve}", "testmodel"}, {{"MODE", "runtime"}}};
  const std::string target = "a100-40gb:mig-2g.10gb";
  const std::vector<std::string> roots = {"/srv/models"};

  auto w = PlanCopyWorkload({c, copy, container, &runtime, target, roots});
  EXPECT_EQ(w.command, runtime.command);
  EXPECT_TRUE(w.image.empty());
  EXPECT_EQ(w.environment.at("MODE"), "model");
  EXPECT_EQ(w.environment.at("CARVE_TARGET"), "h100:mig-3g.40gb");
  EXPECT_EQ(w.environment.at("CARVE_COPY"), "3");
  EXPECT_EQ(w.environment.at("CARVE_SPECIFICATION_VERSION"), "2");
  EXPECT_EQ(w.values.at("model_data"), "s3://b/m.tar.gz");
  EXPECT_EQ(w.model_roots, roots);
  EXPECT_EQ(w.device.gpus, std::vector<int>{5});
  EXPECT_EQ(w.device.partition_start, 4);
  EXPECT_EQ(w.cpu_milli, 1500);
  EXPECT_EQ(w.memory_mib, 2048);
  EXPECT_TRUE(w.health_check);

  container.environment.erase("CARVE_TARGET");
  copy.placement.kind = core::RequestKind::kWholeGpus;
  auto image = PlanCopyWorkload({c, copy, container, nullptr, target, roots});
  EXPECT_EQ(image.image, "carve/testmodel");
  EXPECT_TRUE(image.command.empty());
  EXPECT_EQ(image.environment.at("CARVE_TARGET"), target);
  EXPECT_FALSE(image.device.partition_start.has_value());
}

// A record written before components kept their model's container: the publisher reads no
// Model record, so its copy is not built; Recover's migration keeps the container of a model
// that still exists, and from then on the copy runs even once the model is deleted. A version
// whose model is gone is left as it was.
TEST_F(WorkloadPublisherTest, ARecordThatKeptNoContainerGetsItsModelsFromTheMigration) {
  Endpoint({"mig-4g.20gb", "mig-2g.10gb", "mig-1g.5gb"});
  Component("ic", "mig-2g.10gb", 1, /*keep_model=*/false);
  Component("orphan", "mig-1g.5gb", 1, /*keep_model=*/false);
  Pass();
  EXPECT_TRUE(Desired().workloads.empty()) << "built from a Model record";

  // "orphan" names a model that was deleted before it kept anything.
  auto orphan = std::find_if(components_.begin(), components_.end(),
                             [](const ComponentEntry& e) { return e.component.name == "orphan"; });
  ASSERT_NE(orphan, components_.end());
  orphan->component.specification = {{"ModelName", "gone"}};
  const int64_t orphan_version = orphan->record.version;
  ASSERT_TRUE(MigrateModelContainers(store_, components_).ok());
  EXPECT_EQ(orphan->record.version, orphan_version) << "nothing to keep, nothing written";

  auto stored = ComponentRecord::FromRecord(
      store_.Get({kAccount, std::string(kInferenceComponent), "ic"}).value());
  ASSERT_TRUE(stored.has_value());
  ASSERT_NE(stored->ModelContainerOf(1), nullptr);
  ASSERT_TRUE(store_.Delete({kAccount, std::string(kModel), "m"}).ok());
  Pass();
  const auto after = Desired().workloads;
  ASSERT_EQ(after.size(), 1u) << "the orphan kept nothing, and its model is gone now";
  EXPECT_EQ(after[0].name, "ic");
  EXPECT_EQ(after[0].environment.at("MODEL_ID"), "llama-3.1-8b");
}

// A copy's partition is named by the slice it starts at, as the store names it, whatever the
// declared order ([1g, 3g, 2g] is carved 3g@0, 2g@4, 1g@6), so a copy lands on a partition of
// its own type.
TEST_F(WorkloadPublisherTest, APartitionIsNamedByItsStartWhateverTheDeclaredOrder) {
  Endpoint({"mig-1g.5gb", "mig-3g.20gb", "mig-2g.10gb"});
  Component("small", "mig-1g.5gb", 1);
  Component("mid", "mig-3g.20gb", 1);
  Pass();
  auto d = Desired();
  ASSERT_EQ(d.workloads.size(), 2u);
  const auto& partitions = d.gpus[0].partitions;
  for (const auto& w : d.workloads) {
    ASSERT_TRUE(w.device.partition_start.has_value()) << w.name;
    const std::string want = w.name == "small" ? "1g.5gb" : "3g.20gb";
    EXPECT_EQ(*w.device.partition_start, w.name == "small" ? 6 : 0) << w.name;
    int carved = 0;
    for (const auto& p : partitions) {
      if (p.start == *w.device.partition_start) {
        ++carved;
        EXPECT_EQ(p.profile, want) << w.name;
      }
    }
    EXPECT_EQ(carved, 1) << w.name;
  }
}

TEST_F(WorkloadPublisherTest, OnlyACopyItsAgentReportsRunningIsInTheRoutes) {
  Endpoint({"mig-4g.20gb", "mig-2g.10gb", "mig-1g.5gb"});
  Component("ic", "mig-4g.20gb", 2);
  Pass();
  auto d = Desired();
  ASSERT_EQ(d.workloads.size(), 2u);
  EXPECT_TRUE(routes_.Resolve(kAccount, "ep", "ic")->copies.empty());
  protocol::StatusReport report;
  report.node_id = "p4d-0";
  report.epoch = registry_.epoch();
  protocol::WorkloadStatus up;
  up.id = d.workloads[0].id;
  up.state = protocol::WorkloadState::kRunning;
  up.address = "127.0.0.1:40001";
  protocol::WorkloadStatus starting;
  starting.id = d.workloads[1].id;
  starting.state = protocol::WorkloadState::kStarting;
  starting.address = "127.0.0.1:40002";
  report.workloads = {up, starting};
  registry_.ReportStatus(report);
  Pass();
  auto r = routes_.Resolve(kAccount, "ep", "ic");
  ASSERT_TRUE(r.has_value()) << r.error().message;
  ASSERT_EQ(r->copies.size(), 1u);
  EXPECT_EQ(r->copies[0].address, "127.0.0.1:40001");
}

TEST_F(WorkloadPublisherTest, ACopyWhoseModelIsGoneIsNotStarted) {
  Endpoint({"mig-4g.20gb", "mig-2g.10gb", "mig-1g.5gb"});
  Component("ic", "mig-4g.20gb", 1);
  ASSERT_TRUE(store_.Delete({kAccount, std::string(kModel), "m"}).ok());
  Pass();
  EXPECT_TRUE(Desired().workloads.empty());
}

// The OpenAI route's selector: an endpoint's only component serves a request that names none;
// with two, the name is still required, and InvokeEndpoint's resolve never guesses.
TEST(RouteTableTest, AnUnnamedComponentIsTheOnlyOneOnlyWhenAskedAndOnlyWhenThereIsOne) {
  RouteTable routes;
  RouteEndpoint ep;
  ep.status = EndpointStatus::kInService;
  ep.variant = "AllTraffic";
  ep.components["ic"] = {{"c1", "127.0.0.1:1"}};
  routes.Set({"111111111111", "ep"}, ep);
  auto sole = routes.Resolve("111111111111", "ep", "", /*sole_if_unnamed=*/true);
  ASSERT_TRUE(sole.has_value()) << sole.error().message;
  EXPECT_EQ(sole->component, "ic");
  ASSERT_EQ(sole->copies.size(), 1u);
  EXPECT_EQ(sole->copies[0].address, "127.0.0.1:1");
  EXPECT_EQ(routes.Resolve("111111111111", "ep", "", false).error().code,
            ErrorCode::kInvalidArgument);
  ep.components["ic2"] = {};
  routes.Set({"111111111111", "ep"}, ep);
  auto two = routes.Resolve("111111111111", "ep", "", true);
  ASSERT_FALSE(two.has_value());
  EXPECT_THAT(two.error().message, ::testing::HasSubstr("has 2 inference components"));
}

}  // namespace
}  // namespace carve::server::sagemaker
