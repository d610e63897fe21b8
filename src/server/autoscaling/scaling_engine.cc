// AutoScalingService's engine: sampling the invocation signals and customized metrics, running
// scheduled actions, and combining the policies' verdicts (policy_decisions.h) into one change
// of capacity, recorded as an activity.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <numeric>
#include <set>

#include "server/autoscaling/autoscaling_service.h"
#include "server/autoscaling/policy_decisions.h"

namespace carve::server::autoscaling {

namespace {

// A customized metric's value now: the Statistic over the matching series of the policy's
// `account`; nullopt when none matches (no data) or it cannot be read. The bool: a counter.
std::optional<std::pair<double, bool>> ReadCustom(const http::MetricsRegistry& metrics,
                                                  const CustomizedMetric& cm,
                                                  const std::string& account) {
  auto match = CustomMetricMatch(cm.dimensions, account);
  if (!match.has_value()) return std::nullopt;
  auto read = metrics.Read(cm.name, *match);
  if (!read.has_value()) return std::nullopt;
  const std::vector<double>& v = read->values;
  const bool counter = read->type == http::MetricFamily::Type::kCounter;
  switch (cm.statistic) {
    case Statistic::kSampleCount:
      return std::make_pair(static_cast<double>(v.size()), counter);
    case Statistic::kSum:
      return std::make_pair(std::accumulate(v.begin(), v.end(), 0.0), counter);
    case Statistic::kMinimum:
      if (v.empty()) return std::nullopt;
      return std::make_pair(*std::min_element(v.begin(), v.end()), counter);
    case Statistic::kMaximum:
      if (v.empty()) return std::nullopt;
      return std::make_pair(*std::max_element(v.begin(), v.end()), counter);
    case Statistic::kAverage:
      break;
  }
  if (v.empty()) return std::nullopt;
  return std::make_pair(std::accumulate(v.begin(), v.end(), 0.0) / v.size(), counter);
}

// The alarm's name in a cause, as the service words it.
std::string TrackingCause(const ScalableKey& key, const std::string& policy, bool out) {
  return fmt::format(
      "monitor alarm TargetTracking-{}-Alarm{}-{} in state ALARM triggered policy {}",
      key.resource_id, out ? "High" : "Low", policy, policy);
}

}  // namespace

std::map<AutoScalingService::PolicyId, AutoScalingService::CustomSample>
AutoScalingService::SampleCustomMetrics() const {
  std::map<PolicyId, CustomSample> custom;
  if (options_.metrics == nullptr) return custom;
  const int64_t at = clock_.UnixMillis();
  for (const auto& rec :
       store_.ListAllAccounts(std::string(kPolicyKind)).value_or(std::vector<store::Record>{})) {
    auto p = ScalingPolicy::FromJson(json::parse(rec.body, nullptr, false));
    const auto* spec = p.has_value() ? std::get_if<TargetTrackingSpec>(&p->spec) : nullptr;
    if (spec == nullptr || spec->metric != TrackedMetric::kCustomized) continue;
    auto v = ReadCustom(*options_.metrics, spec->customized, rec.key.account);
    custom[{rec.key.account, rec.key.name}] =
        CustomSample{at, v ? std::optional<double>(v->first) : std::nullopt, v && v->second};
  }
  return custom;
}

void AutoScalingService::Tick() {
  // Customized metrics first, outside mu_: reading them runs the registry's collectors, one of
  // which (this service's Signals) takes mu_.
  const std::map<PolicyId, CustomSample> custom = SampleCustomMetrics();
  std::lock_guard lock(mu_);
  const int64_t now = clock_.UnixMillis();
  const int64_t keep_ms = std::max({options_.scale_in_evaluation, options_.scale_out_evaluation,
                                    options_.high_resolution_scale_out_evaluation})
                              .count() +
                          2 * options_.sample_interval.count();
  for (const auto& [id, s] : custom) {
    auto& q = custom_[id];
    q.push_back(s);
    while (!q.empty() && q.front().at_ms < now - keep_ms) q.pop_front();
  }
  std::erase_if(custom_, [&](const auto& kv) { return !custom.contains(kv.first); });
  auto records = store_.ListAllAccounts(std::string(kTargetKind));
  if (!records.has_value()) {
    spdlog::warn("autoscaling: cannot list scalable targets: {}", records.error().message);
    return;
  }
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
    activities_.Update(account, target->key, *capacity);
    RunScheduledActions(account, rec, *target, *capacity);
    EvaluateTarget(account, *target, *capacity);
  }
  std::erase_if(samples_, [&](const auto& kv) { return !present.contains(kv.first); });
}

