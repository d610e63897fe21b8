// `carve gpus`, `carve instance-types`, `carve profiles --gpu G`: print the catalog as aligned
// tables, or as JSON with the global --json flag. Exit 1 (reason on stderr) for an unknown GPU,
// a GPU without MIG, or an unreadable price file.
#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "catalog/catalog.h"
#include "catalog/lookup.h"
#include "catalog/price_overrides.h"
#include "cli/commands.h"
#include "cli/table.h"

namespace carve::cli {
namespace {

using catalog::Confidence;
using catalog::GpuModel;
using catalog::InstanceType;
using catalog::MigProfile;
using Json = nlohmann::ordered_json;

// 0 means "not known" in the tables; say so rather than print a misleading zero.
std::string OrUnknown(double value, int decimals = 0) {
  return value > 0 ? fmt::format("{:.{}f}", value, decimals) : "?";
}

// BF16 tensor cores arrived with Ampere (compute capability 8.0); older GPUs have none.
std::string Bf16(const GpuModel& g) {
  if (g.bf16_tflops == 0 && !g.compute_capability.empty() && g.compute_capability < "8.0") {
    return "-";
  }
  return OrUnknown(g.bf16_tflops);
}

std::string Fp8(const GpuModel& g) {
  if (!g.has_fp8()) {
    return "-";
  }
  return OrUnknown(g.fp8_tflops);
}

std::string GiB(int64_t mib) { return fmt::format("{:.1f}", static_cast<double>(mib) / 1024); }

std::string StartsText(const MigProfile& p) {
  std::string out;
  for (uint8_t s : p.starts) {
    out += (out.empty() ? "" : ",") + std::to_string(s);
  }
  return out;
}

// The driver a profile needs: its own minimum when it has one, else the GPU's.
catalog::DriverVersion EffectiveMinDriver(const GpuModel& g, const MigProfile& p) {
  return p.min_driver.IsUnset() ? g.min_driver : p.min_driver;
}

std::string PciText(uint32_t pci) { return fmt::format("0x{:08X}", pci); }

Json GpuJson(const GpuModel& g) {
  Json pci = Json::array();
  for (uint32_t id : g.pci_device_ids) {
    pci.push_back(PciText(id));
  }
  Json j = {{"id", g.id},
            {"display_name", g.display_name},
            {"aliases", std::vector<std::string>(g.aliases.begin(), g.aliases.end())},
            {"pci_device_ids", pci},
            {"architecture", g.architecture},
            {"compute_capability", g.compute_capability},
            {"sms", g.sms},
            {"memory_mib", g.memory_mib},
            {"bandwidth_gbps", g.bandwidth_gbps},
            {"bf16_tflops", g.bf16_tflops},
            {"fp8_tflops", g.fp8_tflops},
            {"fp8_supported", g.has_fp8()},
            {"mig_capable", g.mig_capable()}};
  if (g.mig_capable()) {
    j["compute_slices"] = g.compute_slices;
    j["memory_slices"] = g.memory_slices;
    j["placement_units"] = g.placement_units;
    j["max_gpu_instances"] = g.max_gpu_instances;
    j["min_driver"] = g.min_driver.ToString();
    j["placement_confidence"] = catalog::ConfidenceName(g.placement_confidence);
    j["profiles"] = g.profiles.size();
  }
  j["notes"] = g.notes;
  j["sources"] = std::vector<std::string>(g.sources.begin(), g.sources.end());
  return j;
}

int RunGpus(const Context& ctx) {
  if (ctx.json) {
    Json gpus = Json::array();
    for (const GpuModel& g : catalog::AllGpus()) {
      gpus.push_back(GpuJson(g));
    }
    std::cout << Json{{"gpus", gpus}}.dump(2) << "\n";
    return 0;
  }
  std::vector<std::vector<std::string>> rows = {{"ID", "NAME", "ARCH", "SMS", "MEM_GIB", "BW_GBPS",
                                                 "BF16_TF", "FP8_TF", "MIG", "PROFILES",
                                                 "MIN_DRIVER", "CONFIDENCE"}};
  for (const GpuModel& g : catalog::AllGpus()) {
    bool mig = g.mig_capable();
    rows.push_back({std::string(g.id), std::string(g.display_name), std::string(g.architecture),
                    OrUnknown(g.sms), GiB(g.memory_mib), OrUnknown(g.bandwidth_gbps), Bf16(g),
                    Fp8(g), mig ? fmt::format("{}c/{}m", g.compute_slices, g.memory_slices) : "-",
                    mig ? std::to_string(g.profiles.size()) : "-",
                    mig ? g.min_driver.ToString() : "-",
                    mig ? std::string(catalog::ConfidenceName(g.placement_confidence)) : "-"});
  }
  PrintTable(rows);
  return 0;
}

Result<catalog::PriceOverrides> ReadPrices(const std::string& path) {
  if (path.empty()) {
    return catalog::PriceOverrides{};
  }
  std::ifstream in(path);
  if (!in) {
    return InvalidArgument(fmt::format("--prices {}: cannot open the file", path));
  }
  std::stringstream text;
  text << in.rdbuf();
  auto prices = catalog::LoadPriceOverrides(text.str());
  if (!prices) {
    return InvalidArgument(fmt::format("--prices {}: {}", path, prices.error().message));
  }
  return prices;
}

int RunInstanceTypes(const Context& ctx, const std::string& prices_path) {
  auto prices = ReadPrices(prices_path);
  if (!prices) {
    std::cerr << "carve instance-types: " << prices.error().message << "\n";
    return 1;
  }
  auto source = [&](const InstanceType& t) {
    return prices->contains(t.id) ? std::string("override from ") + prices_path
                                  : std::string(t.price_source);
  };
  if (ctx.json) {
    Json types = Json::array();
    for (const InstanceType& t : catalog::AllInstanceTypes()) {
      types.push_back({{"id", t.id},
                       {"gpu", t.gpu_id},
                       {"gpu_count", t.gpu_count},
                       {"vcpus", t.vcpus},
                       {"memory_mib", t.memory_mib},
                       {"usd_per_hour", catalog::PriceUsdPerHour(t, *prices)},
                       {"price_source", source(t)}});
    }
    std::cout << Json{{"instance_types", types}}.dump(2) << "\n";
    return 0;
  }
  std::vector<std::vector<std::string>> rows = {
      {"ID", "GPU", "GPUS", "VCPUS", "MEM_GIB", "USD_PER_HOUR", "PRICE_SOURCE"}};
  for (const InstanceType& t : catalog::AllInstanceTypes()) {
    double price = catalog::PriceUsdPerHour(t, *prices);
    rows.push_back({std::string(t.id), std::string(t.gpu_id), std::to_string(t.gpu_count),
                    std::to_string(t.vcpus), GiB(t.memory_mib),
                    price > 0 ? fmt::format("{:.4f}", price) : "?", source(t)});
  }
  PrintTable(rows);
  return 0;
}

int RunProfiles(const Context& ctx, const std::string& gpu_name) {
  auto gpu = catalog::FindGpu(gpu_name);
  if (!gpu) {
    std::cerr << "carve profiles: " << gpu.error().message << "\n";
    return 1;
  }
  const GpuModel& g = **gpu;
  if (!g.mig_capable()) {
    std::cerr << "carve profiles: " << g.id
              << " does not support MIG; share it whole or with mGPU fractions\n";
    return 1;
  }
  if (ctx.json) {
    Json profiles = Json::array();
    for (const MigProfile& p : g.profiles) {
      profiles.push_back({{"name", p.name},
                          {"sagemaker_name", catalog::SageMakerName(p)},
                          {"id", p.id.value()},
                          {"nvml_enum", p.nvml_enum},
                          {"compute_slices", p.compute_slices},
                          {"memory_slices", p.memory_slices},
                          {"memory_mib", p.memory_mib},
                          {"sms", p.sms},
                          {"max_count", p.max_count},
                          {"starts", std::vector<int>(p.starts.begin(), p.starts.end())},
                          {"placement_size", p.placement_size},
                          {"min_driver", EffectiveMinDriver(g, p).ToString()},
                          {"suffix", catalog::SuffixText(p.suffix)},
                          {"confidence", catalog::ConfidenceName(p.confidence)},
                          {"note", p.note}});
    }
    std::cout << Json{{"gpu", g.id}, {"placement_units", g.placement_units}, {"profiles", profiles}}
                     .dump(2)
              << "\n";
    return 0;
  }
  std::cout << fmt::format("{} ({}): {} compute slices, {} memory slices, {} placement units\n",
                           g.id, g.display_name, g.compute_slices, g.memory_slices,
                           g.placement_units);
  std::vector<std::vector<std::string>> rows = {{"PROFILE", "ID", "CS", "MS", "MEM_MIB", "SMS",
                                                 "MAX", "STARTS", "SIZE", "MIN_DRIVER", "SUFFIX",
                                                 "CONFIDENCE"}};
  for (const MigProfile& p : g.profiles) {
    std::string_view suffix = catalog::SuffixText(p.suffix);
    rows.push_back({catalog::SageMakerName(p), std::to_string(p.id.value()),
                    std::to_string(p.compute_slices), std::to_string(p.memory_slices),
                    std::to_string(p.memory_mib), OrUnknown(p.sms), std::to_string(p.max_count),
                    StartsText(p), std::to_string(p.placement_size),
                    EffectiveMinDriver(g, p).ToString(), suffix.empty() ? "-" : std::string(suffix),
                    std::string(catalog::ConfidenceName(p.confidence))});
  }
  PrintTable(rows);
  return 0;
}

}  // namespace

void RegisterCatalogCommands(CLI::App& app, Context& ctx) {
  app.add_subcommand("gpus", "List the GPU models in the catalog")->callback([&ctx] {
    ctx.exit_code = RunGpus(ctx);
  });

  auto* types = app.add_subcommand("instance-types", "List instance types, GPUs and prices");
  auto prices_path = std::make_shared<std::string>();
  types->add_option("--prices", *prices_path,
                    "YAML file whose 'prices:' map overrides USD per hour by instance type");
  types->callback([&ctx, prices_path] { ctx.exit_code = RunInstanceTypes(ctx, *prices_path); });

  auto* profiles = app.add_subcommand("profiles", "List a GPU's MIG profiles");
  auto gpu = std::make_shared<std::string>();
  profiles->add_option("--gpu", *gpu, "GPU id, name or alias, e.g. h100-80gb")->required();
  profiles->callback([&ctx, gpu] { ctx.exit_code = RunProfiles(ctx, *gpu); });
}

}  // namespace carve::cli
