// `carve layout check` and `carve layout list`: validate a MIG layout with placements, or list
// every maximal layout of a GPU. Exit 0 when valid, 1 when the layout is rejected or a GPU,
// instance type or profile is unknown (reasons on stderr), 2 for a malformed --driver.
#include <fmt/format.h>

#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "catalog/catalog.h"
#include "cli/commands.h"
#include "core/layout_enumerator.h"
#include "core/layout_validator.h"

namespace carve::cli {
namespace {

using catalog::GpuModel;
using catalog::InstanceType;
using catalog::MigProfile;
using core::Layout;
using core::PlacedInstance;
using Json = nlohmann::ordered_json;

struct CheckArgs {
  std::string gpu;
  std::string instance_type;
  std::string driver;
  bool sagemaker = false;
  std::vector<std::string> profiles;
};

struct ListArgs {
  std::string gpu;
  std::string driver;
  bool sagemaker = false;
  std::vector<std::string> profiles;
};

// Every line of a message on stderr, each prefixed so a user sees it came from carve.
void PrintReasons(const std::string& message) {
  size_t from = 0;
  while (from <= message.size()) {
    size_t to = message.find('\n', from);
    if (to == std::string::npos) {
      to = message.size();
    }
    std::cerr << "carve: " << message.substr(from, to - from) << "\n";
    from = to + 1;
  }
}

std::vector<std::string> Lines(const std::string& message) {
  std::vector<std::string> out;
  size_t from = 0;
  while (from <= message.size()) {
    size_t to = message.find('\n', from);
    if (to == std::string::npos) {
      to = message.size();
    }
    out.push_back(message.substr(from, to - from));
    from = to + 1;
  }
  return out;
}

// Exit 2 (usage) for text that is not a driver version; the parsed version otherwise.
Result<std::optional<catalog::DriverVersion>> ParseDriver(const std::string& text) {
  if (text.empty()) {
    return std::optional<catalog::DriverVersion>();
  }
  CARVE_ASSIGN_OR_RETURN(catalog::DriverVersion v, catalog::DriverVersion::Parse(text));
  return std::optional<catalog::DriverVersion>(v);
}

Json InstanceJson(const PlacedInstance& i) {
  return Json{
      {"profile", i.profile->name}, {"start", i.start}, {"size", i.profile->placement_size}};
}

// The GPU named by --gpu, or the one --instance-type carries; nullptr after printing why not.
const GpuModel* PickGpu(const CheckArgs& args, const InstanceType* type) {
  if (args.gpu.empty() && type == nullptr) {
    std::cerr << "carve: layout check needs --gpu or --instance-type\n";
    return nullptr;
  }
  const std::string& name = args.gpu.empty() ? std::string(type->gpu_id) : args.gpu;
  Result<const GpuModel*> gpu = catalog::FindGpu(name);
  if (!gpu.has_value()) {
    PrintReasons(gpu.error().message);
    return nullptr;
  }
  if (type != nullptr && (*gpu)->id != type->gpu_id) {
    std::cerr << fmt::format("carve: {} carries {} GPUs; --gpu names {}\n", type->id, type->gpu_id,
                             (*gpu)->id);
    return nullptr;
  }
  return *gpu;
}

void PrintCheckText(const Layout& layout, const std::vector<std::string>& names,
                    const InstanceType* type, const core::InstancePartitions* parts) {
  const GpuModel& gpu = *layout.gpu;
  std::string requested;
  for (const std::string& n : names) {
    requested += (requested.empty() ? "" : ", ") + n;
  }
  std::cout << fmt::format("{}: layout [{}] is valid\n", gpu.id, requested);
  std::cout << fmt::format("{:<18}{:>6}{:>6}{:>9}{:>8}\n", "PROFILE", "START", "SIZE", "COMPUTE",
                           "MEMORY");
  int compute = 0;
  int memory = 0;
  for (const PlacedInstance& i : layout.instances) {
    std::cout << fmt::format("{:<18}{:>6}{:>6}{:>9}{:>8}\n", i.profile->name, i.start,
                             i.profile->placement_size, i.profile->compute_slices,
                             i.profile->memory_slices);
    compute += i.profile->compute_slices;
    memory += i.profile->memory_slices;
  }
  std::cout << fmt::format("uses {} of {} compute slices and {} of {} memory slices\n", compute,
                           gpu.compute_slices, memory, gpu.memory_slices);
  if (type == nullptr || parts == nullptr) {
    return;
  }
  std::string per_profile;
  for (const auto& c : parts->counts) {
    per_profile += fmt::format("{}{} x {}", per_profile.empty() ? "" : ", ", c.per_instance,
                               catalog::SageMakerName(*c.profile));
  }
  std::cout << fmt::format("{}: {} GPUs x {} partitions = {} partitions ({})\n", type->id,
                           parts->gpu_count, layout.instances.size(), parts->total, per_profile);
}

int RunCheck(const Context& ctx, const CheckArgs& args) {
  const InstanceType* type = nullptr;
  if (!args.instance_type.empty()) {
    Result<const InstanceType*> found = catalog::FindInstanceType(args.instance_type);
    if (!found.has_value()) {
      PrintReasons(found.error().message);
      return 1;
    }
    type = *found;
  }
  const GpuModel* gpu = PickGpu(args, type);
  if (gpu == nullptr) {
    return 1;
  }
  auto driver = ParseDriver(args.driver);
  if (!driver.has_value()) {
    PrintReasons(driver.error().message);
    return 2;
  }
  core::LayoutOptions options;
  options.driver = *driver;
  options.sagemaker_rules = args.sagemaker || type != nullptr;

  Result<Layout> layout = core::ValidateLayout(*gpu, args.profiles, options);
  if (!layout.has_value()) {
    if (ctx.json) {
      std::cout << Json{{"gpu", gpu->id},
                        {"valid", false},
                        {"reasons", Lines(layout.error().message)}}
                       .dump(2)
                << "\n";
    }
    PrintReasons(layout.error().message);
    return 1;
  }
  std::optional<core::InstancePartitions> parts;
  if (type != nullptr) {
    Result<core::InstancePartitions> counted = core::PartitionsPerInstance(*type, *layout);
    if (!counted.has_value()) {
      PrintReasons(counted.error().message);
      return 1;
    }
    parts = std::move(counted).value();
  }
  if (!ctx.json) {
    PrintCheckText(*layout, args.profiles, type, parts ? &*parts : nullptr);
    return 0;
  }
  Json instances = Json::array();
  for (const PlacedInstance& i : layout->instances) {
    instances.push_back(InstanceJson(i));
  }
  Json out = {{"gpu", gpu->id}, {"valid", true}, {"instances", instances}};
  if (parts) {
    Json per_profile = Json::object();
    for (const auto& c : parts->counts) {
      per_profile[catalog::SageMakerName(*c.profile)] = c.per_instance;
    }
    out["instance_type"] = {{"id", type->id},
                            {"gpu_count", parts->gpu_count},
                            {"partitions", parts->total},
                            {"per_profile", per_profile}};
  }
  std::cout << out.dump(2) << "\n";
  return 0;
}

int RunList(const Context& ctx, const ListArgs& args) {
  Result<const GpuModel*> gpu = catalog::FindGpu(args.gpu);
  if (!gpu.has_value()) {
    PrintReasons(gpu.error().message);
    return 1;
  }
  auto driver = ParseDriver(args.driver);
  if (!driver.has_value()) {
    PrintReasons(driver.error().message);
    return 2;
  }
  core::EnumerateOptions options;
  options.rules.driver = *driver;
  options.rules.sagemaker_rules = args.sagemaker;
  Result<std::vector<const MigProfile*>> chosen = core::ResolveProfiles(**gpu, args.profiles);
  if (!chosen.has_value()) {
    PrintReasons(chosen.error().message);
    return 1;
  }
  options.profiles = std::move(chosen).value();
  Result<std::vector<Layout>> layouts = core::EnumerateMaximalLayouts(**gpu, options);
  if (!layouts.has_value()) {
    PrintReasons(layouts.error().message);
    return 1;
  }
  if (ctx.json) {
    Json all = Json::array();
    for (const Layout& l : *layouts) {
      Json one = Json::array();
      for (const PlacedInstance& i : l.instances) {
        one.push_back(InstanceJson(i));
      }
      all.push_back(one);
    }
    std::cout << Json{{"gpu", (*gpu)->id}, {"layouts", all}}.dump(2) << "\n";
    return 0;
  }
  std::cout << fmt::format("{}: {} maximal layouts (profile@start)\n", (*gpu)->id, layouts->size());
  for (size_t n = 0; n < layouts->size(); ++n) {
    std::string line;
    for (const PlacedInstance& i : (*layouts)[n].instances) {
      line += fmt::format("{}{}@{}", line.empty() ? "" : "  ", i.profile->name, i.start);
    }
    std::cout << fmt::format("{:>4}. {}\n", n + 1, line);
  }
  return 0;
}

}  // namespace

void RegisterLayoutCommands(CLI::App& app, Context& ctx) {
  auto* layout = app.add_subcommand("layout", "Validate or enumerate MIG layouts");
  layout->require_subcommand(1);

  auto check_args = std::make_shared<CheckArgs>();
  auto* check = layout->add_subcommand(
      "check", "Validate a layout (profile names) on a GPU and print where each instance sits");
  check->add_option("--gpu", check_args->gpu, "GPU id, name or alias, e.g. h100-80gb");
  check->add_option("--instance-type", check_args->instance_type,
                    "SageMaker instance type: checks its GPU under SageMaker's rules and counts "
                    "the partitions of the whole instance");
  check->add_option("--driver", check_args->driver,
                    "NVIDIA driver version (525.60.13 or R525); reject what needs a newer one");
  check->add_flag("--sagemaker", check_args->sagemaker,
                  "Apply SageMaker's rules (no +me/-me/+gfx/+me.all profiles, no empty layout)");
  check->add_option("profiles", check_args->profiles,
                    "Profile names, mig-3g.40gb or 3g.40gb; repeat a name for several instances");
  check->callback([&ctx, check_args] { ctx.exit_code = RunCheck(ctx, *check_args); });

  auto list_args = std::make_shared<ListArgs>();
  auto* list = layout->add_subcommand("list", "List every maximal layout of a GPU");
  list->add_option("--gpu", list_args->gpu, "GPU id, name or alias, e.g. a100-40gb")->required();
  list->add_option("--profiles", list_args->profiles,
                   "Only these profiles, comma-separated (1g.5gb,2g.10gb,...)")
      ->delimiter(',');
  list->add_option("--driver", list_args->driver,
                   "NVIDIA driver version; leave out what needs a newer one");
  list->add_flag("--sagemaker", list_args->sagemaker, "Leave out suffixed profiles");
  list->callback([&ctx, list_args] { ctx.exit_code = RunList(ctx, *list_args); });
}

}  // namespace carve::cli
