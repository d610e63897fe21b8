// The service's state machine with a FakeStore, the simulated driver (no carve time) and
// explicit reconcile passes instead of the background thread.
#include "server/sagemaker/service.h"

#include <gtest/gtest.h>

#include "common/fake_clock.h"
#include "server/nodes/testing/simulated_node_driver.h"
#include "server/sagemaker/resources.h"
#include "store/fake_store.h"

namespace carve::server::sagemaker {
namespace {

using nlohmann::json;

constexpr char kAccount[] = "111111111111";

class ServiceTest : public ::testing::Test {
 protected:
  ServiceTest() : store_(clock_), driver_(std::chrono::milliseconds(0)) { Reset(); }

  // A fresh process over the same store: new claims (the default fleet's nodes, all Ready) and
  // a new service that recovers from the store.
  void Reset() {
    service_.reset();
    claims_ = std::make_unique<nodes::NodeClaims>();
    EXPECT_TRUE(nodes::ClaimTestFleet(*claims_).ok());
    ServiceOptions options;
    options.clock = &clock_;
    options.max_records_per_kind = max_records_per_kind_;
    options.model_roots = model_roots_;
    service_ = std::make_unique<SageMakerService>(store_, *claims_, driver_, options);
    EXPECT_TRUE(service_->Recover().ok());
  }
  json NodeNamed(const std::string& name) {
    const json fleet = service_->FleetJson(kAccount);
    for (const auto& n : fleet["nodes"]) {
      if (n["name"] == name) return n;
    }
    ADD_FAILURE() << "no node " << name << " in " << fleet.dump();
    return json();
  }

  http::ApiResponse Call(const std::string& op, const json& body,
                         const std::string& account = kAccount) {
    return service_->Handle({op, body.dump(), account, "req-1"});
  }
  json Ok(const std::string& op, const json& body) {
    http::ApiResponse r = Call(op, body);
    EXPECT_EQ(r.http_status, 200) << op << ": " << r.body;
    return json::parse(r.body);
  }
  void Settle() {
    for (int i = 0; i < 4; ++i) {
      service_->ReconcileOnce();
      service_->WaitForCarves();
    }
  }
  void SeedEndpoint(const std::string& name = "ep") {
    Ok("CreateModel", {{"ModelName", "m"}, {"PrimaryContainer", {{"Image", "img"}}}});
    json variant = {
        {"VariantName", "AllTraffic"},
        {"InstanceType", "ml.p4d.24xlarge"},
        {"InitialInstanceCount", 1},
        {"AcceleratorPartitionLayouts",
         {{{"AcceleratorPartitionTypes", {"mig-4g.20gb", "mig-2g.10gb", "mig-1g.5gb"}}}}}};
    Ok("CreateEndpointConfig", {{"EndpointConfigName", name}, {"ProductionVariants", {variant}}});
    Ok("CreateEndpoint", {{"EndpointName", name}, {"EndpointConfigName", name}});
  }
  json Component(const std::string& name, const std::string& type, int copies) {
    return {{"InferenceComponentName", name},
            {"EndpointName", "ep"},
            {"Specification",
             {{"ModelName", "m"},
              {"ComputeResourceRequirements",
               {{"AcceleratorPartitionType", type},
                {"NumberOfAcceleratorDevicesRequired", 1},
                {"NumberOfCpuCoresRequired", 1},
                {"MinMemoryRequiredInMb", 1024}}}}},
            {"RuntimeConfig", {{"CopyCount", copies}}}};
  }
  std::string Status(const std::string& ep) {
    return Ok("DescribeEndpoint", {{"EndpointName", ep}})["EndpointStatus"];
  }

