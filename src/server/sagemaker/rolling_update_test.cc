// UpdateInferenceComponent's rolling deployments through the whole service in agent mode, on a
// fake clock: copies run as workloads whose health the in-process agents decide from the
// environment the copy's specification gives it (FAKE_AGENT_HEALTH=crash: exits at once every
// time; slow: never answers /ping), so the test sees every batch a deployment places and stops.
#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <set>
#include <thread>

#include "common/fake_clock.h"
#include "server/nodes/agent_node_driver.h"
#include "server/nodes/node_registry.h"
#include "server/sagemaker/fake_agents_test_util.h"
#include "server/sagemaker/service.h"
#include "store/fake_store.h"

namespace carve::server::sagemaker {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

constexpr char kAccount[] = "111111111111";

class RollingUpdateTest : public ::testing::Test {
 protected:
  RollingUpdateTest()
      : store_(clock_), registry_(store_, RegistryOptions()), driver_(registry_, 5s) {
    for (const char* id : {"node-a", "node-b"}) {
      protocol::Registration r;
      r.node_id = id;
      r.instance_type = "ml.p4d.24xlarge";
      r.driver = "sim";
      EXPECT_TRUE(registry_.Register(r).has_value());
    }
    StartService();
    pump_ = std::thread([this] {
      while (!stop_) {
        Pump();
        std::this_thread::sleep_for(2ms);
      }
    });
  }
  ~RollingUpdateTest() override {
    stop_ = true;
    pump_.join();
  }
  nodes::NodeRegistryOptions RegistryOptions() {
    nodes::NodeRegistryOptions o;
    o.clock = &clock_;
    o.node_timeout = 1h;  // The test moves the clock by minutes; nodes stay Ready.
    return o;
  }
  void StartService() {
    std::lock_guard lock(service_mu_);
    service_.reset();
    ServiceOptions options;
    options.clock = &clock_;
    options.registry = &registry_;
    service_ = std::make_unique<SageMakerService>(store_, claims_, driver_, options);
    ASSERT_TRUE(service_->Recover().ok());
  }

  // Every agent applies its desired state and reports it.
  void Pump() {
    for (const auto& view : registry_.Nodes()) {
      const std::string& id = view.registration.node_id;
      ReportApplied(registry_, id,
                    [](const protocol::WorkloadDesired& w, protocol::WorkloadStatus& ws) {
                      auto health = w.environment.find("FAKE_AGENT_HEALTH");
                      const std::string how = health == w.environment.end() ? "" : health->second;
                      if (how == "slow") ws.state = protocol::WorkloadState::kStarting;
                      if (how == "crash") {
                        ws.state = protocol::WorkloadState::kBackoff;
                        ws.restarts = 2;
                        ws.message = "exited with status 1, restarting in 4000 ms";
                        ws.log_tail = "RuntimeError: CUDA error: no kernel image is available";
                      }
                    });
    }
  }

  json Call(const std::string& op, const json& body, int want = 200) {
    http::ApiResponse r = service_->Handle({op, body.dump(), kAccount, "req"});
    EXPECT_EQ(r.http_status, want) << op << ": " << r.body;
    return json::parse(r.body);
  }
  void Pass() {
    service_->ReconcileOnce();
    service_->WaitForCarves();
    Pump();
  }
  void Settle() {
    for (int i = 0; i < 4; ++i) Pass();
  }

