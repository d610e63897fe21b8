// docs/api.md, "Refused members": every member of that table, sent on the operation that takes
// it, is a ValidationException that names the member's path and says what carve does not support,
// and nothing is stored. One case per row entry, so dropping any single member from a refusal list
// fails a case of its own.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <string>
#include <vector>

#include "common/fake_clock.h"
#include "server/nodes/testing/simulated_node_driver.h"
#include "server/sagemaker/service.h"
#include "store/fake_store.h"

namespace carve::server::sagemaker {
namespace {

using nlohmann::json;

constexpr char kAccount[] = "111111111111";

json Variant() {
  return {{"VariantName", "AllTraffic"},
          {"InstanceType", "ml.p4d.24xlarge"},
          {"InitialInstanceCount", 1},
          {"AcceleratorPartitionLayouts",
           {{{"AcceleratorPartitionTypes", {"mig-4g.20gb", "mig-2g.10gb", "mig-1g.5gb"}}}}}};
}

json Specification() {
  return {{"ModelName", "m"},
          {"ComputeResourceRequirements",
           {{"AcceleratorPartitionType", "mig-1g.5gb"},
            {"NumberOfAcceleratorDevicesRequired", 1},
            {"NumberOfCpuCoresRequired", 1},
            {"MinMemoryRequiredInMb", 1024}}}};
}

// One row entry: the operation, a body it would accept, where in it the member goes (a JSON
// pointer to an object), the member and a value that asks for the feature.
struct Refused {
  std::string op;
  json body;
  std::string at;
  std::string member;
  json value;
};

std::vector<Refused> Table() {
  const json config = {{"EndpointConfigName", "c2"}, {"ProductionVariants", {Variant()}}};
  const json endpoint = {{"EndpointName", "e2"}, {"EndpointConfigName", "c"}};
  const json update = {{"EndpointName", "e"}, {"EndpointConfigName", "c"}};
  const json model = {{"ModelName", "m2"}, {"PrimaryContainer", {{"Image", "img"}}}};
  json component = {{"InferenceComponentName", "ic2"},
                    {"EndpointName", "e"},
                    {"VariantName", "AllTraffic"},
                    {"Specification", Specification()},
                    {"RuntimeConfig", {{"CopyCount", 1}}}};
  json startup = component;
  startup["InferenceComponentName"] = "ic3";
  startup["Specification"]["StartupParameters"] = {
      {"ContainerStartupHealthCheckTimeoutInSeconds", 600}};
  const json update_component = {{"InferenceComponentName", "ic"},
                                 {"Specification", Specification()}};
  json rollback = update_component;
  rollback["DeploymentConfig"] = {{"RollingUpdatePolicy",
                                   {{"MaximumBatchSize", {{"Type", "COPY_COUNT"}, {"Value", 1}}},
                                    {"WaitIntervalInSeconds", 0}}}};
  const json object = json::object();
  const json list = json::array();
  return {
      {"CreateEndpointConfig", config, "", "DataCaptureConfig", object},
      {"CreateEndpointConfig", config, "", "AsyncInferenceConfig", object},
      {"CreateEndpointConfig", config, "", "ExplainerConfig", object},
      {"CreateEndpointConfig", config, "", "ShadowProductionVariants", {Variant()}},
      {"CreateEndpointConfig", config, "", "VpcConfig", object},
      {"CreateEndpointConfig", config, "", "KmsKeyId", "key"},
      {"CreateEndpointConfig", config, "", "MetricsConfig", object},
      {"CreateEndpointConfig", config, "", "EnableNetworkIsolation", true},
      {"CreateEndpointConfig", config, "/ProductionVariants/0", "ModelDataDownloadTimeoutInSeconds",
       600},
      {"CreateEndpointConfig", config, "/ProductionVariants/0",
       "VariantInstanceProvisionTimeoutInSeconds", 600},
      {"CreateEndpointConfig", config, "/ProductionVariants/0", "VolumeSizeInGB", 100},
      {"CreateEndpointConfig", config, "/ProductionVariants/0", "CoreDumpConfig", object},
      {"CreateEndpointConfig", config, "/ProductionVariants/0", "AcceleratorType",
       "ml.eia1.medium"},
      {"CreateEndpointConfig", config, "/ProductionVariants/0", "CapacityReservationConfig",
       object},
      {"CreateEndpointConfig", config, "/ProductionVariants/0", "InstancePools", list},
      {"CreateEndpointConfig", config, "/ProductionVariants/0", "EnableSSMAccess", true},
      {"CreateEndpointConfig", config, "/ProductionVariants/0", "ServerlessConfig", object},
      {"CreateEndpoint", endpoint, "", "DeploymentConfig", object},
      {"UpdateEndpoint", update, "", "DeploymentConfig", object},
      {"UpdateEndpoint", update, "", "RetainDeploymentConfig", true},
      {"UpdateEndpoint", update, "", "RetainAllVariantProperties", true},
      {"UpdateEndpoint", update, "", "ExcludeRetainedVariantProperties", list},
      {"CreateModel", model, "", "InferenceExecutionConfig", object},
      {"CreateModel", model, "", "VpcConfig", object},
      {"CreateModel", model, "", "EnableNetworkIsolation", true},
      {"CreateModel", model, "/PrimaryContainer", "ImageConfig", object},
      {"CreateModel", model, "/PrimaryContainer", "ModelDataSource", object},
      {"CreateModel", model, "/PrimaryContainer", "AdditionalModelDataSources", list},
      {"CreateModel", model, "/PrimaryContainer", "ModelPackageName", "pkg"},
      {"CreateModel", model, "/PrimaryContainer", "InferenceSpecificationName", "spec"},
      {"CreateModel", model, "/PrimaryContainer", "MultiModelConfig", object},
      {"CreateInferenceComponent", component, "/Specification", "DataCacheConfig", object},
      {"CreateInferenceComponent", component, "/Specification", "BaseInferenceComponentName",
       "base"},
      {"CreateInferenceComponent", startup, "/Specification/StartupParameters",
       "ModelDataDownloadTimeoutInSeconds", 600},
      {"CreateInferenceComponent", component, "", "Specifications", list},
      {"UpdateInferenceComponent", update_component, "", "Specifications", list},
      {"UpdateInferenceComponent", rollback, "/DeploymentConfig", "AutoRollbackConfiguration",
       object},
  };
}

class RefusedMembersTest : public ::testing::Test {
 protected:
  RefusedMembersTest() : store_(clock_), driver_(std::chrono::milliseconds(0)) {
    EXPECT_TRUE(nodes::ClaimTestFleet(claims_).ok());
    ServiceOptions options;
    options.clock = &clock_;
    service_ = std::make_unique<SageMakerService>(store_, claims_, driver_, options);
    EXPECT_TRUE(service_->Recover().ok());
    // What the operations above name: model m, config c, endpoint e, component ic.
    Ok("CreateModel", {{"ModelName", "m"}, {"PrimaryContainer", {{"Image", "img"}}}});
    Ok("CreateEndpointConfig", {{"EndpointConfigName", "c"}, {"ProductionVariants", {Variant()}}});
    Ok("CreateEndpoint", {{"EndpointName", "e"}, {"EndpointConfigName", "c"}});
    for (int i = 0; i < 4; ++i) {
      service_->ReconcileOnce();
      service_->WaitForCarves();
    }
    Ok("CreateInferenceComponent", {{"InferenceComponentName", "ic"},
                                    {"EndpointName", "e"},
                                    {"VariantName", "AllTraffic"},
                                    {"Specification", Specification()},
                                    {"RuntimeConfig", {{"CopyCount", 1}}}});
  }
  http::ApiResponse Call(const std::string& op, const json& body) {
    return service_->Handle({op, body.dump(), kAccount, "req-1"});
  }
  void Ok(const std::string& op, const json& body) {
    http::ApiResponse r = Call(op, body);
    ASSERT_EQ(r.http_status, 200) << op << ": " << r.body;
  }

