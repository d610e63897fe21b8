// AutoScalingService's engine: sampling the invocation signals, the policies' decisions,
// scheduled actions, and the activities that record every change.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <ctime>
#include <numeric>
#include <random>
#include <set>

#include "server/autoscaling/autoscaling_service.h"

namespace carve::server::autoscaling {

using nlohmann::json;

namespace {

constexpr int kDefaultCooldownS = 300;
constexpr double kScaleInFraction = 0.9;  // Scale in below 90% of the target, as AWS's alarms do.

std::string Uuid() {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  const uint64_t a = rng();
  const uint64_t b = rng();
  return fmt::format("{:08x}-{:04x}-{:04x}-{:04x}-{:012x}", a >> 32, (a >> 16) & 0xffff, a & 0xffff,
                     b >> 48, b & 0xffffffffffffULL);
}

std::string UtcTime(int64_t ms) {
  const std::time_t t = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  return std::string(buf) + "Z";
}

int Cooldown(const json& config, const char* member) {
  return config.contains(member) && config[member].is_number_integer() ? config[member].get<int>()
                                                                       : kDefaultCooldownS;
}

}  // namespace

AutoScalingService::AutoScalingService(store::Store& store, ScalableResources& resources,
                                       const runtime::InvocationStats& stats,
                                       AutoScalingOptions options)
    : store_(store),
      resources_(resources),
      stats_(stats),
      options_(std::move(options)),
      clock_(options_.clock ? *options_.clock : SystemClock::Get()) {}

AutoScalingService::~AutoScalingService() { Stop(); }

void AutoScalingService::Start() {
  thread_ = std::thread([this] {
    std::unique_lock lock(run_mu_);
    while (!stop_) {
      lock.unlock();
      Tick();
      lock.lock();
      run_cv_.wait_for(lock, options_.sample_interval, [this] { return stop_; });
    }
  });
}

void AutoScalingService::Stop() {
  {
    std::lock_guard lock(run_mu_);
    stop_ = true;
  }
  run_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

std::vector<AutoScalingService::Signal> AutoScalingService::Signals() {
  std::lock_guard lock(mu_);
  std::vector<Signal> out;
  for (const auto& [id, samples] : samples_) {
    if (samples.size() < 2) continue;
    const Sample& s = samples.back();
    const Sample& prev = samples[samples.size() - 2];
    Signal sig{id.first, id.second, s.capacity, 0, 0};
    const double minutes = static_cast<double>(s.at_ms - prev.at_ms) / 60000.0;
    if (s.capacity > 0 && minutes > 0) {
      sig.invocations_per_unit =
          static_cast<double>(s.invocations - prev.invocations) / minutes / s.capacity;
      sig.concurrent_per_copy = static_cast<double>(std::max<int64_t>(0, s.in_flight)) / s.capacity;
    }
    out.push_back(std::move(sig));
  }
  return out;
}

namespace {

// A customized metric's value now: the Statistic over the matching series of the policy's
// `account`; nullopt when none matches (no data) or it cannot be read.
std::optional<std::pair<double, bool>> ReadCustom(const http::MetricsRegistry& metrics,
                                                  const json& cm, const std::string& account) {
  auto match = CustomMetricMatch(cm, account);
  if (!match.has_value()) return std::nullopt;
  auto read = metrics.Read(cm.value("MetricName", ""), *match);
  if (!read.has_value()) return std::nullopt;
  const std::vector<double>& v = read->values;
  const std::string stat = cm.value("Statistic", "Average");
  const bool counter = read->type == http::MetricFamily::Type::kCounter;
  if (stat == "SampleCount") return std::make_pair(static_cast<double>(v.size()), counter);
  if (stat == "Sum") return std::make_pair(std::accumulate(v.begin(), v.end(), 0.0), counter);
  if (v.empty()) return std::nullopt;
  if (stat == "Minimum") return std::make_pair(*std::min_element(v.begin(), v.end()), counter);
  if (stat == "Maximum") return std::make_pair(*std::max_element(v.begin(), v.end()), counter);
  return std::make_pair(std::accumulate(v.begin(), v.end(), 0.0) / v.size(), counter);
}

}  // namespace

void AutoScalingService::Tick() {
  // Customized metrics first, outside mu_: reading them runs the registry's collectors, one of
  // which (this service's Signals) takes mu_.
  std::map<std::pair<std::string, std::string>, CustomSample> custom;
  if (options_.metrics != nullptr) {
    const int64_t at = clock_.UnixMillis();
    for (const auto& rec :
         store_.ListAllAccounts(std::string(kPolicyKind)).value_or(std::vector<store::Record>{})) {
      const json j = json::parse(rec.body, nullptr, false);
      if (!j.is_object() || !j.contains("TargetTrackingScalingPolicyConfiguration")) continue;
      const json& c = j["TargetTrackingScalingPolicyConfiguration"];
      if (!c.contains("CustomizedMetricSpecification")) continue;
      auto v = ReadCustom(*options_.metrics, c["CustomizedMetricSpecification"], rec.key.account);
      custom[{rec.key.account, rec.key.name}] =
          CustomSample{at, v ? std::optional<double>(v->first) : std::nullopt, v && v->second};
    }
  }
  std::lock_guard lock(mu_);
  const int64_t now = clock_.UnixMillis();
  for (auto& [id, s] : custom) {
    auto& q = custom_[id];
    q.push_back(s);
    const int64_t keep =
        std::max(options_.scale_in_evaluation, options_.scale_out_evaluation).count() +
        2 * options_.sample_interval.count();
    while (!q.empty() && q.front().at_ms < now - keep) q.pop_front();
  }
  std::erase_if(custom_, [&](const auto& kv) { return !custom.contains(kv.first); });
  auto records = store_.ListAllAccounts(std::string(kTargetKind));
  if (!records.has_value()) {
    spdlog::warn("autoscaling: cannot list scalable targets: {}", records.error().message);
    return;
  }
  const int64_t keep_ms = std::max({options_.scale_in_evaluation, options_.scale_out_evaluation,
                                    options_.high_resolution_scale_out_evaluation})
                              .count() +
                          2 * options_.sample_interval.count();
  std::set<TargetId> present;
  for (const auto& rec : *records) {
    auto target = ScalableTarget::FromJson(json::parse(rec.body));
    if (!target.has_value()) continue;
    const std::string& account = rec.key.account;
    present.insert({account, target->key});
    auto capacity = resources_.Get(account, target->key);
    if (!capacity.has_value()) continue;  // Its resource is gone; the target stays, inert.
    const runtime::InvocationStats::Totals totals =
        target->key.IsComponent()
            ? stats_.Get({account, capacity->endpoint, target->key.Component()})
            : stats_.EndpointTotals(account, target->key.Endpoint());
    auto& samples = samples_[{account, target->key}];
    samples.push_back(
        {now, totals.invocations, totals.no_capacity, totals.in_flight, capacity->desired});
    while (!samples.empty() && samples.front().at_ms < now - keep_ms) samples.pop_front();
    UpdateActivities(account, target->key, *capacity);

    // Scheduled actions due.
    store::ListOptions lo;
    lo.name_prefix = target->key.Name() + " ";
    auto actions = store_.List(account, std::string(kScheduledKind), lo);
    for (const auto& arec : actions.value_or(std::vector<store::Record>{})) {
      auto a = ScheduledAction::FromJson(json::parse(arec.body));
      if (!a.has_value()) continue;
      auto next = a->NextRun(a->last_run_ms > 0 ? a->last_run_ms : a->created_ms - 1);
      if (!next || *next > now || target->scheduled_suspended) continue;
      ScalableTarget t = *target;
      if (a->min) t.min = *a->min;
      if (a->max) t.max = *a->max;
      if (t.min > t.max) t.max = t.min;
      a->last_run_ms = now;
      auto tkey = store::Key{account, std::string(kTargetKind), t.key.Name()};
      auto written = store_.Commit({store::Put{tkey, t.ToJson().dump(), rec.version},
                                    store::Put{arec.key, a->ToJson().dump(), arec.version}});
      if (!written.has_value()) {
        spdlog::warn("autoscaling: scheduled action {} not applied: {}", a->name,
                     written.error().message);
        break;
      }
      const std::string cause =
          fmt::format("At {} scheduled action name {} was triggered", UtcTime(now), a->name);
      const int desired = std::clamp(capacity->desired, t.min, t.max);
      ScalingActivity act;
      act.key = t.key;
      act.id = Uuid();
      act.description =
          fmt::format("Setting min capacity to {} and max capacity to {}", t.min, t.max);
      act.cause = cause;
      act.status = "Successful";
      act.start_ms = now;
      act.end_ms = now;
      act.desired = capacity->desired;
      RecordActivity(account, act);
      if (desired != capacity->desired) Scale(account, t, capacity->desired, desired, cause);
      *target = t;
      break;  // The target's record changed version; the next action waits for the next tick.
    }
    EvaluateTarget(account, *target, *capacity);
  }
  std::erase_if(samples_, [&](const auto& kv) { return !present.contains(kv.first); });
}

size_t AutoScalingService::SampledTargets() {
  std::lock_guard lock(mu_);
  return samples_.size();
}

void AutoScalingService::EvaluateTarget(const std::string& account, ScalableTarget target,
                                        const ScalableResources::Capacity& capacity) {
  const int64_t now = clock_.UnixMillis();
  const std::deque<Sample>& samples = samples_[{account, target.key}];
  store::ListOptions lo;
  lo.name_prefix = target.key.Name() + " ";
  auto policies = store_.List(account, std::string(kPolicyKind), lo);
  if (!policies.has_value() || policies->empty() || samples.size() < 2) return;
  const int desired = capacity.desired;

  // A policy's metric as points in time: a cumulative count (read as its rate per minute) or a
  // level, and the capacity it is divided by (0: undefined; -1: not divided, a customized
  // metric's value is used as it is).
  struct Point {
    int64_t at_ms = 0;
    std::optional<double> value;
    int capacity = -1;
  };
  struct Series {
    std::vector<Point> points;
    bool rate = false;
  };
  auto predefined = [&](const std::string& type) {
    Series out;
    out.rate = type != "SageMakerInferenceComponentConcurrentRequestsPerCopyHighResolution";
    for (const Sample& x : samples) {
      const double v = out.rate ? static_cast<double>(x.invocations)
                                : static_cast<double>(std::max<int64_t>(0, x.in_flight));
      out.points.push_back({x.at_ms, v, x.capacity});
    }
    return out;
  };
  auto customized = [&](const std::string& record_name) {
    Series out;
    auto it = custom_.find({account, record_name});
    if (it == custom_.end()) return out;
    for (const CustomSample& x : it->second) {
      out.rate = x.counter;
      out.points.push_back({x.at_ms, x.value, -1});
    }
    return out;
  };
  // The datapoints of the alarm AWS would create: `n` consecutive periods that together cover
  // the last `window` (3 of a minute to scale out, 15 to scale in, 3 of 10 s for the
  // high-resolution metric). A rate's datapoint is the count's increase over its period per
  // minute, a level's the mean of its samples. nullopt when the samples do not reach back to
  // the window's start (just started, or restarted) or a datapoint is undefined (no capacity,
  // no data). A datapoint is never shorter than a sample interval.
  auto datapoints = [&](const Series& series, std::chrono::milliseconds window,
                        int n) -> std::optional<std::vector<double>> {
    const std::vector<Point>& pts = series.points;
    const int64_t from = now - window.count();
    // No datapoint shorter than a sample (a window configured shorter than n samples).
    n = static_cast<int>(
        std::clamp<int64_t>(window.count() / options_.sample_interval.count(), 1, n));
    if (pts.empty() || pts.front().at_ms > from) return std::nullopt;
    // The last point at or before t.
    auto at = [&](int64_t t) -> const Point* {
      const Point* found = nullptr;
      for (const Point& x : pts) {
        if (x.at_ms > t) break;
        found = &x;
      }
      return found;
    };
    auto per_unit = [](double v, int capacity) -> std::optional<double> {
      if (capacity == 0) return std::nullopt;
      return capacity < 0 ? v : v / capacity;
    };
    std::vector<double> out;
    for (int b = 0; b < n; ++b) {
      const int64_t lo = from + window.count() * b / n;
      const int64_t hi = from + window.count() * (b + 1) / n;
      std::optional<double> v;
      if (series.rate) {
        const Point* p0 = at(lo);
        const Point* p1 = at(hi);
        if (p0 == nullptr || p1 == nullptr || p1->at_ms <= p0->at_ms || !p0->value || !p1->value) {
          return std::nullopt;
        }
        const double minutes = static_cast<double>(p1->at_ms - p0->at_ms) / 60000.0;
        v = per_unit(std::max(0.0, *p1->value - *p0->value) / minutes, p1->capacity);
      } else {
        double sum = 0;
        int count = 0;
        bool undefined = false;
        for (const Point& x : pts) {
          if (x.at_ms <= lo || x.at_ms > hi) continue;
          auto u = x.value ? per_unit(*x.value, x.capacity) : std::nullopt;
          if (!u) undefined = true;
          sum += u.value_or(0);
          ++count;
        }
        if (count == 0) {  // Sparser samples than datapoints: the level at the period's end.
          const Point* p1 = at(hi);
          if (p1 != nullptr && p1->value) v = per_unit(*p1->value, p1->capacity);
        } else if (!undefined) {
          v = sum / count;
        }
      }
      if (!v) return std::nullopt;
      out.push_back(*v);
    }
    return out;
  };

  struct Proposal {
    int capacity = 0;
    std::string cause;
    store::Record record;
    ScalingPolicy policy;
    bool out = false;
  };
  std::optional<Proposal> out_best;
  std::vector<Proposal> ins;
  int tracking = 0;
  for (const auto& rec : *policies) {
    auto p = ScalingPolicy::FromJson(json::parse(rec.body));
    if (!p.has_value()) continue;
    const json& c = p->config;
    if (p->type == "TargetTrackingScaling") {
      ++tracking;
      const bool custom = c.contains("CustomizedMetricSpecification");
      const std::string type =
          custom ? ""
                 : c["PredefinedMetricSpecification"]["PredefinedMetricType"].get<std::string>();
      const Series series = custom ? customized(rec.key.name) : predefined(type);
      const std::chrono::milliseconds out_window =
          type == "SageMakerInferenceComponentConcurrentRequestsPerCopyHighResolution"
              ? options_.high_resolution_scale_out_evaluation
              : options_.scale_out_evaluation;
      const double target_value = c["TargetValue"].get<double>();
      const int out_cd = Cooldown(c, "ScaleOutCooldown");
      const int in_cd = Cooldown(c, "ScaleInCooldown");
      const bool disable_in = c.value("DisableScaleIn", false);
      const std::string alarm_base = fmt::format("TargetTracking-{}", target.key.resource_id);
      if (auto high = datapoints(series, out_window, 3);
          high &&
          std::all_of(high->begin(), high->end(), [&](double v) { return v > target_value; })) {
        const double avg = std::accumulate(high->begin(), high->end(), 0.0) / high->size();
        const int want = std::clamp(static_cast<int>(std::ceil(desired * avg / target_value)),
                                    target.min, target.max);
        if (want > desired && !target.scale_out_suspended &&
            now >= p->last_scale_out_ms + int64_t{out_cd} * 1000) {
          if (!out_best || want > out_best->capacity) {
            out_best = Proposal{want,
                                fmt::format("monitor alarm {}-AlarmHigh-{} in state ALARM "
                                            "triggered policy {}",
                                            alarm_base, p->name, p->name),
                                rec, *p, true};
          }
        }
        continue;
      }
      if (auto low = datapoints(series, options_.scale_in_evaluation, 15);
          low && std::all_of(low->begin(), low->end(),
                             [&](double v) { return v < kScaleInFraction * target_value; })) {
        const double avg = std::accumulate(low->begin(), low->end(), 0.0) / low->size();
        const int want = std::clamp(static_cast<int>(std::ceil(desired * avg / target_value)),
                                    target.min, target.max);
        if (want < desired && !disable_in && !target.scale_in_suspended &&
            now >= p->last_scale_in_ms + int64_t{in_cd} * 1000 &&
            now >= p->last_scale_out_ms + int64_t{out_cd} * 1000) {
          ins.push_back(Proposal{want,
                                 fmt::format("monitor alarm {}-AlarmLow-{} in state ALARM "
                                             "triggered policy {}",
                                             alarm_base, p->name, p->name),
                                 rec, *p, false});
        }
      }
      continue;
    }
    // StepScaling: in ALARM when an invocation found no copy in the last sample interval.
    const Sample& last = samples.back();
    const Sample& prev = samples[samples.size() - 2];
    const double failures = static_cast<double>(last.no_capacity - prev.no_capacity);
    if (failures <= 0 || target.scale_out_suspended) continue;
    const int cooldown = Cooldown(c, "Cooldown");
    if (now < p->last_scale_out_ms + int64_t{cooldown} * 1000) continue;
    std::optional<int> adjustment;
    for (const auto& step : c["StepAdjustments"]) {
      const double lower = step.value("MetricIntervalLowerBound", -HUGE_VAL);
      const double upper = step.value("MetricIntervalUpperBound", HUGE_VAL);
      if (failures >= lower && failures < upper) {
        adjustment = step["ScalingAdjustment"].get<int>();
        break;
      }
    }
    if (!adjustment) continue;
    const std::string type = c.value("AdjustmentType", "ChangeInCapacity");
    int want = desired;
    if (type == "ExactCapacity") {
      want = *adjustment;
    } else if (type == "PercentChangeInCapacity") {
      int delta = static_cast<int>(std::trunc(desired * *adjustment / 100.0));
      const int min_mag = c.value("MinAdjustmentMagnitude", 0);
      if (std::abs(delta) < min_mag) delta = *adjustment < 0 ? -min_mag : min_mag;
      want = desired + delta;
    } else {
      want = desired + *adjustment;
    }
    want = std::clamp(want, target.min, target.max);
    if (want > desired && (!out_best || want > out_best->capacity)) {
      out_best = Proposal{want,
                          fmt::format("monitor alarm NoCapacityInvocationFailures-{} in state "
                                      "ALARM triggered policy {}",
                                      target.key.resource_id, p->name),
                          rec, *p, true};
    }
  }
  std::optional<Proposal> chosen = out_best;
  // Scale in only when every target-tracking policy wants to, and then to the largest capacity
  // any of them wants.
  if (!chosen && tracking > 0 && static_cast<int>(ins.size()) == tracking) {
    chosen = *std::max_element(ins.begin(), ins.end(), [](const Proposal& a, const Proposal& b) {
      return a.capacity < b.capacity;
    });
  }
  if (!chosen) return;
  if (!Scale(account, target, desired, chosen->capacity,
             fmt::format("At {} a {}", UtcTime(now), chosen->cause))) {
    return;
  }
  (chosen->out ? chosen->policy.last_scale_out_ms : chosen->policy.last_scale_in_ms) = now;
  auto written =
      store_.Update(chosen->record.key, chosen->policy.ToJson().dump(), chosen->record.version);
  if (!written.has_value()) {
    spdlog::warn("autoscaling: policy {}: cannot record its cooldown: {}", chosen->policy.name,
                 written.error().message);
  }
}

bool AutoScalingService::Scale(const std::string& account, const ScalableTarget& target, int from,
                               int to, const std::string& cause) {
  const int64_t now = clock_.UnixMillis();
  Status set = resources_.Set(account, target.key, to);
  ScalingActivity a;
  a.key = target.key;
  a.id = Uuid();
  a.description = fmt::format("Setting desired {} count to {}.",
                              target.key.IsComponent() ? "copy" : "instance", to);
  a.cause = fmt::format("{} changing the desired capacity from {} to {}.", cause, from, to);
  a.start_ms = now;
  a.desired = to;
  if (set.ok()) {
    a.status = "InProgress";
    spdlog::info("autoscaling: {} {} -> {}: {}", target.key.resource_id, from, to, cause);
  } else {
    a.status = "Failed";
    a.end_ms = now;
    a.status_message = set.error().message;
    spdlog::warn("autoscaling: {} {} -> {} failed: {}", target.key.resource_id, from, to,
                 set.error().message);
  }
  RecordActivity(account, a);
  return set.ok();
}

void AutoScalingService::RecordActivity(const std::string& account, ScalingActivity a) {
  a.seq = ++activity_seq_ % 100'000'000;
  const store::Key key{account, std::string(kActivityKind), a.Name()};
  std::vector<store::Mutation> writes{store::Put{key, a.ToJson().dump(), std::nullopt}};
  store::ListOptions lo;
  lo.name_prefix = a.key.Name() + " ";
  if (auto older = store_.List(account, std::string(kActivityKind), lo); older.has_value()) {
    // Keep the newest max_activities_per_target, this one included.
    const size_t keep = options_.max_activities_per_target;
    if (older->size() + 1 > keep) {
      const size_t drop = older->size() + 1 - keep;
      for (size_t i = 0; i < drop && i < older->size(); ++i) {
        writes.push_back(store::Remove{(*older)[i].key, (*older)[i].version});
      }
    }
  }
  if (auto written = store_.Commit(std::move(writes)); !written.has_value()) {
    spdlog::warn("autoscaling: cannot record activity '{}': {}", a.description,
                 written.error().message);
  }
}

void AutoScalingService::UpdateActivities(const std::string& account, const ScalableKey& key,
                                          const ScalableResources::Capacity& capacity) {
  store::ListOptions lo;
  lo.name_prefix = key.Name() + " ";
  auto records = store_.List(account, std::string(kActivityKind), lo);
  if (!records.has_value()) return;
  const int64_t now = clock_.UnixMillis();
  for (size_t i = 0; i < records->size(); ++i) {
    const store::Record& rec = (*records)[i];
    auto a = ScalingActivity::FromJson(json::parse(rec.body));
    if (!a.has_value() || a->status != "InProgress") continue;
    const bool newer_exists = i + 1 < records->size();
    if (capacity.desired != a->desired && newer_exists) {
      a->status = "Overridden";
      a->status_message = "a later scaling activity changed the desired capacity";
      a->end_ms = now;
    } else if (capacity.current == a->desired) {
      a->status = "Successful";
      a->status_message.clear();
      a->end_ms = now;
    } else {
      const std::string msg = capacity.status_message.empty()
                                  ? fmt::format("{} of {} in service", capacity.current, a->desired)
                                  : capacity.status_message;
      if (msg == a->status_message) continue;
      a->status_message = msg;
    }
    (void)store_.Update(rec.key, a->ToJson().dump(), rec.version);
  }
}

}  // namespace carve::server::autoscaling
