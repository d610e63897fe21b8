#include "http/metrics.h"

#include <algorithm>
#include <cassert>
#include <charconv>
#include <cmath>

namespace carve::http {

namespace {

const char* TypeName(MetricFamily::Type t) {
  switch (t) {
    case MetricFamily::Type::kCounter:
      return "counter";
    case MetricFamily::Type::kGauge:
      return "gauge";
    case MetricFamily::Type::kHistogram:
      return "histogram";
  }
  return "untyped";
}

// `{a="x",b="y"}` (empty string when there are no labels), with `extra` appended last.
std::string LabelSet(const std::vector<std::string>& names, const LabelValues& values,
                     const std::string& extra = "") {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) {
    const std::string& v = i < values.size() ? values[i] : std::string();
    out += (out.empty() ? "{" : ",") + names[i] + "=\"" + EscapeLabelValue(v) + "\"";
  }
  if (!extra.empty()) out += (out.empty() ? "{" : ",") + extra;
  if (!out.empty()) out += "}";
  return out;
}

}  // namespace

std::string EscapeLabelValue(const std::string& value) {
  std::string out;
  for (char c : value) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out.push_back(c);
    }
  }
  return out;
}

std::string EscapeHelp(const std::string& help) {
  std::string out;
  for (char c : help) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out.push_back(c);
    }
  }
  return out;
}

std::string FormatMetricValue(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (v == std::floor(v) && std::fabs(v) < 1e15) {
    return std::to_string(static_cast<int64_t>(v));
  }
  char buf[64];
  // Shortest text that parses back to the same double ("0.1", not "0.10000000000000001").
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return ec == std::errc() ? std::string(buf, end) : std::to_string(v);
}

std::vector<double> DefaultLatencyBuckets() {
  return {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};
}

MetricFamily::MetricFamily(std::string name, std::string help, Type type,
                           std::vector<std::string> labels, std::vector<double> buckets)
    : name_(std::move(name)),
      help_(std::move(help)),
      type_(type),
      labels_(std::move(labels)),
      buckets_([&] {
        std::sort(buckets.begin(), buckets.end());
        buckets.erase(std::unique(buckets.begin(), buckets.end()), buckets.end());
        if (!buckets.empty() && std::isinf(buckets.back())) buckets.pop_back();
        return buckets;
      }()) {}

MetricFamily::Series& MetricFamily::SeriesFor(const LabelValues& values) {
  assert(values.size() == labels_.size() && "label value count must match the declared labels");
  auto [it, inserted] = series_.try_emplace(values);
  if (inserted && type_ == Type::kHistogram) it->second.bucket_hits.assign(buckets_.size() + 1, 0);
  return it->second;
}

void MetricFamily::AppendText(std::string& out) const {
  std::lock_guard lock(mu_);
  out += "# HELP " + name_ + " " + EscapeHelp(help_) + "\n";
  out += "# TYPE " + name_ + " " + TypeName(type_) + "\n";
  for (const auto& [values, s] : series_) {
    if (type_ != Type::kHistogram) {
      out += name_ + LabelSet(labels_, values) + " " + FormatMetricValue(s.value) + "\n";
      continue;
    }
    uint64_t cumulative = 0;
    for (size_t b = 0; b <= buckets_.size(); ++b) {
      cumulative += s.bucket_hits[b];
      std::string le = b < buckets_.size() ? FormatMetricValue(buckets_[b]) : "+Inf";
      out += name_ + "_bucket" + LabelSet(labels_, values, "le=\"" + le + "\"") + " " +
             std::to_string(cumulative) + "\n";
    }
    out += name_ + "_sum" + LabelSet(labels_, values) + " " + FormatMetricValue(s.value) + "\n";
    out += name_ + "_count" + LabelSet(labels_, values) + " " + std::to_string(s.count) + "\n";
  }
}

void Counter::Increment(const LabelValues& values, double delta) {
  assert(delta >= 0 && "counters only go up");
  std::lock_guard lock(mu_);
  SeriesFor(values).value += delta;
}

double Counter::Value(const LabelValues& values) const {
  std::lock_guard lock(mu_);
  auto it = series_.find(values);
  return it == series_.end() ? 0 : it->second.value;
}

void Gauge::Set(const LabelValues& values, double value) {
  std::lock_guard lock(mu_);
  SeriesFor(values).value = value;
}

void Gauge::Add(const LabelValues& values, double delta) {
  std::lock_guard lock(mu_);
  SeriesFor(values).value += delta;
}

double Gauge::Value(const LabelValues& values) const {
  std::lock_guard lock(mu_);
  auto it = series_.find(values);
  return it == series_.end() ? 0 : it->second.value;
}

