// ComponentPlacement::CopyPass: one component's copies during one pass. Private to the pass
// (component_reconcile.cc) and the rolling deployment (component_rollout.cc).
#pragma once

#include <set>
#include <string>
#include <vector>

#include "server/sagemaker/component_placement.h"

namespace carve::server::sagemaker {

// The copies the pass keeps, releases and places, and why the rest wait. Stop and Place change
// the variant's pool at once, so a copy placed later in the pass may take a partition a stopped
// one freed; the pass's commit makes both durable. Copy records this pass may still write are
// bounded by the Store's transaction limit (etcd): the rest are placed or released later.
class ComponentPlacement::CopyPass {
 public:
  CopyPass(ComponentPlacement& placement, const ComponentRecord& c, ComponentCopies& cc,
           VariantPool* vp, std::vector<size_t> keep, std::vector<size_t> release, int64_t now_ms);

  // Moves kept copy `i` (an index into the component's copies) to the released ones, freeing
  // its place in the pool.
  void Stop(size_t i);
  // Places up to n more copies of the current specification; returns how many it placed, and
  // leaves in `reason` why the rest wait.
  int Place(int n);
  // Copy records the pass may still write in its transaction, less the component's own.
  int Budget() const;

  std::vector<size_t> keep;
  std::vector<size_t> release;
  std::vector<LiveCopy> placed;
  std::string reason;  // Why copies wait to be placed.
  int wanted = 0;      // Copies the pass wanted to place.

 private:
  ComponentPlacement& placement_;
  const ComponentRecord& c_;
  ComponentCopies& cc_;
  VariantPool* vp_;
  const int64_t now_ms_;
  std::set<int> used_;  // Copy numbers taken.
  int next_index_ = 0;
};

}  // namespace carve::server::sagemaker
