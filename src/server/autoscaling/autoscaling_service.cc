#include "server/autoscaling/autoscaling_service.h"

#include <spdlog/spdlog.h>

#include "common/bounded_json.h"

namespace carve::server::autoscaling {

AutoScalingService::AutoScalingService(store::Store& store, ScalableResources& resources,
                                       const runtime::InvocationStats& stats,
                                       AutoScalingOptions options)
    : store_(store),
      resources_(resources),
      stats_(stats),
      options_(std::move(options)),
      clock_(options_.clock ? *options_.clock : SystemClock::Get()),
      activities_(store_, clock_, options_.max_activities_per_target),
      ctx_{store_,
           resources_,
           activities_,
           clock_,
           options_.region,
           options_.metrics,
           [this](const std::string& account, const ScalableKey& key) {
             samples_.erase({account, key});
           }},
      loop_(options_.sample_interval, [this] { Tick(); }) {}

AutoScalingService::~AutoScalingService() { Stop(); }

void AutoScalingService::Start() { loop_.Start(); }

void AutoScalingService::Stop() { loop_.Stop(); }

http::ApiResponse AutoScalingService::Handle(const http::ApiRequest& request) {
  const Handler handler = FindHandler(request.operation);
  if (handler == nullptr) {
    return AasError(400, "UnknownOperationException",
                    "carve does not implement AnyScaleFrontendService." + request.operation);
  }
  // Bounded nesting, no repeated keys (common/bounded_json.h, issue 35).
  Result<json> parsed = ParseJson(request.body.empty() ? "{}" : request.body);
  if (!parsed.has_value()) {
    return AasError(400, "ValidationException", "Request body " + parsed.error().message);
  }
  const json& in = *parsed;
  if (!in.is_object())
    return AasError(400, "ValidationException", "Request body must be an object");
  Result<json> out = [&]() -> Result<json> {
    try {
      std::lock_guard lock(mu_);
      return handler(ctx_, request.account_id, in);
    } catch (const std::exception& e) {
      return Internal(std::string("internal error: ") + e.what());
    }
  }();
  if (!out.has_value()) {
    if (out.error().code == ErrorCode::kInternal) {
      spdlog::error("{} for account {} failed: {}", request.operation, request.account_id,
                    out.error().message);
    }
    return ToAasError(out.error());
  }
  return {200, out->dump(), ""};
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

size_t AutoScalingService::SampledTargets() {
  std::lock_guard lock(mu_);
  return samples_.size();
}

}  // namespace carve::server::autoscaling
