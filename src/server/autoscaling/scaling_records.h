// The records of Application Auto Scaling as carve keeps them in the Store, one per scalable
// target, scaling policy, scheduled action and scaling activity, in the caller's account:
//   kind ScalableTarget   name "<dimension> <resource id>"
//   kind ScalingPolicy    name "<dimension> <resource id> <policy name>"
//   kind ScheduledAction  name "<dimension> <resource id> <action name>"
//   kind ScalingActivity  name "<dimension> <resource id> <start millis, 16 digits> <seq, 8> <id>"
// (a space cannot appear in a resource id carve accepts, nor in a dimension). Every body is the
// JSON the Describe operation returns, plus carve's own state under "Carve".
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "common/result.h"
#include "server/autoscaling/policy_spec.h"
#include "store/store.h"

namespace carve::server::autoscaling {

inline constexpr std::string_view kNamespace = "sagemaker";
inline constexpr std::string_view kCopyCount = "sagemaker:inference-component:DesiredCopyCount";
inline constexpr std::string_view kInstanceCount = "sagemaker:variant:DesiredInstanceCount";

inline constexpr std::string_view kTargetKind = "ScalableTarget";
inline constexpr std::string_view kPolicyKind = "ScalingPolicy";
inline constexpr std::string_view kScheduledKind = "ScheduledAction";
inline constexpr std::string_view kActivityKind = "ScalingActivity";

// A scalable target's identity: its dimension and resource id.
struct ScalableKey {
  std::string dimension;    // kCopyCount or kInstanceCount.
  std::string resource_id;  // "inference-component/NAME" or "endpoint/E/variant/V".

  std::string Name() const { return dimension + " " + resource_id; }
  // The resource's parts: {component} or {endpoint, variant}.
  std::string Component() const;
  std::string Endpoint() const;
  std::string Variant() const;
  bool IsComponent() const { return dimension == kCopyCount; }
  friend auto operator<=>(const ScalableKey&, const ScalableKey&) = default;
};

// Checks a dimension and resource id pair; the error is the service's ValidationException text.
Status ValidateKey(const ScalableKey& key);

struct ScalableTarget {
  ScalableKey key;
  int min = 0;
  int max = 0;
  bool scale_in_suspended = false;
  bool scale_out_suspended = false;
  bool scheduled_suspended = false;
  int64_t created_ms = 0;
  std::string arn;

  nlohmann::json ToJson() const;  // DescribeScalableTargets' ScalableTarget shape.
  static Result<ScalableTarget> FromJson(const nlohmann::json& j);
};

struct ScalingPolicy {
  ScalableKey key;
  std::string name;
  std::string type;       // "TargetTrackingScaling" or "StepScaling".
  nlohmann::json config;  // TargetTrackingScalingPolicyConfiguration or StepScaling's, as given.
  PolicySpec spec;        // `config`, parsed.
  int64_t created_ms = 0;
  std::string arn;
  // carve's state: when the policy last scaled out and in (for the cooldowns).
  int64_t last_scale_out_ms = 0;
  int64_t last_scale_in_ms = 0;

  nlohmann::json ToJson() const;  // DescribeScalingPolicies' ScalingPolicy shape, plus "Carve".
  static Result<ScalingPolicy> FromJson(const nlohmann::json& j);
};

struct ScheduledAction {
  ScalableKey key;
  std::string name;
  std::string schedule;  // "at(yyyy-mm-ddThh:mm:ss)" or "rate(N unit)".
  std::optional<int> min;
  std::optional<int> max;
  int64_t start_ms = 0;  // 0: none.
  int64_t end_ms = 0;    // 0: none.
  int64_t created_ms = 0;
  std::string arn;
  int64_t last_run_ms = 0;  // carve's: when it last fired (0: never).

  nlohmann::json ToJson() const;
  static Result<ScheduledAction> FromJson(const nlohmann::json& j);
  // When it next fires after `after_ms` (exclusive); nullopt when never again.
  std::optional<int64_t> NextRun(int64_t after_ms) const;
};

// A parsed schedule: at(...) once, or rate(...) every period_ms from the action's creation.
// cron(...) is refused: carve does not implement cron expressions.
struct Schedule {
  int64_t at_ms = 0;      // at(): the moment (UTC).
  int64_t period_ms = 0;  // rate(): the period.
};
Result<Schedule> ParseSchedule(std::string_view text);

struct ScalingActivity {
  ScalableKey key;
  std::string id;
  std::string description;
  std::string cause;
  std::string status;  // Successful, Failed, InProgress, ...
  std::string status_message;
  int64_t start_ms = 0;
  int64_t end_ms = 0;
  int desired = 0;   // carve's: the capacity it set (InProgress until the resource reaches it).
  uint32_t seq = 0;  // Orders activities that start in the same millisecond.

  std::string Name() const;  // Its record name (ordered by start time within a target).
  nlohmann::json ToJson() const;
  static Result<ScalingActivity> FromJson(const nlohmann::json& j);
};

// Seconds since the epoch, as awsJson1.1 timestamps go on the wire.
double EpochSeconds(int64_t ms);

}  // namespace carve::server::autoscaling