void Gauge::Clear() {
  std::lock_guard lock(mu_);
  series_.clear();
}

void Histogram::Observe(const LabelValues& values, double value) {
  std::lock_guard lock(mu_);
  Series& s = SeriesFor(values);
  // First bucket whose upper bound is >= value (le is inclusive); past the end is +Inf.
  size_t b = static_cast<size_t>(std::lower_bound(buckets_.begin(), buckets_.end(), value) -
                                 buckets_.begin());
  ++s.bucket_hits[b];
  ++s.count;
  s.value += value;
}

uint64_t Histogram::Count(const LabelValues& values) const {
  std::lock_guard lock(mu_);
  auto it = series_.find(values);
  return it == series_.end() ? 0 : it->second.count;
}

double Histogram::Sum(const LabelValues& values) const {
  std::lock_guard lock(mu_);
  auto it = series_.find(values);
  return it == series_.end() ? 0 : it->second.value;
}

MetricFamily& MetricsRegistry::AddFamily(std::unique_ptr<MetricFamily> family) {
  std::lock_guard lock(mu_);
  auto [it, inserted] = families_.try_emplace(family->name(), nullptr);
  if (inserted) {
    it->second = std::move(family);
  } else {
    assert(it->second->type() == family->type() &&
           it->second->label_names() == family->label_names() &&
           "a metric name was declared twice with different type or labels");
  }
  return *it->second;
}

Counter& MetricsRegistry::AddCounter(const std::string& name, const std::string& help,
                                     std::vector<std::string> labels) {
  return static_cast<Counter&>(AddFamily(
      std::make_unique<Counter>(name, help, MetricFamily::Type::kCounter, std::move(labels))));
}

Gauge& MetricsRegistry::AddGauge(const std::string& name, const std::string& help,
                                 std::vector<std::string> labels) {
  return static_cast<Gauge&>(AddFamily(
      std::make_unique<Gauge>(name, help, MetricFamily::Type::kGauge, std::move(labels))));
}

Histogram& MetricsRegistry::AddHistogram(const std::string& name, const std::string& help,
                                         std::vector<std::string> labels,
                                         std::vector<double> buckets) {
  return static_cast<Histogram&>(AddFamily(std::make_unique<Histogram>(
      name, help, MetricFamily::Type::kHistogram, std::move(labels), std::move(buckets))));
}

void MetricsRegistry::AddCollector(std::function<void()> collector) {
  std::lock_guard lock(mu_);
  collectors_.push_back(std::move(collector));
}

std::string MetricsRegistry::Expose() const {
  std::vector<std::function<void()>> collectors;
  {
    std::lock_guard lock(mu_);
    collectors = collectors_;
  }
  // Run outside mu_ so a collector may declare families.
  for (const auto& c : collectors) c();
  std::string out;
  std::lock_guard lock(mu_);
  for (const auto& [name, family] : families_) family->AppendText(out);
  return out;
}

std::vector<std::pair<LabelValues, double>> MetricFamily::Values() const {
  std::lock_guard lock(mu_);
  std::vector<std::pair<LabelValues, double>> out;
  out.reserve(series_.size());
  for (const auto& [labels, s] : series_) out.emplace_back(labels, s.value);
  return out;
}

Result<MetricsRegistry::Reading> MetricsRegistry::Read(
    const std::string& name, const std::map<std::string, std::string>& match, bool collect) const {
  std::vector<std::function<void()>> collectors;
  const MetricFamily* family = nullptr;
  {
    std::lock_guard lock(mu_);
    collectors = collectors_;
    auto it = families_.find(name);
    if (it == families_.end()) return NotFound("carve exports no metric " + name);
    family = it->second.get();  // Families live as long as the registry.
  }
  if (family->type() == MetricFamily::Type::kHistogram) {
    return InvalidArgument(name + " is a histogram; name a gauge or a counter");
  }
  std::vector<std::pair<size_t, std::string>> wanted;  // (label index, value)
  const auto& labels = family->label_names();
  for (const auto& [k, v] : match) {
    auto at = std::find(labels.begin(), labels.end(), k);
    if (at == labels.end()) return InvalidArgument(name + " has no label " + k);
    wanted.emplace_back(static_cast<size_t>(at - labels.begin()), v);
  }
  if (collect) {
    for (const auto& c : collectors) c();
  }
  Reading r;
  r.type = family->type();
  for (const auto& [values, value] : family->Values()) {
    bool ok = true;
    for (const auto& [i, v] : wanted) ok = ok && values[i] == v;
    if (ok) r.values.push_back(value);
  }
  return r;
}

}  // namespace carve::http
