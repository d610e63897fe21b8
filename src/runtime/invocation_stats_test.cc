// InvocationStats: per-component totals, and an endpoint's as the sum of its own components
// only (another account's endpoint of the same name, or another endpoint, adds nothing).
#include "runtime/invocation_stats.h"

#include <gtest/gtest.h>

namespace carve::runtime {
namespace {

TEST(InvocationStats, AnEndpointsTotalsAreItsOwnComponentsSummed) {
  InvocationStats stats;
  const InvocationStats::Key a{"111111111111", "ep", "a"};
  const InvocationStats::Key b{"111111111111", "ep", "b"};
  stats.Started(a);
  stats.Started(a);
  stats.Finished(a);
  stats.Started(b);
  stats.NoCapacity(b);
  stats.Started({"222222222222", "ep", "a"});    // Another account's endpoint of that name.
  stats.Started({"111111111111", "ep-2", "a"});  // Another endpoint, sorted after it.
  stats.Started({"111111111111", "ea", "a"});    // And one sorted before it.

  const auto ep = stats.EndpointTotals("111111111111", "ep");
  EXPECT_EQ(ep.invocations, 3u);
  EXPECT_EQ(ep.no_capacity, 1u);
  EXPECT_EQ(ep.in_flight, 2);
  EXPECT_EQ(stats.Get(a).invocations, 2u);
  EXPECT_EQ(stats.Get(a).in_flight, 1);
  EXPECT_EQ(stats.EndpointTotals("222222222222", "ep").invocations, 1u);
  EXPECT_EQ(stats.EndpointTotals("333333333333", "ep").invocations, 0u);
  EXPECT_EQ(stats.Get({"111111111111", "nope", ""}).invocations, 0u);
}

}  // namespace
}  // namespace carve::runtime
