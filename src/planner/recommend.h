// Recommendation: every target (each partition profile on each GPU, and whole GPUs) that meets
// an SLO for a model and its traffic, ranked by cost per million output tokens; the rest listed
// with the reason they were ruled out; and, for a fleet, a layout packing the winner's copies.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "catalog/driver_version.h"
#include "core/layout.h"
#include "planner/plan_context.h"

namespace carve::planner {

enum class SloMetric { kTtftP50, kTtftP90, kItlP50, kE2eP50, kDeadlineMiss, kTokS };
std::string_view SloMetricName(SloMetric m);

struct SloTerm {
  SloMetric metric = SloMetric::kTtftP50;
  bool at_most = true;  // "<=" (latencies, miss fraction); ">=" for tok_s.
  double value = 0;     // Seconds for latencies, a fraction for misses, tok/s for tok_s.
};

// "ttft_p50<=800ms,itl_p50<=40ms,e2e_p50<=20s,deadline_miss<=0.01,tok_s>=500".
// InvalidArgument names the term and the accepted metrics and units.
Result<std::vector<SloTerm>> ParseSlo(std::string_view text);

// "a100-40gb:8,h100-80gb:8": GPUs a fleet has, by model.
struct FleetGpu {
  const catalog::GpuModel* gpu = nullptr;
  int count = 0;
};
Result<std::vector<FleetGpu>> ParseFleet(std::string_view text);

enum class RuledOut { kNone, kPrecision, kCatalog, kDriver, kMemory, kSlo, kPrice };
std::string_view RuledOutName(RuledOut r);

struct OptionResult {
  Target target;
  RuledOut ruled_out = RuledOut::kNone;
  std::string reason;                 // Why it was ruled out, naming the figure and the rule.
  std::optional<CellResult> cell;     // When it was simulated.
  TargetPrice price;
  std::optional<double> usd_per_mtok;
};

struct LayoutSuggestion {
  const catalog::GpuModel* gpu = nullptr;
  const catalog::MigProfile* profile = nullptr;
  int copies_wanted = 0;
  int per_gpu = 0;                    // Copies one GPU holds (layout engine, maximal).
  int gpus_used = 0;
  int copies_placed = 0;
  core::Layout layout;                // One GPU's carve: `per_gpu` copies, placed.
  std::string note;
};

struct Recommendation {
  std::vector<OptionResult> ranked;   // Meets the SLO, cheapest first.
  std::vector<OptionResult> ruled_out;
  std::optional<LayoutSuggestion> layout;
};

struct RecommendRequest {
  Scenario scenario;
  int concurrency = 1;                // Per copy.
  std::vector<SloTerm> slo;
  std::optional<catalog::DriverVersion> driver;  // Rules out profiles needing a newer driver.
  std::vector<FleetGpu> fleet;        // Empty: every catalog GPU.
  int copies = 1;                     // Copies to pack onto the fleet.
};

// Errors only for bad input (copies < 1); every option's fate is a value.
Result<Recommendation> Recommend(const PlanContext& ctx, const RecommendRequest& req);

// Packs `copies` partitions of one profile onto `count` GPUs of its model with the layout engine:
// every GPU is carved the same way (SageMaker applies one layout per variant), holding as many
// copies as the MIG rules allow. nullopt when the profile cannot be placed at all.
std::optional<LayoutSuggestion> PackCopies(const catalog::GpuModel& gpu,
                                           const catalog::MigProfile& profile, int copies,
                                           int gpu_count,
                                           std::optional<catalog::DriverVersion> driver);

}  // namespace carve::planner
