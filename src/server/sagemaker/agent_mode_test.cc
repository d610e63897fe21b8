// The service in agent mode: nodes come from a NodeRegistry, carving goes through
// AgentNodeDriver, copies become workloads in each node's desired state and count only once
// their agent reports them running, and a NotReady node's copies are rescheduled. The agents are
// played in-process by a pump thread that applies every desired state at once.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <atomic>
#include <set>
#include <thread>

#include "common/fake_clock.h"
#include "server/nodes/agent_node_driver.h"
#include "server/nodes/node_registry.h"
#include "server/sagemaker/fake_agents_test_util.h"
#include "server/sagemaker/resources.h"
#include "server/sagemaker/service.h"
#include "store/fake_store.h"

namespace carve::server::sagemaker {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

constexpr char kAccount[] = "111111111111";

class AgentModeTest : public ::testing::Test {
 protected:
  AgentModeTest() : store_(clock_), registry_(store_, RegistryOptions()), driver_(registry_, 5s) {
    for (const char* id : {"node-a", "node-b"}) {
      protocol::Registration r;
      r.node_id = id;
      r.instance_type = "ml.p4d.24xlarge";
      r.driver = "sim";
      EXPECT_TRUE(registry_.Register(r).has_value());
      healthy_.insert(id);
    }
    ServiceOptions options;
    options.clock = &clock_;
    options.registry = &registry_;
    service_ = std::make_unique<SageMakerService>(store_, claims_, driver_, options);
    EXPECT_TRUE(service_->Recover().ok());
    pump_ = std::thread([this] {
      while (!stop_) {
        Pump();
        std::this_thread::sleep_for(2ms);
      }
    });
  }
  ~AgentModeTest() override {
    stop_ = true;
    pump_.join();
  }
  nodes::NodeRegistryOptions RegistryOptions() {
    nodes::NodeRegistryOptions o;
    o.clock = &clock_;
    o.node_timeout = 10s;
    return o;
  }

  // Every healthy node's agent applies its desired state and reports it. mu_ is held across the
  // check and the report, so once a test takes a node out of healthy_ no report of it is still
  // on its way (one landing after the test advanced the clock would keep the node Ready).
  void Pump() {
    std::lock_guard lock(mu_);
    for (const auto& view : registry_.Nodes()) {
      const std::string& id = view.registration.node_id;
      if (!healthy_.contains(id)) continue;
      // A misreporting agent says "applied" with every partition at start 0.
      const bool misreports = id == "node-b" && node_b_misreports_;
      ReportApplied(
          registry_, id,
          [this](const protocol::WorkloadDesired&, protocol::WorkloadStatus& ws) {
            ws.state =
                serving_ ? protocol::WorkloadState::kRunning : protocol::WorkloadState::kStarting;
            if (crashing_) {  // Exits at once, every time: the agent backs off between restarts.
              ws.state = protocol::WorkloadState::kBackoff;
              ws.restarts = crash_restarts_;
              ws.message = "exited with status 3, restarting in 4000 ms";
              ws.ever_healthy = served_before_;
              ws.log_tail = "ImportError: No module named 'vllm'";
            }
          },
          misreports);
    }
  }