  static json Spec(const std::string& version, const std::string& health = "",
                   const std::string& partition = "mig-3g.20gb") {
    json env = {{"VERSION", version}};
    if (!health.empty()) env["FAKE_AGENT_HEALTH"] = health;
    return {{"ModelName", "m"},
            {"Container", {{"Image", "carve/testmodel"}, {"Environment", env}}},
            {"StartupParameters", {{"ContainerStartupHealthCheckTimeoutInSeconds", 3600}}},
            {"ComputeResourceRequirements",
             {{"AcceleratorPartitionType", partition},
              {"NumberOfAcceleratorDevicesRequired", 1},
              {"NumberOfCpuCoresRequired", 1},
              {"MinMemoryRequiredInMb", 1024}}}};
  }
  // Two p4d instances, each GPU carved [4g, 3g]: 16 mig-3g.20gb partitions in all.
  void Deploy(int copies) {
    Call("CreateModel", {{"ModelName", "m"}, {"PrimaryContainer", {{"Image", "carve/testmodel"}}}});
    json variant = {{"VariantName", "AllTraffic"},
                    {"InstanceType", "ml.p4d.24xlarge"},
                    {"InitialInstanceCount", 2},
                    {"InferenceAmiVersion", "al2-ami-sagemaker-inference-gpu-2"},
                    {"AcceleratorPartitionLayouts",
                     {{{"AcceleratorPartitionTypes", {"mig-4g.20gb", "mig-3g.20gb"}}}}}};
    Call("CreateEndpointConfig", {{"EndpointConfigName", "ep"}, {"ProductionVariants", {variant}}});
    Call("CreateEndpoint", {{"EndpointName", "ep"}, {"EndpointConfigName", "ep"}});
    Settle();
    Call("CreateInferenceComponent", {{"InferenceComponentName", "ic"},
                                      {"EndpointName", "ep"},
                                      {"VariantName", "AllTraffic"},
                                      {"Specification", Spec("1")},
                                      {"RuntimeConfig", {{"CopyCount", copies}}}});
    Settle();
    ASSERT_EQ(Describe()["InferenceComponentStatus"], "InService") << Describe().dump();
  }
  void Update(const json& spec, const json& deployment = nullptr, int want = 200) {
    json body = {{"InferenceComponentName", "ic"}, {"Specification", spec}};
    if (!deployment.is_null()) body["DeploymentConfig"] = deployment;
    Call("UpdateInferenceComponent", body, want);
  }
  static json Policy(int batch, int wait_s) {
    return {{"RollingUpdatePolicy",
             {{"MaximumBatchSize", {{"Type", "COPY_COUNT"}, {"Value", batch}}},
              {"WaitIntervalInSeconds", wait_s}}}};
  }
  json Describe() { return Call("DescribeInferenceComponent", {{"InferenceComponentName", "ic"}}); }
  json Copies() {
    auto c = service_->ComponentCopiesJson(kAccount, "ic");
    EXPECT_TRUE(c.has_value());
    return c.has_value() ? *c : json::object();
  }
  // (copies of version `v`, of any other version, and copies serving) as the view shows them.
  struct Count {
    int of_version = 0;
    int others = 0;
    int serving = 0;
  };
  Count CountCopies(int64_t v) {
    Count n;
    const json view = Copies();
    for (const auto& c : view["copies"]) {
      (c["specification_version"] == v ? n.of_version : n.others)++;
      if (c["state"] == protocol::WorkloadState::kRunning) ++n.serving;
    }
    return n;
  }
  // The VERSION each placed copy's workload runs with, from the agents' desired states.
  std::multiset<std::string> RunningVersions() {
    std::multiset<std::string> out;
    for (const char* node : {"node-a", "node-b"}) {
      // Held in a local: a range-for over `WaitDesired(...)->workloads` would outlive the Result.
      const auto desired = registry_.WaitDesired(node, registry_.epoch(), 0, 0ms);
      for (const auto& w : desired->workloads) out.insert(w.environment.at("VERSION"));
    }
    return out;
  }

