#include "server/autoscaling/scaling_records.h"

#include <fmt/format.h>

#include <cstdio>
#include <ctime>
#include <regex>

namespace carve::server::autoscaling {

using nlohmann::json;

namespace {

// SageMaker's resource names: [a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}.
bool IsName(std::string_view s) {
  static const std::regex re("[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}");
  return std::regex_match(s.begin(), s.end(), re);
}

std::vector<std::string> Split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t begin = 0;
  while (true) {
    size_t end = s.find(sep, begin);
    out.push_back(s.substr(begin, end == std::string::npos ? std::string::npos : end - begin));
    if (end == std::string::npos) return out;
    begin = end + 1;
  }
}

json KeyJson(const ScalableKey& k) {
  return {{"ServiceNamespace", kNamespace},
          {"ResourceId", k.resource_id},
          {"ScalableDimension", k.dimension}};
}

ScalableKey KeyFrom(const json& j) {
  return {j.at("ScalableDimension").get<std::string>(), j.at("ResourceId").get<std::string>()};
}

int64_t Millis(const json& j, const char* member) {
  return static_cast<int64_t>(j.at(member).get<double>() * 1000.0 + 0.5);
}

}  // namespace

double EpochSeconds(int64_t ms) { return static_cast<double>(ms) / 1000.0; }

std::string ScalableKey::Component() const {
  return resource_id.substr(std::string_view("inference-component/").size());
}
std::string ScalableKey::Endpoint() const { return Split(resource_id, '/').at(1); }
std::string ScalableKey::Variant() const { return Split(resource_id, '/').at(3); }

Status ValidateKey(const ScalableKey& key) {
  if (key.dimension == kCopyCount) {
    const std::string_view prefix = "inference-component/";
    if (!key.resource_id.starts_with(prefix) ||
        !IsName(std::string_view(key.resource_id).substr(prefix.size()))) {
      return InvalidArgument(
          fmt::format("Unsupported resource ID '{}' for scalable dimension {}: it must be "
                      "inference-component/<inference component name>",
                      key.resource_id, key.dimension));
    }
    return OkStatus();
  }
  if (key.dimension == kInstanceCount) {
    const auto parts = Split(key.resource_id, '/');
    if (parts.size() != 4 || parts[0] != "endpoint" || parts[2] != "variant" || !IsName(parts[1]) ||
        !IsName(parts[3])) {
      return InvalidArgument(
          fmt::format("Unsupported resource ID '{}' for scalable dimension {}: it must be "
                      "endpoint/<endpoint name>/variant/<variant name>",
                      key.resource_id, key.dimension));
    }
    return OkStatus();
  }
  return InvalidArgument(fmt::format(
      "Unsupported scalable dimension '{}': carve scales {} and {} in service namespace {}",
      key.dimension, kCopyCount, kInstanceCount, kNamespace));
}

json ScalableTarget::ToJson() const {
  json j = KeyJson(key);
  j["MinCapacity"] = min;
  j["MaxCapacity"] = max;
  // carve assumes no IAM role; the service-linked role's ARN is what AWS would show.
  j["RoleARN"] = "arn:aws:iam::role/carve-application-autoscaling";
  j["CreationTime"] = EpochSeconds(created_ms);
  j["SuspendedState"] = {{"DynamicScalingInSuspended", scale_in_suspended},
                         {"DynamicScalingOutSuspended", scale_out_suspended},
                         {"ScheduledScalingSuspended", scheduled_suspended}};
  j["ScalableTargetARN"] = arn;
  return j;
}

