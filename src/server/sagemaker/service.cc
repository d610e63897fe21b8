#include "server/sagemaker/service.h"

#include <spdlog/spdlog.h>

#include "server/sagemaker/aws_error.h"
#include "server/sagemaker/ops.h"
#include "server/sagemaker/resources.h"

namespace carve::server::sagemaker {

SageMakerService::SageMakerService(store::Store& store, nodes::NodeClaims& claims,
                                   nodes::NodeDriver& driver, ServiceOptions options)
    : store_(store),
      claims_(claims),
      options_(std::move(options)),
      clock_(options_.clock ? *options_.clock : SystemClock::Get()),
      ops_(
          store, clock_, options_.region, mu_, [this] { loop_.Wake(); }, options_.registry,
          options_.max_records_per_kind),
      lifecycle_(store, claims, driver, clock_, mu_, [this] { loop_.Wake(); }),
      placement_(store, options_.registry, clock_),
      loop_(options_.reconcile_interval, [this] { ReconcileOnce(); }) {
  lifecycle_.set_copies_per_node(
      [this](const nodes::Owner& variant) { return placement_.CopiesPerNode(variant); });
  if (options_.registry != nullptr) {
    publisher_.emplace(store, *options_.registry, options_.runtimes, routes_);
    // Agent reports that change a copy's state or a node's readiness wake the reconciler.
    wake_ = options_.registry->AddListener([this] { loop_.Wake(); });
  }
}

SageMakerService::~SageMakerService() {
  wake_.Reset();  // Before anything a wake would touch goes.
  Stop();
}

Result<std::vector<EndpointEntry>> SageMakerService::LoadEndpoints() const {
  CARVE_ASSIGN_OR_RETURN(auto records, store_.ListAllAccounts(std::string(kEndpoint)));
  std::vector<EndpointEntry> out;
  out.reserve(records.size());
  for (auto& r : records) {
    auto ep = EndpointRecord::FromRecord(r);
    if (!ep.has_value()) {
      spdlog::error("skipping endpoint {}/{}: {}", r.key.account, r.key.name, ep.error().message);
      continue;
    }
    out.push_back({std::move(r), std::move(ep).value()});
  }
  return out;
}

Result<std::vector<ComponentEntry>> SageMakerService::LoadComponents() const {
  CARVE_ASSIGN_OR_RETURN(auto records, store_.ListAllAccounts(std::string(kInferenceComponent)));
  std::vector<ComponentEntry> out;
  out.reserve(records.size());
  for (auto& r : records) {
    auto c = ComponentRecord::FromRecord(r);
    if (!c.has_value()) {
      spdlog::error("skipping inference component {}/{}: {}", r.key.account, r.key.name,
                    c.error().message);
      continue;
    }
    out.push_back({std::move(r), std::move(c).value()});
  }
  return out;
}

void SageMakerService::SyncClaims() {
  if (options_.registry == nullptr) return;
  if (registry_cursor_ < 0) registry_cursor_ = options_.registry->Subscribe();
  nodes::SyncFromRegistry(*options_.registry, claims_, registry_cursor_);
}

Status SageMakerService::Recover() {
  std::lock_guard lock(mu_);
  SyncClaims();
  CARVE_ASSIGN_OR_RETURN(auto endpoints, LoadEndpoints());
  CARVE_RETURN_IF_ERROR(MigrateEndpoints(store_, endpoints));
  CARVE_ASSIGN_OR_RETURN(auto components, LoadComponents());
  CARVE_RETURN_IF_ERROR(lifecycle_.Recover(endpoints));
  CARVE_RETURN_IF_ERROR(placement_.Recover(endpoints, components));
  placement_.SyncPools(endpoints, claims_);
  // Agents that reconnect find their copies still desired.
  if (publisher_) publisher_->Publish(endpoints, components, placement_);
  spdlog::info("recovered {} endpoints and {} inference components from the store",
               endpoints.size(), components.size());
  return OkStatus();
}

ApiResponse SageMakerService::Handle(const ApiRequest& request) {
  Handler handler = FindHandler(request.operation);
  if (handler == nullptr) {
    return ToAwsError(Unimplemented("Unknown operation SageMaker." + request.operation));
  }
  nlohmann::json body;
  try {
    body = request.body.empty() ? nlohmann::json::object() : nlohmann::json::parse(request.body);
  } catch (const nlohmann::json::exception& e) {
    return ToAwsError(InvalidArgument(std::string("Request body is not valid JSON: ") + e.what()));
  }
  if (!body.is_object()) return ToAwsError(InvalidArgument("Request body must be a JSON object"));
  Result<nlohmann::json> out = [&]() -> Result<nlohmann::json> {
    try {
      return handler(ops_, request, body);
    } catch (const std::exception& e) {  // A JSON access on stored data; never a user error.
      return Internal(std::string("internal error: ") + e.what());
    }
  }();
  if (!out.has_value()) {
    if (out.error().code == ErrorCode::kInternal || out.error().code == ErrorCode::kUnavailable) {
      spdlog::error("{} for account {} failed: {}", request.operation, request.account_id,
                    out.error().message);
    }
    return ToAwsError(out.error());
  }
  return JsonOk(*out);
}

void SageMakerService::Start() { loop_.Start(); }

void SageMakerService::Stop() {
  loop_.Stop();
  lifecycle_.Abort();
  WaitForCarves();
}

void SageMakerService::ReconcileOnce() {
  if (options_.registry != nullptr) options_.registry->Sweep();
  std::lock_guard lock(mu_);
  SyncClaims();
  auto endpoints = LoadEndpoints();
  if (!endpoints.has_value()) {
    spdlog::warn("reconcile: cannot list endpoints: {}", endpoints.error().message);
    return;
  }
  lifecycle_.Reconcile(*endpoints);
  auto components = LoadComponents();
  if (!components.has_value()) {
    spdlog::warn("reconcile: cannot list inference components: {}", components.error().message);
    return;
  }
  placement_.SyncPools(*endpoints, claims_);
  placement_.Reconcile(*endpoints, *components);
  ScaleManagedVariants(*endpoints);
  if (publisher_) publisher_->Publish(*endpoints, *components, placement_);
}

void SageMakerService::ScaleManagedVariants(std::vector<EndpointEntry>& endpoints) {
  for (EndpointEntry& e : endpoints) {
    if (e.endpoint.status != EndpointStatus::kInService) continue;
    EndpointRecord ep = e.endpoint;
    bool changed = false;
    for (VariantSpec& v : ep.variants) {
      if (!v.managed || !v.managed->enabled) continue;
      const auto owner = nodes::Owner::Endpoint(e.record.key.account, ep.name, v.name);
      const int count = static_cast<int>(v.nodes.size());
      const int waiting = placement_.WaitingCopies(owner);
      if (waiting > 0 && count < v.managed->max) {
        bool free = false;
        for (const auto& n : claims_.All()) {
          free = free || (!n.owner && n.ready && n.type->id == v.instance_type);
        }
        if (!free) continue;
        v.instance_count = count + 1;
        spdlog::info("endpoint {}/{}: {} copies wait for room; managed scaling adds an instance "
                     "to variant {} ({} -> {})",
                     e.record.key.account, ep.name, waiting, v.name, count, count + 1);
        changed = true;
      } else if (waiting == 0 && count > v.managed->min) {
        const auto copies = placement_.CopiesPerNode(owner);
        bool idle = false;
        for (const auto& n : v.nodes) idle = idle || !copies.contains(n);
        if (!idle) continue;
        v.instance_count = count - 1;
        spdlog::info("endpoint {}/{}: variant {} has an instance with no copy; managed scaling "
                     "releases it ({} -> {})",
                     e.record.key.account, ep.name, v.name, count, count - 1);
        changed = true;
      }
    }
    if (!changed) continue;
    ep.status = EndpointStatus::kUpdating;
    ep.status_since_ms = clock_.UnixMillis();
    if (auto r = store_.Update(e.record.key, ep.ToJson().dump(), e.record.version); r.has_value()) {
      e = EndpointEntry{*r, std::move(ep)};
      loop_.Wake();
    }
  }
}

void SageMakerService::WaitForCarves() { lifecycle_.Wait(); }

}  // namespace carve::server::sagemaker
