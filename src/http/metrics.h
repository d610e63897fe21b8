// Metrics: a small Prometheus registry (counters, gauges, histograms with labels) and the text
// exposition format 0.0.4 served at GET /metrics.
//
// A family is declared once with its name, help and label names; samples are addressed by label
// VALUES in the declared order. Passing the wrong number of label values is a programmer error
// (assert). Declaring a name twice with the same type and label names returns the same family;
// a clash (other type or labels) is a programmer error. Families live as long as the registry.
// Conventions (docs/design.md, reference section 6): snake_case `carve_*` names and labels, base
// units (`_seconds`, `_bytes`), only counters end in `_total`; `promtool check metrics` reports
// nothing on GET /metrics (tests/integration/metrics_lint_test.py). GPU labels are `gpu_model` and
// `profile`, not dcgm-exporter's camelCase `modelName` / `GPU_I_PROFILE`, which promtool flags;
// join with DCGM series through label_replace.
// Thread-safe: every family has its own mutex; Expose() may run concurrently with updates.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/result.h"

namespace carve::http {

using LabelValues = std::vector<std::string>;

class MetricFamily {
 public:
  enum class Type { kCounter, kGauge, kHistogram };
  MetricFamily(std::string name, std::string help, Type type, std::vector<std::string> labels,
               std::vector<double> buckets = {});
  const std::string& name() const { return name_; }
  Type type() const { return type_; }
  const std::vector<std::string>& label_names() const { return labels_; }
  // Appends this family's HELP, TYPE and sample lines.
  void AppendText(std::string& out) const;
  // Every series' label values and value (a histogram's: its sum).
  std::vector<std::pair<LabelValues, double>> Values() const;

 protected:
  struct Series {
    double value = 0;                   // Counter/gauge value; histogram sum.
    std::vector<uint64_t> bucket_hits;  // Histogram: non-cumulative hits per bucket (+Inf last).
    uint64_t count = 0;                 // Histogram observations.
  };
  Series& SeriesFor(const LabelValues& values);  // Requires mu_ held.

  const std::string name_;
  const std::string help_;
  const Type type_;
  const std::vector<std::string> labels_;
  const std::vector<double> buckets_;  // Sorted upper bounds, without +Inf.
  mutable std::mutex mu_;
  std::map<LabelValues, Series> series_;  // Guarded by mu_.
};

class Counter final : public MetricFamily {
 public:
  using MetricFamily::MetricFamily;
  void Increment(const LabelValues& values, double delta = 1);  // delta >= 0.
  double Value(const LabelValues& values) const;                // 0 if never set.
};

class Gauge final : public MetricFamily {
 public:
  using MetricFamily::MetricFamily;
  void Set(const LabelValues& values, double value);
  void Add(const LabelValues& values, double delta);
  double Value(const LabelValues& values) const;
  // Drops every series (a collector re-filling a state snapshot calls this first so series of
  // deleted objects disappear).
  void Clear();
};

class Histogram final : public MetricFamily {
 public:
  using MetricFamily::MetricFamily;
  void Observe(const LabelValues& values, double value);
  uint64_t Count(const LabelValues& values) const;
  double Sum(const LabelValues& values) const;
};

// Default latency buckets in seconds (1 ms .. 10 s).
std::vector<double> DefaultLatencyBuckets();

class MetricsRegistry {
 public:
  Counter& AddCounter(const std::string& name, const std::string& help,
                      std::vector<std::string> labels = {});
  Gauge& AddGauge(const std::string& name, const std::string& help,
                  std::vector<std::string> labels = {});
  Histogram& AddHistogram(const std::string& name, const std::string& help,
                          std::vector<std::string> labels,
                          std::vector<double> buckets = DefaultLatencyBuckets());

  // Collectors run at the start of every Expose(), in registration order, to refresh gauges
  // computed from state (partitions used, endpoints by status). They must not call Expose().
  void AddCollector(std::function<void()> collector);

  // The whole registry in Prometheus text format 0.0.4, families sorted by name, ending in "\n".
  std::string Expose() const;

  // One family's series whose labels have the given values (label name -> value), after running
  // the collectors when `collect` (a caller holding a lock a collector takes passes false), for
  // Application Auto Scaling's customized metrics. NotFound for an unknown family;
  // InvalidArgument for a histogram or a label the family does not have.
  struct Reading {
    MetricFamily::Type type = MetricFamily::Type::kGauge;
    std::vector<double> values;  // One per matching series.
  };
  Result<Reading> Read(const std::string& name, const std::map<std::string, std::string>& match,
                       bool collect = true) const;

  static constexpr const char* kContentType = "text/plain; version=0.0.4; charset=utf-8";

 private:
  MetricFamily& AddFamily(std::unique_ptr<MetricFamily> family);

  mutable std::mutex mu_;
  std::map<std::string, std::unique_ptr<MetricFamily>> families_;  // Guarded by mu_.
  std::vector<std::function<void()>> collectors_;                  // Guarded by mu_.
};

// Prometheus escaping: label values escape backslash, double quote and newline; HELP text
// escapes backslash and newline.
std::string EscapeLabelValue(const std::string& value);
std::string EscapeHelp(const std::string& help);
// Sample value formatting: integers without a fraction, "+Inf"/"-Inf"/"NaN".
std::string FormatMetricValue(double value);

}  // namespace carve::http
