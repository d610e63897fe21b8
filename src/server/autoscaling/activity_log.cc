#include "server/autoscaling/activity_log.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <ctime>
#include <random>
#include <utility>
#include <vector>

namespace carve::server::autoscaling {

using nlohmann::json;

std::string ActivityId() {
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

void ActivityLog::Record(const std::string& account, ScalingActivity a) {
  a.seq = ++seq_ % 100'000'000;
  const store::Key key{account, std::string(kActivityKind), a.Name()};
  std::vector<store::Mutation> writes{store::Put{key, a.ToJson().dump(), std::nullopt}};
  store::ListOptions lo;
  lo.name_prefix = a.key.Name() + " ";
  if (auto older = store_.List(account, std::string(kActivityKind), lo); older.has_value()) {
    // Keep the newest max_per_target_, this one included.
    const size_t keep = max_per_target_;
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

void ActivityLog::Update(const std::string& account, const ScalableKey& key,
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

bool ActivityLog::Scale(ScalableResources& resources, const std::string& account,
                        const ScalableKey& key, int from, int to, const std::string& cause) {
  const int64_t now = clock_.UnixMillis();
  Status set = resources.Set(account, key, to);
  ScalingActivity a;
  a.key = key;
  a.id = ActivityId();
  a.description =
      fmt::format("Setting desired {} count to {}.", key.IsComponent() ? "copy" : "instance", to);
  a.cause = fmt::format("{} changing the desired capacity from {} to {}.", cause, from, to);
  a.start_ms = now;
  a.desired = to;
  if (set.ok()) {
    a.status = "InProgress";
    spdlog::info("autoscaling: {} {} -> {}: {}", key.resource_id, from, to, cause);
  } else {
    a.status = "Failed";
    a.end_ms = now;
    a.status_message = set.error().message;
    spdlog::warn("autoscaling: {} {} -> {} failed: {}", key.resource_id, from, to,
                 set.error().message);
  }
  Record(account, a);
  return set.ok();
}

}  // namespace carve::server::autoscaling
