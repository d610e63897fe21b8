// Simulates a closed-loop benchmark (genai-bench's model: `concurrency` clients, each sending its
// next request as soon as the previous one completes) against a continuously batching engine
// whose step times come from PerfModel.
//
// Engine rules (vLLM-like, each a named assumption in docs/planner.md):
//   - a request is admitted when a batch slot is free; the batch is capped by max_num_seqs and by
//     KV capacity, reserving prompt + output tokens per sequence so admitted work never preempts;
//   - each step first gives every decoding sequence one token, then spends what is left of the
//     max_batched_tokens budget on prompt chunks in admission order (chunked prefill);
//   - a prompt's first token comes out of the step that finishes its prefill.
// Requests that wait for a slot show it in TTFT; a request misses the deadline when its
// end-to-end latency exceeds it. Deterministic: the same inputs give the same cell.
#pragma once

#include <cstdint>

#include "planner/perf_model.h"
#include "planner/scenario.h"

namespace carve::planner {

// A serving-path deadline on end-to-end latency. Default 60 s: SageMaker real-time endpoints
// must answer an invocation within 60 seconds (SageMaker developer guide, InvokeEndpoint).
inline constexpr double kDefaultDeadlineSeconds = 60;

struct SimOptions {
  double deadline_seconds = kDefaultDeadlineSeconds;
  int requests_per_client = 4;  // Rounds each client sends; metrics cover the loaded period.
};

struct CellResult {
  int concurrency = 0;
  double output_tok_s = 0;       // Output tokens / time, while every client still had work.
  double ttft_p50_s = 0;
  double ttft_p90_s = 0;
  double itl_p50_s = 0;          // Per request (e2e - ttft) / (out - 1), median.
  double e2e_p50_s = 0;
  double deadline_miss_fraction = 0;
  Resource binding = Resource::kBandwidth;
  int64_t batch_limit = 0;       // Most sequences running at once.
  bool kv_limited = false;       // batch_limit was set by KV capacity, below the concurrency.
  double mean_batch = 0;         // Mean sequences per step.
  double compute_busy_fraction = 0;  // Share of step time bound by compute.
  int64_t requests = 0;          // Requests the metrics cover.
};

// When a single request's prompt + output exceeds the KV capacity nothing can be served: every
// request misses and binding is kKvCapacity.
CellResult SimulateCell(const PerfModel& model, const Scenario& scenario, int concurrency,
                        const SimOptions& options = {});

}  // namespace carve::planner