Result<ScalableTarget> ScalableTarget::FromJson(const json& j) {
  try {
    ScalableTarget t;
    t.key = KeyFrom(j);
    t.min = j.at("MinCapacity").get<int>();
    t.max = j.at("MaxCapacity").get<int>();
    const json& s = j.at("SuspendedState");
    t.scale_in_suspended = s.at("DynamicScalingInSuspended").get<bool>();
    t.scale_out_suspended = s.at("DynamicScalingOutSuspended").get<bool>();
    t.scheduled_suspended = s.at("ScheduledScalingSuspended").get<bool>();
    t.created_ms = Millis(j, "CreationTime");
    t.arn = j.at("ScalableTargetARN").get<std::string>();
    return t;
  } catch (const json::exception& e) {
    return Internal(std::string("stored scalable target is malformed: ") + e.what());
  }
}

json ScalingPolicy::ToJson() const {
  json j = KeyJson(key);
  j["PolicyARN"] = arn;
  j["PolicyName"] = name;
  j["PolicyType"] = type;
  j[type == "StepScaling" ? "StepScalingPolicyConfiguration"
                          : "TargetTrackingScalingPolicyConfiguration"] = config;
  j["Alarms"] = json::array();
  j["CreationTime"] = EpochSeconds(created_ms);
  j["Carve"] = {{"LastScaleOutMs", last_scale_out_ms}, {"LastScaleInMs", last_scale_in_ms}};
  return j;
}

Result<ScalingPolicy> ScalingPolicy::FromJson(const json& j) {
  try {
    ScalingPolicy p;
    p.key = KeyFrom(j);
    p.arn = j.at("PolicyARN").get<std::string>();
    p.name = j.at("PolicyName").get<std::string>();
    p.type = j.at("PolicyType").get<std::string>();
    p.config = j.at(p.type == "StepScaling" ? "StepScalingPolicyConfiguration"
                                            : "TargetTrackingScalingPolicyConfiguration");
    p.created_ms = Millis(j, "CreationTime");
    const json& c = j.at("Carve");
    p.last_scale_out_ms = c.at("LastScaleOutMs").get<int64_t>();
    p.last_scale_in_ms = c.at("LastScaleInMs").get<int64_t>();
    return p;
  } catch (const json::exception& e) {
    return Internal(std::string("stored scaling policy is malformed: ") + e.what());
  }
}

Result<Schedule> ParseSchedule(std::string_view text) {
  const std::string s(text);
  std::smatch m;
  static const std::regex at_re(R"(at\((\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})\))");
  static const std::regex rate_re(
      R"(rate\(([1-9][0-9]{0,6}) (minute|minutes|hour|hours|day|days)\))");
  if (std::regex_match(s, m, at_re)) {
    std::tm tm{};
    tm.tm_year = std::stoi(m[1]) - 1900;
    tm.tm_mon = std::stoi(m[2]) - 1;
    tm.tm_mday = std::stoi(m[3]);
    tm.tm_hour = std::stoi(m[4]);
    tm.tm_min = std::stoi(m[5]);
    tm.tm_sec = std::stoi(m[6]);
    if (tm.tm_mon > 11 || tm.tm_mday < 1 || tm.tm_mday > 31 || tm.tm_hour > 23 || tm.tm_min > 59 ||
        tm.tm_sec > 59) {
      return InvalidArgument("Schedule '" + s + "' names no valid date and time");
    }
    return Schedule{static_cast<int64_t>(timegm(&tm)) * 1000, 0};
  }
  if (std::regex_match(s, m, rate_re)) {
    const int64_t n = std::stoll(m[1]);
    const std::string unit = m[2];
    const int64_t unit_ms = unit.starts_with("minute") ? 60'000
                            : unit.starts_with("hour") ? 3'600'000
                                                       : 86'400'000;
    return Schedule{0, n * unit_ms};
  }
  if (s.starts_with("cron(")) {
    return InvalidArgument("Schedule '" + s +
                           "': carve does not implement cron expressions; use at(...) or "
                           "rate(value unit)");
  }
  return InvalidArgument("Schedule '" + s +
                         "' must be at(yyyy-mm-ddThh:mm:ss) or rate(value unit), unit one of "
                         "minute, minutes, hour, hours, day, days");
}

