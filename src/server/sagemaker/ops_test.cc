// The operation handlers on their own, over an OpContext with a FakeStore: what they record and
// what they refuse. (service_test drives them through SageMakerService with reconcile passes.)
#include "server/sagemaker/ops.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/fake_clock.h"
#include "server/sagemaker/component_record.h"
#include "server/sagemaker/endpoint_record.h"
#include "store/fake_store.h"

namespace carve::server::sagemaker {
namespace {

using ::testing::HasSubstr;
constexpr char kAccount[] = "111111111111";

json SeedVariant() {
  return {{"VariantName", "AllTraffic"},
          {"InstanceType", "ml.p4d.24xlarge"},
          {"InitialInstanceCount", 1},
          {"AcceleratorPartitionLayouts",
           {{{"AcceleratorPartitionTypes", {"mig-1g.5gb", "mig-3g.20gb", "mig-2g.10gb"}}}}}};
}

class OpsTest : public ::testing::Test {
 protected:
  json Ok(Handler h, const json& in) {
    auto r = h(ctx_, http::ApiRequest{"op", in.dump(), kAccount, "req-1"}, in);
    EXPECT_TRUE(r.has_value()) << r.error().message;
    return r.value_or(json());
  }
  Error Fails(Handler h, const json& in) {
    auto r = h(ctx_, http::ApiRequest{"op", in.dump(), kAccount, "req-1"}, in);
    EXPECT_FALSE(r.has_value());
    return r.has_value() ? Error{} : r.error();
  }
  void SeedEndpointAndComponent() {
    Ok(&CreateModel, {{"ModelName", "m"}, {"PrimaryContainer", {{"Image", "img"}}}});
    Ok(&CreateEndpointConfig,
       {{"EndpointConfigName", "c"}, {"ProductionVariants", {SeedVariant()}}});
    Ok(&CreateEndpoint, {{"EndpointName", "ep"}, {"EndpointConfigName", "c"}});
    Ok(&CreateInferenceComponent,
       {{"InferenceComponentName", "ic"},
        {"EndpointName", "ep"},
        {"Specification",
         {{"ModelName", "m"},
          {"ComputeResourceRequirements",
           {{"AcceleratorPartitionType", "mig-1g.5gb"}, {"MinMemoryRequiredInMb", 1024}}}}},
        {"RuntimeConfig", {{"CopyCount", 2}}}});
  }

