#include "server/ui/metrics_history.h"

#include <algorithm>
#include <cmath>

#include "server/ui/prom_text.h"

namespace carve::server::ui {
namespace {

using nlohmann::json;

constexpr std::string_view kRequests = "carve_runtime_requests_total";
constexpr std::string_view kErrors = "carve_runtime_errors_total";
constexpr std::string_view kInFlight = "carve_runtime_in_flight";
constexpr std::string_view kTokens = "carve_runtime_output_tokens_total";
constexpr std::string_view kBucket = "carve_runtime_request_duration_seconds_bucket";
constexpr std::string_view kCount = "carve_runtime_request_duration_seconds_count";
constexpr std::string_view kCardCore = "carve_queue_card_core_allocated_percent";
constexpr std::string_view kCardMemory = "carve_queue_card_memory_allocated_bytes";
constexpr std::string_view kCardCapacity = "carve_queue_card_memory_capacity_bytes";
constexpr std::string_view kCardWorkers = "carve_queue_card_workers";
constexpr std::string_view kWorkerCoreUsed = "carve_queue_worker_core_used_percent";
constexpr std::string_view kWorkerMemoryUsed = "carve_queue_worker_memory_used_bytes";
constexpr double kMib = 1024.0 * 1024.0;

bool Kept(std::string_view name) {
  return name.starts_with("carve_runtime_") || name.starts_with("carve_queue_card_") ||
         name.starts_with("carve_queue_worker_");
}

// The increase of a counter between two readings; a counter that went down was reset (the
// server restarted), so its new value is all of the increase.
double Increase(double before, double now) { return now >= before ? now - before : now; }

json OrNull(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }

std::optional<double> Millis(const std::optional<double>& seconds) {
  if (!seconds) return std::nullopt;
  return std::round(*seconds * 1e6) / 1e3;  // Microsecond resolution, in ms.
}

}  // namespace

std::optional<double> HistogramQuantile(double q,
                                        const std::vector<std::pair<double, double>>& buckets) {
  if (buckets.empty()) return std::nullopt;
  const double total = buckets.back().second;
  if (!(total > 0)) return std::nullopt;
  const double rank = q * total;
  double lower = 0;
  double below = 0;
  for (const auto& [le, cumulative] : buckets) {
    if (cumulative >= rank) {
      if (std::isinf(le)) return lower;  // Above the largest finite bound: that bound.
      const double in_bucket = cumulative - below;
      if (in_bucket <= 0) return le;
      return lower + (le - lower) * (rank - below) / in_bucket;
    }
    lower = le;
    below = cumulative;
  }
  return lower;
}

MetricsHistory::MetricsHistory(HistoryOptions options) : options_(options) {}

size_t MetricsHistory::records() const {
  std::lock_guard lock(mu_);
  return snapshots_.size();
}

Status MetricsHistory::Record(int64_t t_ms, std::string_view exposition) {
  CARVE_ASSIGN_OR_RETURN(auto samples, ParsePromText(exposition, Kept));
  Snapshot snap;
  snap.t_ms = t_ms;
  for (const PromSample& s : samples) {
    const std::string* account = s.Label("account");
    const std::string* endpoint = s.Label("endpoint");
    const std::string* component = s.Label("component");
    if (endpoint != nullptr && component != nullptr) {
      if (account == nullptr) continue;  // Whose it is is unknown: shown to nobody.
      ComponentSample& c = snap.components[SeriesKey{*account, *endpoint, *component}];
      if (s.name == kRequests) {
        c.requests += s.value;
      } else if (s.name == kErrors) {
        c.errors += s.value;
      } else if (s.name == kInFlight) {
        c.in_flight += s.value;
      } else if (s.name == kTokens) {
        c.output_tokens = c.output_tokens.value_or(0) + s.value;
      } else if (s.name == kBucket) {
        if (const std::string* le = s.Label("le")) {
          const double bound = *le == "+Inf" ? HUGE_VAL : std::strtod(le->c_str(), nullptr);
          c.buckets[bound] += s.value;
        }
      } else if (s.name == kCount) {
        c.count += s.value;
      }
      continue;
    }
    const std::string* queue = s.Label("queue");
    if (account == nullptr || queue == nullptr) continue;
    QueueSample& q = snap.queues[{*account, *queue}];
    if (s.name == kCardCore) {
      q.core_allocated += s.value;
      q.core_capacity += 100;  // One series per card: a card is 100 percent.
    } else if (s.name == kCardMemory) {
      q.memory_allocated_mib += s.value / kMib;
    } else if (s.name == kCardCapacity) {
      q.memory_capacity_mib += s.value / kMib;
    } else if (s.name == kCardWorkers) {
      q.workers += s.value;
    } else if (s.name == kWorkerCoreUsed) {
      q.core_used += s.value;
      ++q.core_measured;
    } else if (s.name == kWorkerMemoryUsed) {
      q.memory_used_mib += s.value / kMib;
      ++q.memory_measured;
    }
  }
  std::lock_guard lock(mu_);
  if (!snapshots_.empty() && t_ms <= snapshots_.back().t_ms) return OkStatus();
  snapshots_.push_back(std::move(snap));
  while (!snapshots_.empty() && snapshots_.front().t_ms < t_ms - options_.window_ms) {
    snapshots_.pop_front();
  }
  return OkStatus();
}

// The figures between two records of one component: `before` is null when the series did not
// exist yet (the router creates a component's series at its first request, so it was 0).
json MetricsHistory::ComponentPoint(const ComponentSample* before, const ComponentSample& now,
                                    double seconds) {
  static const ComponentSample kZero;
  const ComponentSample& b = before != nullptr ? *before : kZero;
  const bool reset = now.count < b.count || now.requests < b.requests;
  const ComponentSample& base = reset ? kZero : b;
  const double requests = Increase(base.requests, now.requests);
  const double errors = Increase(base.errors, now.errors);
  std::vector<std::pair<double, double>> buckets;
  for (const auto& [le, cumulative] : now.buckets) {
    auto it = base.buckets.find(le);
    buckets.emplace_back(le, Increase(it == base.buckets.end() ? 0 : it->second, cumulative));
  }
  json p{{"requests", requests},
         {"errors", errors},
         {"requests_per_s", seconds > 0 ? json(requests / seconds) : json(nullptr)},
         {"errors_per_s", seconds > 0 ? json(errors / seconds) : json(nullptr)},
         {"p50_ms", OrNull(Millis(HistogramQuantile(0.5, buckets)))},
         {"p99_ms", OrNull(Millis(HistogramQuantile(0.99, buckets)))},
         {"in_flight", now.in_flight}};
  if (now.output_tokens && seconds > 0) {
    p["output_tokens_per_s"] =
        Increase(base.output_tokens.value_or(0), *now.output_tokens) / seconds;
  } else {
    p["output_tokens_per_s"] = nullptr;  // Nothing counts this component's tokens.
  }
  return p;
}

json MetricsHistory::Query(const std::string& account, const std::set<ComponentKey>& components,
                           int64_t now_ms) const {
  std::lock_guard lock(mu_);
  std::vector<const Snapshot*> window;
  for (const Snapshot& s : snapshots_) {
    if (s.t_ms >= now_ms - options_.window_ms && s.t_ms <= now_ms) window.push_back(&s);
  }
  json out{{"now_ms", now_ms},
           {"window_ms", options_.window_ms},
           {"step_ms", options_.step_ms},
           {"summary_ms", options_.summary_ms}};
  static const ComponentSample kZero;
  json list = json::array();
  for (const auto& [endpoint, component] : components) {
    const SeriesKey series{account, endpoint, component};
    auto sample_of = [&series](const Snapshot* s) -> const ComponentSample* {
      auto it = s->components.find(series);
      return it == s->components.end() ? nullptr : &it->second;
    };
    json points = json::array();
    for (size_t i = 1; i < window.size(); ++i) {
      const ComponentSample* now = sample_of(window[i]);
      json p = ComponentPoint(sample_of(window[i - 1]), now != nullptr ? *now : kZero,
                              static_cast<double>(window[i]->t_ms - window[i - 1]->t_ms) / 1000);
      p["t_ms"] = window[i]->t_ms;
      points.push_back(std::move(p));
    }
    json summary = nullptr;
    if (window.size() >= 2) {
      const Snapshot* last = window.back();
      const Snapshot* base = window.front();
      for (const Snapshot* s : window) {
        if (s->t_ms <= last->t_ms - options_.summary_ms) base = s;
      }
      const ComponentSample* now = sample_of(last);
      summary = ComponentPoint(sample_of(base), now != nullptr ? *now : kZero,
                               static_cast<double>(last->t_ms - base->t_ms) / 1000);
      summary["window_s"] = static_cast<double>(last->t_ms - base->t_ms) / 1000;
    }
    list.push_back(json{{"endpoint", endpoint},
                        {"component", component},
                        {"points", std::move(points)},
                        {"last_minute", std::move(summary)}});
  }
  out["components"] = std::move(list);

  std::map<std::string, json> queues;
  for (const Snapshot* s : window) {
    for (const auto& [key, q] : s->queues) {
      if (key.first != account) continue;
      json& points = queues[key.second];
      if (points.is_null()) points = json::array();
      points.push_back(
          json{{"t_ms", s->t_ms},
               {"core_allocated_percent", q.core_allocated},
               {"core_capacity_percent", q.core_capacity},
               {"core_used_percent", q.core_measured > 0 ? json(q.core_used) : json(nullptr)},
               {"memory_allocated_mib", std::round(q.memory_allocated_mib)},
               {"memory_capacity_mib", std::round(q.memory_capacity_mib)},
               {"memory_used_mib",
                q.memory_measured > 0 ? json(std::round(q.memory_used_mib)) : json(nullptr)},
               {"workers", q.workers},
               {"workers_core_measured", q.core_measured},
               {"workers_memory_measured", q.memory_measured}});
    }
  }
  json qlist = json::array();
  for (auto& [name, points] : queues) {
    qlist.push_back(json{{"queue", name}, {"points", std::move(points)}});
  }
  out["queues"] = std::move(qlist);
  return out;
}

}  // namespace carve::server::ui