  json Ok(const std::string& op, const json& body) {
    http::ApiResponse r = service_->Handle({op, body.dump(), kAccount, "req"});
    EXPECT_EQ(r.http_status, 200) << op << ": " << r.body;
    return json::parse(r.body);
  }
  // Passes with the agents' reports in between: the background pump answers carves while a
  // pass waits for them, and a pump here reports what the pass published before the next one.
  void Settle() {
    for (int i = 0; i < 4; ++i) {
      service_->ReconcileOnce();
      service_->WaitForCarves();
      Pump();
    }
  }
  // `startup`: the Specification's StartupParameters; `variant_timeout_s` (> 0): the variant's
  // ContainerStartupHealthCheckTimeoutInSeconds.
  void Deploy(const std::string& image, int copies, json startup = nullptr,
              int variant_timeout_s = 0) {
    Ok("CreateModel", {{"ModelName", "m"},
                       {"PrimaryContainer",
                        {{"Image", image},
                         {"ModelDataUrl", "s3://bucket/model.tar.gz"},
                         {"Environment", {{"CARVE_MODEL", "llama-3.1-8b"}}}}}});
    json variant = {{"VariantName", "AllTraffic"},
                    {"InstanceType", "ml.p4d.24xlarge"},
                    {"InitialInstanceCount", 2},
                    // 4g beside 3g needs R510; the default p4d image ships 470.
                    {"InferenceAmiVersion", "al2-ami-sagemaker-inference-gpu-2"},
                    {"AcceleratorPartitionLayouts",
                     {{{"AcceleratorPartitionTypes", {"mig-4g.20gb", "mig-3g.20gb"}}}}}};
    if (variant_timeout_s > 0) {
      variant["ContainerStartupHealthCheckTimeoutInSeconds"] = variant_timeout_s;
    }
    if (!routing_config_.is_null()) variant["RoutingConfig"] = routing_config_;
    Ok("CreateEndpointConfig", {{"EndpointConfigName", "ep"}, {"ProductionVariants", {variant}}});
    Ok("CreateEndpoint", {{"EndpointName", "ep"}, {"EndpointConfigName", "ep"}});
    Settle();
    json spec = {{"ModelName", "m"},
                 {"ComputeResourceRequirements",
                  {{"AcceleratorPartitionType", "mig-3g.20gb"},
                   {"NumberOfAcceleratorDevicesRequired", 1},
                   {"NumberOfCpuCoresRequired", 1},
                   {"MinMemoryRequiredInMb", 1024}}}};
    if (!startup.is_null()) spec["StartupParameters"] = startup;
    Ok("CreateInferenceComponent", {{"InferenceComponentName", "ic"},
                                    {"EndpointName", "ep"},
                                    {"VariantName", "AllTraffic"},
                                    {"Specification", spec},
                                    {"RuntimeConfig", {{"CopyCount", copies}}}});
    Settle();
  }
  json Describe() { return Ok("DescribeInferenceComponent", {{"InferenceComponentName", "ic"}}); }
  // `seconds` pass, one at a time; the agents keep reporting, so the nodes stay Ready.
  void Wait(int seconds) {
    for (int i = 0; i < seconds; ++i) {
      clock_.Advance(1s);
      Pump();
    }
    Settle();
  }
  // A copy that never answers /ping is still Creating `timeout_s` seconds after it was placed,
  // and Failed a second later, naming that timeout.
  void ExpectStartupTimeout(int timeout_s) {
    Wait(timeout_s);
    ASSERT_EQ(Describe()["InferenceComponentStatus"], "Creating") << "failed before " << timeout_s;
    Wait(1);
    json d = Describe();
    ASSERT_EQ(d["InferenceComponentStatus"], "Failed") << d.dump();
    EXPECT_NE(std::string(d["FailureReason"])
                  .find(fmt::format("within the {} s startup health-check timeout", timeout_s)),
              std::string::npos)
        << d.dump();
  }
  std::vector<protocol::WorkloadDesired> Workloads(const std::string& node) {
    return registry_.WaitDesired(node, registry_.epoch(), 0, 0ms)->workloads;
  }

