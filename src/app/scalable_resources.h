// SageMakerScalableResources: what Application Auto Scaling scales, through the SageMaker
// service's own operations, as a user's call would go: DescribeInferenceComponent and
// UpdateInferenceComponentRuntimeConfig for a component's copies, DescribeEndpoint and
// UpdateEndpointWeightsAndCapacities for a variant's instances.
#pragma once

#include "server/autoscaling/autoscaling_service.h"
#include "server/sagemaker/service.h"

namespace carve::app {

class SageMakerScalableResources final : public server::autoscaling::ScalableResources {
 public:
  explicit SageMakerScalableResources(server::sagemaker::SageMakerService& sagemaker)
      : sagemaker_(sagemaker) {}

  Result<Capacity> Get(const std::string& account,
                       const server::autoscaling::ScalableKey& key) override;
  Status Set(const std::string& account, const server::autoscaling::ScalableKey& key,
             int desired) override;

 private:
  // The operation's answer, or its error message as InvalidArgument (NotFound for a resource
  // that does not exist).
  Result<nlohmann::json> Call(const std::string& account, const std::string& op,
                              const nlohmann::json& body);

  server::sagemaker::SageMakerService& sagemaker_;
};

}  // namespace carve::app
