#include "server/sagemaker/variant.h"

#include <fmt/format.h>

#include <regex>

#include "catalog/catalog.h"
#include "core/layout_validator.h"
#include "server/sagemaker/inference_ami.h"
#include "server/sagemaker/resources.h"

namespace carve::server::sagemaker {
namespace {

using nlohmann::json;

std::string Join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& s : items) out += (out.empty() ? "" : ", ") + s;
  return out;
}

std::string InstanceTypeEnum() {
  std::string out = "[";
  bool first = true;
  for (const auto& t : catalog::AllInstanceTypes()) {
    if (!t.id.starts_with("ml.")) continue;
    out += (first ? "" : ", ") + std::string(t.id);
    first = false;
  }
  return out + "]";
}

// ProductionVariant members carve does not implement (docs/api.md lists them).
constexpr UnsupportedMember kUnsupportedVariant[] = {
    {"ModelDataDownloadTimeoutInSeconds",
     "model data is not downloaded by carve, so there is no download to time out; omit it"},
    {"VariantInstanceProvisionTimeoutInSeconds",
     "instances are not provisioned: an endpoint claims nodes that are already registered; "
     "omit it"},
    {"VolumeSizeInGB", "copies use their node's disk; no volume is attached; omit it"},
    {"CoreDumpConfig", "core dumps are not collected; omit it"},
    {"AcceleratorType", "Elastic Inference accelerators do not exist on carve; omit it"},
    {"CapacityReservationConfig", "nodes are the registered fleet; there is no capacity "
                                  "reservation to use; omit it"},
    {"EnableSSMAccess", "there is no SSM agent on carve's nodes; omit it or set false", false},
    {"InstancePools", "heterogeneous instance pools are not implemented (and cannot be "
                      "partitioned); use one InstanceType, with AcceleratorPartitionLayouts to "
                      "partition it"},
};

constexpr UnsupportedMember kUnsupportedScaleIn[] = {
    {"MaximumStepSize", "it applies to CONSOLIDATION, which carve does not implement; omit it"},
    {"CooldownInMinutes", "it applies to CONSOLIDATION, which carve does not implement; omit it"},
};

std::optional<VariantSpec::ManagedScaling> ValidateManagedScaling(Validator& v, const json& in,
                                                                  const std::string& path,
                                                                  std::optional<int64_t> count) {
  const json* m = v.Object(in, "ManagedInstanceScaling", path, false);
  if (m == nullptr) return std::nullopt;
  const std::string mp = MemberPath(path, "ManagedInstanceScaling");
  static constexpr std::string_view kStatuses[] = {"ENABLED", "DISABLED"};
  static constexpr std::string_view kStrategies[] = {"IDLE_RELEASE", "CONSOLIDATION"};
  auto status = v.String(*m, "Status", mp, EnumRule(kStatuses), false);
  auto min = v.Integer(*m, "MinInstanceCount", mp, {0, {}}, false);
  auto max = v.Integer(*m, "MaxInstanceCount", mp, {1, {}}, false);
  if (const json* sp = v.Object(*m, "ScaleInPolicy", mp, false)) {
    const std::string pp = MemberPath(mp, "ScaleInPolicy");
    v.Unsupported(*sp, kUnsupportedScaleIn, pp);
    auto strategy = v.String(*sp, "Strategy", pp, EnumRule(kStrategies), true);
    if (strategy == "CONSOLIDATION") {
      v.Fail(MemberPath(pp, "Strategy"), *strategy,
             "carve does not support Strategy CONSOLIDATION: it releases idle instances only "
             "(IDLE_RELEASE) and never moves copies to free one");
    }
  }
  if (min && *min == 0) {
    v.Fail(MemberPath(mp, "MinInstanceCount"), "0",
           "carve keeps at least one instance per variant (scale-to-zero is not implemented)");
  }
  VariantSpec::ManagedScaling out;
  out.enabled = status == "ENABLED";
  out.min = static_cast<int>(min.value_or(count.value_or(1)));
  out.max = static_cast<int>(max.value_or(count.value_or(1)));
  if (out.min > out.max) {
    v.Fail(MemberPath(mp, "MinInstanceCount"), std::to_string(out.min),
           fmt::format("must not exceed MaxInstanceCount ({})", out.max));
  } else if (count && (*count < out.min || *count > out.max)) {
    v.Fail(MemberPath(path, "InitialInstanceCount"), std::to_string(*count),
           fmt::format("must lie within ManagedInstanceScaling's MinInstanceCount ({}) and "
                       "MaxInstanceCount ({})",
                       out.min, out.max));
  }
  return out;
}

}  // namespace