  FakeClock clock_;
  store::FakeStore store_;
  nodes::SimulatedNodeDriver driver_;
  nodes::NodeClaims claims_;
  std::unique_ptr<SageMakerService> service_;
};

TEST_F(RefusedMembersTest, EveryMemberOfTheTableIsRefusedNamingItAndNothingIsStored) {
  const std::vector<Refused> table = Table();
  ASSERT_EQ(table.size(), 37u);
  for (const Refused& r : table) {
    SCOPED_TRACE(r.op + " " + r.at + "/" + r.member);
    // Each body is accepted as it stands (the next test): a case fails by its member alone.
    json body = r.body;
    body[json::json_pointer(r.at)][r.member] = r.value;
    http::ApiResponse answer = Call(r.op, body);
    EXPECT_EQ(answer.http_status, 400) << answer.body;
    EXPECT_EQ(answer.error_type, "ValidationException") << answer.body;
    // The member's path, as AWS writes it (first letter lower case), then what carve says.
    std::string path = r.member;
    path[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(path[0])));
    EXPECT_NE(answer.body.find(path + "' failed to satisfy constraint: carve "), std::string::npos)
        << answer.body;
  }
  // Nothing the refused calls named was created.
  for (const auto& [op, body] : std::vector<std::pair<std::string, json>>{
           {"DescribeEndpointConfig", {{"EndpointConfigName", "c2"}}},
           {"DescribeEndpoint", {{"EndpointName", "e2"}}},
           {"DescribeModel", {{"ModelName", "m2"}}},
           {"DescribeInferenceComponent", {{"InferenceComponentName", "ic2"}}},
           {"DescribeInferenceComponent", {{"InferenceComponentName", "ic3"}}}}) {
    EXPECT_EQ(Call(op, body).http_status, 400) << op;
  }
}

// The same bodies without the member are accepted, so no case above passes by failing on
// something else.
TEST_F(RefusedMembersTest, TheBodiesWithoutTheMemberAreAccepted) {
  std::vector<std::string> done;
  for (const Refused& r : Table()) {
    const std::string key = r.op + r.body.dump();
    if (std::find(done.begin(), done.end(), key) != done.end()) continue;
    done.push_back(key);
    SCOPED_TRACE(r.op);
    http::ApiResponse answer = Call(r.op, r.body);
    EXPECT_EQ(answer.http_status, 200) << answer.body;
    if (r.op == "UpdateEndpoint") {  // back to InService before the next update
      for (int i = 0; i < 4; ++i) service_->ReconcileOnce();
    }
  }
}

}  // namespace
}  // namespace carve::server::sagemaker