  int max_records_per_kind_ = 1000;
  std::vector<std::string> model_roots_;
  FakeClock clock_;
  store::FakeStore store_;
  nodes::SimulatedNodeDriver driver_;
  std::unique_ptr<nodes::NodeClaims> claims_;
  std::unique_ptr<SageMakerService> service_;
};

TEST_F(ServiceTest, AnEndpointGoesFromCreatingToInServiceWithEveryGpuCarved) {
  SeedEndpoint();
  EXPECT_EQ(Status("ep"), "Creating");
  Settle();
  EXPECT_EQ(Status("ep"), "InService");
  EXPECT_EQ(driver_.carve_calls(), 8);
  EXPECT_EQ(driver_.Carved(NodeId("p4d.24xlarge-0"), GpuIndex(7)),
            (std::vector<std::string>{"4g.20gb", "2g.10gb", "1g.5gb"}));
}

// A config record another version wrote, whose variant this one cannot read (an instance type it
// does not know), is refused when an endpoint names it, naming the member; it never becomes an
// endpoint of fewer variants.
TEST_F(ServiceTest, AStoredConfigWhoseVariantNoLongerValidatesIsRefusedNamingTheMember) {
  json variant = {{"VariantName", "AllTraffic"},
                  {"InstanceType", "ml.p4d.24xlarge"},
                  {"InitialInstanceCount", 1}};
  Ok("CreateEndpointConfig", {{"EndpointConfigName", "c"}, {"ProductionVariants", {variant}}});
  const store::Key key{kAccount, std::string(kEndpointConfig), "c"};
  auto rec = store_.Get(key);
  ASSERT_TRUE(rec.has_value());
  json body = json::parse(rec->body);
  body["ProductionVariants"][0]["InstanceType"] = "ml.q9.48xlarge";
  ASSERT_TRUE(store_.Update(key, body.dump(), rec->version).has_value());
  http::ApiResponse r =
      Call("CreateEndpoint", {{"EndpointName", "e"}, {"EndpointConfigName", "c"}});
  EXPECT_EQ(r.http_status, 400) << r.body;
  EXPECT_NE(r.body.find("productionVariants.1.member.instanceType"), std::string::npos) << r.body;
  EXPECT_NE(r.body.find("ml.q9.48xlarge"), std::string::npos) << r.body;
  EXPECT_EQ(Call("DescribeEndpoint", {{"EndpointName", "e"}}).http_status, 400);
}

TEST_F(ServiceTest, AnEndpointFailsNamingTheMissingInstances) {
  Ok("CreateEndpointConfig",
     {{"EndpointConfigName", "big"},
      {"ProductionVariants",
       {{{"VariantName", "v"}, {"InstanceType", "ml.p5.48xlarge"}, {"InitialInstanceCount", 2}}}}});
  Ok("CreateEndpoint", {{"EndpointName", "big"}, {"EndpointConfigName", "big"}});
  Settle();
  json d = Ok("DescribeEndpoint", {{"EndpointName", "big"}});
  EXPECT_EQ(d["EndpointStatus"], "Failed");
  EXPECT_NE(d["FailureReason"].get<std::string>().find("Missing: 1 x ml.p5.48xlarge"),
            std::string::npos);
  EXPECT_TRUE(NodeNamed("p5.48xlarge-0")["claim"].is_null());  // Nothing kept.
}

TEST_F(ServiceTest, AComponentOfAnEndpointThatFailsFailsToo) {
  Ok("CreateModel", {{"ModelName", "m"}});
  Ok("CreateEndpointConfig",
     {{"EndpointConfigName", "big"},
      {"ProductionVariants",
       {{{"VariantName", "v"}, {"InstanceType", "ml.p5.48xlarge"}, {"InitialInstanceCount", 2}}}}});
  Ok("CreateEndpoint", {{"EndpointName", "ep"}, {"EndpointConfigName", "big"}});
  json ic = Component("c", "", 1);
  ic["Specification"]["ComputeResourceRequirements"].erase("AcceleratorPartitionType");
  Ok("CreateInferenceComponent", ic);
  Settle();
  json d = Ok("DescribeInferenceComponent", {{"InferenceComponentName", "c"}});
  EXPECT_EQ(d["InferenceComponentStatus"], "Failed");
  EXPECT_NE(d["FailureReason"].get<std::string>().find("Missing: 1 x ml.p5.48xlarge"),
            std::string::npos);
}

TEST_F(ServiceTest, CopiesBeyondThePartitionsWaitAndSayWhy) {
  SeedEndpoint();
  Settle();
  Ok("CreateInferenceComponent", Component("g", "mig-1g.5gb", 9));
  Settle();
  json d = Ok("DescribeInferenceComponent", {{"InferenceComponentName", "g"}});
  EXPECT_EQ(d["RuntimeConfig"]["DesiredCopyCount"], 9);
  EXPECT_EQ(d["RuntimeConfig"]["CurrentCopyCount"], 8);
  EXPECT_EQ(d["InferenceComponentStatus"], "Creating");
  EXPECT_EQ(d["StatusMessage"],
            "1 of 9 copies are not placed: waiting for a mig-1g.5gb partition: asked for 1 copy of "
            "1 x mig-1g.5gb + 1 vCPUs + 1024 MiB host memory with SPREAD; free: no GPU capacity "
            "for even one copy");
}

TEST_F(ServiceTest, LoweringCopyCountFreesPartitionsForWaitingCopies) {
  SeedEndpoint();
  Settle();
  Ok("CreateInferenceComponent", Component("a", "mig-2g.10gb", 8));
  Settle();
  Ok("CreateInferenceComponent", Component("b", "mig-2g.10gb", 1));
  Settle();
  EXPECT_EQ(Ok("DescribeInferenceComponent",
               {{"InferenceComponentName", "b"}})["RuntimeConfig"]["CurrentCopyCount"],
            0);
  Ok("UpdateInferenceComponentRuntimeConfig",
     {{"InferenceComponentName", "a"}, {"DesiredRuntimeConfig", {{"CopyCount", 7}}}});
  Settle();
  json b = Ok("DescribeInferenceComponent", {{"InferenceComponentName", "b"}});
  EXPECT_EQ(b["RuntimeConfig"]["CurrentCopyCount"], 1);
  EXPECT_EQ(b["InferenceComponentStatus"], "InService");
}

TEST_F(ServiceTest, RestartRestoresClaimsCarvesAndCopies) {
  SeedEndpoint();
  Settle();
  Ok("CreateInferenceComponent", Component("g", "mig-4g.20gb", 8));
  Settle();
  Reset();  // Same store, fresh fleet.
  Ok("CreateInferenceComponent", Component("h", "mig-4g.20gb", 1));
  Settle();
  json h = Ok("DescribeInferenceComponent", {{"InferenceComponentName", "h"}});
  EXPECT_EQ(h["RuntimeConfig"]["CurrentCopyCount"], 0);  // The 8 restored copies hold them all.
  EXPECT_EQ(Status("ep"), "InService");
}

TEST_F(ServiceTest, AnEndpointLeftCreatingIsCarvedAfterRestart) {
  SeedEndpoint();
  service_->ReconcileOnce();  // Claims nodes and starts carving...
  service_->WaitForCarves();
  // ...then pretend the process died before recording InService by rewinding the status.
  auto rec = store_.Get({kAccount, "Endpoint", "ep"});
  ASSERT_TRUE(rec.has_value());
  json body = json::parse(rec->body);
  body["EndpointStatus"] = "Creating";
  ASSERT_TRUE(store_.Update(rec->key, body.dump(), rec->version).has_value());
  Reset();
  Settle();
  EXPECT_EQ(Status("ep"), "InService");
}

TEST_F(ServiceTest, DeletingAnEndpointReleasesItsNodes) {
  SeedEndpoint();
  Settle();
  Ok("DeleteEndpoint", {{"EndpointName", "ep"}});
  Settle();
  http::ApiResponse r = Call("DescribeEndpoint", {{"EndpointName", "ep"}});
  EXPECT_EQ(r.error_type, "ValidationException");
  const json fleet = service_->FleetJson(kAccount);
  for (const auto& n : fleet["nodes"]) EXPECT_TRUE(n["claim"].is_null());
}

// As SageMaker: an endpoint being created is not deleted under the work (ValidationException,
// which is what botocore's model allows DeleteEndpoint); once it serves, it is.
TEST_F(ServiceTest, AnEndpointBeingCreatedIsNotDeletedUntilItServes) {
  SeedEndpoint();
  http::ApiResponse r = Call("DeleteEndpoint", {{"EndpointName", "ep"}});
  EXPECT_EQ(r.http_status, 400);
  EXPECT_EQ(r.error_type, "ValidationException");
  EXPECT_NE(r.body.find("Cannot delete in-progress endpoint"), std::string::npos) << r.body;
  EXPECT_NE(r.body.find("(status Creating)"), std::string::npos) << r.body;
  Settle();
  EXPECT_EQ(Status("ep"), "InService");
  Ok("DeleteEndpoint", {{"EndpointName", "ep"}});
}

// An endpoint that still hosts components answers ValidationException, never ResourceInUse,
// which botocore's model lists for none of the endpoint operations.
TEST_F(ServiceTest, AnEndpointHostingComponentsIsRefusedWithAValidationException) {
  SeedEndpoint();
  Settle();
  Ok("CreateInferenceComponent", Component("c", "mig-1g.5gb", 1));
  http::ApiResponse r = Call("DeleteEndpoint", {{"EndpointName", "ep"}});
  EXPECT_EQ(r.http_status, 400);
  EXPECT_EQ(r.error_type, "ValidationException");
  EXPECT_NE(r.body.find("still hosts inference components [c]"), std::string::npos) << r.body;
}

// The same variant twice would keep one of the two entries silently: refused, naming it.
TEST_F(ServiceTest, UpdateEndpointWeightsAndCapacitiesNamesEachVariantOnce) {
  SeedEndpoint();
  Settle();
  http::ApiResponse r = Call("UpdateEndpointWeightsAndCapacities",
                             {{"EndpointName", "ep"},
                              {"DesiredWeightsAndCapacities",
                               {{{"VariantName", "AllTraffic"}, {"DesiredWeight", 1}},
                                {{"VariantName", "AllTraffic"}, {"DesiredInstanceCount", 2}}}}});
  EXPECT_EQ(r.error_type, "ValidationException");
  EXPECT_NE(r.body.find("Value 'AllTraffic' at "
                        "'desiredWeightsAndCapacities.2.member.variantName' failed to satisfy "
                        "constraint: Member must name each variant at most once"),
            std::string::npos)
      << r.body;
  EXPECT_EQ(Status("ep"), "InService");  // Nothing was recorded.
}

// An endpoint in progress is neither updated nor deleted (docs/api.md): UpdateEndpoint and
// UpdateEndpointWeightsAndCapacities while Creating, DeleteEndpoint while Updating, each a
// ValidationException naming the status. A count of 0 is refused naming the member.
TEST_F(ServiceTest, AnEndpointInProgressIsNeitherUpdatedNorDeleted) {
  SeedEndpoint();
  const json weights = {{"EndpointName", "ep"},
                        {"DesiredWeightsAndCapacities",
                         {{{"VariantName", "AllTraffic"}, {"DesiredInstanceCount", 2}}}}};
  for (const auto& [op, body] : std::vector<std::pair<std::string, json>>{
           {"UpdateEndpointWeightsAndCapacities", weights},
           {"UpdateEndpoint", {{"EndpointName", "ep"}, {"EndpointConfigName", "ep"}}}}) {
    http::ApiResponse r = Call(op, body);
    EXPECT_EQ(r.error_type, "ValidationException") << op;
    EXPECT_NE(r.body.find("Cannot update in-progress endpoint"), std::string::npos) << r.body;
    EXPECT_NE(r.body.find("(status Creating)"), std::string::npos) << r.body;
  }
  Settle();
  ASSERT_EQ(Status("ep"), "InService");
  json zero = weights;
  zero["DesiredWeightsAndCapacities"][0]["DesiredInstanceCount"] = 0;
  http::ApiResponse r = Call("UpdateEndpointWeightsAndCapacities", zero);
  EXPECT_EQ(r.error_type, "ValidationException");
  EXPECT_NE(r.body.find("desiredWeightsAndCapacities.1.member.desiredInstanceCount"),
            std::string::npos)
      << r.body;
  EXPECT_NE(r.body.find("at least one instance per variant"), std::string::npos) << r.body;
  EXPECT_EQ(Status("ep"), "InService");

  Ok("UpdateEndpointWeightsAndCapacities", weights);
  ASSERT_EQ(Status("ep"), "Updating");
  r = Call("DeleteEndpoint", {{"EndpointName", "ep"}});
  EXPECT_EQ(r.error_type, "ValidationException");
  EXPECT_NE(r.body.find("Cannot delete in-progress endpoint"), std::string::npos) << r.body;
  EXPECT_NE(r.body.find("(status Updating)"), std::string::npos) << r.body;
  Settle();
  EXPECT_EQ(Status("ep"), "InService");
  Ok("DeleteEndpoint", {{"EndpointName", "ep"}});
}

// docs/api.md: UpdateEndpoint keeps an endpoint's variants and their instance types; a config
// without one of its variants, with more of them, or with another instance type is a
// ValidationException naming what differs, and nothing changes.
TEST_F(ServiceTest, UpdateEndpointKeepsTheVariantsAndTheirInstanceTypes) {
  SeedEndpoint();
  auto variant = [](const std::string& name, const std::string& type) {
    json v = {{"VariantName", name}, {"InstanceType", type}, {"InitialInstanceCount", 1}};
    if (type == "ml.p4d.24xlarge") {
      v["AcceleratorPartitionLayouts"] = {
          {{"AcceleratorPartitionTypes", {"mig-4g.20gb", "mig-2g.10gb", "mig-1g.5gb"}}}};
    }
    return v;
  };
  Ok("CreateEndpointConfig", {{"EndpointConfigName", "renamed"},
                              {"ProductionVariants", {variant("Other", "ml.p4d.24xlarge")}}});
  Ok("CreateEndpointConfig",
     {{"EndpointConfigName", "two"},
      {"ProductionVariants",
       {variant("AllTraffic", "ml.p4d.24xlarge"), variant("Second", "ml.p4d.24xlarge")}}});
  Ok("CreateEndpointConfig", {{"EndpointConfigName", "whole-p5"},
                              {"ProductionVariants", {variant("AllTraffic", "ml.p5.48xlarge")}}});
  Ok("CreateEndpointConfig", {{"EndpointConfigName", "whole-g5"},
                              {"ProductionVariants", {variant("AllTraffic", "ml.g5.48xlarge")}}});
  Ok("CreateEndpoint", {{"EndpointName", "whole"}, {"EndpointConfigName", "whole-p5"}});
  Settle();
  ASSERT_EQ(Status("ep"), "InService");
  ASSERT_EQ(Status("whole"), "InService");
  for (const auto& [endpoint, config, says] :
       std::vector<std::tuple<std::string, std::string, std::string>>{
           {"ep", "renamed",
            "Endpoint configuration renamed has no variant AllTraffic, which "
            "endpoint ep runs"},
           {"ep", "two", "Endpoint configuration two has 2 variants; endpoint ep runs 1."},
           {"whole", "whole-g5",
            "Variant AllTraffic of endpoint whole runs ml.p5.48xlarge; "
            "endpoint configuration whole-g5 asks for ml.g5.48xlarge."}}) {
    http::ApiResponse r =
        Call("UpdateEndpoint", {{"EndpointName", endpoint}, {"EndpointConfigName", config}});
    EXPECT_EQ(r.error_type, "ValidationException") << config;
    EXPECT_NE(r.body.find(says), std::string::npos) << r.body;
    json d = Ok("DescribeEndpoint", {{"EndpointName", endpoint}});
    EXPECT_EQ(d["EndpointStatus"], "InService") << config;
    EXPECT_NE(d["EndpointConfigName"], config);
  }
}

// CreateModel of a name taken is the service's own refusal, naming the model's ARN.
TEST_F(ServiceTest, ASecondModelOfOneNameIsRefusedNamingIt) {
  Ok("CreateModel", {{"ModelName", "m"}, {"PrimaryContainer", {{"Image", "img"}}}});
  http::ApiResponse r =
      Call("CreateModel", {{"ModelName", "m"}, {"PrimaryContainer", {{"Image", "other"}}}});
  EXPECT_EQ(r.error_type, "ValidationException");
  EXPECT_NE(r.body.find("Cannot create already existing model "
                        "\\\"arn:aws:sagemaker:us-east-1:111111111111:model/m\\\""),
            std::string::npos)
      << r.body;
}

// A component's Specification names a ModelName or gives its own Container (docs/api.md); one
// with neither is refused at specification.modelName.
TEST_F(ServiceTest, AComponentRunsAContainerOfItsOwnOrAModelButNotNeither) {
  SeedEndpoint();
  Settle();
  json own = Component("own", "mig-1g.5gb", 1);
  own["Specification"].erase("ModelName");
  own["Specification"]["Container"] = {{"Image", "img"}};
  Ok("CreateInferenceComponent", own);
  json neither = Component("neither", "mig-1g.5gb", 1);
  neither["Specification"].erase("ModelName");
  http::ApiResponse r = Call("CreateInferenceComponent", neither);
  EXPECT_EQ(r.error_type, "ValidationException");
  EXPECT_NE(r.body.find("at 'specification.modelName' failed to satisfy constraint: Member must "
                        "not be null when Container is not given"),
            std::string::npos)
      << r.body;
}

// A copy-count change of a component that served makes it Updating until the copies match.
TEST_F(ServiceTest, ACopyCountChangeOfAServingComponentIsUpdatingUntilItIsDone) {
  SeedEndpoint();
  Settle();
  Ok("CreateInferenceComponent", Component("ic", "mig-1g.5gb", 1));
  Settle();
  auto status = [&] {
    return Ok("DescribeInferenceComponent",
              {{"InferenceComponentName", "ic"}})["InferenceComponentStatus"];
  };
  ASSERT_EQ(status(), "InService");
  Ok("UpdateInferenceComponent",
     {{"InferenceComponentName", "ic"}, {"RuntimeConfig", {{"CopyCount", 2}}}});
  EXPECT_EQ(status(), "Updating");
  Settle();
  EXPECT_EQ(status(), "InService");
}

// A component that waited for room says why in StatusMessage, and says nothing once InService.
TEST_F(ServiceTest, AComponentsStatusMessageClearsOnceItIsInService) {
  SeedEndpoint();
  Settle();
  Ok("CreateInferenceComponent", Component("ic", "mig-4g.20gb", 9));  // 8 GPUs, one 4g each
  Settle();
  json d = Ok("DescribeInferenceComponent", {{"InferenceComponentName", "ic"}});
  ASSERT_EQ(d["InferenceComponentStatus"], "Creating") << d.dump();
  EXPECT_NE(d.value("StatusMessage", "").find("1 of 9 copies are not placed"), std::string::npos)
      << d.dump();
  Ok("UpdateInferenceComponentRuntimeConfig",
     {{"InferenceComponentName", "ic"}, {"DesiredRuntimeConfig", {{"CopyCount", 8}}}});
  Settle();
  d = Ok("DescribeInferenceComponent", {{"InferenceComponentName", "ic"}});
  ASSERT_EQ(d["InferenceComponentStatus"], "InService") << d.dump();
  EXPECT_FALSE(d.contains("StatusMessage")) << d.dump();
}

// A SageMaker instance type without a GPU (a CPU type) is told apart from a name AWS does not
// have: only the second is an enum violation.
TEST_F(ServiceTest, ACpuInstanceTypeIsRefusedAsOneWithNothingToCarve) {
  auto refusal = [&](const std::string& type) {
    http::ApiResponse r =
        Call("CreateEndpointConfig",
             {{"EndpointConfigName", "c"},
              {"ProductionVariants",
               {{{"VariantName", "v"}, {"InstanceType", type}, {"InitialInstanceCount", 1}}}}});
    EXPECT_EQ(r.error_type, "ValidationException") << type;
    return r.body;
  };
  const std::string cpu = refusal("ml.c5.xlarge");
  EXPECT_NE(cpu.find("Value 'ml.c5.xlarge' at 'productionVariants.1.member.instanceType' failed "
                     "to satisfy constraint: carve serves the GPU instance types of its catalog, "
                     "[ml."),
            std::string::npos)
      << cpu;
  EXPECT_NE(cpu.find("ml.p4d.24xlarge"), std::string::npos) << cpu;
  EXPECT_NE(cpu.find("a CPU type, has nothing to carve"), std::string::npos) << cpu;
  const std::string bogus = refusal("p4d");
  EXPECT_NE(bogus.find("Value 'p4d' at 'productionVariants.1.member.instanceType' failed to "
                       "satisfy constraint: Member must satisfy enum value set: [ml."),
            std::string::npos)
      << bogus;
  // With a partition layout too: the same refusal, before any layout is checked against the
  // hardware it does not have.
  http::ApiResponse r = Call(
      "CreateEndpointConfig",
      {{"EndpointConfigName", "c"},
       {"ProductionVariants",
        {{{"VariantName", "v"},
          {"InstanceType", "ml.c5.xlarge"},
          {"InitialInstanceCount", 1},
          {"AcceleratorPartitionLayouts", {{{"AcceleratorPartitionTypes", {"mig-1g.5gb"}}}}}}}}});
  EXPECT_EQ(r.error_type, "ValidationException");
  EXPECT_NE(r.body.find("a CPU type, has nothing to carve"), std::string::npos) << r.body;
}

TEST_F(ServiceTest, AFailedCommitLeavesNoEndpointBehind) {
  Ok("CreateEndpointConfig",
     {{"EndpointConfigName", "c"},
      {"ProductionVariants",
       {{{"VariantName", "v"}, {"InstanceType", "ml.p5.48xlarge"}, {"InitialInstanceCount", 1}}}}});
  store_.FailNthCommit(1, Unavailable("disk"));
  http::ApiResponse r =
      Call("CreateEndpoint", {{"EndpointName", "e"}, {"EndpointConfigName", "c"}});
  EXPECT_EQ(r.http_status, 503);
  EXPECT_EQ(Call("DescribeEndpoint", {{"EndpointName", "e"}}).error_type, "ValidationException");
}

TEST_F(ServiceTest, AccountsDoNotSeeEachOther) {
  SeedEndpoint();
  http::ApiResponse r = Call("DescribeEndpoint", {{"EndpointName", "ep"}}, "222222222222");
  EXPECT_EQ(r.error_type, "ValidationException");
  EXPECT_NE(r.body.find("222222222222:endpoint/ep"), std::string::npos);
}

// The fleet view (GET /v1/fleet, the dashboard's Fleet page) shows another account's instance
// as taken, and nothing of what runs on it: no owner, no carve, no partition, no copy. The
// owner's own view of the same node shows all of it, so the other's blank is not a blank view.
TEST_F(ServiceTest, TheFleetViewShowsAnotherAccountsInstanceAsTakenAndNothingOnIt) {
  SeedEndpoint();
  Settle();
  Ok("CreateInferenceComponent", Component("secret-model", "mig-2g.10gb", 2));
  Settle();
  auto claimed = [](const json& fleet) {
    for (const auto& n : fleet["nodes"]) {
      if (!n["claim"].is_null()) return n;
    }
    return json();
  };
  const json mine = claimed(service_->FleetJson(kAccount));
  ASSERT_FALSE(mine.is_null());
  EXPECT_EQ(mine["claim"]["endpoint"], "ep");
  EXPECT_TRUE(mine["carved"]);
  EXPECT_NE(mine.dump().find("secret-model"), std::string::npos) << mine.dump();

  const json theirs = claimed(service_->FleetJson("222222222222"));
  ASSERT_FALSE(theirs.is_null());
  EXPECT_EQ(theirs["name"], mine["name"]);
  EXPECT_EQ(theirs["claim"]["kind"], "other");
  EXPECT_TRUE(theirs["claim"]["account"].is_null());
  EXPECT_FALSE(theirs["carved"]);
  EXPECT_EQ(theirs["vcpus_used"], 0.0);
  for (const auto& g : theirs["gpus"]) {
    EXPECT_EQ(g["mode"], "unassigned");
    EXPECT_TRUE(g["partitions"].empty()) << g.dump();
  }
  const std::string text = theirs.dump();
  for (const char* leak : {"secret-model", "\"ep\"", kAccount, "mig-2g"}) {
    EXPECT_EQ(text.find(leak), std::string::npos) << leak << " in " << text;
  }
}

// The dashboard's Endpoints view (GET /v1/ui/endpoints) is what the API says, in one answer:
// each endpoint, configuration and component exactly as its Describe operation answers it, and
// the endpoint's instances as the fleet view draws them. Another account's view holds nothing
// of it; a record that cannot be read is named, not dropped; a deleted configuration is null.
TEST_F(ServiceTest, TheEndpointsViewIsEachDescribeAnswerAndOnlyTheCallersOwn) {
  SeedEndpoint();
  Settle();
  Ok("CreateInferenceComponent", Component("secret-model", "mig-2g.10gb", 2));
  Settle();
  const json view = service_->EndpointsViewJson(kAccount).value();
  ASSERT_EQ(view["Endpoints"].size(), 1u) << view.dump();
  json ep = view["Endpoints"][0];
  const json config = ep["EndpointConfig"];
  const json held = ep["Nodes"];
  ep.erase("EndpointConfig");
  ep.erase("Nodes");
  EXPECT_EQ(ep, Ok("DescribeEndpoint", {{"EndpointName", "ep"}}));
  EXPECT_EQ(config, Ok("DescribeEndpointConfig", {{"EndpointConfigName", "ep"}}));
  ASSERT_EQ(held.size(), 1u);
  EXPECT_EQ(held[0], NodeNamed(held[0]["name"]));
  ASSERT_EQ(view["InferenceComponents"].size(), 1u);
  EXPECT_EQ(view["InferenceComponents"][0],
            Ok("DescribeInferenceComponent", {{"InferenceComponentName", "secret-model"}}));
  EXPECT_TRUE(view["Unreadable"].empty());

  const json theirs = service_->EndpointsViewJson("222222222222").value();
  EXPECT_TRUE(theirs["Endpoints"].empty());
  EXPECT_TRUE(theirs["InferenceComponents"].empty());
  EXPECT_EQ(theirs.dump().find("secret-model"), std::string::npos) << theirs.dump();

  Ok("DeleteEndpointConfig", {{"EndpointConfigName", "ep"}});
  ASSERT_TRUE(
      store_.Create({kAccount, std::string(kInferenceComponent), "torn"}, "{not json").has_value());
  const json after = service_->EndpointsViewJson(kAccount).value();
  EXPECT_TRUE(after["Endpoints"][0]["EndpointConfig"].is_null());
  ASSERT_EQ(after["Unreadable"].size(), 1u) << after.dump();
  EXPECT_EQ(after["Unreadable"][0]["kind"], kInferenceComponent);
  EXPECT_EQ(after["Unreadable"][0]["name"], "torn");
  EXPECT_EQ(after["InferenceComponents"].size(), 1u);
}

// A production variant without InitialInstanceCount (and not serverless) is refused naming
// the member, as SageMaker's model says it is required; so is one without InstanceType.
TEST_F(ServiceTest, AVariantWithoutItsInstanceCountOrTypeIsRefusedNamingTheMember) {
  Ok("CreateModel", {{"ModelName", "m"}, {"PrimaryContainer", {{"Image", "img"}}}});
  json variant = {{"VariantName", "AllTraffic"}, {"InstanceType", "ml.p4d.24xlarge"}};
  http::ApiResponse r = Call("CreateEndpointConfig",
                             {{"EndpointConfigName", "c"}, {"ProductionVariants", {variant}}});
  EXPECT_EQ(r.error_type, "ValidationException");
  EXPECT_NE(r.body.find("initialInstanceCount' failed to satisfy constraint: Member must not be "
                        "null"),
            std::string::npos)
      << r.body;
  variant.erase("InstanceType");
  variant["InitialInstanceCount"] = 1;
  r = Call("CreateEndpointConfig",
           {{"EndpointConfigName", "c"}, {"ProductionVariants", {variant}}});
  EXPECT_NE(r.body.find("instanceType' failed to satisfy constraint: Member must not be null"),
            std::string::npos)
      << r.body;
  EXPECT_EQ(Call("DescribeEndpointConfig", {{"EndpointConfigName", "c"}}).http_status, 400);
}

// Model data on the node's disk must lie inside an operator's model root (docs/security.md):
// inside one, as a file:// URL or a path, a model and a component's own container are
// accepted; outside, refused naming the member.
TEST_F(ServiceTest, LocalModelDataInsideTheModelRootsIsAcceptedAndOutsideRefused) {
  model_roots_ = {"/srv/models"};
  Reset();
  Ok("CreateModel",
     {{"ModelName", "in-url"},
      {"PrimaryContainer", {{"Image", "img"}, {"ModelDataUrl", "file:///srv/models/llama"}}}});
  Ok("CreateModel",
     {{"ModelName", "in-path"},
      {"PrimaryContainer", {{"Image", "img"}, {"ModelDataUrl", "/srv/models/llama"}}}});
  http::ApiResponse out = Call(
      "CreateModel", {{"ModelName", "out"},
                      {"PrimaryContainer", {{"Image", "img"}, {"ModelDataUrl", "file:///etc"}}}});
  EXPECT_EQ(out.error_type, "ValidationException");
  EXPECT_NE(out.body.find("modelDataUrl"), std::string::npos) << out.body;
  SeedEndpoint();
  Settle();
  json own = Component("own", "mig-1g.5gb", 1);
  own["Specification"].erase("ModelName");
  own["Specification"]["Container"] = {{"Image", "img"},
                                       {"ArtifactUrl", "file:///srv/models/llama"}};
  Ok("CreateInferenceComponent", own);
}

// ListTags pages by the token it returns (an offset), so a token names where the next page
// starts; one it never returned is refused naming it.
TEST_F(ServiceTest, ListTagsResumesAtItsTokenAndRefusesOneItNeverGave) {
  json tags = json::array();
  for (int i = 0; i < 12; ++i) {
    tags.push_back({{"Key", "k" + std::to_string(i)}, {"Value", std::to_string(i)}});
  }
  const json created =
      Ok("CreateModel",
         {{"ModelName", "m"}, {"PrimaryContainer", {{"Image", "img"}}}, {"Tags", tags}});
  ASSERT_TRUE(created.contains("ModelArn")) << created.dump();
  const std::string arn = created["ModelArn"];
  EXPECT_EQ(Ok("ListTags", {{"ResourceArn", arn}})["Tags"].size(), 12u);
  const json rest = Ok("ListTags", {{"ResourceArn", arn}, {"NextToken", "5"}});
  ASSERT_EQ(rest["Tags"].size(), 7u) << rest.dump();
  EXPECT_EQ(rest["Tags"][0]["Key"], "k5");
  http::ApiResponse bad = Call("ListTags", {{"ResourceArn", arn}, {"NextToken", "next"}});
  EXPECT_EQ(bad.error_type, "ValidationException");
  EXPECT_NE(bad.body.find("NextToken 'next' was not returned by ListTags"), std::string::npos)
      << bad.body;
}

// ListEndpoints filters on LastModifiedTime as well as CreationTime, as SageMaker models it.
TEST_F(ServiceTest, ListEndpointsFiltersOnLastModifiedTime) {
  SeedEndpoint("old");
  clock_.Advance(std::chrono::seconds(100));
  const double between = static_cast<double>(clock_.UnixMillis()) / 1000.0;
  clock_.Advance(std::chrono::seconds(100));
  const json config = Ok("DescribeEndpointConfig", {{"EndpointConfigName", "old"}});
  Ok("CreateEndpointConfig",
     {{"EndpointConfigName", "new"}, {"ProductionVariants", config["ProductionVariants"]}});
  Ok("CreateEndpoint", {{"EndpointName", "new"}, {"EndpointConfigName", "new"}});
  auto names = [](const json& list, const char* member) {
    std::vector<std::string> out;
    for (const auto& e : list[member]) out.push_back(e["EndpointName"]);
    return out;
  };
  EXPECT_EQ(names(Ok("ListEndpoints", {{"LastModifiedTimeAfter", between}}), "Endpoints"),
            std::vector<std::string>{"new"});
  EXPECT_EQ(names(Ok("ListEndpoints", {{"LastModifiedTimeBefore", between}}), "Endpoints"),
            std::vector<std::string>{"old"});
  EXPECT_EQ(names(Ok("ListEndpoints", {{"CreationTimeAfter", between}}), "Endpoints"),
            std::vector<std::string>{"new"});
}

// A tag's key and value are letters of any script (\p{L}): "À" is C3 80 in UTF-8, the lowest
// continuation byte, and is a letter like any other.
TEST_F(ServiceTest, TagsInAnyScriptAreAccepted) {
  Ok("CreateModel", {{"ModelName", "m"},
                     {"PrimaryContainer", {{"Image", "img"}}},
                     {"Tags", {{{"Key", "équipe"}, {"Value", "À la carte"}}}}});
  const std::string arn = Ok("DescribeModel", {{"ModelName", "m"}})["ModelArn"];
  EXPECT_EQ(Ok("ListTags", {{"ResourceArn", arn}})["Tags"][0]["Value"], "À la carte");
}

// ContainerStartupHealthCheckTimeoutInSeconds is 60 to 3600, both ends included.
TEST_F(ServiceTest, TheStartupHealthCheckTimeoutIsSixtyToThirtySixHundredSeconds) {
  SeedEndpoint();
  Settle();
  auto with_timeout = [&](const std::string& name, int seconds) {
    json ic = Component(name, "mig-1g.5gb", 1);
    ic["Specification"]["StartupParameters"] = {
        {"ContainerStartupHealthCheckTimeoutInSeconds", seconds}};
    return Call("CreateInferenceComponent", ic);
  };
  EXPECT_EQ(with_timeout("lowest", 60).http_status, 200);
  EXPECT_EQ(with_timeout("highest", 3600).http_status, 200);
  for (int bad : {59, 3601}) {
    http::ApiResponse r = with_timeout("bad", bad);
    EXPECT_EQ(r.error_type, "ValidationException") << bad;
    EXPECT_NE(r.body.find("containerStartupHealthCheckTimeoutInSeconds"), std::string::npos)
        << r.body;
  }
}

// Tags is a list of 0 to 50: an empty one is accepted, as SageMaker's model allows.
TEST_F(ServiceTest, AnEmptyTagListIsAccepted) {
  Ok("CreateModel",
     {{"ModelName", "m"}, {"PrimaryContainer", {{"Image", "img"}}}, {"Tags", json::array()}});
  const std::string arn = Ok("DescribeModel", {{"ModelName", "m"}})["ModelArn"];
  EXPECT_TRUE(Ok("ListTags", {{"ResourceArn", arn}})["Tags"].empty());
}

// Past the per-account cap a create is refused saying why, nothing is stored, another account is
// unaffected, and a delete makes room again.
TEST_F(ServiceTest, AnAccountPastItsRecordCapIsRefusedUntilItDeletesOne) {
  max_records_per_kind_ = 2;
  Reset();
  auto model = [](const std::string& name) {
    return json{{"ModelName", name}, {"PrimaryContainer", {{"Image", "img"}}}};
  };
  Ok("CreateModel", model("a"));
  Ok("CreateModel", model("b"));
  http::ApiResponse r = Call("CreateModel", model("c"));
  EXPECT_EQ(r.http_status, 400);
  EXPECT_EQ(r.error_type, "ResourceLimitExceeded");
  EXPECT_NE(r.body.find("account 111111111111 already holds 2 model"), std::string::npos) << r.body;
  EXPECT_EQ(Call("DescribeModel", {{"ModelName", "c"}}).error_type, "ValidationException");
  EXPECT_EQ(Call("CreateModel", model("c"), "222222222222").http_status, 200);
  Ok("DeleteModel", {{"ModelName", "a"}});
  Ok("CreateModel", model("c"));
}

TEST_F(ServiceTest, UnknownOperationsAre400) {
  http::ApiResponse r = Call("MakeCoffee", json::object());
  EXPECT_EQ(r.http_status, 400);
  EXPECT_EQ(r.error_type, "UnknownOperationException");
}

// Issue 35: one signed request nested 100,000 deep inside a member crashed the server (the
// validator dump()ed the value recursively). The body is refused at parse time, naming the rule.
TEST_F(ServiceTest, ABodyNestedAHundredThousandDeepIsAValidationException) {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  for (const auto& [op, body] : std::vector<std::pair<std::string, std::string>>{
           {"CreateModel",
            R"({"ModelName":"m","PrimaryContainer":{"Image":"i","Environment":)" + deep + "}}"},
           {"CreateEndpointConfig", R"({"EndpointConfigName":"c","Tags":)" + deep + "}"}}) {
    http::ApiResponse r = service_->Handle({op, body, kAccount, "req-1"});
    EXPECT_EQ(r.http_status, 400) << op;
    EXPECT_EQ(r.error_type, "ValidationException") << op;
    EXPECT_NE(r.body.find("Request body nests arrays and objects deeper than 64 levels (the JSON "
                          "depth limit)"),
              std::string::npos)
        << op << ": " << r.body.substr(0, 300);
  }
  EXPECT_EQ(Ok("ListModels", json::object())["Models"].size(), 0u);
}

TEST_F(ServiceTest, ABodyWithADuplicateKeyIsRefusedNamingTheKey) {
  http::ApiResponse r = service_->Handle(
      {"CreateModel", R"({"ModelName":"a","PrimaryContainer":{"Image":"i"},"ModelName":"b"})",
       kAccount, "req-1"});
  EXPECT_EQ(r.http_status, 400);
  EXPECT_EQ(r.error_type, "ValidationException");
  EXPECT_NE(r.body.find(R"(Request body has the key \"ModelName\" more than once)"),
            std::string::npos)
      << r.body;
  EXPECT_EQ(Ok("ListModels", json::object())["Models"].size(), 0u);
}

TEST_F(ServiceTest, AFiftyThousandCharacterNameFailsItsLengthRule) {
  http::ApiResponse r = Call("CreateModel", {{"ModelName", std::string(50000, 'a')},
                                             {"PrimaryContainer", {{"Image", "img"}}}});
  EXPECT_EQ(r.http_status, 400);
  EXPECT_NE(r.body.find("Member must have length less than or equal to 63"), std::string::npos);
  EXPECT_LT(r.body.size(), 1000u);
}

TEST_F(ServiceTest, TimestampsAreEpochSecondsWithMillis) {
  clock_.Advance(std::chrono::milliseconds(123));
  Ok("CreateModel", {{"ModelName", "t"}});
  json d = Ok("DescribeModel", {{"ModelName", "t"}});
  EXPECT_DOUBLE_EQ(d["CreationTime"].get<double>(), 1700000000.123);
}

}  // namespace
}  // namespace carve::server::sagemaker
