// ScalableResources: what Application Auto Scaling's targets scale, behind a seam. In carve it is
// the SageMaker service (src/app/scalable_resources.cc); tests use a fake.
#pragma once

#include <string>

#include "common/result.h"
#include "server/autoscaling/scaling_records.h"

namespace carve::server::autoscaling {

// What scalable targets scale. The SageMaker service, in carve (app/), behind this seam.
class ScalableResources {
 public:
  virtual ~ScalableResources() = default;
  struct Capacity {
    int desired = 0;
    int current = 0;
    std::string endpoint;        // The component's endpoint (for its invocation signals).
    std::string status_message;  // Why copies or instances wait, when they do.
  };
  // NotFound (its message names the resource) when it does not exist.
  virtual Result<Capacity> Get(const std::string& account, const ScalableKey& key) = 0;
  // Sets the desired capacity through the resource's own operation.
  virtual Status Set(const std::string& account, const ScalableKey& key, int desired) = 0;
};

}  // namespace carve::server::autoscaling
