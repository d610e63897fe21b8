#include "agent/launch/pid_file.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

namespace carve::launch {

Status WritePidFile(const std::string& path, const PidRecord& r) {
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << nlohmann::json{{"pid", r.process.pid},
                          {"start_time", r.process.start_time},
                          {"port", r.port},
                          {"ports", r.ports}}
               .dump()
        << "\n";
    if (!out.flush()) return Internal("cannot write pid file " + tmp);
  }
  std::filesystem::rename(tmp, path, ec);
  if (ec) return Internal("cannot rename " + tmp + " to " + path + ": " + ec.message());
  return OkStatus();
}

Result<std::optional<PidRecord>> ReadPidFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::optional<PidRecord>();
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object() || !j["pid"].is_number_integer() ||
      !j["start_time"].is_number_unsigned() || j["pid"].get<int>() <= 0) {
    return InvalidArgument("pid file " + path + " is not a pid record: " + text);
  }
  PidRecord record{{j["pid"].get<int>(), j["start_time"].get<uint64_t>()}, 0, {}};
  if (j["port"].is_number_integer()) record.port = j["port"].get<int>();
  // A file from before named ports has none; a malformed map is refused, not half-read.
  if (j.contains("ports")) {
    const auto& ports = j["ports"];
    bool ok = ports.is_object();
    for (auto it = ports.begin(); ok && it != ports.end(); ++it) {
      ok = it->is_number_integer();
      if (ok) record.ports[it.key()] = it->get<int>();
    }
    if (!ok)
      return InvalidArgument("pid file " + path + ": 'ports' is not a map of ports: " + text);
  }
  return std::optional<PidRecord>(std::move(record));
}

Result<ReconcileResult> ReconcilePidFile(const std::string& path, Launcher& launcher, bool wanted,
                                         std::chrono::milliseconds grace) {
  CARVE_ASSIGN_OR_RETURN(std::optional<PidRecord> record, ReadPidFile(path));
  if (!record) return ReconcileResult{Reconcile::kNoRecord, std::nullopt};
  std::error_code ec;
  if (!launcher.Alive(record->process)) {
    std::filesystem::remove(path, ec);
    return ReconcileResult{Reconcile::kGone, record};
  }
  if (wanted) return ReconcileResult{Reconcile::kAdopted, record};
  CARVE_RETURN_IF_ERROR(launcher.Stop(record->process, grace));
  std::filesystem::remove(path, ec);
  return ReconcileResult{Reconcile::kKilled, record};
}

}  // namespace carve::launch
