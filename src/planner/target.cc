#include "planner/target.h"

#include <algorithm>

#include <fmt/format.h>

#include "catalog/catalog.h"

namespace carve::planner {

std::string Target::Name() const {
  if (profile == nullptr) return std::string(gpu->id);
  return fmt::format("{}:{}", gpu->id, profile->name);
}

Result<Target> ParseTarget(std::string_view text) {
  auto colon = text.find(':');
  std::string_view gpu_name = text.substr(0, colon);
  CARVE_ASSIGN_OR_RETURN(const catalog::GpuModel* gpu, catalog::FindGpu(gpu_name));
  Target t{gpu, nullptr};
  if (colon == std::string_view::npos) return t;
  std::string_view profile_name = text.substr(colon + 1);
  if (profile_name == "whole" || profile_name == "full") return t;
  CARVE_ASSIGN_OR_RETURN(t.profile, catalog::FindProfile(*gpu, profile_name));
  return t;
}

Result<std::vector<Target>> ParseTargets(std::string_view text) {
  std::vector<Target> out;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t comma = text.find(',', pos);
    if (comma == std::string_view::npos) comma = text.size();
    std::string_view item = text.substr(pos, comma - pos);
    if (!item.empty()) {
      CARVE_ASSIGN_OR_RETURN(Target t, ParseTarget(item));
      out.push_back(t);
    }
    pos = comma + 1;
  }
  if (out.empty()) return InvalidArgument(fmt::format("targets '{}' names no target", text));
  return out;
}

std::vector<Target> EnumerateTargets(const std::vector<const catalog::GpuModel*>& gpus) {
  std::vector<const catalog::GpuModel*> list = gpus;
  if (list.empty()) {
    for (const catalog::GpuModel& g : catalog::AllGpus()) list.push_back(&g);
  }
  std::vector<Target> out;
  for (const catalog::GpuModel* g : list) {
    out.push_back(Target{g, nullptr});
    for (const catalog::MigProfile& p : g->profiles) {
      if (p.suffix == catalog::ProfileSuffix::kNone) out.push_back(Target{g, &p});
    }
  }
  return out;
}

Result<Precision> ParsePrecision(std::string_view text) {
  if (text.find('=') == std::string_view::npos) {
    CARVE_ASSIGN_OR_RETURN(Dtype d, ParseDtype(text));
    return Precision{d, d};
  }
  Precision p;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t comma = std::min(text.find(',', pos), text.size());
    std::string_view item = text.substr(pos, comma - pos);
    size_t eq = item.find('=');
    std::string_view key = item.substr(0, eq);
    if (eq == std::string_view::npos || (key != "w" && key != "weights" && key != "kv")) {
      return InvalidArgument(fmt::format(
          "precision item '{}' is not w=<dtype> or kv=<dtype> (e.g. 'w=fp8,kv=bf16')", item));
    }
    CARVE_ASSIGN_OR_RETURN(Dtype d, ParseDtype(item.substr(eq + 1)));
    (key == "kv" ? p.kv : p.weights) = d;
    pos = comma + 1;
  }
  return p;
}

std::string PrecisionName(Precision p) {
  if (p.weights == p.kv) return std::string(DtypeName(p.weights));
  return fmt::format("w={},kv={}", DtypeName(p.weights), DtypeName(p.kv));
}

double GpuShare(const Target& t) {
  if (t.profile == nullptr || t.gpu->compute_slices == 0 || t.gpu->memory_slices == 0) return 1;
  double compute = static_cast<double>(t.profile->compute_slices) / t.gpu->compute_slices;
  double memory = static_cast<double>(t.profile->memory_slices) / t.gpu->memory_slices;
  return std::max(compute, memory);
}

Result<Hardware> HardwareFor(const Target& t, Precision p) {
  const catalog::GpuModel& g = *t.gpu;
  bool fp8 = p.weights == Dtype::kFp8 || p.kv == Dtype::kFp8;
  if (fp8 && !g.has_fp8()) {
    return InvalidArgument(fmt::format(
        "{} has no FP8 support ({} architecture); precision {} needs FP8, use bf16", g.id,
        g.architecture, PrecisionName(p)));
  }
  double tflops = p.weights == Dtype::kFp8 ? g.fp8_tflops : g.bf16_tflops;
  if (g.sms <= 0 || g.bandwidth_gbps <= 0 || tflops <= 0) {
    return FailedPrecondition(fmt::format(
        "the catalog lacks {} for {} (sms={}, bandwidth_gbps={}, {}_tflops={}); the "
        "performance model cannot price it",
        g.sms <= 0 ? "the SM count" : g.bandwidth_gbps <= 0 ? "the bandwidth" : "the TFLOP/s",
        g.id, g.sms, g.bandwidth_gbps, DtypeName(p.weights), tflops));
  }
  Hardware h;
  h.gpu_share = GpuShare(t);
  if (t.profile == nullptr) {
    h.sms = g.sms;
    h.bandwidth_bytes_s = g.bandwidth_gbps * 1e9;
    h.memory_bytes = g.memory_mib * 1024 * 1024;
  } else {
    const catalog::MigProfile& pr = *t.profile;
    if (pr.sms > 0) {
      h.sms = pr.sms;
    } else {
      h.sms_from_catalog = false;
      h.sms = g.compute_slices > 0 ? g.sms * pr.compute_slices / g.compute_slices : g.sms;
    }
    double mem_fraction =
        g.memory_slices > 0 ? static_cast<double>(pr.memory_slices) / g.memory_slices : 1.0;
    h.bandwidth_bytes_s = g.bandwidth_gbps * 1e9 * mem_fraction;
    h.memory_bytes = pr.memory_mib * 1024 * 1024;
  }
  h.peak_flops = tflops * 1e12 * h.sms / g.sms;
  return h;
}

}  // namespace carve::planner