std::optional<VariantSpec> ValidateVariant(Validator& v, const json& in, const std::string& path,
                                           bool refuse_unsupported) {
  VariantSpec spec;
  const bool ok_before = v.ok();
  auto name = v.String(in, "VariantName", path, kEndpointNameRule, true);
  auto model = v.String(in, "ModelName", path, kModelNameRule, false);
  auto count = v.Integer(in, "InitialInstanceCount", path, {1, {}}, false);
  auto type = v.String(in, "InstanceType", path, StringRule{}, false);
  auto weight = v.Number(in, "InitialVariantWeight", path, {0, {}}, false);
  if (refuse_unsupported) v.Unsupported(in, kUnsupportedVariant, path);
  auto startup = v.Integer(in, "ContainerStartupHealthCheckTimeoutInSeconds", path, {60, 3600},
                           false);
  auto managed = ValidateManagedScaling(v, in, path, count);
  auto ami = v.String(in, "InferenceAmiVersion", path, EnumRule(InferenceAmiNames()), false);
  if (const json* routing = v.Object(in, "RoutingConfig", path, false)) {
    static constexpr auto& kRouting = EnumNames<RoutingStrategy>::kNames;
    auto strategy = v.String(*routing, "RoutingStrategy", MemberPath(path, "RoutingConfig"),
                             EnumRule(kRouting), true);
    if (strategy) {
      spec.routing_strategy =
          ParseEnum<RoutingStrategy>(*strategy, "RoutingStrategy")
              .value_or(RoutingStrategy::kLeastOutstandingRequests);  // The rule held it.
    }
  }
  if (type && !catalog::FindInstanceType(*type).has_value()) {
    // A name shaped like SageMaker's (ml.FAMILY.SIZE) may be one AWS serves that carve does not:
    // a CPU type has no GPU to carve. Only a name of another shape gets the enum constraint.
    static const std::regex kShaped("ml\\.[a-z0-9-]+\\.[a-z0-9-]+");
    v.Fail(MemberPath(path, "InstanceType"), *type,
           std::regex_match(*type, kShaped)
               ? "carve serves the GPU instance types of its catalog, " + InstanceTypeEnum() +
                     " (a type without a GPU, such as a CPU type, has nothing to carve)"
               : "Member must satisfy enum value set: " + InstanceTypeEnum());
    type.reset();
  }
  if (v.Object(in, "ServerlessConfig", path, false) != nullptr) {
    v.Fail(MemberPath(path, "ServerlessConfig"), "{...}",
           "carve serves instance-based variants only; serverless variants are not supported");
  }
  if (!in.contains("ServerlessConfig")) {
    if (!type && !in.contains("InstanceType")) {
      v.Fail(MemberPath(path, "InstanceType"), std::nullopt, "Member must not be null");
    }
    if (!count && !in.contains("InitialInstanceCount")) {
      v.Fail(MemberPath(path, "InitialInstanceCount"), std::nullopt, "Member must not be null");
    }
  }
  const std::string layouts_path = MemberPath(path, "AcceleratorPartitionLayouts");
  if (const json* layouts = v.List(in, "AcceleratorPartitionLayouts", path, 1, 32, false)) {
    spec.layout_entries = static_cast<int>(layouts->size());
    for (size_t i = 0; i < layouts->size(); ++i) {
      const std::string lp = ElementPath(layouts_path, i);
      const json* types = v.List((*layouts)[i], "AcceleratorPartitionTypes", lp, 0, 32, true);
      if (types == nullptr) continue;
      std::vector<std::string> names;
      const std::string tp = MemberPath(lp, "AcceleratorPartitionTypes");
      for (size_t j = 0; j < types->size(); ++j) {
        // Elements are checked in place: wrap each in an object to reuse the member accessor.
        json holder = {{"member", (*types)[j]}};
        auto t =
            v.String(holder, "member", fmt::format("{}.{}", tp, j + 1), kPartitionTypeRule, true);
        if (t) names.push_back(*t);
      }
      if (i == 0) spec.partition_types = std::move(names);
    }
  }
  if (!v.ok() && ok_before) return std::nullopt;
  if (!name || !type || !count) return std::nullopt;
  spec.name = *name;
  spec.model_name = model.value_or("");
  spec.instance_type = *type;
  spec.instance_count = static_cast<int>(*count);
  spec.inference_ami = ami.value_or("");
  spec.startup_timeout_s = static_cast<int>(startup.value_or(0));
  spec.desired_weight = spec.weight = weight.value_or(1.0);
  spec.managed = managed;
  return spec;
}