  FakeClock clock_;
  store::FakeStore store_;
  nodes::NodeRegistry registry_;
  nodes::AgentNodeDriver driver_;
  nodes::NodeClaims claims_;
  std::mutex service_mu_;
  std::unique_ptr<SageMakerService> service_;
  std::atomic<bool> stop_{false};
  std::thread pump_;
};

TEST_F(RollingUpdateTest, EveryCopyIsReplacedOneBatchAtATimeAfterTheWaitInterval) {
  Deploy(4);
  Update(Spec("2"), Policy(1, 60));
  json d = Describe();
  EXPECT_EQ(d["InferenceComponentStatus"], "Updating");
  EXPECT_EQ(d["LastDeploymentConfig"], Policy(1, 60));
  std::vector<int> new_per_pass;
  for (int batch = 0; batch < 10 && Describe()["InferenceComponentStatus"] != "InService";
       ++batch) {
    Pass();  // Places the next batch, which serves once its agent reports.
    Count n = CountCopies(2);
    // Never more than one batch beside the count, never fewer than the count serving.
    EXPECT_LE(n.of_version + n.others, 5) << Copies().dump();
    EXPECT_GE(n.serving, 4) << Copies().dump();
    if (n.of_version > 0 && (new_per_pass.empty() || new_per_pass.back() != n.of_version)) {
      new_per_pass.push_back(n.of_version);
    }
    Pass();  // The batch serves: as many old copies stop, and the wait interval starts ...
    Pass();  // ... within which nothing more is placed.
    n = CountCopies(2);
    EXPECT_EQ(n.of_version + n.others, 4) << Copies().dump();
    EXPECT_EQ(n.serving, 4) << Copies().dump();
    EXPECT_EQ(n.of_version, new_per_pass.empty() ? 0 : new_per_pass.back())
        << Describe()["StatusMessage"];
    clock_.Advance(61s);
  }
  EXPECT_EQ(new_per_pass, (std::vector<int>{1, 2, 3, 4}));
  d = Describe();
  EXPECT_EQ(d["InferenceComponentStatus"], "InService") << d.dump();
  EXPECT_FALSE(d.contains("FailureReason")) << d.dump();
  EXPECT_EQ(d["Specification"]["Container"]["Environment"]["VERSION"], "2");
  // The summary shape: the image as DeployedImage, never the request's Image member.
  EXPECT_EQ(d["Specification"]["Container"]["DeployedImage"],
            json({{"SpecifiedImage", "carve/testmodel"}}));
  EXPECT_FALSE(d["Specification"]["Container"].contains("Image")) << d.dump();
  EXPECT_EQ(d["RuntimeConfig"]["CurrentCopyCount"], 4);
  EXPECT_EQ(RunningVersions(), (std::multiset<std::string>{"2", "2", "2", "2"}));
  const json view = Copies();
  for (const auto& c : view["copies"]) EXPECT_TRUE(c["current"].get<bool>()) << c.dump();
}

TEST_F(RollingUpdateTest, WithoutADeploymentConfigTheNewCopiesStartBesideTheOldAllAtOnce) {
  Deploy(3);
  Update(Spec("2"));
  Pass();
  EXPECT_EQ(RunningVersions(), (std::multiset<std::string>{"1", "1", "1", "2", "2", "2"}));
  Settle();
  EXPECT_EQ(RunningVersions(), (std::multiset<std::string>{"2", "2", "2"}));
  EXPECT_EQ(Describe()["InferenceComponentStatus"], "InService");
  EXPECT_EQ(Describe()["LastDeploymentConfig"]["RollingUpdatePolicy"]["MaximumBatchSize"]["Value"],
            100);
}

TEST_F(RollingUpdateTest, ANewSpecificationWhoseCopiesCrashRollsBackWithTheReason) {
  Deploy(4);
  Update(Spec("2", "crash"), Policy(1, 0));
  for (int i = 0; i < 10 && Describe()["InferenceComponentStatus"] != "InService"; ++i) Pass();
  json d = Describe();
  EXPECT_EQ(d["InferenceComponentStatus"], "InService") << d.dump();
  const std::string reason = d.value("FailureReason", "");
  EXPECT_NE(reason.find("The update was rolled back: copy "), std::string::npos) << reason;
  EXPECT_NE(reason.find("could not start (backoff: exited with status 1"), std::string::npos)
      << reason;
  EXPECT_NE(reason.find("no kernel image is available"), std::string::npos) << reason;
  EXPECT_EQ(d["Specification"]["Container"]["Environment"]["VERSION"], "1");
  EXPECT_EQ(RunningVersions(), (std::multiset<std::string>{"1", "1", "1", "1"}));
  // The rolled-back component takes a fixed specification as a new deployment.
  Update(Spec("3"), Policy(2, 0));
  Settle();
  Settle();
  d = Describe();
  EXPECT_EQ(d["InferenceComponentStatus"], "InService") << d.dump();
  EXPECT_FALSE(d.contains("FailureReason")) << d.dump();
  EXPECT_EQ(RunningVersions(), (std::multiset<std::string>{"3", "3", "3", "3"}));
}

TEST_F(RollingUpdateTest, CopiesThatNeverPassTheHealthCheckRollBackAfterTheStartupTimeout) {
  Deploy(2);
  json spec = Spec("2", "slow");
  spec["StartupParameters"]["ContainerStartupHealthCheckTimeoutInSeconds"] = 120;
  Update(spec, Policy(1, 0));
  Settle();
  EXPECT_EQ(Describe()["InferenceComponentStatus"], "Updating");
  clock_.Advance(121s);
  Settle();
  json d = Describe();
  EXPECT_EQ(d["InferenceComponentStatus"], "InService") << d.dump();
  EXPECT_NE(d.value("FailureReason", "").find("within the 120 s startup health-check timeout"),
            std::string::npos)
      << d.dump();
  EXPECT_EQ(RunningVersions(), (std::multiset<std::string>{"1", "1"}));
}

TEST_F(RollingUpdateTest, TheExecutionTimeoutRollsBack) {
  Deploy(2);
  json policy = Policy(1, 0);
  policy["RollingUpdatePolicy"]["MaximumExecutionTimeoutInSeconds"] = 600;
  Update(Spec("2", "slow"), policy);  // Its startup timeout is 3600 s: the deployment's is first.
  Settle();
  clock_.Advance(601s);
  Settle();
  json d = Describe();
  EXPECT_EQ(d["InferenceComponentStatus"], "InService") << d.dump();
  EXPECT_NE(d.value("FailureReason", "").find("MaximumExecutionTimeoutInSeconds of 600 s"),
            std::string::npos)
      << d.dump();
}

TEST_F(RollingUpdateTest, WithNoFreePartitionOneBatchOfOldCopiesStopsFirst) {
  Deploy(16);  // Every mig-3g.20gb partition of both instances.
  Update(Spec("2"), Policy(2, 0));
  for (int pass = 0; pass < 40 && Describe()["InferenceComponentStatus"] != "InService"; ++pass) {
    Pass();
    const Count n = CountCopies(2);
    EXPECT_LE(n.of_version + n.others, 16);
    EXPECT_GE(n.serving, 14) << "more than one batch down: " << Copies().dump();
  }
  json d = Describe();
  EXPECT_EQ(d["InferenceComponentStatus"], "InService") << d.dump();
  EXPECT_EQ(CountCopies(2).of_version, 16);
}

TEST_F(RollingUpdateTest, ARestartedServerResumesTheDeploymentWhereItsRecordsLeftIt) {
  Deploy(4);
  Update(Spec("2"), Policy(1, 30));
  Pass();
  Pass();  // The first batch serves; one old copy stopped; the wait interval runs.
  ASSERT_EQ(CountCopies(2).of_version, 1) << Copies().dump();
  StartService();  // A new server over the same Store and the same agents.
  Settle();
  EXPECT_EQ(CountCopies(2).of_version, 1) << Copies().dump();
  EXPECT_EQ(CountCopies(2).others, 3) << Copies().dump();
  for (int i = 0; i < 20 && Describe()["InferenceComponentStatus"] != "InService"; ++i) {
    clock_.Advance(31s);
    Settle();
  }
  EXPECT_EQ(Describe()["InferenceComponentStatus"], "InService");
  EXPECT_EQ(RunningVersions(), (std::multiset<std::string>{"2", "2", "2", "2"}));
}

TEST_F(RollingUpdateTest, ScalingDuringADeploymentKeepsItGoing) {
  Deploy(2);
  Update(Spec("2"), Policy(1, 0));
  Pass();
  Call("UpdateInferenceComponentRuntimeConfig",
       {{"InferenceComponentName", "ic"}, {"DesiredRuntimeConfig", {{"CopyCount", 5}}}});
  for (int i = 0; i < 30 && Describe()["InferenceComponentStatus"] != "InService"; ++i) Pass();
  EXPECT_EQ(Describe()["InferenceComponentStatus"], "InService");
  EXPECT_EQ(RunningVersions(), (std::multiset<std::string>{"2", "2", "2", "2", "2"}));
}

// Every bound of RollingUpdatePolicy (docs/api.md), just outside it, is a 400 naming the member
// and the bound; just inside them all, the update is accepted.
TEST_F(RollingUpdateTest, EachBoundOfTheRollingUpdatePolicyIsChecked) {
  Deploy(2);
  auto percent = [](int v) { return json{{"Type", "CAPACITY_PERCENT"}, {"Value", v}}; };
  const std::vector<std::tuple<std::string, json, std::string>> outside = {
      {"MaximumBatchSize", percent(4), "between 5 and 50"},
      {"MaximumBatchSize", percent(51), "between 5 and 50"},
      {"MaximumBatchSize", {{"Type", "COPY_COUNT"}, {"Value", 0}}, "greater than or equal to 1"},
      {"RollbackMaximumBatchSize", percent(101), "between 5 and 100"},
      {"RollbackMaximumBatchSize", percent(4), "between 5 and 100"},
      {"WaitIntervalInSeconds", 3601, "less than or equal to 3600"},
      {"WaitIntervalInSeconds", nullptr, "waitIntervalInSeconds"},
      {"MaximumExecutionTimeoutInSeconds", 599, "greater than or equal to 600"},
      {"MaximumExecutionTimeoutInSeconds", 28801, "less than or equal to 28800"},
  };
  for (const auto& [member, value, rule] : outside) {
    json config = Policy(1, 0);
    if (value.is_null()) {
      config["RollingUpdatePolicy"].erase(member);
    } else {
      config["RollingUpdatePolicy"][member] = value;
    }
    http::ApiResponse r = service_->Handle({"UpdateInferenceComponent",
                                            json{{"InferenceComponentName", "ic"},
                                                 {"Specification", Spec("2")},
                                                 {"DeploymentConfig", config}}
                                                .dump(),
                                            kAccount, "req"});
    EXPECT_EQ(r.http_status, 400) << member << "=" << value.dump();
    std::string lower = member;
    lower[0] = static_cast<char>(std::tolower(lower[0]));
    EXPECT_NE(r.body.find("rollingUpdatePolicy." + lower), std::string::npos) << r.body;
    EXPECT_NE(r.body.find(rule), std::string::npos) << member << ": " << r.body;
  }
  json inside = Policy(1, 3600);
  inside["RollingUpdatePolicy"]["MaximumBatchSize"] = percent(50);
  inside["RollingUpdatePolicy"]["RollbackMaximumBatchSize"] = percent(100);
  inside["RollingUpdatePolicy"]["MaximumExecutionTimeoutInSeconds"] = 28800;
  Call("UpdateInferenceComponent",
       {{"InferenceComponentName", "ic"},
        {"Specification", Spec("2")},
        {"DeploymentConfig", inside}},
       200);
}

TEST_F(RollingUpdateTest, TheServiceRefusesWhatItCannotDo) {
  Deploy(2);
  json percent = Policy(1, 0);
  percent["RollingUpdatePolicy"]["MaximumBatchSize"] = {{"Type", "CAPACITY_PERCENT"},
                                                        {"Value", 60}};
  http::ApiResponse r = service_->Handle({"UpdateInferenceComponent",
                                          json{{"InferenceComponentName", "ic"},
                                               {"Specification", Spec("2")},
                                               {"DeploymentConfig", percent}}
                                              .dump(),
                                          kAccount, "req"});
  EXPECT_EQ(r.http_status, 400);
  EXPECT_NE(r.body.find("deploymentConfig.rollingUpdatePolicy.maximumBatchSize.value"),
            std::string::npos)
      << r.body;
  EXPECT_NE(r.body.find("between 5 and 50"), std::string::npos) << r.body;
  json alarms = Policy(1, 0);
  alarms["AutoRollbackConfiguration"] = {{"Alarms", {{{"AlarmName", "a"}}}}};
  r = service_->Handle({"UpdateInferenceComponent",
                        json{{"InferenceComponentName", "ic"},
                             {"Specification", Spec("2")},
                             {"DeploymentConfig", alarms}}
                            .dump(),
                        kAccount, "req"});
  EXPECT_EQ(r.http_status, 400);
  EXPECT_NE(r.body.find("CloudWatch"), std::string::npos) << r.body;
  // One deployment at a time.
  Update(Spec("2", "slow"), Policy(1, 0));
  json busy = Call("UpdateInferenceComponent",
                   {{"InferenceComponentName", "ic"}, {"Specification", Spec("3")}}, 400);
  EXPECT_NE(busy.dump().find("is being updated to specification version 2"), std::string::npos)
      << busy.dump();
}

}  // namespace
}  // namespace carve::server::sagemaker
