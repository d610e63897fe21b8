// GPUs without MIG that carve shares whole or as mGPU fractions: L4, L40S, A10G, T4.
// Hand-written (the MIG reference does not cover them). Figures are NVIDIA datasheet values;
// TFLOP/s are dense (the datasheets quote sparse, 2x). Each row cites its sources.
#include "catalog/data/tables.h"

namespace carve::catalog::data {
namespace {

// L4: NVIDIA L4 Tensor Core GPU datasheet (nvidia.com/en-us/data-center/l4/): 24 GB GDDR6,
// 300 GB/s, BF16 242 / FP8 485 TFLOP/s with sparsity. AD104, 58 SMs (7,424 CUDA cores / 128).
constexpr std::string_view kL4Aliases[] = {"NVIDIA L4", "L4-24GB"};
constexpr uint32_t kL4Pci[] = {0x27B810DE};
constexpr std::string_view kL4Sources[] = {
    "https://www.nvidia.com/en-us/data-center/l4/ (datasheet)",
    "PCI id 0x27B8: pci.ids (10de:27b8 AD104GL [L4])",
};

// L40S: NVIDIA L40S datasheet (nvidia.com/en-us/data-center/l40s/): 48 GB GDDR6, 864 GB/s,
// BF16 362.05 dense (733 sparse), FP8 733 dense (1,466 sparse) TFLOP/s. AD102, 142 SMs
// (18,176 CUDA cores / 128).
constexpr std::string_view kL40sAliases[] = {"NVIDIA L40S", "L40S-48GB"};
constexpr uint32_t kL40sPci[] = {0x26B910DE};
constexpr std::string_view kL40sSources[] = {
    "https://www.nvidia.com/en-us/data-center/l40s/ (datasheet)",
    "PCI id 0x26B9: pci.ids (10de:26b9 AD102GL [L40S])",
};

// A10G: the AWS variant of the A10 (GA102, 80 SMs, 24 GB GDDR6, 600 GB/s) in EC2 G5. NVIDIA
// publishes no A10G datasheet; the A10 datasheet gives BF16 125 TFLOP/s dense (250 sparse) and
// the A10G runs at lower tensor clocks, so the figure is an upper bound (medium confidence).
constexpr std::string_view kA10gAliases[] = {"NVIDIA A10G", "A10G-24GB"};
constexpr uint32_t kA10gPci[] = {0x223710DE};
constexpr std::string_view kA10gSources[] = {
    "https://www.nvidia.com/en-us/data-center/products/a10-gpu/ (A10 datasheet)",
    "https://aws.amazon.com/ec2/instance-types/g5/ (A10G, 24 GB per GPU)",
    "PCI id 0x2237: pci.ids (10de:2237 GA102GL [A10G])",
};

// T4: NVIDIA T4 datasheet (nvidia.com/en-us/data-center/tesla-t4/): 16 GB GDDR6, 320 GB/s,
// FP16 65 TFLOP/s; Turing has neither BF16 nor FP8 tensor cores. TU104, 40 SMs.
constexpr std::string_view kT4Aliases[] = {"Tesla T4", "NVIDIA T4", "T4-16GB"};
constexpr uint32_t kT4Pci[] = {0x1EB810DE};
constexpr std::string_view kT4Sources[] = {
    "https://www.nvidia.com/en-us/data-center/tesla-t4/ (datasheet)",
    "PCI id 0x1EB8: pci.ids (10de:1eb8 TU104GL [Tesla T4])",
};

constexpr GpuModel kGpus[] = {
    {.id = "l4",
     .display_name = "L4-24GB",
     .aliases = kL4Aliases,
     .pci_device_ids = kL4Pci,
     .architecture = "Ada Lovelace AD104",
     .sms = 58,
     .memory_mib = 24576,
     .bandwidth_gbps = 300,
     .bf16_tflops = 121,
     .fp8_tflops = 242.5,
     .compute_slices = 0,
     .memory_slices = 0,
     .placement_units = 0,
     .max_gpu_instances = 0,
     .min_driver = {},
     .placement_confidence = Confidence::kHigh,
     .profiles = {},
     .sources = kL4Sources,
     .notes = "no MIG; datasheet TFLOP/s halved to dense",
     .fp8_supported = true,
     .compute_capability = "8.9"},
    {.id = "l40s",
     .display_name = "L40S-48GB",
     .aliases = kL40sAliases,
     .pci_device_ids = kL40sPci,
     .architecture = "Ada Lovelace AD102",
     .sms = 142,
     .memory_mib = 49152,
     .bandwidth_gbps = 864,
     .bf16_tflops = 362.05,
     .fp8_tflops = 733,
     .compute_slices = 0,
     .memory_slices = 0,
     .placement_units = 0,
     .max_gpu_instances = 0,
     .min_driver = {},
     .placement_confidence = Confidence::kHigh,
     .profiles = {},
     .sources = kL40sSources,
     .notes = "no MIG; datasheet dense TFLOP/s",
     .fp8_supported = true,
     .compute_capability = "8.9"},
    {.id = "a10g",
     .display_name = "A10G-24GB",
     .aliases = kA10gAliases,
     .pci_device_ids = kA10gPci,
     .architecture = "Ampere GA102",
     .sms = 80,
     .memory_mib = 24576,
     .bandwidth_gbps = 600,
     .bf16_tflops = 125,
     .fp8_tflops = 0,
     .compute_slices = 0,
     .memory_slices = 0,
     .placement_units = 0,
     .max_gpu_instances = 0,
     .min_driver = {},
     .placement_confidence = Confidence::kHigh,
     .profiles = {},
     .sources = kA10gSources,
     .notes = "no MIG; BF16 is the A10 datasheet figure, an upper bound for the A10G (medium "
              "confidence); no FP8",
     .fp8_supported = false,
     .compute_capability = "8.6"},
    {.id = "t4",
     .display_name = "T4-16GB",
     .aliases = kT4Aliases,
     .pci_device_ids = kT4Pci,
     .architecture = "Turing TU104",
     .sms = 40,
     .memory_mib = 16384,
     .bandwidth_gbps = 320,
     .bf16_tflops = 0,
     .fp8_tflops = 0,
     .compute_slices = 0,
     .memory_slices = 0,
     .placement_units = 0,
     .max_gpu_instances = 0,
     .min_driver = {},
     .placement_confidence = Confidence::kHigh,
     .profiles = {},
     .sources = kT4Sources,
     .notes = "no MIG; no BF16 or FP8 (Turing): FP16 65 TFLOP/s dense",
     .fp8_supported = false,
     .compute_capability = "7.5"},
};

}  // namespace

std::span<const GpuModel> WholeGpus() { return kGpus; }

}  // namespace carve::catalog::data