Result<std::pair<const catalog::InstanceType*, const catalog::GpuModel*>> VariantHardware(
    const VariantSpec& variant) {
  CARVE_ASSIGN_OR_RETURN(const catalog::InstanceType* type,
                         catalog::FindInstanceType(variant.instance_type));
  CARVE_ASSIGN_OR_RETURN(const catalog::GpuModel* gpu, catalog::FindGpu(type->gpu_id));
  return std::make_pair(type, gpu);
}

Result<core::Layout> CheckVariantLayout(const VariantSpec& variant) {
  if (!variant.partition_types) return core::Layout{};
  if (variant.layout_entries != 1) {
    return InvalidArgument(fmt::format(
        "Variant {} declares {} AcceleratorPartitionLayouts; exactly one is supported: it "
        "describes how every accelerator of every instance in the variant is carved.",
        variant.name, variant.layout_entries));
  }
  auto hw = VariantHardware(variant);
  if (!hw.has_value()) return InvalidArgument(hw.error().message);
  auto driver = DriverOf(variant.instance_type, variant.inference_ami);
  if (!driver.has_value()) {
    return InvalidArgument(fmt::format("Variant {}: {}", variant.name, driver.error().message));
  }
  core::LayoutOptions options;
  options.sagemaker_rules = true;
  if (*driver) options.driver = (*driver)->driver;
  auto layout = core::ValidateLayout(*hw->second, *variant.partition_types, options);
  if (!layout.has_value()) {
    std::string message = layout.error().message;
    // A driver rule (FailedPrecondition): say where the driver comes from and which images lift
    // it, so the fix is one member away.
    if (layout.error().code == ErrorCode::kFailedPrecondition && *driver) {
      std::vector<std::string> lifts;
      for (const InferenceAmi& ami : InferenceAmis()) {
        if (ami.driver.IsUnset() || ami.driver <= (*driver)->driver) continue;
        core::LayoutOptions newer = options;
        newer.driver = ami.driver;
        if (core::ValidateLayout(*hw->second, *variant.partition_types, newer).has_value()) {
          lifts.push_back(fmt::format("{} (driver {})", ami.name, ami.driver.ToString()));
        }
      }
      message += fmt::format(". Driver {} is that of {}", (*driver)->driver.ToString(),
                             (*driver)->source);
      if (!lifts.empty()) {
        message += fmt::format("; set InferenceAmiVersion to one that provides it: {}",
                               Join(lifts));
      }
    }
    // Every layout refusal is the caller's input (400 ValidationException), whatever code the
    // layout engine chose for it.
    return InvalidArgument(
        fmt::format("AcceleratorPartitionLayouts of variant {} does not fit {} ({} x {}): {}",
                    variant.name, variant.instance_type, hw->first->gpu_count,
                    hw->second->display_name, message));
  }
  return layout;
}

