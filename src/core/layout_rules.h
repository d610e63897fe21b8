// The rules a multiset of MIG instances must keep on one GPU besides non-overlap: per-profile
// caps, media-engine suffixes, slice sums, driver minimums and SageMaker's restrictions.
//
// Validation, incremental placement and enumeration all ask these questions, so each rule lives
// here once, as a predicate over a ProfileTally plus a sentence that names it. The interval
// (non-overlap) rule is layout_search.h's.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "catalog/driver_version.h"
#include "catalog/gpu_model.h"
#include "core/layout.h"

namespace carve::core {

// Options shared by every layout question.
struct LayoutOptions {
  // When set, reject what needs a newer driver than this one (GPU minimum, profile minimum,
  // A100 4g+3g). When unset, driver rules are not checked.
  std::optional<catalog::DriverVersion> driver = std::nullopt;
  // SageMaker's AcceleratorPartitionConfig rules: no suffixed profiles (+me, -me, +gfx,
  // +me.all) and no empty layout.
  bool sagemaker_rules = false;
};

// The rules, in the order validation reports them.
enum class LayoutRule {
  kSageMakerNotEmpty,    // SageMaker: a layout names at least one profile.
  kSageMakerNoSuffix,    // SageMaker: plain profiles only.
  kGpuDriver,            // The driver is older than the GPU's MIG minimum.
  kProfileDriver,        // The driver is older than a profile's minimum (A100-40GB 1g.10gb: R525).
  kFourPlusThreeDriver,  // A 4c/4m and a 3c/4m instance together need R510 (A100).
  kProfileCap,           // More instances of a profile than its max_count.
  kOneMe,                // More than one +me instance.
  kMeAllBesideNoMe,      // A +me.all instance beside anything but -me profiles.
  kInstanceCount,        // More instances than the GPU's max_gpu_instances.
  kSliceSums,            // Compute- or memory-slice sum above the GPU's.
};

// True for the rules that a newer driver would lift (reported as FailedPrecondition).
bool IsDriverRule(LayoutRule rule);

// Short name of the rule, as messages print it after "rule: ".
std::string_view LayoutRuleName(LayoutRule rule);

// Which rules a check covers. kMultiset is what the interval model cannot see but does not
// depend on sizes (caps, +me, +me.all); kWithSums adds instance count and slice sums.
enum class RuleScope { kMultiset, kWithSums };

// Counts of a multiset of profiles that all belong to one GPU. Cheap to copy for small GPUs.
class ProfileTally {
 public:
  explicit ProfileTally(const catalog::GpuModel& gpu);

  // The profile must be one of gpu.profiles (same object); see ProfileIndex.
  void Add(const catalog::MigProfile& profile);
  void Remove(const catalog::MigProfile& profile);

  const catalog::GpuModel& gpu() const { return *gpu_; }
  int count(const catalog::MigProfile& profile) const;
  int instances() const { return instances_; }
  int compute_slices() const { return compute_slices_; }
  int memory_slices() const { return memory_slices_; }
  int me() const { return me_; }
  int me_all() const { return me_all_; }
  // Instances that are neither -me nor +me.all: what a +me.all instance refuses beside it.
  int not_no_me() const { return not_no_me_; }
  int four_four() const { return four_four_; }
  int three_four() const { return three_four_; }

 private:
  void Apply(const catalog::MigProfile& profile, int delta);

  const catalog::GpuModel* gpu_;
  std::vector<int> counts_;  // Indexed like gpu_->profiles.
  int instances_ = 0;
  int compute_slices_ = 0;
  int memory_slices_ = 0;
  int me_ = 0;
  int me_all_ = 0;
  int not_no_me_ = 0;
  int four_four_ = 0;
  int three_four_ = 0;
};

// Position of `profile` in gpu.profiles, or -1 when it is not one of that GPU's rows.
int ProfileIndex(const catalog::GpuModel& gpu, const catalog::MigProfile* profile);

// True when the tally breaks `rule` under `options`.
bool Breaks(LayoutRule rule, const ProfileTally& tally, const LayoutOptions& options);

// The rules of `scope` (plus driver and SageMaker rules when options enable them) that the
// tally breaks, in report order; empty when it keeps them all.
std::vector<LayoutRule> BrokenRules(const ProfileTally& tally, const LayoutOptions& options,
                                    RuleScope scope);
// Same test without building the list: true when every rule of `scope` is kept.
bool KeepsRules(const ProfileTally& tally, const LayoutOptions& options, RuleScope scope);

// True when `profile` is allowed at all under `options` (driver minimum and SageMaker suffix
// rule for that profile alone): enumeration and openings skip profiles that are not.
bool ProfileAllowed(const catalog::GpuModel& gpu, const catalog::MigProfile& profile,
                    const LayoutOptions& options);

// A sentence saying what the GPU provides, what `layout_text` requests and which rule refused
// it, e.g. "h100-80gb provides 7 compute slices and 8 memory slices; layout [mig-4g.40gb,
// mig-4g.40gb] requests 8 compute slices and 8 memory slices (rule: slice sums)".
std::string DescribeBrokenRule(LayoutRule rule, const ProfileTally& tally,
                               const LayoutOptions& options, std::string_view layout_text);

// "[mig-4g.40gb, mig-2g.20gb]": the SageMaker spelling messages use.
std::string LayoutText(std::span<const catalog::MigProfile* const> profiles);
// "[mig-4g.40gb@0, mig-2g.20gb@4]".
std::string LayoutText(std::span<const PlacedInstance> instances);

}  // namespace carve::core
