// The parts of `carve server` that join two services: the router's view of the SageMaker
// service's copies, the gauges of the SageMaker service and the node registry, and the
// read-only views over the fleet (GET /v1/fleet, GET /v1/endpoints/{name}/carve), which show an
// endpoint's partitions from the SageMaker service and a queue's cards from the queues.
#pragma once

#include "http/http_server.h"
#include "http/metrics.h"
#include "runtime/copy_directory.h"
#include "server/autoscaling/autoscaling_service.h"
#include "server/nodes/node_registry.h"
#include "server/queues/queue_service.h"
#include "server/sagemaker/route_table.h"
#include "server/sagemaker/service.h"
#include "server/ui/ui_routes.h"

namespace carve::app {

// The runtime router's view of the SageMaker service: its route table, rebuilt every pass.
class ServiceCopyDirectory final : public runtime::CopyDirectory {
 public:
  explicit ServiceCopyDirectory(const server::sagemaker::RouteTable& table) : table_(table) {}
  Result<runtime::RouteInfo> Resolve(const std::string& account, const std::string& endpoint,
                                     const std::string& component,
                                     runtime::Unnamed unnamed) override;

 private:
  const server::sagemaker::RouteTable& table_;
};

// carve_partitions / _used, carve_inference_component_copies, carve_endpoints, and the
// mGPU ledger-vs-NVML gap per worker.
void RegisterServerMetrics(http::MetricsRegistry& metrics,
                           server::sagemaker::SageMakerService& sagemaker,
                           server::nodes::NodeRegistry& registry);

// The signals Application Auto Scaling's policies read, per scalable target:
// carve_autoscaling_invocations_per_copy, _concurrent_requests_per_copy, _invocations_per_instance.
void RegisterAutoScalingMetrics(http::MetricsRegistry& metrics,
                                server::autoscaling::AutoScalingService& autoscaling);

// GET /v1/fleet, GET /v1/fragmentation and GET /v1/endpoints/{name}/carve, scoped to the
// caller's account; and GET /v1/routes, the route table, for operators.
void RegisterViewRoutes(http::HttpServer& http, server::sagemaker::SageMakerService& sagemaker,
                        server::queues::QueueService& queues);

// GET /v1/ui/endpoints, for tenants: the dashboard's Endpoints page in one request, scoped to
// the caller's account: SageMakerService::EndpointsViewJson with "History", the last minutes of
// those components (Dashboard::HistoryOf).
void RegisterEndpointsView(http::HttpServer& http, server::sagemaker::SageMakerService& sagemaker,
                           const server::ui::Dashboard& dashboard);

}  // namespace carve::app
