#include "agent/mps/mps_env.h"

namespace carve::agent::mps {

Result<MpsDirs> MpsDirsFor(const std::string& root, const std::string& gpu_uuid) {
  if (root.empty()) return InvalidArgument("MPS root directory must not be empty");
  if (gpu_uuid.empty() || gpu_uuid.find('/') != std::string::npos || gpu_uuid == "." ||
      gpu_uuid == "..") {
    return InvalidArgument("GPU UUID '" + gpu_uuid + "' cannot name an MPS directory");
  }
  const std::string base = root + "/" + gpu_uuid;
  return MpsDirs{base + "/pipe", base + "/log"};
}

EnvVars MpsDaemonEnv(const MpsDirs& dirs, const std::string& gpu_uuid) {
  return {{"CUDA_VISIBLE_DEVICES", gpu_uuid},
          {"CUDA_MPS_PIPE_DIRECTORY", dirs.pipe_dir},
          {"CUDA_MPS_LOG_DIRECTORY", dirs.log_dir}};
}

Result<EnvVars> MpsWorkerEnv(const MpsDirs& dirs, const std::string& gpu_uuid,
                             const MpsShare& share) {
  if (share.core_percent < 1 || share.core_percent > 100) {
    return InvalidArgument("core_percent " + std::to_string(share.core_percent) +
                           " must be within 1..100 for CUDA_MPS_ACTIVE_THREAD_PERCENTAGE");
  }
  if (share.memory_mib == 0) {
    return InvalidArgument("memory_mib must be > 0 for CUDA_MPS_PINNED_DEVICE_MEM_LIMIT");
  }
  EnvVars env = MpsDaemonEnv(dirs, gpu_uuid);
  env.emplace_back("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", std::to_string(share.core_percent));
  env.emplace_back("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT",
                   "0=" + std::to_string(share.memory_mib) + "M");
  return env;
}

}  // namespace carve::agent::mps
