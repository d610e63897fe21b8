// carve-nvml-probe: reads a GPU host's NVML inventory, MIG profile table and placements, checks
// them against the catalog and prints JSON. Strictly read-only: every NVML call goes through
// ReadOnlyNvml, which refuses creation and destruction. Used by tests/gpu/run.sh.
//
//   carve-nvml-probe [--library PATH]
// Exit status: 0 printed a report; 3 no NVML/GPU here (a "skipped" report); 1 an NVML failure.
#include <cstdio>
#include <cstring>
#include <string>

#include "agent/mig/discovery.h"
#include "agent/mig/probe_report.h"
#include "agent/nvml/lib_nvml.h"
#include "agent/nvml/read_only_nvml.h"

namespace {

constexpr int kSkipped = 3;

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
  auto lib = carve::agent::LibNvml::Load(library);
  if (!lib) {
    return Print(carve::agent::SkippedReport(lib.error().message), kSkipped);
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
  (void)nvml.Shutdown();
  if (!node) {
    std::fprintf(stderr, "carve-nvml-probe: %s\n", node.error().message.c_str());
    return 1;
  }
  return Print(carve::agent::ProbeReport(*node), 0);
}
