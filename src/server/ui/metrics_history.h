// MetricsHistory: the last minutes of the server's own metrics, per inference component and
// per mGPU queue, for the dashboard's "over the last minutes" figures and charts
// (GET /v1/ui/metrics). Prometheus would keep this history for an operator who runs one; the
// dashboard must work without one, so the server keeps a short window itself.
//
// Each Record() takes one exposition of the registry (the text GET /metrics serves) and keeps,
// per component (labels account, endpoint, component of carve_runtime_*): requests, errors, the
// latency
// histogram's cumulative buckets, in-flight requests and, where a copy counts them, output
// tokens (carve_runtime_output_tokens_total); a runtime series without an account label is not
// kept, since it cannot be shown to its owner alone. Per queue (labels account, queue of
// carve_queue_*): core and memory allocated, capacity, and what was measured. Query() turns
// consecutive records into rates and latency percentiles, as PromQL's rate() and
// histogram_quantile() would:
//
//   requests_per_s = delta(requests) / delta(t)            (a counter that drops restarted: its
//                                                            new value is the delta)
//   p99            = the bucket where the cumulative count reaches 0.99 x delta(count),
//                    interpolated linearly inside it (upper bound of the last finite bucket
//                    when it falls in +Inf)
//
// Worked example: records at t=0 s and t=5 s with requests 100 -> 150 give 10 req/s; buckets
// {le=0.01: 0 -> 40, le=0.1: 0 -> 50} (delta count 50) put p50 (rank 25) in the first bucket
// at 0.01 x 25/40 = 6.25 ms and p99 (rank 49.5) in the second at 10 + 90 x 9.5/10 = 95.5 ms.
//
// Records older than the window are dropped. Thread-safe: Record and Query may run at once.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/result.h"

namespace carve::server::ui {

struct HistoryOptions {
  int64_t window_ms = int64_t{15} * 60 * 1000;  // How far back Query() reaches.
  int64_t step_ms = 5000;                   // The interval the caller records at (reported only).
  int64_t summary_ms = int64_t{60} * 1000;  // The "last minute" summary's span.
};

// (endpoint, component): one inference component of the account a query is for.
using ComponentKey = std::pair<std::string, std::string>;

// The latency quantile `q` (0..1) of a histogram given as cumulative counts per upper bound
// (ascending, +Inf last), in the bounds' unit; nullopt when the histogram is empty.
std::optional<double> HistogramQuantile(double q,
                                        const std::vector<std::pair<double, double>>& buckets);

class MetricsHistory {
 public:
  explicit MetricsHistory(HistoryOptions options = {});

  // Keeps one exposition taken at `t_ms` (Unix ms). InvalidArgument (and nothing kept) when the
  // text does not parse; a `t_ms` not after the last record's is ignored.
  Status Record(int64_t t_ms, std::string_view exposition);

  // The history visible to `account`: its queues and the components in `components` (those the
  // account owns, listed even before their first request), each read from the series labelled
  // with `account` only: another account's endpoint of the same name is never counted. JSON
  // shape in docs/dashboard.md ("GET /v1/ui/metrics").
  nlohmann::json Query(const std::string& account, const std::set<ComponentKey>& components,
                       int64_t now_ms) const;

  size_t records() const;

 private:
  struct ComponentSample {
    double requests = 0;
    double errors = 0;
    double in_flight = 0;
    std::optional<double> output_tokens;
    std::map<double, double> buckets;  // le (seconds) -> cumulative count, +Inf included.
    double count = 0;
  };
  struct QueueSample {
    double core_allocated = 0;
    double core_capacity = 0;
    double memory_allocated_mib = 0;
    double memory_capacity_mib = 0;
    double workers = 0;
    double core_used = 0;
    int core_measured = 0;
    double memory_used_mib = 0;
    int memory_measured = 0;
  };
  // (account, endpoint, component): the labels of the router's series.
  struct SeriesKey {
    std::string account;
    std::string endpoint;
    std::string component;
    friend auto operator<=>(const SeriesKey&, const SeriesKey&) = default;
  };
  struct Snapshot {
    int64_t t_ms = 0;
    std::map<SeriesKey, ComponentSample> components;
    std::map<std::pair<std::string, std::string>, QueueSample> queues;  // (account, queue)
  };

  static nlohmann::json ComponentPoint(const ComponentSample* before, const ComponentSample& now,
                                       double seconds);

  const HistoryOptions options_;
  mutable std::mutex mu_;
  std::deque<Snapshot> snapshots_;  // Oldest first. Guarded by mu_.
};

}  // namespace carve::server::ui
