#include "server/sagemaker/inference_ami.h"

#include <fmt/format.h>

#include <array>

namespace carve::server::sagemaker {
namespace {

using catalog::DriverVersion;

constexpr std::array<InferenceAmi, 5> kAmis = {{
    {"al2-ami-sagemaker-inference-gpu-2", DriverVersion{535, 54, 3}, "GPU"},
    {"al2-ami-sagemaker-inference-gpu-2-1", DriverVersion{535, 0, 0}, "GPU"},
    {"al2-ami-sagemaker-inference-gpu-3-1", DriverVersion{550, 0, 0}, "GPU"},
    {"al2023-ami-sagemaker-inference-gpu-4-1", DriverVersion{580, 0, 0}, "GPU"},
    {"al2-ami-sagemaker-inference-neuron-2", DriverVersion{}, "Inferentia2 and Trainium"},
}};

constexpr std::array<std::string_view, kAmis.size()> kNames = [] {
  std::array<std::string_view, kAmis.size()> out{};
  for (size_t i = 0; i < kAmis.size(); ++i) out[i] = kAmis[i].name;
  return out;
}();

// The default image's driver per instance family (the part of the type before the size).
struct DefaultImage {
  std::string_view family;
  DriverVersion driver;
};
constexpr std::array<DefaultImage, 6> kDefaults = {{
    {"ml.p4d", DriverVersion{470, 256, 2}},
    {"ml.p4de", DriverVersion{470, 0, 0}},
    {"ml.g4dn", DriverVersion{470, 0, 0}},
    {"ml.g5", DriverVersion{470, 0, 0}},
    {"ml.p5", DriverVersion{535, 0, 0}},
    {"ml.g6", DriverVersion{535, 0, 0}},
}};

}  // namespace

std::span<const InferenceAmi> InferenceAmis() { return kAmis; }

std::span<const std::string_view> InferenceAmiNames() { return kNames; }

Result<std::optional<VariantDriver>> DriverOf(std::string_view instance_type,
                                              std::string_view inference_ami) {
  if (!inference_ami.empty()) {
    for (const InferenceAmi& ami : kAmis) {
      if (ami.name != inference_ami) continue;
      if (ami.driver.IsUnset()) {
        return InvalidArgument(fmt::format(
            "InferenceAmiVersion {} is an image for {} accelerators; {} has NVIDIA GPUs",
            ami.name, ami.accelerator, instance_type));
      }
      return std::optional<VariantDriver>(
          VariantDriver{ami.driver, fmt::format("InferenceAmiVersion {}", ami.name)});
    }
    return InvalidArgument(fmt::format("InferenceAmiVersion '{}' is not a known value",
                                       inference_ami));
  }
  const std::string_view family = instance_type.substr(0, instance_type.rfind('.'));
  for (const DefaultImage& d : kDefaults) {
    if (d.family == family) {
      return std::optional<VariantDriver>(VariantDriver{
          d.driver, fmt::format("the default image of {} (no InferenceAmiVersion)",
                                instance_type)});
    }
  }
  return std::optional<VariantDriver>();
}

}  // namespace carve::server::sagemaker
