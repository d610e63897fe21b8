// Writes too many for one Commit (etcd: 127 keys), in steps ordered so that a failure or a crash
// part-way leaves a state the caller already handles: the dependents first, the write that
// completes them last.
#pragma once

#include <vector>

#include "common/result.h"
#include "store/store.h"

namespace carve::store {

// Commits `ahead` in commits of at most store.max_commit_keys() keys, then `last` together with
// as many of `ahead` as fit beside it, so `last` lands only after every one of them: a parent's
// removal after its children's, an endpoint's removal after the reset records of its nodes.
// Each of `ahead` must be valid on its own and in any order. Returns every record written. On
// failure, `*landed` (when given) counts the mutations of `ahead`, from the front, that were
// committed before it.
Result<std::vector<Record>> CommitInSteps(Store& store, std::vector<Mutation> ahead, Mutation last,
                                          size_t* landed = nullptr);

}  // namespace carve::store
