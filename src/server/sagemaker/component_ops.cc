// The inference-component operations. A component binds a model to an endpoint variant and asks
// for copies; with a partition layout each copy takes one partition of the requested type
// (NumberOfAcceleratorDevicesRequired then means one partition), without one each copy takes
// NumberOfAcceleratorDevicesRequired whole GPUs of one instance. Copies are placed by the
// reconciler; these handlers validate and record what is wanted.
#include <fmt/format.h>

#include <cmath>

#include "common/bounded_json.h"
#include "server/sagemaker/component_record.h"
#include "server/sagemaker/endpoint_record.h"
#include "server/sagemaker/ops.h"

namespace carve::server::sagemaker {
namespace {

constexpr std::string_view kStrategies[] = {"SPREAD", "BINPACK"};

struct Requirements {
  std::string partition_type;
  std::optional<double> devices;
  double cpus = 0;
  int64_t memory_mib = 0;
  core::Strategy strategy = core::Strategy::kSpread;
  std::string model_name;
};

// Specification members carve does not implement (docs/api.md).
constexpr UnsupportedMember kUnsupportedSpec[] = {
    {"DataCacheConfig", "model data is not cached by carve; omit it"},
};
constexpr UnsupportedMember kUnsupportedStartup[] = {
    {"ModelDataDownloadTimeoutInSeconds",
     "model data is not downloaded by carve, so there is no download to time out; omit it"},
};
constexpr UnsupportedMember kUnsupportedUpdate[] = {
    {"Specifications", "carve supports one Specification per component"},
};
constexpr UnsupportedMember kUnsupportedDeployment[] = {
    {"AutoRollbackConfiguration",
     "carve has no CloudWatch alarms to watch; omit it (a deployment rolls back when a new copy "
     "cannot start or pass its health check, or when MaximumExecutionTimeoutInSeconds passes)"},
};
constexpr std::string_view kCapacityTypes[] = {"COPY_COUNT", "CAPACITY_PERCENT"};

// An InferenceComponentCapacitySize; `max_percent` bounds a CAPACITY_PERCENT value.
void ValidateCapacitySize(Validator& v, const json& parent, std::string_view member,
                          const std::string& path, bool required, int max_percent) {
  const json* size = v.Object(parent, member, path, required);
  if (size == nullptr) return;
  const std::string p = MemberPath(path, member);
  auto type = v.String(*size, "Type", p, EnumRule(kCapacityTypes), true);
  auto value = v.Integer(*size, "Value", p, {1, {}}, true);
  if (type && value && *type == "CAPACITY_PERCENT" && (*value < 5 || *value > max_percent)) {
    v.Fail(
        MemberPath(p, "Value"), std::to_string(*value),
        fmt::format("Member must be between 5 and {} when Type is CAPACITY_PERCENT", max_percent));
  }
}

// UpdateInferenceComponent's DeploymentConfig.
void ValidateDeploymentConfig(Validator& v, const json& config) {
  const std::string path = "deploymentConfig";
  v.Unsupported(config, kUnsupportedDeployment, path);
  const json* policy = v.Object(config, "RollingUpdatePolicy", path, true);
  if (policy == nullptr) return;
  const std::string p = MemberPath(path, "RollingUpdatePolicy");
  // "The value must be between 5% to 50% of the copy count"
  // (InferenceComponentRollingUpdatePolicy).
  ValidateCapacitySize(v, *policy, "MaximumBatchSize", p, true, 50);
  ValidateCapacitySize(v, *policy, "RollbackMaximumBatchSize", p, false, 100);
  v.Integer(*policy, "WaitIntervalInSeconds", p, {0, 3600}, true);
  v.Integer(*policy, "MaximumExecutionTimeoutInSeconds", p, {600, 28800}, false);
}

// Validates a Specification member; returns the requirements when valid.
std::optional<Requirements> ValidateSpec(Validator& v, const OpContext& ctx, const json& spec,
                                         const std::string& path) {
  Requirements r;
  auto model = v.String(spec, "ModelName", path, kModelNameRule, false);
  v.String(spec, "InstanceType", path, StringRule{}, false);
  if (const json* c = v.Object(spec, "Container", path, false)) {
    const std::string cp = MemberPath(path, "Container");
    ValidateLaunchInputs(v, ctx, *c, cp, "ArtifactUrl");
  }
  v.Unsupported(spec, kUnsupportedSpec, path);
  if (const json* sp = v.Object(spec, "StartupParameters", path, false)) {
    const std::string p = MemberPath(path, "StartupParameters");
    v.Unsupported(*sp, kUnsupportedStartup, p);
    v.Integer(*sp, "ContainerStartupHealthCheckTimeoutInSeconds", p, {60, 3600}, false);
  }
  if (spec.contains("BaseInferenceComponentName")) {
    v.Fail(MemberPath(path, "BaseInferenceComponentName"),
           JsonPreview(spec["BaseInferenceComponentName"], kMaxShownValueBytes),
           "carve does not support adapter components; give a ModelName");
  }
  if (!model && !spec.contains("Container") && !spec.contains("ModelName")) {
    v.Fail(MemberPath(path, "ModelName"), std::nullopt,
           "Member must not be null when Container is not given");
  }
  const std::string crp = MemberPath(path, "ComputeResourceRequirements");
  const json* crr = v.Object(spec, "ComputeResourceRequirements", path, true);
  if (crr != nullptr) {
    auto cpus = v.Number(*crr, "NumberOfCpuCoresRequired", crp, {0.25, {}}, false);
    r.devices = v.Number(*crr, "NumberOfAcceleratorDevicesRequired", crp, {1, {}}, false);
    auto min_mem = v.Integer(*crr, "MinMemoryRequiredInMb", crp, {128, {}}, true);
    v.Integer(*crr, "MaxMemoryRequiredInMb", crp, {128, {}}, false);
    auto type = v.String(*crr, "AcceleratorPartitionType", crp, kPartitionTypeRule, false);
    r.cpus = cpus.value_or(0);
    r.memory_mib = min_mem.value_or(0);
    r.partition_type = type.value_or("");
  }
  if (const json* sc = v.Object(spec, "SchedulingConfig", path, false)) {
    auto st = v.String(*sc, "PlacementStrategy", MemberPath(path, "SchedulingConfig"),
                       EnumRule(kStrategies), true);
    if (st && *st == "BINPACK") r.strategy = core::Strategy::kBinpack;
  }
  if (!v.ok()) return std::nullopt;
  r.model_name = model.value_or("");
  return r;
}

// The partition rules of the seed, checked against the variant the component lands on.
Status CheckPartitionRules(const Requirements& r, const VariantSpec& variant,
                           const std::string& endpoint) {
  auto hw = VariantHardware(variant);
  if (!hw.has_value()) return InvalidArgument(hw.error().message);
  const catalog::InstanceType& type = *hw->first;
  if (variant.partition_types) {
    const std::string declared = LayoutName(variant);
    if (r.partition_type.empty()) {
      return InvalidArgument(fmt::format(
          "Variant {} of endpoint {} declares AcceleratorPartitionLayouts {}, so "
          "ComputeResourceRequirements.AcceleratorPartitionType is required; declared types: {}.",
          variant.name, endpoint, declared, declared));
    }
    bool found = false;
    for (const auto& t : *variant.partition_types) found = found || t == r.partition_type;
    if (!found) {
      return InvalidArgument(fmt::format(
          "AcceleratorPartitionType {} is not declared by variant {} of endpoint {}; declared "
          "types: {}. There is no fallback to a whole accelerator.",
          r.partition_type, variant.name, endpoint, declared));
    }
    if (r.devices && *r.devices != 1) {
      return InvalidArgument(fmt::format(
          "NumberOfAcceleratorDevicesRequired must be 1 when AcceleratorPartitionType is set "
          "(each copy occupies one {} partition); got {:g}.",
          r.partition_type, *r.devices));
    }
  } else {
    if (!r.partition_type.empty()) {
      return InvalidArgument(fmt::format(
          "Variant {} of endpoint {} declares no AcceleratorPartitionLayouts, so "
          "AcceleratorPartitionType {} cannot be placed; omit it to use whole GPUs, or create an "
          "endpoint whose configuration declares a layout.",
          variant.name, endpoint, r.partition_type));
    }
    const double devices = r.devices.value_or(1);
    if (devices != std::floor(devices)) {
      return InvalidArgument(fmt::format(
          "NumberOfAcceleratorDevicesRequired must be a whole number of GPUs without a partition "
          "layout; got {:g}.",
          devices));
    }
    if (devices > type.gpu_count) {
      return ResourceExhausted(fmt::format(
          "NumberOfAcceleratorDevicesRequired {:g} exceeds the {} GPUs of one {}; a copy's GPUs "
          "are on one instance.",
          devices, type.gpu_count, type.id));
    }
  }
  if (r.cpus > type.vcpus || r.memory_mib > type.memory_mib) {
    return ResourceExhausted(fmt::format(
        "A copy needs {:g} vCPUs and {} MiB of host memory; one {} has {} vCPUs and {} MiB.",
        r.cpus, r.memory_mib, type.id, type.vcpus, type.memory_mib));
  }
  return OkStatus();
}

void ApplyRequirements(ComponentRecord& c, const Requirements& r) {
  c.partition_type = r.partition_type;
  c.devices = r.partition_type.empty() ? static_cast<int>(r.devices.value_or(1)) : 1;
  c.cpu_milli = static_cast<int64_t>(std::llround(r.cpus * 1000));
  c.memory_mib = r.memory_mib;
  c.strategy = r.strategy;
}

json Summary(const OpContext& ctx, const store::Record& r, const json& body) {
  const std::string endpoint = body.value("EndpointName", "");
  return {{"InferenceComponentName", r.key.name},
          {"InferenceComponentArn", ctx.Arn(r.key.account, kInferenceComponent, r.key.name)},
          {"EndpointName", endpoint},
          {"EndpointArn", ctx.Arn(r.key.account, kEndpoint, endpoint)},
          {"VariantName", body.value("VariantName", "")},
          {"InferenceComponentStatus", body.value("InferenceComponentStatus", "")},
          {"CreationTime", EpochSeconds(r.created_ms)},
          {"LastModifiedTime", EpochSeconds(r.updated_ms)}};
}

Status RefuseWhileDeleting(const OpContext& ctx, const http::ApiRequest& req,
                           const ComponentRecord& c) {
  if (c.status != ComponentStatus::kDeleting) return OkStatus();
  return FailedPrecondition(fmt::format("Inference component \"{}\" is being deleted.",
                                        ctx.Arn(req.account_id, kInferenceComponent, c.name)));
}

const VariantSpec* FindVariant(const EndpointRecord& ep, const std::string& name) {
  for (const auto& v : ep.variants) {
    if (v.name == name) return &v;
  }
  return nullptr;
}

// The Specification as DescribeInferenceComponent returns it: an
// InferenceComponentSpecificationSummary, whose Container reports the image as
// DeployedImage.SpecifiedImage. carve runs the reference as given and resolves no digest, so it
// leaves ResolvedImage and ResolutionTime out rather than invent them.
json SpecificationSummary(const json& spec) {
  json out = spec;
  auto container = out.find("Container");
  if (container == out.end() || !container->is_object()) return out;
  if (auto image = container->find("Image"); image != container->end()) {
    json deployed = {{"SpecifiedImage", *image}};
    container->erase(image);
    (*container)["DeployedImage"] = std::move(deployed);
  }
  return out;
}

}  // namespace

Result<json> CreateInferenceComponent(const OpContext& ctx, const http::ApiRequest& req,
                                      const json& in) {
  Validator v;
  auto name = v.String(in, "InferenceComponentName", "", kModelNameRule, true);
  auto endpoint = v.String(in, "EndpointName", "", kEndpointNameRule, true);
  auto variant = v.String(in, "VariantName", "", kEndpointNameRule, false);
  auto tags = ValidateTags(v, in, "Tags", "");
  if (in.contains("Specifications")) {
    v.Fail("specifications", "[...]", "carve supports one Specification per component");
  }
  std::optional<Requirements> reqs;
  if (const json* spec = v.Object(in, "Specification", "", true)) {
    reqs = ValidateSpec(v, ctx, *spec, "specification");
  }
  std::optional<int64_t> copies;
  if (const json* rc = v.Object(in, "RuntimeConfig", "", true)) {
    copies = v.Integer(*rc, "CopyCount", "runtimeConfig", {0, {}}, true);
  }
  CARVE_RETURN_IF_ERROR(v.ToStatus());

  std::lock_guard lock(ctx.state_mu());
  CARVE_ASSIGN_OR_RETURN(store::Record ep_rec, ctx.Get(req.account_id, kEndpoint, *endpoint));
  CARVE_ASSIGN_OR_RETURN(EndpointRecord ep, EndpointRecord::FromRecord(ep_rec));
  if (ep.status == EndpointStatus::kFailed || ep.status == EndpointStatus::kDeleting) {
    return FailedPrecondition(fmt::format("Endpoint \"{}\" is {}; it cannot host components.",
                                          ctx.Arn(req.account_id, kEndpoint, *endpoint),
                                          Name(ep.status)));
  }
  if (!variant) {
    if (ep.variants.size() != 1) {
      return InvalidArgument(fmt::format("Endpoint {} has {} variants; give VariantName.",
                                         *endpoint, ep.variants.size()));
    }
    variant = ep.variants.front().name;
  }
  const VariantSpec* var = FindVariant(ep, *variant);
  if (var == nullptr) {
    std::vector<std::string> names;
    for (const auto& x : ep.variants) names.push_back(x.name);
    return InvalidArgument(fmt::format("Endpoint {} has no variant {}; its variants: [{}].",
                                       *endpoint, *variant, JoinNodes(names)));
  }
  std::optional<store::Record> model;
  if (!reqs->model_name.empty()) {
    CARVE_ASSIGN_OR_RETURN(model, ctx.Get(req.account_id, kModel, reqs->model_name));
  }
  CARVE_RETURN_IF_ERROR(CheckPartitionRules(*reqs, *var, *endpoint));

  ComponentRecord c;
  c.name = *name;
  c.endpoint = *endpoint;
  c.variant = *variant;
  c.specification = in.at("Specification");
  ApplyRequirements(c, *reqs);
  c.desired = static_cast<int>(*copies);
  c.status = ComponentStatus::kCreating;
  c.tags = tags.value_or(json::array());
  if (model) c.KeepModelContainer(c.spec_version, model->body);
  CARVE_RETURN_IF_ERROR(ctx.CheckRoomFor(req.account_id, kInferenceComponent));
  auto rec = ctx.store().Create({req.account_id, std::string(kInferenceComponent), *name},
                                c.ToJson().dump());
  if (!rec.has_value()) {
    if (rec.error().code == ErrorCode::kAlreadyExists) {
      return ctx.AlreadyExists(req.account_id, kInferenceComponent, *name);
    }
    return rec.error();
  }
  ctx.Notify();
  return json{{"InferenceComponentArn", ctx.Arn(req.account_id, kInferenceComponent, *name)}};
}

Result<json> DescribeInferenceComponent(const OpContext& ctx, const http::ApiRequest& req,
                                        const json& in) {
  Validator v;
  auto name = v.String(in, "InferenceComponentName", "", kModelNameRule, true);
  CARVE_RETURN_IF_ERROR(v.ToStatus());
  CARVE_ASSIGN_OR_RETURN(store::Record rec, ctx.Get(req.account_id, kInferenceComponent, *name));
  return ComponentDescription(ctx, rec);
}

Result<json> ComponentDescription(const OpContext& ctx, const store::Record& rec) {
  CARVE_ASSIGN_OR_RETURN(ComponentRecord c, ComponentRecord::FromRecord(rec));
  const std::string& account = rec.key.account;
  json out = {{"InferenceComponentName", c.name},
              {"InferenceComponentArn", ctx.Arn(account, kInferenceComponent, c.name)},
              {"EndpointName", c.endpoint},
              {"EndpointArn", ctx.Arn(account, kEndpoint, c.endpoint)},
              {"VariantName", c.variant},
              {"Specification", SpecificationSummary(c.specification)},
              {"RuntimeConfig", {{"DesiredCopyCount", c.desired}, {"CurrentCopyCount", c.running}}},
              {"InferenceComponentStatus", Name(c.status)},
              {"CreationTime", EpochSeconds(rec.created_ms)},
              {"LastModifiedTime", EpochSeconds(rec.updated_ms)}};
  if (!c.status_message.empty()) out["StatusMessage"] = FitUtf8(c.status_message, kMaxMessage);
  if (!c.failure_reason.empty()) out["FailureReason"] = FitUtf8(c.failure_reason, kMaxMessage);
  if (!c.last_deployment_config.is_null()) out["LastDeploymentConfig"] = c.last_deployment_config;
  return out;
}

Result<json> DeleteInferenceComponent(const OpContext& ctx, const http::ApiRequest& req,
                                      const json& in) {
  Validator v;
  auto name = v.String(in, "InferenceComponentName", "", kModelNameRule, true);
  CARVE_RETURN_IF_ERROR(v.ToStatus());
  std::lock_guard lock(ctx.state_mu());
  CARVE_ASSIGN_OR_RETURN(store::Record rec, ctx.Get(req.account_id, kInferenceComponent, *name));
  CARVE_ASSIGN_OR_RETURN(ComponentRecord c, ComponentRecord::FromRecord(rec));
  if (c.status == ComponentStatus::kDeleting) return json::object();
  // Deleting: the reconciler stops and releases the copies (their partitions free up for waiting
  // copies only once that is durable), then removes the record.
  c.status = ComponentStatus::kDeleting;
  c.status_message.clear();
  CARVE_RETURN_IF_ERROR(ctx.store().Update(rec.key, c.ToJson().dump(), rec.version));
  ctx.Notify();
  return json::object();
}

Result<json> ListInferenceComponents(const OpContext& ctx, const http::ApiRequest& req,
                                     const json& in) {
  static const ListSpec spec{
      kInferenceComponent,
      "InferenceComponents",
      "InferenceComponentStatus",
      true,
      ComponentStatusNames(),
      &Summary,
      {{"EndpointNameEquals", "EndpointName"}, {"VariantNameEquals", "VariantName"}},
      &kEndpointNameRule};
  return ListResources(ctx, req, in, spec);
}

Result<json> UpdateInferenceComponent(const OpContext& ctx, const http::ApiRequest& req,
                                      const json& in) {
  Validator v;
  auto name = v.String(in, "InferenceComponentName", "", kModelNameRule, true);
  v.Unsupported(in, kUnsupportedUpdate, "");
  std::optional<Requirements> reqs;
  if (const json* spec = v.Object(in, "Specification", "", false)) {
    reqs = ValidateSpec(v, ctx, *spec, "specification");
  }
  const json* deployment = v.Object(in, "DeploymentConfig", "", false);
  if (deployment != nullptr) ValidateDeploymentConfig(v, *deployment);
  std::optional<int64_t> copies;
  if (const json* rc = v.Object(in, "RuntimeConfig", "", false)) {
    copies = v.Integer(*rc, "CopyCount", "runtimeConfig", {0, {}}, true);
  }
  CARVE_RETURN_IF_ERROR(v.ToStatus());

  std::lock_guard lock(ctx.state_mu());
  CARVE_ASSIGN_OR_RETURN(store::Record rec, ctx.Get(req.account_id, kInferenceComponent, *name));
  CARVE_ASSIGN_OR_RETURN(ComponentRecord c, ComponentRecord::FromRecord(rec));
  CARVE_RETURN_IF_ERROR(RefuseWhileDeleting(ctx, req, c));
  if (reqs) {
    if (reqs->partition_type != c.partition_type) {
      return InvalidArgument(fmt::format(
          "The AcceleratorPartitionType of inference component {} is {} and cannot change to "
          "{}: a component's partition type is fixed for its lifetime. Create a new component.",
          c.name, c.partition_type.empty() ? "unset (whole GPUs)" : c.partition_type,
          reqs->partition_type.empty() ? "unset (whole GPUs)" : reqs->partition_type));
    }
    CARVE_ASSIGN_OR_RETURN(store::Record ep_rec, ctx.Get(req.account_id, kEndpoint, c.endpoint));
    CARVE_ASSIGN_OR_RETURN(EndpointRecord ep, EndpointRecord::FromRecord(ep_rec));
    const VariantSpec* var = FindVariant(ep, c.variant);
    if (var == nullptr) return Internal("component's variant vanished from its endpoint");
    std::optional<store::Record> model;
    if (!reqs->model_name.empty()) {
      CARVE_ASSIGN_OR_RETURN(model, ctx.Get(req.account_id, kModel, reqs->model_name));
    }
    CARVE_RETURN_IF_ERROR(CheckPartitionRules(*reqs, *var, c.endpoint));
    if (in.at("Specification") != c.specification) {
      if (c.deployment) {
        return FailedPrecondition(fmt::format(
            "Inference component \"{}\" is being updated to specification version {}; wait "
            "until it is InService before updating its specification again.",
            ctx.Arn(req.account_id, kInferenceComponent, c.name), c.spec_version));
      }
      const CopySpec from = c.Current();
      c.specification = in.at("Specification");
      ApplyRequirements(c, *reqs);
      c.spec_version = from.version + 1;
      c.failure_reason.clear();
      if (c.ever_in_service) {
        // Every copy is replaced, batch by batch (deployment.h).
        StartedDeployment started = StartDeployment(deployment != nullptr ? *deployment : json(),
                                                    from, ctx.clock().UnixMillis());
        c.deployment = std::move(started.deployment);
        c.last_deployment_config = std::move(started.last_config);
        c.status = ComponentStatus::kUpdating;
        c.status_message =
            fmt::format("Rolling update to specification version {} accepted", c.spec_version);
      } else {
        // It never served: its copies are replaced at once, and a Failed one tries again.
        c.status = ComponentStatus::kCreating;
        c.status_message.clear();
      }
      if (model) c.KeepModelContainer(c.spec_version, model->body);
    }
  }
  if (copies) c.desired = static_cast<int>(*copies);
  if (!c.deployment && c.desired != c.running && c.ever_in_service) {
    c.status = ComponentStatus::kUpdating;
  }
  CARVE_RETURN_IF_ERROR(ctx.store().Update(rec.key, c.ToJson().dump(), rec.version));
  ctx.Notify();
  return json{{"InferenceComponentArn", ctx.Arn(req.account_id, kInferenceComponent, c.name)}};
}

Result<json> UpdateInferenceComponentRuntimeConfig(const OpContext& ctx,
                                                   const http::ApiRequest& req, const json& in) {
  Validator v;
  auto name = v.String(in, "InferenceComponentName", "", kModelNameRule, true);
  std::optional<int64_t> copies;
  if (const json* rc = v.Object(in, "DesiredRuntimeConfig", "", true)) {
    copies = v.Integer(*rc, "CopyCount", "desiredRuntimeConfig", {0, {}}, true);
  }
  CARVE_RETURN_IF_ERROR(v.ToStatus());
  std::lock_guard lock(ctx.state_mu());
  CARVE_ASSIGN_OR_RETURN(store::Record rec, ctx.Get(req.account_id, kInferenceComponent, *name));
  CARVE_ASSIGN_OR_RETURN(ComponentRecord c, ComponentRecord::FromRecord(rec));
  CARVE_RETURN_IF_ERROR(RefuseWhileDeleting(ctx, req, c));
  c.desired = static_cast<int>(*copies);
  if (c.desired != c.running && c.ever_in_service) c.status = ComponentStatus::kUpdating;
  CARVE_RETURN_IF_ERROR(ctx.store().Update(rec.key, c.ToJson().dump(), rec.version));
  ctx.Notify();
  return json{{"InferenceComponentArn", ctx.Arn(req.account_id, kInferenceComponent, c.name)}};
}

}  // namespace carve::server::sagemaker
