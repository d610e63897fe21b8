// ServiceCopyDirectory: the runtime router's view of the SageMaker service's route table.
#include "app/server_routes.h"

#include <gtest/gtest.h>

namespace carve::app {
namespace {

using server::sagemaker::EndpointStatus;
using server::sagemaker::RouteEndpoint;
using server::sagemaker::RouteTable;
using server::sagemaker::RoutingStrategy;

TEST(ServiceCopyDirectory, HandsTheRouterTheVariantsStrategyTimeoutAndCopies) {
  for (auto [given, want] : {std::pair{RoutingStrategy::kRandom, runtime::Strategy::kRandom},
                             std::pair{RoutingStrategy::kLeastOutstandingRequests,
                                       runtime::Strategy::kLeastOutstandingRequests}}) {
    RouteTable routes;
    RouteEndpoint ep;
    ep.status = EndpointStatus::kInService;
    ep.variant = "AllTraffic";
    ep.strategy = given;
    ep.timeout = std::chrono::seconds(7);
    ep.components["ic"] = {{"acct/ic/1", "127.0.0.1:4001"}, {"acct/ic/2", "127.0.0.1:4002"}};
    routes.Set({"111111111111", "ep"}, ep);
    ServiceCopyDirectory directory(routes);
    auto r = directory.Resolve("111111111111", "ep", "ic", runtime::Unnamed::kRefused);
    ASSERT_TRUE(r.has_value()) << r.error().message;
    EXPECT_EQ(r->strategy, want);
    EXPECT_EQ(r->variant, "AllTraffic");
    EXPECT_EQ(r->component, "ic");
    EXPECT_EQ(r->timeout, std::chrono::seconds(7));
    ASSERT_EQ(r->copies.size(), 2u);
    EXPECT_EQ(r->copies[1].id, "acct/ic/2");
    EXPECT_EQ(r->copies[1].address, "127.0.0.1:4002");
  }
}

TEST(ServiceCopyDirectory, AnEndpointNotCarvedIsNotReady) {
  RouteTable routes;
  RouteEndpoint ep;
  ep.status = EndpointStatus::kCreating;
  routes.Set({"111111111111", "ep"}, ep);
  ServiceCopyDirectory directory(routes);
  auto r = directory.Resolve("111111111111", "ep", "ic", runtime::Unnamed::kRefused);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_NE(r.error().message.find("its status is Creating"), std::string::npos);
}

}  // namespace
}  // namespace carve::app
