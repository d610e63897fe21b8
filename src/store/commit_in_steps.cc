#include "store/commit_in_steps.h"

#include <algorithm>
#include <iterator>

namespace carve::store {

Result<std::vector<Record>> CommitInSteps(Store& store, std::vector<Mutation> ahead, Mutation last,
                                          size_t* landed) {
  if (landed != nullptr) *landed = 0;
  const size_t limit = std::max<size_t>(store.max_commit_keys(), 1);
  // Those that do not fit beside `last` go first, `limit` at a time.
  const size_t beside = limit - 1;
  const size_t first = ahead.size() > beside ? ahead.size() - beside : 0;
  auto at = [&](size_t i) {
    return std::make_move_iterator(ahead.begin() + static_cast<std::ptrdiff_t>(i));
  };
  std::vector<Record> written;
  for (size_t i = 0; i < first; i += limit) {
    const size_t end = std::min(first, i + limit);
    CARVE_ASSIGN_OR_RETURN(auto records, store.Commit(std::vector<Mutation>(at(i), at(end))));
    written.insert(written.end(), records.begin(), records.end());
    if (landed != nullptr) *landed = end;
  }
  std::vector<Mutation> final_step{std::move(last)};
  final_step.insert(final_step.end(), at(first), at(ahead.size()));
  CARVE_ASSIGN_OR_RETURN(auto records, store.Commit(std::move(final_step)));
  written.insert(written.end(), records.begin(), records.end());
  if (landed != nullptr) *landed = ahead.size();
  return written;
}

}  // namespace carve::store
