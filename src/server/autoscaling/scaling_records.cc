#include "server/autoscaling/scaling_records.h"

#include <fmt/format.h>

#include <cstdio>
#include <ctime>

#include "aws/string_patterns.h"
#include "common/bounded_json.h"

namespace carve::server::autoscaling {

using nlohmann::json;

namespace {

// SageMaker's resource names: [a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}.
bool IsName(std::string_view s) { return aws::MatchesEndpointName(s); }

// The value of `digits` decimal digits at the front of `s`, which it removes; -1 (and `s`
// untouched) when they are not all digits.
int64_t TakeDigits(std::string_view& s, size_t digits) {
  if (s.size() < digits) return -1;
  int64_t n = 0;
  for (size_t i = 0; i < digits; ++i) {
    if (s[i] < '0' || s[i] > '9') return -1;
    n = n * 10 + (s[i] - '0');
  }
  s.remove_prefix(digits);
  return n;
}

// Removes `c` from the front of `s`; false when it is not there.
bool Take(std::string_view& s, char c) {
  if (s.empty() || s.front() != c) return false;
  s.remove_prefix(1);
  return true;
}

// at(yyyy-mm-ddThh:mm:ss) as its six fields, without a regex (issue 35).
std::optional<std::tm> ParseAt(std::string_view s) {
  if (!s.starts_with("at(") || !s.ends_with(")")) return std::nullopt;
  s = s.substr(3, s.size() - 4);
  std::tm tm{};
  int64_t f[6] = {};
  constexpr size_t kWidths[] = {4, 2, 2, 2, 2, 2};
  constexpr char kAfter[] = {'-', '-', 'T', ':', ':', '\0'};
  for (int i = 0; i < 6; ++i) {
    f[i] = TakeDigits(s, kWidths[i]);
    if (f[i] < 0 || (i < 5 && !Take(s, kAfter[i]))) return std::nullopt;
  }
  if (!s.empty()) return std::nullopt;
  tm.tm_year = static_cast<int>(f[0]) - 1900;
  tm.tm_mon = static_cast<int>(f[1]) - 1;
  tm.tm_mday = static_cast<int>(f[2]);
  tm.tm_hour = static_cast<int>(f[3]);
  tm.tm_min = static_cast<int>(f[4]);
  tm.tm_sec = static_cast<int>(f[5]);
  return tm;
}

// rate(N unit), N in [1-9][0-9]{0,6}, as N and the unit's milliseconds, without a regex.
std::optional<std::pair<int64_t, int64_t>> ParseRate(std::string_view s) {
  if (!s.starts_with("rate(") || !s.ends_with(")")) return std::nullopt;
  s = s.substr(5, s.size() - 6);
  const size_t space = s.find(' ');
  if (space == std::string_view::npos || space == 0 || space > 7 || s[0] == '0') {
    return std::nullopt;
  }
  std::string_view digits = s.substr(0, space);
  const int64_t n = TakeDigits(digits, space);
  if (n < 0) return std::nullopt;
  const std::string_view unit = s.substr(space + 1);
  if (unit == "minute" || unit == "minutes") return std::pair{n, int64_t{60'000}};
  if (unit == "hour" || unit == "hours") return std::pair{n, int64_t{3'600'000}};
  if (unit == "day" || unit == "days") return std::pair{n, int64_t{86'400'000}};
  return std::nullopt;
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

// The role AWS shows on a SageMaker scalable target: the service-linked role, in the account
// that the target's own ARN (arn:aws:application-autoscaling:REGION:ACCOUNT:...) names.
std::string ServiceLinkedRoleArn(const std::string& target_arn) {
  const std::vector<std::string> parts = Split(target_arn, ':');
  return fmt::format(
      "arn:aws:iam::{}:role/aws-service-role/sagemaker.application-autoscaling.amazonaws.com/"
      "AWSServiceRoleForApplicationAutoScaling_SageMakerEndpoint",
      parts.size() > 4 ? parts[4] : "");
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
  // carve assumes no IAM role; AWS shows the caller's service-linked role for SageMaker.
  j["RoleARN"] = ServiceLinkedRoleArn(arn);
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
    auto spec = ParsePolicySpec(p.type, p.config);
    if (!spec.has_value()) return Internal("stored scaling policy: " + spec.error().message);
    p.spec = std::move(*spec);
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
  const std::string s = TextPreview(text, 256);  // As messages quote it.
  if (auto at = ParseAt(text)) {
    std::tm tm = *at;
    if (tm.tm_mon < 0 || tm.tm_mon > 11 || tm.tm_mday < 1 || tm.tm_mday > 31 || tm.tm_hour > 23 ||
        tm.tm_min > 59 || tm.tm_sec > 59) {
      return InvalidArgument("Schedule '" + s + "' names no valid date and time");
    }
    return Schedule{static_cast<int64_t>(timegm(&tm)) * 1000, 0};
  }
  if (auto rate = ParseRate(text)) return Schedule{0, rate->first * rate->second};
  if (text.starts_with("cron(")) {
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