json LayoutToJson(const core::Layout& layout) {
  json out = json::array();
  for (const auto& inst : layout.instances) {
    out.push_back({{"Profile", inst.profile->name}, {"Start", inst.start}});
  }
  return out;
}

Result<core::Layout> LayoutFromJson(const VariantSpec& variant, const json& j) {
  CARVE_ASSIGN_OR_RETURN(auto hw, VariantHardware(variant));
  std::vector<std::pair<std::string, int>> placements;
  try {
    for (const auto& p : j) {
      placements.emplace_back(p.at("Profile").get<std::string>(), p.at("Start").get<int>());
    }
  } catch (const json::exception& e) {
    return Internal(
        fmt::format("stored layout of variant {} is malformed: {}", variant.name, e.what()));
  }
  return core::LayoutAt(*hw.second, placements);
}

std::string LayoutName(const VariantSpec& variant) {
  if (!variant.partition_types) return "none (whole GPUs)";
  return "[" + Join(*variant.partition_types) + "]";
}

json VariantToJson(const VariantSpec& v) {
  json j = {{"VariantName", v.name},
            {"ModelName", v.model_name},
            {"InstanceType", v.instance_type},
            {"InitialInstanceCount", v.instance_count},
            {"Nodes", v.nodes},
            {"RoutingStrategy", NameOf(v.routing_strategy)}};
  if (v.startup_timeout_s > 0) j["StartupTimeoutSeconds"] = v.startup_timeout_s;
  if (!v.draining.empty()) j["Draining"] = v.draining;
  if (v.managed) {
    j["Managed"] = {{"Enabled", v.managed->enabled},
                    {"Min", v.managed->min},
                    {"Max", v.managed->max}};
  }
  j["DesiredWeight"] = v.desired_weight;
  j["Weight"] = v.weight;
  if (v.partition_types) {
    j["PartitionTypes"] = *v.partition_types;
    j["Layout"] = LayoutToJson(v.layout);
  }
  return j;
}

Result<VariantSpec> VariantFromJson(const json& j) {
  try {
    VariantSpec v;
    v.name = j.at("VariantName").get<std::string>();
    v.model_name = j.value("ModelName", "");
    v.instance_type = j.at("InstanceType").get<std::string>();
    v.instance_count = j.at("InitialInstanceCount").get<int>();
    if (j.contains("PartitionTypes")) {
      v.partition_types = j.at("PartitionTypes").get<std::vector<std::string>>();
      v.layout_entries = 1;
      if (j.contains("Layout")) {
        CARVE_ASSIGN_OR_RETURN(v.layout, LayoutFromJson(v, j.at("Layout")));
      } else {
        // Written before layouts were kept: place it once; the caller rewrites the record.
        CARVE_ASSIGN_OR_RETURN(v.layout, CheckVariantLayout(v));
        v.layout_recomputed = true;
      }
    }
    v.nodes = j.value("Nodes", std::vector<std::string>{});
    CARVE_ASSIGN_OR_RETURN(
        v.routing_strategy,
        ParseEnum<RoutingStrategy>(j.value("RoutingStrategy", "LEAST_OUTSTANDING_REQUESTS"),
                                   "RoutingStrategy"));
    v.startup_timeout_s = j.value("StartupTimeoutSeconds", 0);
    v.draining = j.value("Draining", std::vector<std::string>{});
    if (j.contains("Managed")) {
      const json& m = j.at("Managed");
      v.managed = VariantSpec::ManagedScaling{m.at("Enabled").get<bool>(), m.at("Min").get<int>(),
                                              m.at("Max").get<int>()};
    }
    v.desired_weight = j.value("DesiredWeight", 1.0);
    v.weight = j.value("Weight", 1.0);
    return v;
  } catch (const json::exception& e) {
    return Internal(fmt::format("stored variant is malformed: {}", e.what()));
  }
}

}  // namespace carve::server::sagemaker
