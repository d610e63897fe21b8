#include "planner/serving_sim.h"

#include <algorithm>
#include <deque>
#include <limits>
#include <vector>

namespace carve::planner {
namespace {

struct Request {
  int client = 0;
  double arrival = 0;
  int64_t prefilled = 0;   // Prompt tokens processed.
  int64_t generated = 0;   // Output tokens produced (the first comes with the prefill).
  double first_token = 0;
  int64_t chunk = 0;       // Prompt tokens scheduled in the current step.
};

double Percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  double pos = q * static_cast<double>(v.size() - 1);
  size_t lo = static_cast<size_t>(pos);
  size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
}

}  // namespace

CellResult SimulateCell(const PerfModel& model, const Scenario& scenario, int concurrency,
                        const SimOptions& options) {
  CellResult cell;
  cell.concurrency = concurrency;
  const int64_t in = scenario.input_tokens;
  const int64_t out = scenario.output_tokens;
  const int64_t kv_limit = model.KvCapacityTokens() / (in + out);
  const int64_t seq_limit = model.serving().max_num_seqs;
  cell.batch_limit = std::min({kv_limit, seq_limit, static_cast<int64_t>(concurrency)});
  cell.kv_limited = kv_limit < concurrency && kv_limit < seq_limit;
  if (cell.batch_limit <= 0) {
    cell.binding = Resource::kKvCapacity;
    cell.deadline_miss_fraction = 1;
    return cell;
  }

  std::deque<Request> waiting;
  std::vector<Request> running;
  std::vector<int> rounds_left(concurrency, options.requests_per_client - 1);
  for (int c = 0; c < concurrency; ++c) waiting.push_back(Request{c, 0, 0, 0, 0, 0});

  const double inf = std::numeric_limits<double>::infinity();
  double t = 0, stop = inf, compute_time = 0, step_time = 0, batch_sum = 0;
  int64_t tokens = 0, tokens_at_stop = 0, steps = 0;
  std::vector<double> ttft, itl, e2e;
  int64_t missed = 0;

  while (!waiting.empty() || !running.empty()) {
    while (!waiting.empty() && static_cast<int64_t>(running.size()) < cell.batch_limit) {
      running.push_back(waiting.front());
      waiting.pop_front();
    }
    StepLoad load;
    int64_t budget = model.serving().max_batched_tokens;
    for (Request& r : running) {
      r.chunk = 0;
      if (r.prefilled == in) {
        ++load.decode_seqs;
        load.decode_context_tokens += in + r.generated;
      }
    }
    budget -= load.decode_seqs;
    for (Request& r : running) {
      if (r.prefilled == in || budget <= 0) continue;
      r.chunk = std::min(in - r.prefilled, budget);
      budget -= r.chunk;
      load.AddPrefillChunk(r.prefilled, r.chunk, r.prefilled + r.chunk == in);
    }
    if (load.decode_seqs == 0 && load.prefill_tokens == 0) break;  // Cannot happen: budget >= 1.

    StepTime st = model.Step(load);
    t += st.seconds;
    step_time += st.seconds;
    if (st.binding == Resource::kCompute) compute_time += st.seconds;
    batch_sum += static_cast<double>(running.size());
    ++steps;

    for (Request& r : running) {
      if (r.chunk > 0) {
        r.prefilled += r.chunk;
        if (r.prefilled == in) {
          r.generated = 1;
          r.first_token = t;
          ++tokens;
        }
      } else if (r.prefilled == in) {
        ++r.generated;
        ++tokens;
      }
    }
    bool measuring = stop == inf;
    auto done = [&](const Request& r) { return r.prefilled == in && r.generated == out; };
    for (const Request& r : running) {
      if (!done(r)) continue;
      if (measuring) {
        double latency = t - r.arrival;
        ttft.push_back(r.first_token - r.arrival);
        e2e.push_back(latency);
        itl.push_back(out > 1 ? (t - r.first_token) / static_cast<double>(out - 1) : 0);
        if (latency > options.deadline_seconds) ++missed;
      }
      if (rounds_left[r.client] > 0) {
        --rounds_left[r.client];
        waiting.push_back(Request{r.client, t, 0, 0, 0, 0});
      } else if (stop == inf) {
        stop = t;  // From here on fewer than `concurrency` clients have work.
      }
    }
    if (measuring) tokens_at_stop = tokens;
    running.erase(std::remove_if(running.begin(), running.end(), done), running.end());
  }

  cell.requests = static_cast<int64_t>(e2e.size());
  cell.output_tok_s = stop > 0 && stop < inf ? static_cast<double>(tokens_at_stop) / stop : 0;
  cell.ttft_p50_s = Percentile(ttft, 0.5);
  cell.ttft_p90_s = Percentile(ttft, 0.9);
  cell.itl_p50_s = Percentile(itl, 0.5);
  cell.e2e_p50_s = Percentile(e2e, 0.5);
  cell.deadline_miss_fraction =
      e2e.empty() ? 0 : static_cast<double>(missed) / static_cast<double>(e2e.size());
  cell.mean_batch = steps > 0 ? batch_sum / static_cast<double>(steps) : 0;
  cell.compute_busy_fraction = step_time > 0 ? compute_time / step_time : 0;
  if (cell.kv_limited) {
    cell.binding = Resource::kKvCapacity;
  } else {
    cell.binding = cell.compute_busy_fraction > 0.5 ? Resource::kCompute : Resource::kBandwidth;
  }
  return cell;
}

}  // namespace carve::planner
