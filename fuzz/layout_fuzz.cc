// MIG layout and profile names (src/core/layout_validator.h, src/catalog lookups): what a
// CreateEndpointConfig's AcceleratorPartitionTypes, `carve layout check` and the fleet file
// carry. Input, one item per line: a GPU or instance type name, option lines ("@driver=<version>",
// "@sagemaker" for SageMaker's rules), then profile names. Properties, beyond "no crash, no leak,
// no UB":
//  - lookups are case-insensitive and a found profile's own names ("3g.40gb", "mig-3g.40gb")
//    find it again;
//  - an accepted layout has one placed instance per name, each at one of its profile's allowed
//    starts, inside the GPU, none overlapping, no profile above its cap;
//  - an accepted layout validates again from its own profiles, and reads back from its
//    (profile, start) pairs (LayoutAt, what records persist) as the same layout;
//  - placement lines ("3g.40gb@4") that LayoutAt accepts are at allowed starts, inside the GPU,
//    without overlaps.
#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "catalog/catalog.h"
#include "core/layout_validator.h"
#include "fuzz_util.h"

namespace {

namespace catalog = carve::catalog;
namespace core = carve::core;

std::string Upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

void CheckNamesRoundTrip(const catalog::GpuModel& gpu, const catalog::MigProfile& p) {
  for (const std::string& name :
       {std::string(p.name), catalog::SageMakerName(p), Upper(catalog::SageMakerName(p))}) {
    auto again = catalog::FindProfile(gpu, name);
    FUZZ_CHECK(again.has_value() && *again == &p, "%s: profile name %s does not find itself",
               std::string(gpu.id).c_str(), name.c_str());
  }
}

void CheckGeometry(const core::Layout& layout, size_t names) {
  const catalog::GpuModel& gpu = *layout.gpu;
  FUZZ_CHECK(layout.instances.size() == names, "%zu names gave %zu instances", names,
             layout.instances.size());
  uint64_t used = 0;
  for (const core::PlacedInstance& i : layout.instances) {
    const catalog::MigProfile& p = *i.profile;
    FUZZ_CHECK(std::find(p.starts.begin(), p.starts.end(), i.start) != p.starts.end(),
               "%s placed at %d, not an allowed start", std::string(p.name).c_str(), i.start);
    FUZZ_CHECK(i.start >= 0 && i.end() <= gpu.placement_units && i.end() <= 64,
               "%s at [%d, %d) leaves the GPU's %d units", std::string(p.name).c_str(), i.start,
               i.end(), gpu.placement_units);
    const uint64_t span = (i.end() == 64 ? ~uint64_t{0} : (uint64_t{1} << i.end()) - 1) &
                          ~((uint64_t{1} << i.start) - 1);
    FUZZ_CHECK((used & span) == 0, "%s at %d overlaps another instance",
               std::string(p.name).c_str(), i.start);
    used |= span;
  }
}

void CheckLayout(const core::Layout& layout, size_t names) {
  CheckGeometry(layout, names);
  const catalog::GpuModel& gpu = *layout.gpu;
  std::map<const catalog::MigProfile*, int> per_profile;
  for (const core::PlacedInstance& i : layout.instances) {
    const catalog::MigProfile& p = *i.profile;
    FUZZ_CHECK(++per_profile[&p] <= p.max_count, "%s above its cap of %d",
               std::string(p.name).c_str(), p.max_count);
  }
  std::vector<const catalog::MigProfile*> profiles;
  for (const core::PlacedInstance& i : layout.instances) profiles.push_back(i.profile);
  auto again = core::ValidateProfiles(gpu, profiles);
  FUZZ_CHECK(again.has_value(), "an accepted layout is refused from its own profiles: %s",
             again.error().message.c_str());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto lines = carve::fuzz::Split(carve::fuzz::AsView(data, size), '\n');
  if (lines.empty() || lines.size() > 64) return 0;
  const std::string target(lines[0]);
  const catalog::GpuModel* gpu = nullptr;
  if (auto g = catalog::FindGpu(target)) {
    gpu = *g;
    auto upper = catalog::FindGpu(Upper(target));
    FUZZ_CHECK(upper.has_value() && *upper == gpu, "GPU lookup of '%s' is case-sensitive",
               target.c_str());
  } else if (auto t = catalog::FindInstanceType(target)) {
    auto g2 = catalog::FindGpu((*t)->gpu_id);
    FUZZ_CHECK(g2.has_value(), "instance type %s names unknown GPU", target.c_str());
    gpu = *g2;
  } else {
    return 0;
  }
  core::LayoutOptions options;
  size_t first = 1;
  for (; first < lines.size() && lines[first].substr(0, 1) == "@"; ++first) {
    if (lines[first] == "@sagemaker") options.sagemaker_rules = true;
    if (lines[first].substr(0, 8) != "@driver=") continue;
    auto driver = catalog::DriverVersion::Parse(lines[first].substr(8));
    if (!driver) continue;
    auto again = catalog::DriverVersion::Parse(driver->ToString());
    FUZZ_CHECK(again.has_value() && *again == *driver, "driver %s does not round-trip",
               driver->ToString().c_str());
    options.driver = *driver;
  }
  std::vector<std::string> names;
  for (size_t i = first; i < lines.size(); ++i) {
    names.emplace_back(lines[i]);
    if (auto p = catalog::FindProfile(*gpu, names.back())) CheckNamesRoundTrip(*gpu, **p);
  }
  auto layout = core::ValidateLayout(*gpu, names, options);
  if (layout) {
    CheckLayout(*layout, names.size());
    // What a record persists, (profile, start) pairs, reads back as the same layout.
    std::vector<std::pair<std::string, int>> placed;
    for (const core::PlacedInstance& i : layout->instances) {
      placed.emplace_back(std::string(i.profile->name), i.start);
    }
    auto again = core::LayoutAt(*gpu, placed);
    FUZZ_CHECK(again.has_value() && again->instances == layout->instances,
               "a validated layout does not read back from its placements");
  }
  // Placements as a record holds them ("3g.40gb@4"): accepted only at allowed starts, inside
  // the GPU, without overlaps.
  std::vector<std::pair<std::string, int>> placements;
  for (const std::string& n : names) {
    const size_t at = n.rfind('@');
    if (at == std::string::npos || at + 1 >= n.size() || n.size() - at > 3) continue;
    const std::string digits = n.substr(at + 1);
    if (digits.find_first_not_of("0123456789") != std::string::npos) continue;
    placements.emplace_back(n.substr(0, at), std::stoi(digits));
  }
  if (auto at = core::LayoutAt(*gpu, placements)) {
    CheckGeometry(*at, placements.size());
  }
  return 0;
}
