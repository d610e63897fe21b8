// Incremental placement: adding MIG instances to a GPU whose existing instances are pinned
// (already created; MIG cannot move a busy instance).
//
// Where an instance sits decides what can still sit beside it (MIG guide: "the physical position
// of one GPU Instance will play a role in which other GPU Instances can be instantiated next to
// it"): on an A100, 3g.20gb@0 leaves room for three 1g.5gb, 3g.20gb@4 for four. These functions
// never move a pinned instance; the search order is layout_search.h's.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "catalog/gpu_model.h"
#include "common/result.h"
#include "core/layout.h"
#include "core/layout_rules.h"

namespace carve::core {

// Checks that `pinned` is a layout that can exist: a MIG GPU with placement data, every profile
// one of that GPU's, every start an allowed start, no overlap, every rule of layout_rules.h.
// InvalidArgument (FailedPrecondition for driver rules or missing data) names what is wrong.
Status CheckPinned(const Layout& pinned, const LayoutOptions& options = {});

// One profile that still fits beside the pinned instances, with every start where it fits.
struct Opening {
  const catalog::MigProfile* profile = nullptr;
  std::vector<int> starts;  // Ascending.
};

// Every profile of pinned.gpu that can be added as one more instance (all rules kept), with all
// its feasible starts, in catalog order. Errors are CheckPinned's.
Result<std::vector<Opening>> OpenProfiles(const Layout& pinned, const LayoutOptions& options = {});

// The outcome of adding instances: "does not fit" is a value, not an error.
struct Addition {
  enum class Verdict { kFits, kDoesNotFit };
  Verdict verdict = Verdict::kDoesNotFit;
  // When kFits: the pinned instances, unchanged and first, then the additions in creation order.
  Layout layout;
  // When kDoesNotFit: what the GPU has free against what was asked, naming the rule.
  std::string reason;

  bool fits() const { return verdict == Verdict::kFits; }
};

// Places every addition around the pinned instances, all or nothing. The input layout is never
// modified. Errors: CheckPinned's, and InvalidArgument for an addition not of pinned.gpu.
Result<Addition> PlaceAdditions(const Layout& pinned,
                                std::span<const catalog::MigProfile* const> additions,
                                const LayoutOptions& options = {});

}  // namespace carve::core
