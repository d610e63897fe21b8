#include "server/autoscaling/datapoints.h"

#include <algorithm>

namespace carve::server::autoscaling {

namespace {

// The last point at or before t; nullptr when there is none.
const MetricPoint* At(const std::vector<MetricPoint>& pts, int64_t t) {
  const MetricPoint* found = nullptr;
  for (const MetricPoint& x : pts) {
    if (x.at_ms > t) break;
    found = &x;
  }
  return found;
}

std::optional<double> PerUnit(double v, int capacity) {
  if (capacity == 0) return std::nullopt;
  return capacity < 0 ? v : v / capacity;
}

// A rate over (lo, hi]: the count's increase between the last samples at or before each end.
std::optional<double> RateBetween(const std::vector<MetricPoint>& pts, int64_t lo, int64_t hi) {
  const MetricPoint* p0 = At(pts, lo);
  const MetricPoint* p1 = At(pts, hi);
  if (p0 == nullptr || p1 == nullptr || p1->at_ms <= p0->at_ms || !p0->value || !p1->value) {
    return std::nullopt;
  }
  const double minutes = static_cast<double>(p1->at_ms - p0->at_ms) / 60000.0;
  return PerUnit(std::max(0.0, *p1->value - *p0->value) / minutes, p1->capacity);
}

// A level over (lo, hi]: the mean of the samples inside it, or, when samples are sparser than
// datapoints, the level at the period's end.
std::optional<double> LevelBetween(const std::vector<MetricPoint>& pts, int64_t lo, int64_t hi) {
  double sum = 0;
  int count = 0;
  bool undefined = false;
  for (const MetricPoint& x : pts) {
    if (x.at_ms <= lo || x.at_ms > hi) continue;
    auto u = x.value ? PerUnit(*x.value, x.capacity) : std::nullopt;
    if (!u) undefined = true;
    sum += u.value_or(0);
    ++count;
  }
  if (count == 0) {
    const MetricPoint* p1 = At(pts, hi);
    if (p1 != nullptr && p1->value) return PerUnit(*p1->value, p1->capacity);
    return std::nullopt;
  }
  if (undefined) return std::nullopt;
  return sum / count;
}

}  // namespace

std::optional<std::vector<double>> Datapoints(const MetricSeries& series, int64_t now_ms,
                                              std::chrono::milliseconds window, int n,
                                              std::chrono::milliseconds sample_interval) {
  const std::vector<MetricPoint>& pts = series.points;
  const int64_t from = now_ms - window.count();
  n = static_cast<int>(std::clamp<int64_t>(window.count() / sample_interval.count(), 1, n));
  if (pts.empty() || pts.front().at_ms > from) return std::nullopt;
  std::vector<double> out;
  for (int b = 0; b < n; ++b) {
    const int64_t lo = from + window.count() * b / n;
    const int64_t hi = from + window.count() * (b + 1) / n;
    const std::optional<double> v =
        series.rate ? RateBetween(pts, lo, hi) : LevelBetween(pts, lo, hi);
    if (!v) return std::nullopt;
    out.push_back(*v);
  }
  return out;
}

}  // namespace carve::server::autoscaling
