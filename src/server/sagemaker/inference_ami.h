// InferenceAmiVersion: the host image a production variant runs on, and the NVIDIA driver that
// image ships. MIG profiles have driver minimums (A100-40GB mig-1g.10gb needs R525), so which
// layouts a variant may declare depends on its image; CheckVariantLayout asks VariantDriver.
//
// The values are botocore 1.43.11's ProductionVariantInferenceAmiVersion enum; the drivers are
// those SageMaker documents for each (API reference, ProductionVariant; "Best practices to
// minimize interruptions during GPU driver upgrades"). Without InferenceAmiVersion SageMaker
// runs its default image for the instance family: driver 470 (470.256.02, the seed's note) on
// ml.p4d, ml.p4de, ml.g4dn and ml.g5, and 535 on ml.p5 and ml.g6. For any other family the
// default image's driver is not documented, and carve then checks no driver rule rather than
// guess one.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "catalog/driver_version.h"
#include "common/result.h"

namespace carve::server::sagemaker {

struct InferenceAmi {
  std::string_view name;            // "al2-ami-sagemaker-inference-gpu-2"
  catalog::DriverVersion driver;    // Unset for a Neuron image.
  std::string_view accelerator;     // "GPU" or "Inferentia2 and Trainium"
};

// Every documented value, oldest driver first.
std::span<const InferenceAmi> InferenceAmis();
// The enum's values, for EnumRule.
std::span<const std::string_view> InferenceAmiNames();

// The driver a variant's GPUs run: its InferenceAmiVersion's, or the default image's for the
// instance type. `source` says which, for messages ("InferenceAmiVersion X" / "the default image
// of ml.p4d.24xlarge"). nullopt: the default image of that family is not documented.
struct VariantDriver {
  catalog::DriverVersion driver;
  std::string source;
};
// InvalidArgument: a Neuron image on a GPU instance type.
Result<std::optional<VariantDriver>> DriverOf(std::string_view instance_type,
                                              std::string_view inference_ami);

}  // namespace carve::server::sagemaker