  FakeClock clock_;
  store::FakeStore store_;
  nodes::NodeRegistry registry_;
  nodes::AgentNodeDriver driver_;
  nodes::NodeClaims claims_;  // Filled from the registry by the service's passes.
  std::unique_ptr<SageMakerService> service_;
  std::mutex mu_;
  std::set<std::string> healthy_;  // Guarded by mu_, which Pump holds throughout.
  std::atomic<bool> serving_{true};
  json routing_config_;  // The variant's RoutingConfig, when set.
  std::atomic<bool> crashing_{false};
  std::atomic<int> crash_restarts_{2};  // restarts a crashing copy reports: 2 is its third exit
  std::atomic<bool> served_before_{false};
  std::atomic<bool> node_b_misreports_{false};
  std::atomic<bool> stop_{false};
  std::thread pump_;
};

TEST_F(AgentModeTest, ANewComponentWhoseCopiesCrashFailsNamingTheCopyItsNodeAndItsLog) {
  crashing_ = true;
  Deploy("carve/testmodel", 2);
  json d = Describe();
  EXPECT_EQ(d["InferenceComponentStatus"], "Failed") << d.dump();
  const std::string reason = d["FailureReason"];
  EXPECT_NE(reason.find("copy 0 on node-"), std::string::npos) << reason;
  EXPECT_NE(reason.find("could not start (backoff: exited with status 3, restarting in 4000 ms)"),
            std::string::npos)
      << reason;
  EXPECT_NE(reason.find("Last lines of its log: ImportError: No module named 'vllm'"),
            std::string::npos)
      << reason;
  // A failed component runs nothing: its copies are released and no agent keeps restarting them.
  Settle();
  EXPECT_TRUE(Workloads("node-a").empty());
  EXPECT_TRUE(Workloads("node-b").empty());
  EXPECT_EQ(Describe()["InferenceComponentStatus"], "Failed");
}

// docs/endpoint-lifecycle.md: a copy fails the component when it "exits 3 times without passing a
// health check": after its second exit (1 restart) it is still given its chance.
TEST_F(AgentModeTest, ACopyFailsItsComponentOnItsThirdExitNotItsSecond) {
  crashing_ = true;
  crash_restarts_ = 1;
  Deploy("carve/testmodel", 1);
  json d = Describe();
  EXPECT_EQ(d["InferenceComponentStatus"], "Creating") << d.dump();
  EXPECT_FALSE(d.contains("FailureReason")) << d.dump();
  crash_restarts_ = 2;
  Wait(1);
  d = Describe();
  EXPECT_EQ(d["InferenceComponentStatus"], "Failed") << d.dump();
}

TEST_F(AgentModeTest, ACopyThatServedBeforeKeepsRestartingWithBackoff) {
  crashing_ = true;
  served_before_ = true;
  Deploy("carve/testmodel", 2);
  json d = Describe();
  EXPECT_EQ(d["InferenceComponentStatus"], "Creating") << d.dump();
  EXPECT_FALSE(d.contains("FailureReason")) << d.dump();
  EXPECT_EQ(Workloads("node-a").size(), 1u);
}

TEST_F(AgentModeTest, ACopyThatNeverAnswersPingFailsAtTheStartupTimeout) {
  serving_ = false;  // Its process runs, but /ping never answers 200.
  Deploy("carve/testmodel", 1, {{"ContainerStartupHealthCheckTimeoutInSeconds", 60}});
  EXPECT_EQ(Describe()["InferenceComponentStatus"], "Creating");
  Wait(60);
  EXPECT_EQ(Describe()["InferenceComponentStatus"], "Creating");  // Not before the timeout.
  Wait(1);
  json d = Describe();
  EXPECT_EQ(d["InferenceComponentStatus"], "Failed") << d.dump();
  EXPECT_NE(
      std::string(d["FailureReason"])
          .find("did not pass its health check (GET /ping) within the 60 s startup health-check "
                "timeout; it is starting"),
      std::string::npos)
      << d.dump();
}

// docs/endpoint-lifecycle.md: the Specification's startup timeout, else the variant's, else 600 s.
TEST_F(AgentModeTest, TheStartupTimeoutIsTheSpecificationsThenTheVariantsThen600Seconds) {
  serving_ = false;
  Deploy("carve/testmodel", 1, {{"ContainerStartupHealthCheckTimeoutInSeconds", 60}}, 90);
  ExpectStartupTimeout(60);
}

TEST_F(AgentModeTest, TheVariantsStartupTimeoutHoldsWhereTheSpecificationNamesNone) {
  serving_ = false;
  Deploy("carve/testmodel", 1, nullptr, 90);
  ExpectStartupTimeout(90);
}

TEST_F(AgentModeTest, WithNoStartupTimeoutNamedACopyHas600Seconds) {
  serving_ = false;
  Deploy("carve/testmodel", 1);
  ExpectStartupTimeout(600);
}

TEST_F(AgentModeTest, CopiesRunAsWorkloadsBoundToTheirPartition) {
  Deploy("carve/testmodel", 2);
  json d = Describe();
  EXPECT_EQ(d["InferenceComponentStatus"], "InService") << d.dump();
  EXPECT_EQ(d["RuntimeConfig"]["CurrentCopyCount"], 2);
  // SPREAD: one copy per node, each a testmodel process on a 3g.20gb partition.
  for (const char* node : {"node-a", "node-b"}) {
    auto w = Workloads(node);
    ASSERT_EQ(w.size(), 1u) << node;
    EXPECT_EQ(w[0].kind, protocol::WorkloadKind::kCopy);
    EXPECT_EQ(w[0].command[0], "{carve}");
    EXPECT_EQ(w[0].command[1], "testmodel");
    EXPECT_EQ(w[0].values.at("model_data"), "s3://bucket/model.tar.gz");
    EXPECT_EQ(w[0].environment.at("CARVE_MODEL"), "llama-3.1-8b");
    EXPECT_EQ(w[0].environment.at("CARVE_TARGET"), "a100-40gb:mig-3g.20gb");
    ASSERT_EQ(w[0].device.gpus.size(), 1u);
    EXPECT_EQ(w[0].device.partition_start, 4);  // The 3g.20gb, after the 4g.20gb at slice 0.
    EXPECT_TRUE(w[0].health_check);
  }
  // Every GPU of both nodes is carved with the layout.
  auto d_a = registry_.WaitDesired("node-a", registry_.epoch(), 0, 0ms);
  ASSERT_EQ(d_a->gpus.size(), 8u);
  EXPECT_EQ(d_a->gpus[7].partitions[1], (protocol::PartitionSpec{"3g.20gb", 4}));
}

// A carve returns only when the agent reports that exact layout: an agent that says "applied"
// with other starts fails the endpoint, and the reason names both layouts.
TEST_F(AgentModeTest, AnAgentReportingAnotherLayoutFailsTheEndpointNamingBoth) {
  node_b_misreports_ = true;
  Ok("CreateEndpointConfig",
     {{"EndpointConfigName", "ep"},
      {"ProductionVariants",
       {{{"VariantName", "AllTraffic"},
         {"InstanceType", "ml.p4d.24xlarge"},
         {"InitialInstanceCount", 2},
         {"InferenceAmiVersion", "al2-ami-sagemaker-inference-gpu-2"},
         {"AcceleratorPartitionLayouts",
          {{{"AcceleratorPartitionTypes", {"mig-4g.20gb", "mig-3g.20gb"}}}}}}}}});
  Ok("CreateEndpoint", {{"EndpointName", "ep"}, {"EndpointConfigName", "ep"}});
  Settle();
  json ep = Ok("DescribeEndpoint", {{"EndpointName", "ep"}});
  EXPECT_EQ(ep["EndpointStatus"], "Failed") << ep.dump();
  const std::string reason = ep.value("FailureReason", "");
  EXPECT_NE(reason.find("of node-b"), std::string::npos) << reason;
  EXPECT_NE(reason.find("applied as [4g.20gb@0, 3g.20gb@0]"), std::string::npos) << reason;
  EXPECT_NE(reason.find("desired layout is [4g.20gb@0, 3g.20gb@4]"), std::string::npos) << reason;
}

TEST_F(AgentModeTest, TheVariantsRoutingStrategyReachesItsRoute) {
  routing_config_ = {{"RoutingStrategy", "RANDOM"}};
  Deploy("carve/testmodel", 1);
  auto route = service_->routes().Resolve(kAccount, "ep", "ic");
  ASSERT_TRUE(route.has_value()) << route.error().message;
  EXPECT_EQ(route->strategy, RoutingStrategy::kRandom);
  // A strategy SageMaker does not have is refused, naming the member and the accepted ones.
  json variant = {{"VariantName", "AllTraffic"},
                  {"InstanceType", "ml.p4d.24xlarge"},
                  {"InitialInstanceCount", 1},
                  {"RoutingConfig", {{"RoutingStrategy", "ROUND_ROBIN"}}}};
  http::ApiResponse r = service_->Handle(
      {"CreateEndpointConfig",
       json{{"EndpointConfigName", "rr"}, {"ProductionVariants", {variant}}}.dump(), kAccount,
       "req"});
  EXPECT_EQ(r.http_status, 400);
  EXPECT_NE(r.body.find("ROUND_ROBIN"), std::string::npos) << r.body;
  EXPECT_NE(r.body.find("LEAST_OUTSTANDING_REQUESTS, RANDOM"), std::string::npos) << r.body;
}

TEST_F(AgentModeTest, ACopyCountsOnlyOnceItsProcessServes) {
  serving_ = false;
  Deploy("carve/testmodel", 2);
  json d = Describe();
  EXPECT_EQ(d["InferenceComponentStatus"], "Creating");
  EXPECT_EQ(d["RuntimeConfig"]["CurrentCopyCount"], 0);
  EXPECT_NE(d["StatusMessage"].get<std::string>().find("not serving yet"), std::string::npos)
      << d.dump();
  auto r = service_->routes().Resolve(kAccount, "ep", "ic");
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_TRUE(r->copies.empty());  // None in rotation: the router answers ModelNotReady.
  serving_ = true;
  Settle();
  EXPECT_EQ(Describe()["RuntimeConfig"]["CurrentCopyCount"], 2);
  auto route = service_->routes().Resolve(kAccount, "ep", "ic");
  ASSERT_TRUE(route.has_value()) << route.error().message;
  EXPECT_EQ(route->copies.size(), 2u);
  EXPECT_EQ(route->variant, "AllTraffic");
  EXPECT_EQ(route->strategy, RoutingStrategy::kLeastOutstandingRequests);
  auto missing = service_->routes().Resolve(kAccount, "ep", "");
  ASSERT_FALSE(missing.has_value());
  EXPECT_EQ(missing.error().code, ErrorCode::kInvalidArgument);
  // The OpenAI route's selector: no name means the endpoint's only component.
  auto sole = service_->routes().Resolve(kAccount, "ep", "", /*sole_if_unnamed=*/true);
  ASSERT_TRUE(sole.has_value()) << sole.error().message;
  EXPECT_EQ(sole->component, "ic");
  EXPECT_EQ(sole->copies.size(), 2u);
  auto unknown = service_->routes().Resolve(kAccount, "ep", "nope");
  EXPECT_EQ(unknown.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(service_->routes().Resolve("222222222222", "ep", "ic").error().code,
            ErrorCode::kNotFound);
}

TEST_F(AgentModeTest, AnImageNoRuntimeNamesIsRunAsAnOciImage) {
  Deploy("123456789012.dkr.ecr.us-east-1.amazonaws.com/llm:1", 1);
  std::vector<protocol::WorkloadDesired> all = Workloads("node-a");
  auto more = Workloads("node-b");
  all.insert(all.end(), more.begin(), more.end());
  ASSERT_EQ(all.size(), 1u);
  EXPECT_TRUE(all[0].command.empty());
  EXPECT_EQ(all[0].image, "123456789012.dkr.ecr.us-east-1.amazonaws.com/llm:1");
}

TEST_F(AgentModeTest, ANotReadyNodesCopiesMoveToTheOtherInstance) {
  Deploy("carve/testmodel", 2);
  ASSERT_EQ(Workloads("node-b").size(), 1u);
  const std::string moved_id = Workloads("node-b")[0].id;
  {
    std::lock_guard lock(mu_);
    healthy_.erase("node-b");  // Its agent goes silent.
  }
  clock_.Advance(5s);
  Settle();
  EXPECT_EQ(Describe()["RuntimeConfig"]["CurrentCopyCount"], 2);  // Not yet timed out.
  clock_.Advance(6s);
  Settle();
  json d = Describe();
  EXPECT_EQ(d["InferenceComponentStatus"], "InService") << d.dump();
  EXPECT_EQ(d["RuntimeConfig"]["CurrentCopyCount"], 2);
  auto on_a = Workloads("node-a");
  ASSERT_EQ(on_a.size(), 2u);  // Rescheduled onto node-a's free 3g.20gb partitions.
  for (const auto& w : on_a) EXPECT_NE(w.id, moved_id);  // A new placement, a new id.
  EXPECT_TRUE(Workloads("node-b").empty());  // The returning agent stops its stale copy.
  json ep = Ok("DescribeEndpoint", {{"EndpointName", "ep"}});
  const json& v = ep["ProductionVariants"][0];
  EXPECT_EQ(v["CurrentInstanceCount"], 1);
  EXPECT_EQ(v["DesiredInstanceCount"], 2);
  EXPECT_NE(v["VariantStatus"][0]["StatusMessage"].get<std::string>().find(
                "1 of 2 instances NotReady: node-b (no status report for"),
            std::string::npos)
      << v.dump();
  // The node comes back: Ready again, full capacity, and nothing runs twice.
  {
    std::lock_guard lock(mu_);
    healthy_.insert("node-b");
  }
  Settle();
  EXPECT_EQ(Ok("DescribeEndpoint",
               {{"EndpointName", "ep"}})["ProductionVariants"][0]["CurrentInstanceCount"],
            2);
  EXPECT_TRUE(Workloads("node-b").empty());
  EXPECT_EQ(Workloads("node-a").size(), 2u);
}

// Issue 14: a pass's work follows what changed. A pass over a steady fleet hands no agent a new
// desired state, and one more copy changes the desired state of the one node it lands on.
TEST_F(AgentModeTest, APassRepublishesOnlyTheNodesWhoseWorkloadsChanged) {
  Deploy("carve/testmodel", 2);  // SPREAD: one copy on each node.
  auto version = [&](const char* node) { return registry_.Node(NodeId(node))->desired_version; };
  const uint64_t a = version("node-a"), b = version("node-b");
  for (int i = 0; i < 3; ++i) {
    service_->ReconcileOnce();
    const auto pass = service_->LastPass();
    EXPECT_FALSE(pass.everything);
    EXPECT_EQ(pass.records_read, 0);           // Nothing re-read or re-parsed,
    EXPECT_EQ(pass.components_reconciled, 0);  // no steady component reconciled,
    EXPECT_EQ(pass.published.components, 0);   // nothing rebuilt or handed to an agent.
    EXPECT_EQ(pass.published.nodes, 0);
    EXPECT_EQ(pass.published.layouts, 0);
  }
  EXPECT_EQ(version("node-a"), a);
  EXPECT_EQ(version("node-b"), b);

  Ok("UpdateInferenceComponentRuntimeConfig",
     {{"InferenceComponentName", "ic"}, {"DesiredRuntimeConfig", {{"CopyCount", 3}}}});
  service_->ReconcileOnce();
  const auto pass = service_->LastPass();
  EXPECT_FALSE(pass.everything);
  EXPECT_EQ(pass.records_read, 1);  // The component's record, once.
  EXPECT_EQ(pass.components_reconciled, 1);
  EXPECT_EQ(pass.published.components, 1);
  EXPECT_EQ(pass.published.nodes, 1);  // The node the third copy went to.
  EXPECT_EQ(pass.published.layouts, 0);
  Settle();
  json d = Describe();
  EXPECT_EQ(d["InferenceComponentStatus"], "InService") << d.dump();
  EXPECT_EQ(d["RuntimeConfig"]["CurrentCopyCount"], 3);
  const bool a_moved = version("node-a") != a, b_moved = version("node-b") != b;
  EXPECT_NE(a_moved, b_moved) << "exactly one node takes the third copy";
  EXPECT_EQ(Workloads("node-a").size() + Workloads("node-b").size(), 3u);
}

// A component left alone while steady still hears its copies' reports: one that stops serving
// leaves the rotation and the count, and comes back once it serves again.
TEST_F(AgentModeTest, ASteadyComponentSeesACopyThatStopsServing) {
  Deploy("carve/testmodel", 2);
  ASSERT_EQ(Describe()["InferenceComponentStatus"], "InService");
  for (int i = 0; i < 3; ++i) service_->ReconcileOnce();
  serving_ = false;
  Settle();
  json d = Describe();
  EXPECT_EQ(d["RuntimeConfig"]["CurrentCopyCount"], 0) << d.dump();
  EXPECT_EQ(d["InferenceComponentStatus"], "Updating") << d.dump();
  EXPECT_TRUE(service_->routes().Resolve(kAccount, "ep", "ic")->copies.empty());
  serving_ = true;
  Settle();
  EXPECT_EQ(Describe()["RuntimeConfig"]["CurrentCopyCount"], 2);
  EXPECT_EQ(service_->routes().Resolve(kAccount, "ep", "ic")->copies.size(), 2u);
}

// Scale-in with the copy count unchanged: the leaving instance still holds a copy, which must
// move to the staying one before the instance is released (a draining node is not Ready for
// placement, or its copy would stay and the endpoint would stay Updating).
TEST_F(AgentModeTest, ScalingInMovesTheLeavingInstancesCopiesThenReleasesIt) {
  Deploy("carve/testmodel", 2);
  ASSERT_EQ(Workloads("node-a").size(), 1u);
  ASSERT_EQ(Workloads("node-b").size(), 1u);  // Spread: one copy on each instance.
  Ok("UpdateEndpointWeightsAndCapacities",
     {{"EndpointName", "ep"},
      {"DesiredWeightsAndCapacities",
       {{{"VariantName", "AllTraffic"}, {"DesiredInstanceCount", 1}}}}});
  Settle();
  Settle();
  json ep = Ok("DescribeEndpoint", {{"EndpointName", "ep"}});
  EXPECT_EQ(ep["EndpointStatus"], "InService") << ep.dump();
  const json& v = ep["ProductionVariants"][0];
  EXPECT_EQ(v["CurrentInstanceCount"], 1) << v.dump();
  EXPECT_EQ(v["DesiredInstanceCount"], 1) << v.dump();
  // Of equal loads the last-named instance leaves; both copies now run on the other.
  EXPECT_EQ(Workloads("node-a").size(), 2u);
  EXPECT_TRUE(Workloads("node-b").empty());
  json d = Describe();
  EXPECT_EQ(d["InferenceComponentStatus"], "InService") << d.dump();
  EXPECT_EQ(d["RuntimeConfig"]["CurrentCopyCount"], 2);
  EXPECT_EQ(service_->routes().Resolve(kAccount, "ep", "ic")->copies.size(), 2u);
}

// Records are kept parsed between passes and re-read through the Store's change feed, so a
// write that did not come through this service's handlers (another replica's, issue 15) is
// still acted on at the next pass.
TEST_F(AgentModeTest, AComponentWrittenBehindTheServicesBackIsReconciled) {
  Deploy("carve/testmodel", 1);
  auto rec = store_.Get({kAccount, std::string(kInferenceComponent), "ic"}).value();
  json body = json::parse(rec.body);
  ASSERT_TRUE(body.contains("DesiredCopyCount")) << body.dump();
  body["DesiredCopyCount"] = 2;
  ASSERT_TRUE(store_.Update(rec.key, body.dump(), rec.version).has_value());
  Settle();
  EXPECT_EQ(Describe()["RuntimeConfig"]["CurrentCopyCount"], 2);
  EXPECT_EQ(Workloads("node-a").size() + Workloads("node-b").size(), 2u);
}

}  // namespace
}  // namespace carve::server::sagemaker
