#include "core/layout_enumerator.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/layout_search.h"

namespace carve::core {
namespace {

using catalog::GpuModel;
using catalog::MigProfile;

struct Candidate {
  const MigProfile* profile;
  int start;
  uint64_t mask;
};

class Enumerator {
 public:
  Enumerator(const GpuModel& gpu, std::vector<Candidate> candidates, const LayoutOptions& rules)
      : gpu_(gpu), candidates_(std::move(candidates)), rules_(rules), tally_(gpu) {}

  std::vector<Layout> Run() {
    Visit(0, 0);
    return std::move(layouts_);
  }

 private:
  bool CanAdd(const Candidate& c, uint64_t occupied) {
    if ((occupied & c.mask) != 0) {
      return false;
    }
    tally_.Add(*c.profile);
    const bool keeps = KeepsRules(tally_, rules_, RuleScope::kWithSums);
    tally_.Remove(*c.profile);
    return keeps;
  }

  // Extends the current layout with candidates at index >= next only, so every set of
  // instances is reached through exactly one (start-ordered) sequence.
  void Visit(size_t next, uint64_t occupied) {
    bool extendable = false;
    for (size_t i = 0; i < candidates_.size(); ++i) {
      const Candidate& c = candidates_[i];
      if (!CanAdd(c, occupied)) {
        continue;
      }
      extendable = true;
      if (i < next) {
        continue;
      }
      current_.push_back(PlacedInstance{c.profile, c.start});
      tally_.Add(*c.profile);
      Visit(i + 1, occupied | c.mask);
      tally_.Remove(*c.profile);
      current_.pop_back();
    }
    if (!extendable && !current_.empty()) {
      layouts_.push_back(Layout{&gpu_, current_});
    }
  }

  const GpuModel& gpu_;
  const std::vector<Candidate> candidates_;  // Ascending (start, catalog position).
  const LayoutOptions rules_;
  ProfileTally tally_;
  std::vector<PlacedInstance> current_;
  std::vector<Layout> layouts_;
};

}  // namespace

Result<std::vector<Layout>> EnumerateMaximalLayouts(const GpuModel& gpu,
                                                    const EnumerateOptions& options) {
  if (!gpu.mig_capable()) {
    return FailedPrecondition(
        fmt::format("{} provides no MIG profiles; it has no MIG layouts", gpu.id));
  }
  if (!HasPlacementGeometry(gpu)) {
    return FailedPrecondition(fmt::format(
        "{} has no MIG placement data in the catalog; its layouts cannot be enumerated", gpu.id));
  }
  std::vector<const MigProfile*> allowed;
  for (const MigProfile* p : options.profiles) {
    if (ProfileIndex(gpu, p) < 0) {
      return InvalidArgument(fmt::format("profile {} is not one of {}'s profiles",
                                         p == nullptr ? "(null)" : std::string(p->name), gpu.id));
    }
  }
  for (const MigProfile& p : gpu.profiles) {
    const bool chosen =
        options.profiles.empty() ||
        std::find(options.profiles.begin(), options.profiles.end(), &p) != options.profiles.end();
    if (chosen && ProfileAllowed(gpu, p, options.rules)) {
      allowed.push_back(&p);
    }
  }
  std::vector<Candidate> candidates;
  for (const MigProfile* p : allowed) {
    for (uint8_t start : p->starts) {
      candidates.push_back({p, start, UnitMask(start, p->placement_size)});
    }
  }
  std::stable_sort(candidates.begin(), candidates.end(),
                   [](const Candidate& a, const Candidate& b) { return a.start < b.start; });
  return Enumerator(gpu, std::move(candidates), options.rules).Run();
}

}  // namespace carve::core
