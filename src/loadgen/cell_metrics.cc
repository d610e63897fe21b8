#include "loadgen/cell_metrics.h"

#include <algorithm>
#include <cmath>

namespace carve::loadgen {

std::optional<double> Percentile(std::vector<double> values, double q) {
  if (values.empty()) return std::nullopt;
  std::sort(values.begin(), values.end());
  q = std::clamp(q, 0.0, 1.0);
  const double rank = q * static_cast<double>(values.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(rank));
  const size_t hi = std::min(lo + 1, values.size() - 1);
  const double frac = rank - static_cast<double>(lo);
  return values[lo] + (values[hi] - values[lo]) * frac;
}

CellMetrics Summarise(const std::vector<RequestOutcome>& outcomes, double wall_s) {
  CellMetrics m;
  m.wall_s = wall_s;
  std::vector<double> ttft, itl, e2e;
  int64_t ok = 0;
  for (const RequestOutcome& o : outcomes) {
    ++m.requests;
    if (o.kind == OutcomeKind::kError) ++m.errors;
    if (o.kind == OutcomeKind::kDeadline) ++m.deadline_failures;
    if (o.kind != OutcomeKind::kOk) {
      if (m.first_error.empty()) m.first_error = o.error;
      continue;
    }
    ++ok;
    m.output_tokens += o.output_tokens;
    e2e.push_back(o.e2e_s);
    if (o.ttft_s >= 0) {
      ttft.push_back(o.ttft_s);
      if (o.output_tokens >= 2) {
        itl.push_back((o.e2e_s - o.ttft_s) / static_cast<double>(o.output_tokens - 1));
      }
    }
  }
  if (wall_s > 0) {
    m.output_tok_s = static_cast<double>(m.output_tokens) / wall_s;
    m.requests_per_s = static_cast<double>(ok) / wall_s;
  }
  m.ttft_p50_s = Percentile(ttft, 0.50);
  m.ttft_p90_s = Percentile(ttft, 0.90);
  m.ttft_p99_s = Percentile(ttft, 0.99);
  m.itl_p50_s = Percentile(itl, 0.50);
  m.itl_p99_s = Percentile(itl, 0.99);
  m.e2e_p50_s = Percentile(e2e, 0.50);
  m.e2e_p99_s = Percentile(e2e, 0.99);
  return m;
}

}  // namespace carve::loadgen
