// carve-nvml-probe: reads a GPU host's NVML inventory, MIG profile table and placements, checks
// them against the catalog, makes the read-only queries the agent relies on (GPU instances, MIG
// devices, compute processes, utilization) and prints JSON on stdout; log lines go to stderr,
// so stdout is always exactly one JSON document. Strictly read-only: every NVML call goes
// through ReadOnlyNvml, which refuses creation and destruction. Used by tests/gpu/run.sh and
// tests/gpu/device-check.sh.
//
//   carve-nvml-probe [--library PATH]
// Exit status: 0 printed a report; 3 no NVML/GPU here (a "skipped" report); 1 an NVML that is
// there but failed or lacks entry points (an "error" report).
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "agent/mig/discovery.h"
#include "agent/mig/probe_report.h"
#include "agent/nvml/lib_nvml.h"
#include "agent/nvml/read_only_nvml.h"

namespace {

constexpr int kSkipped = 3;
constexpr int kFailed = 1;

int Print(const nlohmann::json& j, int code) {
  std::printf("%s\n", j.dump(2).c_str());
  return code;
}

}  // namespace

int main(int argc, char** argv) {
  std::string library = carve::agent::LibNvml::kDefaultPath;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--library") == 0 && i + 1 < argc) {
      library = argv[++i];
    } else {
      std::fprintf(stderr, "usage: %s [--library PATH]\n", argv[0]);
      return 2;
    }
  }
  spdlog::set_default_logger(spdlog::stderr_color_st("carve-nvml-probe"));
  auto lib = carve::agent::LibNvml::Load(library);
  if (!lib) {
    // No library at all is a host without the driver; one without the entry points carve needs
    // is a driver carve cannot run on, which a GPU check must not pass as "skipped".
    if (lib.error().code == carve::ErrorCode::kNotFound) {
      return Print(carve::agent::SkippedReport(lib.error().message), kSkipped);
    }
    return Print(carve::agent::ErrorReport(lib.error().message), kFailed);
  }
  carve::agent::ReadOnlyNvml nvml(**lib);
  if (auto s = nvml.Init(); !s.ok()) {
    return Print(carve::agent::SkippedReport(s.error().message), kSkipped);
  }
  auto count = nvml.DeviceCount();
  if (count.has_value() && *count == 0) {
    return Print(carve::agent::SkippedReport("NVML loaded but reports no GPUs"), kSkipped);
  }
  auto node = carve::agent::DiscoverNode(nvml);
  if (!node) {
    (void)nvml.Shutdown();
    return Print(carve::agent::ErrorReport(node.error().message), kFailed);
  }
  nlohmann::json report = carve::agent::ProbeReport(*node);
  report["read_only_calls"] =
      carve::agent::ReadOnlyCallsReport(nvml, static_cast<uint32_t>(node->gpus.size()));
  (void)nvml.Shutdown();
  return Print(report, 0);
}
