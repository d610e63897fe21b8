// What one bench cell (a scenario at one concurrency) measured: the per-request outcomes a
// target reports, and their summary with genai-bench's metric definitions
// (perf-anchors.md 3d):
//   TTFT   = first output token's arrival - request start
//   ITL    = (end-to-end - TTFT) / (output tokens - 1), per request (genai-bench's TPOT)
//   output tok/s = sum of output tokens of successful requests / the cell's wall time
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace carve::loadgen {

enum class OutcomeKind { kOk, kError, kDeadline };

struct RequestOutcome {
  OutcomeKind kind = OutcomeKind::kOk;
  double ttft_s = -1;           // < 0: no token arrived
  double e2e_s = 0;             // request start to the end of the stream (or the failure)
  int64_t input_tokens = 0;     // as asked
  int64_t output_tokens = 0;    // as the server reported (usage), else the chunks counted
  std::string error;            // why, for kError / kDeadline
};

// Linear interpolation between closest ranks (numpy's default): q in [0, 1]. nullopt when
// `values` is empty. Does not require `values` sorted.
std::optional<double> Percentile(std::vector<double> values, double q);

struct CellMetrics {
  int64_t requests = 0;          // finished (every kind)
  int64_t errors = 0;            // kError
  int64_t deadline_failures = 0;  // kDeadline, counted apart from errors
  double wall_s = 0;
  int64_t output_tokens = 0;     // of successful requests
  double output_tok_s = 0;
  double requests_per_s = 0;     // successful requests / wall time
  std::optional<double> ttft_p50_s, ttft_p90_s, ttft_p99_s;
  std::optional<double> itl_p50_s, itl_p99_s;
  std::optional<double> e2e_p50_s, e2e_p99_s;
  std::string first_error;       // one example, for the report

  double error_rate() const {
    return requests == 0 ? 0 : static_cast<double>(errors + deadline_failures) / requests;
  }
};

// Summarises the outcomes of one cell run for `wall_s` seconds. Latency percentiles cover
// successful requests only; ITL covers those with at least two output tokens.
CellMetrics Summarise(const std::vector<RequestOutcome>& outcomes, double wall_s);

}  // namespace carve::loadgen
