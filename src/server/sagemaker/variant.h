// A production variant as the control plane uses it: validated from a CreateEndpointConfig
// request, copied into the endpoint record at CreateEndpoint, and compared on UpdateEndpoint.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "catalog/gpu_model.h"
#include "catalog/instance_type.h"
#include "common/result.h"
#include "core/layout.h"
#include "server/sagemaker/routing_strategy.h"
#include "server/sagemaker/validation.h"

namespace carve::server::sagemaker {

struct VariantSpec {
  std::string name;
  std::string model_name;  // May be empty: components name their own model.
  std::string instance_type;
  int instance_count = 1;
  // The one AcceleratorPartitionLayout's types in declared order; nullopt: whole GPUs.
  std::optional<std::vector<std::string>> partition_types;
  // Where the layout engine placed them on each GPU, in creation order: computed once, when the
  // endpoint config is created (CheckVariantLayout), and carried in the config's and the
  // endpoint's records from then on. No instances for whole GPUs.
  core::Layout layout;
  // Set when a record written before issue 13 had no layout and VariantFromJson placed it; the
  // record is rewritten once with it.
  bool layout_recomputed = false;
  int layout_entries = 0;          // How many AcceleratorPartitionLayouts were given.
  std::vector<std::string> nodes;  // Claimed fleet nodes (endpoint records only).
  // Nodes of `nodes` leaving the variant (its instance count was lowered): no copy is placed on
  // them, theirs are placed again on the others, then their GPUs are reset and they are
  // released (endpoint records only).
  std::vector<std::string> draining;
  // ManagedInstanceScaling (ScaleInPolicy IDLE_RELEASE): with `enabled`, the reconciler adds an
  // instance while copies wait for partitions and a free one exists, up to `max`, and releases
  // one that holds no copy while none waits, down to `min`.
  struct ManagedScaling {
    bool enabled = false;
    int min = 1;
    int max = 1;
    friend bool operator==(const ManagedScaling&, const ManagedScaling&) = default;
  };
  std::optional<ManagedScaling> managed;
  // InitialVariantWeight, then UpdateEndpointWeightsAndCapacities' DesiredWeight; `weight` is
  // the one in force (DescribeEndpoint's CurrentWeight).
  double desired_weight = 1.0;
  double weight = 1.0;
  // InferenceAmiVersion; "" for the instance family's default image. Fixes the driver that
  // the layout's profiles are checked against (inference_ami.h).
  std::string inference_ami;
  // ContainerStartupHealthCheckTimeoutInSeconds; 0: not given (a component's own, or carve's
  // default, applies).
  int startup_timeout_s = 0;
  // RoutingConfig.RoutingStrategy: how InvokeEndpoint picks a copy.
  RoutingStrategy routing_strategy = RoutingStrategy::kLeastOutstandingRequests;
};

// Validates one ProductionVariant member (at `path`), recording violations. Returns the spec
// when the variant's own members are valid. `refuse_unsupported`: members carve does not
// implement are violations (CreateEndpointConfig); false when reading a stored config, which
// may predate the refusal and was accepted then.
std::optional<VariantSpec> ValidateVariant(Validator& v, const nlohmann::json& variant,
                                           const std::string& path,
                                           bool refuse_unsupported = true);

// Checks the layout against the GPU of the instance type with the layout engine (SageMaker
// rules, and the driver of the variant's image) and returns where each partition sits (no
// instances for whole GPUs): InvalidArgument that names the variant, the instance type, what
// the GPU provides and what the layout requests; for a profile the image's driver is too old
// for, also the driver, where it comes from and each InferenceAmiVersion that provides it.
// Also rejects more than one layout entry.
Result<core::Layout> CheckVariantLayout(const VariantSpec& variant);

// Resolves the instance type and its GPU model from the catalog.
Result<std::pair<const catalog::InstanceType*, const catalog::GpuModel*>> VariantHardware(
    const VariantSpec& variant);

// "[mig-4g.20gb, mig-2g.10gb]" or "none (whole GPUs)".
std::string LayoutName(const VariantSpec& variant);

nlohmann::json VariantToJson(const VariantSpec& variant);
Result<VariantSpec> VariantFromJson(const nlohmann::json& j);

// The layouts of a config's variants as its record keeps them, by variant name:
// {"AllTraffic": [{"Profile": "4g.20gb", "Start": 0}, ...]}.
nlohmann::json LayoutToJson(const core::Layout& layout);
Result<core::Layout> LayoutFromJson(const VariantSpec& variant, const nlohmann::json& j);

}  // namespace carve::server::sagemaker
