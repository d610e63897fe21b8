// Deployment: a rolling update of an inference component from one specification to the next, as
// UpdateInferenceComponent's DeploymentConfig.RollingUpdatePolicy describes it, and the rule that
// moves it one step per reconcile pass.
//
// Every copy runs one specification version (CopyRecord::spec_version). A deployment replaces the
// copies of the version it leaves ("old") with copies of the component's current version ("new"),
// one batch at a time:
//   1. place a batch of new copies (MaximumBatchSize of the desired count) beside the old ones;
//   2. wait until every new copy serves (answers GET /ping): the router sends traffic to the
//      serving copies of either version, so no request goes to a copy that cannot answer;
//   3. stop as many old copies (the highest copy numbers first) as the batch added;
//   4. wait WaitIntervalInSeconds (the baking period), then the next batch.
// When not one copy of a batch fits (no free partition of the component's type), one batch of
// old copies is stopped first to make room, and the status says so: capacity dips by one batch
// instead of the update waiting for ever.
//
// A deployment fails when a new copy cannot start (its agent reports it failed, or it exits
// kStartupCrashLimit times before a health check passes, or it does not pass one within the
// startup health-check timeout), or when MaximumExecutionTimeoutInSeconds passes. It then rolls
// back: the versions swap roles, and the same steps replace the new copies with copies of the old
// specification in batches of RollbackMaximumBatchSize (default: all at once). The component
// returns to InService on the old specification with a FailureReason that says what failed.
//
// Without a DeploymentConfig, the update is SageMaker's all-at-once (blue/green) default: one
// batch of every copy, no baking period, rollback all at once.
//
// The whole state is in the component's Store record (and each copy's record names its version),
// so a server restarted mid-deployment resumes it where the records say it was.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "common/result.h"
#include "core/placement.h"

namespace carve::server::sagemaker {

// InferenceComponentCapacitySize.
struct CapacitySize {
  enum class Type { kCopyCount, kCapacityPercent };
  Type type = Type::kCapacityPercent;
  int value = 100;

  // The number of copies it means for a component of `desired` copies (at least 1).
  int Copies(int desired) const;
  nlohmann::json ToJson() const;
  static Result<CapacitySize> FromJson(const nlohmann::json& j);
  friend bool operator==(const CapacitySize&, const CapacitySize&) = default;
};

// What one version of a component's copies runs and asks for.
struct CopySpec {
  int64_t version = 1;
  nlohmann::json specification = nlohmann::json::object();
  int devices = 1;
  int64_t cpu_milli = 0;
  int64_t memory_mib = 0;
  core::Strategy strategy = core::Strategy::kSpread;

  nlohmann::json ToJson() const;
  static Result<CopySpec> FromJson(const nlohmann::json& j);
};

enum class DeploymentPhase { kRolling, kRollingBack };

struct Deployment {
  DeploymentPhase phase = DeploymentPhase::kRolling;
  CopySpec from;  // The version being replaced (the new one while rolling back).
  CapacitySize batch;
  CapacitySize rollback_batch;  // Default 100%: the old fleet comes back at once.
  int wait_s = 0;
  int timeout_s = 0;           // MaximumExecutionTimeoutInSeconds; 0: none given.
  int64_t started_ms = 0;      // Unix millis the update was accepted.
  int64_t baked_ms = 0;        // When old copies last stopped: the baking period starts then.
  int64_t rolled_back_ms = 0;  // When the rollback began; 0 while rolling.
  bool batch_open = false;     // A batch was placed and has not served yet.
  std::string reason;          // Why it rolls back ("" while rolling).

  // The batch size of the current phase, for a component of `desired` copies.
  int BatchSize(int desired) const {
    return (phase == DeploymentPhase::kRolling ? batch : rollback_batch).Copies(desired);
  }
  nlohmann::json ToJson() const;
  static Result<Deployment> FromJson(const nlohmann::json& j);
};

// Parses a validated DeploymentConfig member (RollingUpdatePolicy) into a fresh deployment from
// `from`; `config` null means the all-at-once default. Also returns the config as
// DescribeInferenceComponent's LastDeploymentConfig shows it.
struct StartedDeployment {
  Deployment deployment;
  nlohmann::json last_config;
};
StartedDeployment StartDeployment(const nlohmann::json& config, CopySpec from, int64_t now_ms);

// What the copies of a component under deployment are, for one pass.
struct DeploymentCounts {
  int desired = 0;
  int new_copies = 0;   // Placed copies of the current version.
  int new_serving = 0;  // Of those, serving.
  int old_copies = 0;   // Placed copies of the version being replaced.
};

// One pass's step.
struct DeploymentStep {
  enum class Kind {
    kContinue,  // Place `place` new copies, stop `stop` old ones.
    kRollBack,  // Start rolling back, for `reason`.
    kDone,      // Every copy runs the current version and serves, and the bake is over.
  };
  Kind kind = Kind::kContinue;
  int place = 0;
  int stop = 0;
  // place > 0 is a new batch (as opposed to replacing copies lost from the count): if none of it
  // fits, one batch of old copies may be stopped to make room.
  bool new_batch = false;
  // The open batch serves: its baking period starts now (set baked_ms, close the batch).
  bool start_bake = false;
  std::string reason;
  std::string progress;  // For StatusMessage.
};

// The rule. `failure` is why a new copy could not start ("" when none failed); it rolls back only
// while rolling (while rolling back, copies of the old version keep restarting).
DeploymentStep NextDeploymentStep(const Deployment& d, const DeploymentCounts& n,
                                  const std::string& failure, int64_t now_ms);

}  // namespace carve::server::sagemaker
