// Running one bench cell: `concurrency` workers in a closed loop (each sends its next request
// as soon as its previous one ends), until a request count or a duration is reached.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>

#include "loadgen/cell_metrics.h"
#include "loadgen/load_scenario.h"
#include "loadgen/target.h"

namespace carve::loadgen {

struct CellPlan {
  LoadScenario scenario;
  int concurrency = 1;
  // Stop conditions; at least one must be set. With both, whichever comes first. Requests are
  // numbered; with a count, exactly that many are sent. With a duration, no request starts
  // after it, and those in flight are waited for.
  std::optional<int64_t> requests;
  std::optional<std::chrono::milliseconds> duration;
  std::chrono::milliseconds timeout{std::chrono::minutes(5)};  // per request
  uint64_t seed = 0;
  uint64_t cell_index = 0;  // request n of cell c gets RequestRng(seed, c, n)
};

// Called after each finished request, from worker threads, serialised: requests finished so
// far and seconds since the cell started.
using CellProgress = std::function<void(int64_t finished, double elapsed_s)>;

// InvalidArgument when concurrency < 1, neither stop condition is set, or one is not positive.
// Otherwise the metrics (a failed request is a counted outcome, not an error).
Result<CellMetrics> RunCell(const Target& target, const CellPlan& plan,
                            const CellProgress& progress = nullptr);

}  // namespace carve::loadgen
