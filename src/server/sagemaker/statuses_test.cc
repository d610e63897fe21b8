#include "server/sagemaker/statuses.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

namespace carve::server::sagemaker {
namespace {

TEST(Statuses, EveryEndpointStatusRoundTripsThroughItsName) {
  for (std::string_view name : EndpointStatusNames()) {
    auto s = ParseEndpointStatus(name);
    ASSERT_TRUE(s.has_value()) << name;
    EXPECT_EQ(Name(*s), name);
  }
  EXPECT_EQ(EndpointStatusNames().size(), 9u);
}

TEST(Statuses, EveryComponentStatusRoundTripsThroughItsName) {
  for (std::string_view name : ComponentStatusNames()) {
    auto s = ParseComponentStatus(name);
    ASSERT_TRUE(s.has_value()) << name;
    EXPECT_EQ(Name(*s), name);
  }
}

TEST(Statuses, AnUnknownNameIsRefusedListingTheAcceptedOnes) {
  auto s = ParseEndpointStatus("inservice");
  ASSERT_FALSE(s.has_value());
  EXPECT_THAT(s.error().message, ::testing::HasSubstr("EndpointStatus 'inservice' is not one of "
                                                      "[OutOfService, Creating, Updating"));
}

TEST(Statuses, OnlyInServiceAndUpdatingEndpointsAreCarved) {
  int carved = 0;
  for (std::string_view name : EndpointStatusNames())
    carved += IsCarved(*ParseEndpointStatus(name));
  EXPECT_EQ(carved, 2);
  EXPECT_TRUE(IsCarved(EndpointStatus::kInService));
  EXPECT_TRUE(IsCarved(EndpointStatus::kUpdating));
}

}  // namespace
}  // namespace carve::server::sagemaker