void AutoScalingService::RunScheduledActions(const std::string& account,
                                             const store::Record& record, ScalableTarget& target,
                                             const ScalableResources::Capacity& capacity) {
  const int64_t now = clock_.UnixMillis();
  store::ListOptions lo;
  lo.name_prefix = target.key.Name() + " ";
  auto actions = store_.List(account, std::string(kScheduledKind), lo);
  for (const auto& arec : actions.value_or(std::vector<store::Record>{})) {
    auto a = ScheduledAction::FromJson(json::parse(arec.body));
    if (!a.has_value()) continue;
    auto next = a->NextRun(a->last_run_ms > 0 ? a->last_run_ms : a->created_ms - 1);
    if (!next || *next > now || target.scheduled_suspended) continue;
    ScalableTarget t = target;
    if (a->min) t.min = *a->min;
    if (a->max) t.max = *a->max;
    if (t.min > t.max) t.max = t.min;
    a->last_run_ms = now;
    auto tkey = store::Key{account, std::string(kTargetKind), t.key.Name()};
    auto written = store_.Commit({store::Put{tkey, t.ToJson().dump(), record.version},
                                  store::Put{arec.key, a->ToJson().dump(), arec.version}});
    if (!written.has_value()) {
      spdlog::warn("autoscaling: scheduled action {} not applied: {}", a->name,
                   written.error().message);
      return;
    }
    const std::string cause =
        fmt::format("At {} scheduled action name {} was triggered", UtcTime(now), a->name);
    const int desired = std::clamp(capacity.desired, t.min, t.max);
    ScalingActivity act;
    act.key = t.key;
    act.id = ActivityId();
    act.description =
        fmt::format("Setting min capacity to {} and max capacity to {}", t.min, t.max);
    act.cause = cause;
    act.status = "Successful";
    act.start_ms = now;
    act.end_ms = now;
    act.desired = capacity.desired;
    activities_.Record(account, act);
    if (desired != capacity.desired) {
      activities_.Scale(resources_, account, t.key, capacity.desired, desired, cause);
    }
    target = t;
    return;  // The target's record changed version; the next action waits for the next tick.
  }
}

MetricSeries AutoScalingService::SeriesOf(const std::string& account, const store::Record& record,
                                          const TargetTrackingSpec& spec,
                                          const std::deque<Sample>& samples) const {
  MetricSeries out;
  if (spec.metric == TrackedMetric::kCustomized) {
    auto it = custom_.find({account, record.key.name});
    if (it == custom_.end()) return out;
    for (const CustomSample& x : it->second) {
      out.rate = x.counter;
      out.points.push_back({x.at_ms, x.value, -1});
    }
    return out;
  }
  out.rate = spec.metric != TrackedMetric::kConcurrentRequestsPerCopyHighResolution;
  for (const Sample& x : samples) {
    const double v = out.rate ? static_cast<double>(x.invocations)
                              : static_cast<double>(std::max<int64_t>(0, x.in_flight));
    out.points.push_back({x.at_ms, v, x.capacity});
  }
  return out;
}

void AutoScalingService::EvaluateTarget(const std::string& account, const ScalableTarget& target,
                                        const ScalableResources::Capacity& capacity) {
  const int64_t now = clock_.UnixMillis();
  const std::deque<Sample>& samples = samples_[{account, target.key}];
  store::ListOptions lo;
  lo.name_prefix = target.key.Name() + " ";
  auto policies = store_.List(account, std::string(kPolicyKind), lo);
  if (!policies.has_value() || policies->empty() || samples.size() < 2) return;
  const int desired = capacity.desired;
  const EvaluationWindows windows{options_.scale_out_evaluation,
                                  options_.high_resolution_scale_out_evaluation,
                                  options_.scale_in_evaluation, options_.sample_interval};
  // NoCapacityInvocationFailures over the last sample interval, for step scaling.
  const double failures =
      static_cast<double>(samples.back().no_capacity - samples[samples.size() - 2].no_capacity);
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
    const PolicyTimes times{now, p->last_scale_out_ms, p->last_scale_in_ms};
    std::optional<int> out;
    std::string cause;
    if (const auto* tt = std::get_if<TargetTrackingSpec>(&p->spec)) {
      ++tracking;
      const TrackingVerdict v = JudgeTargetTracking(*tt, SeriesOf(account, rec, *tt, samples),
                                                    target, desired, times, windows);
      if (v.scale_in) {
        ins.push_back({*v.scale_in, TrackingCause(target.key, p->name, false), rec, *p, false});
      }
      out = v.scale_out;
      cause = TrackingCause(target.key, p->name, true);
    } else {
      out = JudgeStepScaling(std::get<StepScalingSpec>(p->spec), failures, target, desired, times);
      cause = fmt::format(
          "monitor alarm NoCapacityInvocationFailures-{} in state ALARM triggered "
          "policy {}",
          target.key.resource_id, p->name);
    }
    if (out && (!out_best || *out > out_best->capacity)) {
      out_best = Proposal{*out, std::move(cause), rec, *p, true};
    }
  }
  std::optional<Proposal> chosen = out_best;
  if (!chosen && tracking > 0 && static_cast<int>(ins.size()) == tracking) {
    chosen = *std::max_element(ins.begin(), ins.end(), [](const Proposal& a, const Proposal& b) {
      return a.capacity < b.capacity;
    });
  }
  if (!chosen || !activities_.Scale(resources_, account, target.key, desired, chosen->capacity,
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

}  // namespace carve::server::autoscaling
