#include "app/server_routes.h"

#include <map>
#include <set>
#include <utility>

#include "catalog/catalog.h"
#include "http/native_reply.h"

namespace carve::app {
namespace {

using nlohmann::json;

json Measured(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }
json Measured(const std::optional<int64_t>& v) { return v ? json(*v) : json(nullptr); }

// A queue's cards as the fleet view draws them: per card the shares placed on it (allocated)
// next to what the enforcement layer measured (null where nothing measures it, never 0).
void AddQueueCards(json& fleet, const std::vector<server::queues::QueueGpuView>& views,
                   const std::string& account) {
  std::map<std::pair<std::string, int>, const server::queues::CardView*> cards;
  std::map<std::pair<std::string, int>, const server::queues::QueueGpuView*> owner;
  for (const auto& v : views) {
    if (v.account != account) continue;
    for (const auto& c : v.cards) {
      cards[{c.node, c.gpu}] = &c;
      owner[{c.node, c.gpu}] = &v;
    }
  }
  for (auto& node : fleet["nodes"]) {
    const json& claim = node["claim"];
    if (!claim.is_object() || claim.value("kind", "") != "queue") continue;
    for (auto& gpu : node["gpus"]) {
      auto it = cards.find({node["name"].get<std::string>(), gpu["index"].get<int>()});
      if (it == cards.end()) continue;
      const server::queues::CardView& c = *it->second;
      gpu["mode"] = owner[it->first]->mgpu ? "mgpu" : "whole";
      gpu["core_allocated_percent"] = c.core_allocated_percent;
      gpu["memory_allocated_mib"] = c.memory_allocated_mib;
      gpu["memory_capacity_mib"] = c.memory_capacity_mib;
      gpu["utilization_percent"] = c.utilization_percent ? json(*c.utilization_percent) : json();
      gpu["memory_used_mib"] = Measured(c.memory_used_mib);
      json workers = json::array();
      for (const auto& w : c.worker_views) {
        workers.push_back({{"queue", claim.value("queue", "")},
                           {"job", w.job},
                           {"task", w.task},
                           {"role", w.role},
                           {"state", w.state},
                           {"core_percent", w.core_limit_percent},
                           {"memory_mib", w.memory_limit_mib},
                           {"core_used_percent", Measured(w.core_used_percent)},
                           {"memory_used_mib", Measured(w.memory_used_mib)}});
      }
      gpu["workers"] = workers;
    }
  }
}

json ShapeJson(const core::Request& r) {
  switch (r.kind) {
    case core::RequestKind::kPartition:
      return {{"kind", "partition"}, {"profile", catalog::SageMakerProfileName(r.profile)}};
    case core::RequestKind::kWholeGpus:
      return {{"kind", "whole_gpus"}, {"gpus", r.gpus}};
    case core::RequestKind::kShare:
      return {{"kind", "share"},
              {"core_percent", r.share.core_percent},
              {"memory_mib", r.share.memory_mib ? json(*r.share.memory_mib) : json(nullptr)}};
  }
  return nullptr;
}

json ScopeJson(const server::nodes::Owner& o) {
  if (o.kind == server::nodes::Owner::Kind::kQueue) return {{"kind", "queue"}, {"queue", o.name}};
  return {{"kind", "endpoint"}, {"endpoint", o.name}, {"variant", o.variant}};
}

json FragmentationJson(const std::vector<server::nodes::ShapeFragmentation>& shapes) {
  json out = json::array();
  for (const auto& s : shapes) {
    const core::FragmentationReport& f = s.report;
    json row = {{"shape", ShapeJson(s.request)},
                {"description", s.description},
                {"scope", ScopeJson(s.scope)},
                {"unit", f.unit},
                {"free", f.free},
                {"usable", f.usable},
                {"stranded", f.stranded},
                {"stranded_permille", f.stranded_permille},
                {"copies", f.copies}};
    if (s.request.kind == core::RequestKind::kShare) {
      row["free_memory_mib"] = f.free_memory_mib;
      row["stranded_memory_mib"] = f.stranded_memory_mib;
    }
    out.push_back(std::move(row));
  }
  return out;
}

}  // namespace

Result<runtime::RouteInfo> ServiceCopyDirectory::Resolve(const std::string& account,
                                                         const std::string& endpoint,
                                                         const std::string& component,
                                                         runtime::Unnamed unnamed) {
  CARVE_ASSIGN_OR_RETURN(auto r, table_.Resolve(account, endpoint, component,
                                                unnamed == runtime::Unnamed::kTheOnlyComponent));
  runtime::RouteInfo out;
  out.variant = r.variant;
  out.component = r.component;
  switch (r.strategy) {  // Typed when the route table was built: nothing is parsed here.
    case server::sagemaker::RoutingStrategy::kRandom:
      out.strategy = runtime::Strategy::kRandom;
      break;
    case server::sagemaker::RoutingStrategy::kLeastOutstandingRequests:
      out.strategy = runtime::Strategy::kLeastOutstandingRequests;
      break;
  }
  out.timeout = r.timeout;
  for (auto& c : r.copies) out.copies.push_back({std::move(c.id), std::move(c.address)});
  return out;
}

void RegisterServerMetrics(http::MetricsRegistry& registry,
                           server::sagemaker::SageMakerService& svc,
                           server::nodes::NodeRegistry& nodes) {
  auto& total = registry.AddGauge("carve_partitions",
                                  "Partitions carved on the fleet, per GPU model and profile",
                                  {"gpu_model", "profile"});
  auto& used = registry.AddGauge("carve_partitions_used",
                                 "Partitions occupied by inference-component copies",
                                 {"gpu_model", "profile"});
  auto& copies = registry.AddGauge("carve_inference_component_copies",
                                   "Inference-component copies, desired and current",
                                   {"account", "inference_component", "state"});
  auto& endpoints = registry.AddGauge("carve_endpoints", "Endpoints by status", {"status"});
  registry.AddCollector([&] {
    auto snap = svc.TakeSnapshot();
    total.Clear();
    used.Clear();
    copies.Clear();
    endpoints.Clear();
    for (const auto& [key, v] : snap.partitions) {
      const std::string profile(catalog::NvmlProfileName(key.second));
      total.Set({key.first, profile}, v.first);
      used.Set({key.first, profile}, v.second);
    }
    for (const auto& [key, v] : snap.copies) {
      copies.Set({key.first, key.second, "desired"}, v.first);
      copies.Set({key.first, key.second, "current"}, v.second);
    }
    for (const auto& [status, n] : snap.endpoints_by_status) endpoints.Set({status}, n);
  });
  auto& gap = registry.AddGauge(
      "carve_mgpu_memory_accounting_mib",
      "Per mGPU worker: the quota ledger's memory (kind=ledger), NVML's per-process memory "
      "(kind=nvml) and their difference (kind=gap; > 0 is memory the quota does not see)",
      {"node", "workload", "kind"});
  registry.AddCollector([&gap, &nodes] {
    gap.Clear();
    for (const auto& g : nodes.LedgerGaps()) {
      gap.Set({g.node, g.workload, "gap"}, static_cast<double>(g.gap_mib));
      gap.Set({g.node, g.workload, "ledger"}, static_cast<double>(g.ledger_mib));
      gap.Set({g.node, g.workload, "nvml"}, static_cast<double>(g.nvml_mib));
    }
  });
}

void RegisterAutoScalingMetrics(http::MetricsRegistry& registry,
                                server::autoscaling::AutoScalingService& autoscaling) {
  auto& per_copy = registry.AddGauge(
      "carve_autoscaling_invocations_per_copy",
      "Invocations per minute per copy of a scalable inference component, as its policies read "
      "it (SageMakerInferenceComponentInvocationsPerCopy)",
      {"account", "inference_component"});
  auto& concurrent =
      registry.AddGauge("carve_autoscaling_concurrent_requests_per_copy",
                        "Requests in flight per copy of a scalable inference component "
                        "(SageMakerInferenceComponentConcurrentRequestsPerCopyHighResolution)",
                        {"account", "inference_component"});
  auto& per_instance =
      registry.AddGauge("carve_autoscaling_invocations_per_instance",
                        "Invocations per minute per instance of a scalable variant "
                        "(SageMakerVariantInvocationsPerInstance)",
                        {"account", "endpoint", "variant"});
  registry.AddCollector([&] {
    per_copy.Clear();
    concurrent.Clear();
    per_instance.Clear();
    for (const auto& s : autoscaling.Signals()) {
      if (s.capacity <= 0) continue;
      if (s.key.IsComponent()) {
        per_copy.Set({s.account, s.key.Component()}, s.invocations_per_unit);
        concurrent.Set({s.account, s.key.Component()}, s.concurrent_per_copy);
      } else {
        per_instance.Set({s.account, s.key.Endpoint(), s.key.Variant()}, s.invocations_per_unit);
      }
    }
  });
}

void RegisterViewRoutes(http::HttpServer& http, server::sagemaker::SageMakerService& svc,
                        server::queues::QueueService& queues) {
  // The route table with whom each route serves (docs/security.md), as the server holds it.
  http.AddRoute("GET", "/v1/routes", http::kForOperators, [&http](const http::NativeRequest&) {
    json routes = json::array();
    for (const auto& r : http.Routes()) {
      routes.push_back({{"method", r.method},
                        {"pattern", r.pattern},
                        {"serves", r.access.serves.Names()},
                        {"endpoint_tokens", r.access.endpoint_tokens}});
    }
    return http::JsonReply(200, json{{"routes", std::move(routes)}});
  });
  http.AddRoute("GET", "/v1/fleet", http::kForTenants,
                [&svc, &queues](const http::NativeRequest& r) {
                  json fleet = svc.FleetJson(r.account_id);
                  AddQueueCards(fleet, queues.AllGpuViews(), r.account_id);
                  return http::JsonReply(200, fleet);
                });
  http.AddRoute("GET", "/v1/fragmentation", http::kForTenants,
                [&svc, &queues](const http::NativeRequest& r) {
                  auto shapes = svc.Fragmentation(r.account_id);
                  auto more = queues.Fragmentation(r.account_id);
                  shapes.insert(shapes.end(), more.begin(), more.end());
                  return http::JsonReply(200, json{{"shapes", FragmentationJson(shapes)}});
                });
  http.AddRoute(
      "GET", "/v1/endpoints/{name}/carve", http::kForTenants, [&svc](const http::NativeRequest& r) {
        return http::Answer(svc.EndpointCarveJson(r.account_id, r.path_params.at("name")));
      });
  http.AddRoute(
      "GET", "/v1/inference-components/{name}/copies", http::kForTenants,
      [&svc](const http::NativeRequest& r) {
        return http::Answer(svc.ComponentCopiesJson(r.account_id, r.path_params.at("name")));
      });
}

void RegisterEndpointsView(http::HttpServer& http, server::sagemaker::SageMakerService& svc,
                           const server::ui::Dashboard& dashboard) {
  http.AddRoute("GET", "/v1/ui/endpoints", http::kForTenants,
                [&svc, &dashboard](const http::NativeRequest& r) {
                  Result<json> view = svc.EndpointsViewJson(r.account_id);
                  if (!view.has_value()) return http::Answer(view);
                  std::set<server::ui::ComponentKey> owned;
                  for (const json& c : (*view)["InferenceComponents"]) {
                    owned.emplace(c["EndpointName"].get<std::string>(),
                                  c["InferenceComponentName"].get<std::string>());
                  }
                  (*view)["History"] = dashboard.HistoryOf(r.account_id, owned);
                  return http::JsonReply(200, *view, -1);
                });
}

}  // namespace carve::app
