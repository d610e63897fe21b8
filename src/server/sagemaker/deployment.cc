#include "server/sagemaker/deployment.h"

#include <fmt/format.h>

#include <algorithm>

namespace carve::server::sagemaker {

using nlohmann::json;

int CapacitySize::Copies(int desired) const {
  const int n = type == Type::kCopyCount
                    ? value
                    : static_cast<int>((static_cast<int64_t>(desired) * value + 99) / 100);
  return std::max(1, std::min(n, std::max(desired, 1)));
}

json CapacitySize::ToJson() const {
  return {{"Type", type == Type::kCopyCount ? "COPY_COUNT" : "CAPACITY_PERCENT"}, {"Value", value}};
}

Result<CapacitySize> CapacitySize::FromJson(const json& j) {
  CapacitySize c;
  const std::string type = j.value("Type", "");
  if (type == "COPY_COUNT") {
    c.type = Type::kCopyCount;
  } else if (type == "CAPACITY_PERCENT") {
    c.type = Type::kCapacityPercent;
  } else {
    return InvalidArgument("capacity size type '" + type +
                           "' is not COPY_COUNT or CAPACITY_PERCENT");
  }
  c.value = j.value("Value", 0);
  if (c.value < 1) return InvalidArgument("capacity size value must be at least 1");
  return c;
}

json CopySpec::ToJson() const {
  return {{"Version", version},      {"Specification", specification},
          {"Devices", devices},      {"CpuMilli", cpu_milli},
          {"MemoryMib", memory_mib}, {"Strategy", core::StrategyName(strategy)}};
}

Result<CopySpec> CopySpec::FromJson(const json& j) {
  try {
    CopySpec s;
    s.version = j.at("Version").get<int64_t>();
    s.specification = j.at("Specification");
    s.devices = j.at("Devices").get<int>();
    s.cpu_milli = j.at("CpuMilli").get<int64_t>();
    s.memory_mib = j.at("MemoryMib").get<int64_t>();
    CARVE_ASSIGN_OR_RETURN(s.strategy, core::ParseStrategy(j.at("Strategy").get<std::string>()));
    return s;
  } catch (const json::exception& e) {
    return Internal(std::string("stored copy specification is malformed: ") + e.what());
  }
}

json Deployment::ToJson() const {
  return {{"Phase", phase == DeploymentPhase::kRolling ? "Rolling" : "RollingBack"},
          {"From", from.ToJson()},
          {"Batch", batch.ToJson()},
          {"RollbackBatch", rollback_batch.ToJson()},
          {"WaitSeconds", wait_s},
          {"TimeoutSeconds", timeout_s},
          {"StartedMs", started_ms},
          {"BakedMs", baked_ms},
          {"RolledBackMs", rolled_back_ms},
          {"BatchOpen", batch_open},
          {"Reason", reason}};
}

Result<Deployment> Deployment::FromJson(const json& j) {
  try {
    Deployment d;
    const std::string phase = j.at("Phase").get<std::string>();
    if (phase != "Rolling" && phase != "RollingBack") {
      return Internal("stored deployment phase '" + phase + "' is unknown");
    }
    d.phase = phase == "Rolling" ? DeploymentPhase::kRolling : DeploymentPhase::kRollingBack;
    CARVE_ASSIGN_OR_RETURN(d.from, CopySpec::FromJson(j.at("From")));
    CARVE_ASSIGN_OR_RETURN(d.batch, CapacitySize::FromJson(j.at("Batch")));
    CARVE_ASSIGN_OR_RETURN(d.rollback_batch, CapacitySize::FromJson(j.at("RollbackBatch")));
    d.wait_s = j.at("WaitSeconds").get<int>();
    d.timeout_s = j.at("TimeoutSeconds").get<int>();
    d.started_ms = j.at("StartedMs").get<int64_t>();
    d.baked_ms = j.at("BakedMs").get<int64_t>();
    d.rolled_back_ms = j.value("RolledBackMs", int64_t{0});
    d.reason = j.at("Reason").get<std::string>();
    d.batch_open = j.value("BatchOpen", false);
    return d;
  } catch (const json::exception& e) {
    return Internal(std::string("stored deployment is malformed: ") + e.what());
  }
}

StartedDeployment StartDeployment(const json& config, CopySpec from, int64_t now_ms) {
  StartedDeployment out;
  Deployment& d = out.deployment;
  d.from = std::move(from);
  d.started_ms = now_ms;
  if (config.is_object() && config.contains("RollingUpdatePolicy")) {
    const json& p = config["RollingUpdatePolicy"];
    if (auto b = CapacitySize::FromJson(p.value("MaximumBatchSize", json::object()));
        b.has_value()) {
      d.batch = *b;
    }
    if (p.contains("RollbackMaximumBatchSize")) {
      if (auto b = CapacitySize::FromJson(p["RollbackMaximumBatchSize"]); b.has_value()) {
        d.rollback_batch = *b;
      }
    }
    d.wait_s = p.value("WaitIntervalInSeconds", 0);
    d.timeout_s = p.value("MaximumExecutionTimeoutInSeconds", 0);
    out.last_config = config;
  } else {
    out.last_config = {{"RollingUpdatePolicy",
                        {{"MaximumBatchSize", d.batch.ToJson()},
                         {"WaitIntervalInSeconds", 0},
                         {"RollbackMaximumBatchSize", d.rollback_batch.ToJson()}}}};
  }
  return out;
}

DeploymentStep NextDeploymentStep(const Deployment& d, const DeploymentCounts& n,
                                  const std::string& failure, int64_t now_ms) {
  DeploymentStep step;
  const bool rolling = d.phase == DeploymentPhase::kRolling;
  if (rolling && !failure.empty()) {
    step.kind = DeploymentStep::Kind::kRollBack;
    step.reason = failure;
    return step;
  }
  if (rolling && d.timeout_s > 0 && now_ms - d.started_ms > int64_t{d.timeout_s} * 1000) {
    step.kind = DeploymentStep::Kind::kRollBack;
    step.reason = fmt::format(
        "the deployment did not finish within its MaximumExecutionTimeoutInSeconds of {} s "
        "({} of {} copies ran the new specification)",
        d.timeout_s, n.new_serving, n.desired);
    return step;
  }
  const int batch = d.BatchSize(n.desired);
  const bool all_serving = n.new_serving >= n.new_copies;
  step.start_bake = all_serving && d.batch_open;
  const int64_t bake_from = step.start_bake ? now_ms : d.baked_ms;
  const bool baked = now_ms >= bake_from + int64_t{d.wait_s} * 1000;
  const int total = n.new_copies + n.old_copies;
  // A batch that serves replaces as many old copies; then copies lost from the count (a node
  // that stopped reporting) come back on the new specification.
  if (all_serving && total > n.desired) step.stop = std::min(n.old_copies, total - n.desired);
  const int after = total - step.stop;
  if (after < n.desired) step.place = n.desired - after;
  if (step.place == 0 && step.stop == 0 && all_serving && baked) {
    if (n.old_copies == 0 && n.new_copies >= n.desired) {
      step.kind = DeploymentStep::Kind::kDone;
      return step;
    }
    if (n.new_copies < n.desired) {
      step.place = std::min(batch, n.desired - n.new_copies);
      step.new_batch = true;
    }
  }

  const std::string head = rolling ? "Rolling update" : fmt::format("Rolling back ({})", d.reason);
  std::string now;
  if (!all_serving) {
    now =
        fmt::format("waiting for {} new cop{} to pass the health check",
                    n.new_copies - n.new_serving, n.new_copies - n.new_serving == 1 ? "y" : "ies");
  } else if (!baked && n.old_copies > 0) {
    now = fmt::format("next batch after the {} s wait interval", d.wait_s);
  } else if (!baked) {
    now = fmt::format("in the {} s wait interval after the last batch", d.wait_s);
  } else {
    now = "placing the next batch";
  }
  step.progress = fmt::format(
      "{}: {} of {} copies run the {} specification and serve, {} cop{} of "
      "the {} specification remain; batches of {}; {}",
      head, n.new_serving, n.desired, rolling ? "new" : "previous", n.old_copies,
      n.old_copies == 1 ? "y" : "ies", rolling ? "previous" : "failed", batch, now);
  return step;
}

}  // namespace carve::server::sagemaker