json ScheduledAction::ToJson() const {
  json j = KeyJson(key);
  j["ScheduledActionName"] = name;
  j["ScheduledActionARN"] = arn;
  j["Schedule"] = schedule;
  j["Timezone"] = "UTC";
  json action = json::object();
  if (min) action["MinCapacity"] = *min;
  if (max) action["MaxCapacity"] = *max;
  j["ScalableTargetAction"] = action;
  if (start_ms > 0) j["StartTime"] = EpochSeconds(start_ms);
  if (end_ms > 0) j["EndTime"] = EpochSeconds(end_ms);
  j["CreationTime"] = EpochSeconds(created_ms);
  j["Carve"] = {{"LastRunMs", last_run_ms}};
  return j;
}

Result<ScheduledAction> ScheduledAction::FromJson(const json& j) {
  try {
    ScheduledAction a;
    a.key = KeyFrom(j);
    a.name = j.at("ScheduledActionName").get<std::string>();
    a.arn = j.at("ScheduledActionARN").get<std::string>();
    a.schedule = j.at("Schedule").get<std::string>();
    const json& action = j.at("ScalableTargetAction");
    if (action.contains("MinCapacity")) a.min = action["MinCapacity"].get<int>();
    if (action.contains("MaxCapacity")) a.max = action["MaxCapacity"].get<int>();
    if (j.contains("StartTime")) a.start_ms = Millis(j, "StartTime");
    if (j.contains("EndTime")) a.end_ms = Millis(j, "EndTime");
    a.created_ms = Millis(j, "CreationTime");
    a.last_run_ms = j.at("Carve").at("LastRunMs").get<int64_t>();
    return a;
  } catch (const json::exception& e) {
    return Internal(std::string("stored scheduled action is malformed: ") + e.what());
  }
}

std::optional<int64_t> ScheduledAction::NextRun(int64_t after_ms) const {
  auto s = ParseSchedule(schedule);
  if (!s.has_value()) return std::nullopt;
  int64_t next = 0;
  if (s->period_ms == 0) {
    if (s->at_ms <= after_ms) return std::nullopt;
    next = s->at_ms;
  } else {
    const int64_t origin = start_ms > 0 ? start_ms : created_ms;
    const int64_t periods = after_ms < origin ? 0 : (after_ms - origin) / s->period_ms + 1;
    next = origin + periods * s->period_ms;
  }
  if (start_ms > 0 && next < start_ms) return std::nullopt;
  if (end_ms > 0 && next > end_ms) return std::nullopt;
  return next;
}

std::string ScalingActivity::Name() const {
  return fmt::format("{} {:016d} {:08d} {}", key.Name(), start_ms, seq, id);
}

json ScalingActivity::ToJson() const {
  json j = KeyJson(key);
  j["ActivityId"] = id;
  j["Description"] = description;
  j["Cause"] = cause;
  j["StartTime"] = EpochSeconds(start_ms);
  if (end_ms > 0) j["EndTime"] = EpochSeconds(end_ms);
  j["StatusCode"] = status;
  if (!status_message.empty()) j["StatusMessage"] = status_message;
  j["Carve"] = {{"Desired", desired}};
  return j;
}

Result<ScalingActivity> ScalingActivity::FromJson(const json& j) {
  try {
    ScalingActivity a;
    a.key = KeyFrom(j);
    a.id = j.at("ActivityId").get<std::string>();
    a.description = j.at("Description").get<std::string>();
    a.cause = j.at("Cause").get<std::string>();
    a.start_ms = Millis(j, "StartTime");
    if (j.contains("EndTime")) a.end_ms = Millis(j, "EndTime");
    a.status = j.at("StatusCode").get<std::string>();
    a.status_message = j.value("StatusMessage", "");
    a.desired = j.at("Carve").at("Desired").get<int>();
    return a;
  } catch (const json::exception& e) {
    return Internal(std::string("stored scaling activity is malformed: ") + e.what());
  }
}

}  // namespace carve::server::autoscaling
