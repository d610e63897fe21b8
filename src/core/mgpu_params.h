// The mGPU parameter text of a job (EMR Serverless syntax) and its resolution into shares.
//
// Syntax, as the seed shows it:
//   -- a comment runs to the end of the line
//   emr.serverless.mgpu.core=30;
//   emr.serverless.mgpu.memory = 1000;      -- whitespace around '=' is allowed
//   serverless.custom.job.task.gpus=1;
// A statement is `key=value;` on one line; several may share a line. Comments start where a
// statement could start. Blank lines are ignored.
//
// Known keys, per role:
//   custom task: emr.serverless.mgpu.core / .memory, legacy serverless.custom.job.task.gpus=N
//   Ray worker:  serverless.ray.worker.mgpu.core / .memory, legacy
//   serverless.ray.worker.gpu.amount=N Ray head:    serverless.ray.head.mgpu.core / .memory
// A legacy N means core = N*100. An unknown key that looks like an mGPU setting (it names
// "mgpu", or lies within 2 edits of a known key) is refused, naming the nearest known key:
// passed through, the typo would leave the task a whole card. Other unknown keys (Spark's, Ray's)
// are kept (they pass through to the engine) and listed as warnings.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "core/share.h"

namespace carve::core {

struct MgpuParam {
  std::string key;
  std::string value;  // Trimmed, as written.
  int line = 0;       // 1-based.
  int column = 0;     // 1-based byte column of the key.
};

struct ParsedMgpuParams {
  std::vector<MgpuParam> statements;  // In text order, duplicates included.
  std::vector<std::string> warnings;  // Unknown keys, keys set twice.
};

// Splits the text into statements. InvalidArgument for a malformed statement, with line and
// column: "line 3, column 27: expected ';' to end the statement 'emr.serverless.mgpu.core=30'".
Result<ParsedMgpuParams> ParseMgpuParams(std::string_view text);

enum class MgpuRole { kCustomTask, kRayWorker, kRayHead };
std::string_view MgpuRoleName(MgpuRole role);  // "custom task", "ray worker", "ray head"

struct ResolvedMgpuParams {
  // Unset when the text sets no GPU parameter for that role: the queue's default applies (an
  // mGPU queue gives a full card, core=100). A legacy N=0 also leaves the role without a GPU.
  std::optional<MgpuShare> custom_task;
  std::optional<MgpuShare> ray_worker;
  std::optional<MgpuShare> ray_head;
  std::vector<MgpuParam> passthrough;  // Unknown keys, last value of each, in text order.
  std::vector<std::string> warnings;

  const std::optional<MgpuShare>& ForRole(MgpuRole role) const;
};

// Applies the share rules to each role. When a key is set twice the last value applies.
// InvalidArgument names the parameter, the value and the rule (see share.h).
Result<ResolvedMgpuParams> ResolveMgpuParams(const ParsedMgpuParams& parsed);

// ParseMgpuParams then ResolveMgpuParams.
Result<ResolvedMgpuParams> CheckMgpuParams(std::string_view text);

}  // namespace carve::core
