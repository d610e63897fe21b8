#include "core/layout_rules.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>

#include "catalog/catalog.h"

namespace carve::core {
namespace {

using catalog::DriverVersion;
using catalog::GpuModel;
using catalog::MigProfile;
using catalog::ProfileSuffix;

// MIG guide, Concepts: before R510 an A100 could not hold a (4 memory, 4 compute) GI beside a
// (4 memory, 3 compute) GI. The rule is stated for A100; carve applies it to every GPU whose MIG
// minimum predates R510, which today is exactly the A100 family (A30 has no 3g profile).
constexpr DriverVersion kFourPlusThreeDriver{510, 0, 0};

constexpr std::array kRuleOrder = {
    LayoutRule::kSageMakerNotEmpty,
    LayoutRule::kSageMakerNoSuffix,
    LayoutRule::kGpuDriver,
    LayoutRule::kProfileDriver,
    LayoutRule::kFourPlusThreeDriver,
    LayoutRule::kProfileCap,
    LayoutRule::kOneMe,
    LayoutRule::kMeAllBesideNoMe,
    LayoutRule::kInstanceCount,
    LayoutRule::kSliceSums,
};

bool InScope(LayoutRule rule, RuleScope scope) {
  if (scope == RuleScope::kWithSums) {
    return true;
  }
  return rule != LayoutRule::kInstanceCount && rule != LayoutRule::kSliceSums;
}

bool OlderThan(const std::optional<DriverVersion>& driver, const DriverVersion& minimum) {
  return driver.has_value() && !minimum.IsUnset() && *driver < minimum;
}

std::string DriverText(const std::optional<DriverVersion>& driver) {
  return driver ? driver->ToString() : std::string("(none)");
}

template <typename Pred>
bool AnyProfile(const ProfileTally& tally, Pred pred) {
  return std::ranges::any_of(tally.gpu().profiles, pred);
}

// Profiles present in the tally that satisfy `pred`, as "mig-a, mig-b".
template <typename Pred>
std::string PresentProfiles(const ProfileTally& tally, Pred pred) {
  std::string out;
  for (const MigProfile& p : tally.gpu().profiles) {
    if (tally.count(p) == 0 || !pred(p)) {
      continue;
    }
    if (!out.empty()) {
      out += ", ";
    }
    out += catalog::SageMakerName(p);
  }
  return out;
}

}  // namespace

bool IsDriverRule(LayoutRule rule) {
  return rule == LayoutRule::kGpuDriver || rule == LayoutRule::kProfileDriver ||
         rule == LayoutRule::kFourPlusThreeDriver;
}

std::string_view LayoutRuleName(LayoutRule rule) {
  switch (rule) {
    case LayoutRule::kSageMakerNotEmpty:
      return "SageMaker layout not empty";
    case LayoutRule::kSageMakerNoSuffix:
      return "SageMaker takes no suffixed profiles";
    case LayoutRule::kGpuDriver:
      return "GPU MIG driver minimum";
    case LayoutRule::kProfileDriver:
      return "profile driver minimum";
    case LayoutRule::kFourPlusThreeDriver:
      return "4g+3g needs R510";
    case LayoutRule::kProfileCap:
      return "per-profile cap";
    case LayoutRule::kOneMe:
      return "at most one +me";
    case LayoutRule::kMeAllBesideNoMe:
      return "+me.all only beside -me profiles";
    case LayoutRule::kInstanceCount:
      return "GPU instance count";
    case LayoutRule::kSliceSums:
      return "slice sums";
  }
  return "unknown rule";
}

ProfileTally::ProfileTally(const GpuModel& gpu) : gpu_(&gpu), counts_(gpu.profiles.size(), 0) {}

void ProfileTally::Add(const MigProfile& p) { Apply(p, 1); }
void ProfileTally::Remove(const MigProfile& p) { Apply(p, -1); }

void ProfileTally::Apply(const MigProfile& p, int delta) {
  counts_[static_cast<size_t>(ProfileIndex(*gpu_, &p))] += delta;
  instances_ += delta;
  compute_slices_ += delta * p.compute_slices;
  memory_slices_ += delta * p.memory_slices;
  if (p.suffix == ProfileSuffix::kMe) {
    me_ += delta;
  }
  if (p.suffix == ProfileSuffix::kMeAll) {
    me_all_ += delta;
  }
  if (p.suffix != ProfileSuffix::kNoMe && p.suffix != ProfileSuffix::kMeAll) {
    not_no_me_ += delta;
  }
  if (p.compute_slices == 4 && p.memory_slices == 4) {
    four_four_ += delta;
  }
  if (p.compute_slices == 3 && p.memory_slices == 4) {
    three_four_ += delta;
  }
}

int ProfileTally::count(const MigProfile& profile) const {
  int i = ProfileIndex(*gpu_, &profile);
  return i < 0 ? 0 : counts_[static_cast<size_t>(i)];
}

int ProfileIndex(const GpuModel& gpu, const MigProfile* profile) {
  const MigProfile* first = gpu.profiles.data();
  if (profile == nullptr || first == nullptr || profile < first ||
      profile >= first + gpu.profiles.size()) {
    return -1;
  }
  return static_cast<int>(profile - first);
}

bool Breaks(LayoutRule rule, const ProfileTally& t, const LayoutOptions& options) {
  const GpuModel& gpu = t.gpu();
  switch (rule) {
    case LayoutRule::kSageMakerNotEmpty:
      return options.sagemaker_rules && t.instances() == 0;
    case LayoutRule::kSageMakerNoSuffix:
      if (!options.sagemaker_rules) {
        return false;
      }
      return AnyProfile(t, [&](const MigProfile& p) {
        return t.count(p) > 0 && p.suffix != ProfileSuffix::kNone;
      });
    case LayoutRule::kGpuDriver:
      return OlderThan(options.driver, gpu.min_driver);
    case LayoutRule::kProfileDriver:
      return AnyProfile(t, [&](const MigProfile& p) {
        return t.count(p) > 0 && OlderThan(options.driver, p.min_driver);
      });
    case LayoutRule::kFourPlusThreeDriver:
      return t.four_four() > 0 && t.three_four() > 0 &&
             (gpu.min_driver.IsUnset() || gpu.min_driver < kFourPlusThreeDriver) &&
             OlderThan(options.driver, kFourPlusThreeDriver);
    case LayoutRule::kProfileCap:
      return AnyProfile(t, [&](const MigProfile& p) { return t.count(p) > p.max_count; });
    case LayoutRule::kOneMe:
      return t.me() > 1;
    case LayoutRule::kMeAllBesideNoMe:
      // nvml.h, NVML_GPU_INSTANCE_PROFILE_1_SLICE_ALL_ME: an ALL_ME instance "prevents
      // allocation of all but _NO_ME profiles", which includes a second +me.all.
      return t.me_all() > 0 && (t.me_all() > 1 || t.not_no_me() > 0);
    case LayoutRule::kInstanceCount:
      return gpu.max_gpu_instances > 0 && t.instances() > gpu.max_gpu_instances;
    case LayoutRule::kSliceSums:
      return t.compute_slices() > gpu.compute_slices || t.memory_slices() > gpu.memory_slices;
  }
  return false;
}

std::vector<LayoutRule> BrokenRules(const ProfileTally& tally, const LayoutOptions& options,
                                    RuleScope scope) {
  std::vector<LayoutRule> broken;
  for (LayoutRule rule : kRuleOrder) {
    if (InScope(rule, scope) && Breaks(rule, tally, options)) {
      broken.push_back(rule);
    }
  }
  return broken;
}

bool KeepsRules(const ProfileTally& tally, const LayoutOptions& options, RuleScope scope) {
  return std::ranges::none_of(kRuleOrder, [&](LayoutRule rule) {
    return InScope(rule, scope) && Breaks(rule, tally, options);
  });
}

bool ProfileAllowed(const GpuModel& gpu, const MigProfile& profile, const LayoutOptions& options) {
  if (options.sagemaker_rules && profile.suffix != ProfileSuffix::kNone) {
    return false;
  }
  return !OlderThan(options.driver, gpu.min_driver) &&
         !OlderThan(options.driver, profile.min_driver);
}

std::string DescribeBrokenRule(LayoutRule rule, const ProfileTally& t, const LayoutOptions& options,
                               std::string_view layout_text) {
  const GpuModel& gpu = t.gpu();
  const std::string_view name = LayoutRuleName(rule);
  const std::string driver = DriverText(options.driver);
  switch (rule) {
    case LayoutRule::kSageMakerNotEmpty:
      return fmt::format(
          "a SageMaker layout names at least one profile; layout {} is empty "
          "(rule: {})",
          layout_text, name);
    case LayoutRule::kSageMakerNoSuffix:
      return fmt::format(
          "SageMaker provides plain MIG profiles only; layout {} requests {} (rule: {})",
          layout_text,
          PresentProfiles(t, [](const MigProfile& p) { return p.suffix != ProfileSuffix::kNone; }),
          name);
    case LayoutRule::kGpuDriver:
      return fmt::format(
          "{} provides MIG from driver {} on; layout {} is requested on driver {} "
          "(rule: {})",
          gpu.id, gpu.min_driver.ToString(), layout_text, driver, name);
    case LayoutRule::kProfileDriver: {
      std::string needs;
      for (const MigProfile& p : gpu.profiles) {
        if (t.count(p) == 0 || !OlderThan(options.driver, p.min_driver)) {
          continue;
        }
        if (!needs.empty()) {
          needs += ", ";
        }
        needs += fmt::format("{} needs driver {} or newer", catalog::SageMakerName(p),
                             p.min_driver.ToString());
      }
      return fmt::format("on {}, {}; layout {} is requested on driver {} (rule: {})", gpu.id, needs,
                         layout_text, driver, name);
    }
    case LayoutRule::kFourPlusThreeDriver:
      return fmt::format(
          "{} holds a 4-compute/4-memory instance ({}) beside a 3-compute/4-memory instance ({}) "
          "only from driver {} on; layout {} is requested on driver {} (rule: {})",
          gpu.id,
          PresentProfiles(
              t, [](const MigProfile& p) { return p.compute_slices == 4 && p.memory_slices == 4; }),
          PresentProfiles(
              t, [](const MigProfile& p) { return p.compute_slices == 3 && p.memory_slices == 4; }),
          kFourPlusThreeDriver.ToString(), layout_text, driver, name);
    case LayoutRule::kProfileCap: {
      std::string over;
      for (const MigProfile& p : gpu.profiles) {
        if (t.count(p) <= p.max_count) {
          continue;
        }
        if (!over.empty()) {
          over += "; ";
        }
        over += fmt::format("at most {} {} where layout {} requests {}", p.max_count,
                            catalog::SageMakerName(p), layout_text, t.count(p));
      }
      return fmt::format("{} provides {} (rule: {})", gpu.id, over, name);
    }
    case LayoutRule::kOneMe:
      return fmt::format(
          "{} provides one +me (media-extension) instance; layout {} requests {} "
          "(rule: {})",
          gpu.id, layout_text, t.me(), name);
    case LayoutRule::kMeAllBesideNoMe: {
      std::string beside = PresentProfiles(t, [](const MigProfile& p) {
        return p.suffix != ProfileSuffix::kNoMe && p.suffix != ProfileSuffix::kMeAll;
      });
      if (t.me_all() > 1) {
        beside += beside.empty() ? "another +me.all" : ", another +me.all";
      }
      return fmt::format(
          "{} allows only -me profiles beside a +me.all instance; layout {} puts {} beside it "
          "(rule: {})",
          gpu.id, layout_text, beside, name);
    }
    case LayoutRule::kInstanceCount:
      return fmt::format("{} provides {} GPU instances; layout {} requests {} (rule: {})", gpu.id,
                         gpu.max_gpu_instances, layout_text, t.instances(), name);
    case LayoutRule::kSliceSums:
      return fmt::format(
          "{} provides {} compute slices and {} memory slices; layout {} requests {} compute "
          "slices and {} memory slices (rule: {})",
          gpu.id, gpu.compute_slices, gpu.memory_slices, layout_text, t.compute_slices(),
          t.memory_slices(), name);
  }
  return std::string(name);
}

std::string LayoutText(std::span<const MigProfile* const> profiles) {
  std::string out = "[";
  for (size_t i = 0; i < profiles.size(); ++i) {
    if (i > 0) {
      out += ", ";
    }
    out += catalog::SageMakerName(*profiles[i]);
  }
  return out + "]";
}

std::string LayoutText(std::span<const PlacedInstance> instances) {
  std::string out = "[";
  for (size_t i = 0; i < instances.size(); ++i) {
    if (i > 0) {
      out += ", ";
    }
    out += fmt::format("{}@{}", catalog::SageMakerName(*instances[i].profile), instances[i].start);
  }
  return out + "]";
}

}  // namespace carve::core
