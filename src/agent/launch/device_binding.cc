#include "agent/launch/device_binding.h"

#include <filesystem>

#include "interposer/process_probe.h"

namespace carve::launch {
namespace {

Status NonEmpty(const std::string& value, const char* field) {
  if (value.empty()) return InvalidArgument(std::string(field) + " is empty");
  return OkStatus();
}

Status Absolute(const std::string& value, const char* field) {
  if (value.empty() || value[0] != '/') {
    return InvalidArgument(std::string(field) + " \"" + value + "\" must be an absolute path");
  }
  return OkStatus();
}

}  // namespace

std::string InterposerPreload(const std::string& interposer_path) {
#ifdef CARVE_ASAN_RUNTIME
  return std::string(CARVE_ASAN_RUNTIME) + ":" + interposer_path;
#else
  return interposer_path;
#endif
}

Result<EnvVars> BindingEnv(const DeviceBinding& binding) {
  if (std::holds_alternative<std::monostate>(binding)) {
    return EnvVars{{"CUDA_VISIBLE_DEVICES", ""}};
  }
  if (const auto* mig = std::get_if<MigBinding>(&binding)) {
    CARVE_RETURN_IF_ERROR(NonEmpty(mig->mig_uuid, "MIG device uuid"));
    const bool prefixed = mig->mig_uuid.rfind("MIG-", 0) == 0;
    return EnvVars{{"CUDA_VISIBLE_DEVICES", prefixed ? mig->mig_uuid : "MIG-" + mig->mig_uuid}};
  }
  if (const auto* mgpu = std::get_if<MgpuBinding>(&binding)) {
    CARVE_RETURN_IF_ERROR(NonEmpty(mgpu->gpu_uuid, "GPU uuid"));
    CARVE_RETURN_IF_ERROR(Absolute(mgpu->interposer_path, "interposer library path"));
    CARVE_RETURN_IF_ERROR(Absolute(mgpu->ledger_path, "ledger path"));
    return EnvVars{{"CUDA_VISIBLE_DEVICES", mgpu->gpu_uuid},
                   {"LD_PRELOAD", InterposerPreload(mgpu->interposer_path)},
                   {"CARVE_MGPU_LEDGER", mgpu->ledger_path}};
  }
  if (const auto* gpus = std::get_if<GpuBinding>(&binding)) {
    if (gpus->gpu_uuids.empty()) return InvalidArgument("GPU binding lists no GPU uuid");
    std::string visible;
    for (const std::string& uuid : gpus->gpu_uuids) {
      CARVE_RETURN_IF_ERROR(NonEmpty(uuid, "GPU uuid"));
      visible += (visible.empty() ? "" : ",") + uuid;
    }
    EnvVars env{{"CUDA_VISIBLE_DEVICES", visible}};
    env.insert(env.end(), gpus->extra.begin(), gpus->extra.end());
    return env;
  }
  const auto& mps = std::get<MpsBinding>(binding);
  CARVE_RETURN_IF_ERROR(NonEmpty(mps.gpu_uuid, "GPU uuid"));
  return agent::mps::MpsWorkerEnv(mps.dirs, mps.gpu_uuid, mps.share);
}

std::string FindInterposerLibrary(const std::string& carve_binary) {
  namespace fs = std::filesystem;
  if (carve_binary.empty()) return "";
  const fs::path dir = fs::path(carve_binary).parent_path();
  for (const fs::path& p : {dir / "libcarve-mgpu.so", dir / "src/interposer/libcarve-mgpu.so",
                            dir / "../lib/carve/libcarve-mgpu.so"}) {
    std::error_code ec;
    if (fs::is_regular_file(p, ec)) return fs::canonical(p, ec).string();
  }
  return "";
}

Result<std::unique_ptr<interposer::Ledger>> CreateWorkerLedger(
    const std::string& path, const interposer::LedgerSettings& settings) {
  return interposer::Ledger::Create(path, settings,
                                    std::make_shared<interposer::ProcfsProcessProbe>());
}

}  // namespace carve::launch