  FakeClock clock_;
  store::FakeStore store_{clock_};
  std::mutex mu_;
  int wakes_ = 0;
  OpContext ctx_{store_, clock_, "us-east-1", mu_, [this] { ++wakes_; }, nullptr};
};

TEST_F(OpsTest, AConfigKeepsWhereItsLayoutWasPlacedAndDescribeDoesNotShowIt) {
  Ok(&CreateEndpointConfig, {{"EndpointConfigName", "c"}, {"ProductionVariants", {SeedVariant()}}});
  json stored = json::parse(store_.Get({kAccount, "EndpointConfig", "c"})->body);
  EXPECT_EQ(stored["CarveLayouts"]["AllTraffic"],
            json::parse(R"([{"Profile": "3g.20gb", "Start": 0}, {"Profile": "2g.10gb", "Start": 4},
                            {"Profile": "1g.5gb", "Start": 6}])"));
  json d = Ok(&DescribeEndpointConfig, {{"EndpointConfigName", "c"}});
  EXPECT_FALSE(d.contains("CarveLayouts"));
  EXPECT_EQ(d["ProductionVariants"][0]["VariantName"], "AllTraffic");
}

TEST_F(OpsTest, AnEndpointTakesItsConfigsLayoutAsPlaced) {
  SeedEndpointAndComponent();
  auto ep = EndpointRecord::FromRecord(*store_.Get({kAccount, "Endpoint", "ep"})).value();
  ASSERT_EQ(ep.variants[0].layout.instances.size(), 3u);
  EXPECT_EQ(ep.variants[0].layout.instances[0].profile->name, "3g.20gb");
  EXPECT_EQ(ep.variants[0].layout.instances[2].start, 6);
  EXPECT_FALSE(ep.variants[0].layout_recomputed);
  EXPECT_EQ(ep.status, EndpointStatus::kCreating);
}

TEST_F(OpsTest, DeletingAComponentMarksItDeletingAndWakesTheReconciler) {
  SeedEndpointAndComponent();
  const int before = wakes_;
  Ok(&DeleteInferenceComponent, {{"InferenceComponentName", "ic"}});
  EXPECT_GT(wakes_, before);
  auto c = ComponentRecord::FromRecord(*store_.Get({kAccount, "InferenceComponent", "ic"}));
  EXPECT_EQ(c->status, ComponentStatus::kDeleting);
  json d = Ok(&DescribeInferenceComponent, {{"InferenceComponentName", "ic"}});
  EXPECT_EQ(d["InferenceComponentStatus"], "Deleting");
  Ok(&DeleteInferenceComponent, {{"InferenceComponentName", "ic"}});  // Again: nothing to do.
}

TEST_F(OpsTest, AComponentBeingDeletedRefusesUpdates) {
  SeedEndpointAndComponent();
  Ok(&DeleteInferenceComponent, {{"InferenceComponentName", "ic"}});
  Error e = Fails(&UpdateInferenceComponentRuntimeConfig,
                  {{"InferenceComponentName", "ic"}, {"DesiredRuntimeConfig", {{"CopyCount", 3}}}});
  EXPECT_EQ(e.code, ErrorCode::kFailedPrecondition);
  EXPECT_THAT(e.message, HasSubstr(":inference-component/ic\" is being deleted"));
  // UpdateInferenceComponent too, for a copy count and for a new specification.
  e = Fails(&UpdateInferenceComponent,
            {{"InferenceComponentName", "ic"}, {"RuntimeConfig", {{"CopyCount", 3}}}});
  EXPECT_EQ(e.code, ErrorCode::kFailedPrecondition);
  EXPECT_THAT(e.message, HasSubstr(":inference-component/ic\" is being deleted"));
  e = Fails(&UpdateInferenceComponent,
            {{"InferenceComponentName", "ic"},
             {"Specification",
              {{"ModelName", "m"},
               {"ComputeResourceRequirements",
                {{"AcceleratorPartitionType", "mig-1g.5gb"}, {"MinMemoryRequiredInMb", 2048}}}}}});
  EXPECT_THAT(e.message, HasSubstr(":inference-component/ic\" is being deleted"));
}

TEST_F(OpsTest, AnEndpointWithAComponentCannotBeDeleted) {
  SeedEndpointAndComponent();
  Error e = Fails(&DeleteEndpoint, {{"EndpointName", "ep"}});
  EXPECT_EQ(e.code, ErrorCode::kFailedPrecondition);
  EXPECT_THAT(e.message, HasSubstr("still hosts inference components [ic]"));
}

TEST_F(OpsTest, ACopyCountChangeIsRecordedWithTheComponentsRequirements) {
  SeedEndpointAndComponent();
  Ok(&UpdateInferenceComponentRuntimeConfig,
     {{"InferenceComponentName", "ic"}, {"DesiredRuntimeConfig", {{"CopyCount", 5}}}});
  auto c = ComponentRecord::FromRecord(*store_.Get({kAccount, "InferenceComponent", "ic"}));
  EXPECT_EQ(c->desired, 5);
  EXPECT_EQ(c->partition_type, "mig-1g.5gb");
  EXPECT_EQ(c->memory_mib, 1024);
  EXPECT_EQ(c->strategy, core::Strategy::kSpread);
}

TEST_F(OpsTest, EveryOperationOfTheTableIsFoundAndOthersAreNot) {
  for (const char* op : {"CreateModel", "DescribeEndpoint", "UpdateInferenceComponent", "ListTags",
                         "DeleteEndpointConfig"}) {
    EXPECT_NE(FindHandler(op), nullptr) << op;
  }
  EXPECT_EQ(FindHandler("CreateTrainingJob"), nullptr);
}

}  // namespace
}  // namespace carve::server::sagemaker
