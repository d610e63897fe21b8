#include "server/sagemaker/service.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <tuple>

#include "common/bounded_json.h"
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
      feed_(store.Watch({std::string(kEndpoint), std::string(kInferenceComponent)})),
      ops_(
          store, clock_, options_.region, mu_, [this] { loop_.Wake(); }, options_.registry,
          options_.max_records_per_kind, options_.model_roots),
      lifecycle_(store, claims, driver, clock_, mu_, [this] { loop_.Wake(); }),
      placement_(store, options_.registry, clock_),
      loop_(options_.reconcile_interval, [this] { ReconcileOnce(); }) {
  lifecycle_.set_copies_per_node(
      [this](const nodes::Owner& variant) { return placement_.CopiesPerNode(variant); });
  if (options_.registry != nullptr) {
    publisher_.emplace(*options_.registry, options_.runtimes, routes_, options_.model_roots);
    // Agent reports that change a copy's state or a node's readiness wake the reconciler.
    wake_ = options_.registry->AddListener([this] { loop_.Wake(); });
  }
}

SageMakerService::~SageMakerService() {
  wake_.Reset();  // Before anything a wake would touch goes.
  Stop();
  store_.Unwatch(feed_);
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

namespace {

// Re-reads one record into `entries` (ordered by account and name): replaced, inserted, or
// dropped when it is gone or does not parse. Fails only when the Store cannot be read.
template <typename Entry, typename Parse>
Status ReloadOne(store::Store& store, std::vector<Entry>& entries, const store::Key& key,
                 Parse parse) {
  auto at =
      std::lower_bound(entries.begin(), entries.end(), key, [](const Entry& e, const auto& k) {
        return std::tie(e.record.key.account, e.record.key.name) < std::tie(k.account, k.name);
      });
  const bool present = at != entries.end() && at->record.key.account == key.account &&
                       at->record.key.name == key.name;
  auto record = store.Get(key);
  if (!record.has_value() && record.error().code != ErrorCode::kNotFound) return record.error();
  if (!record.has_value()) {
    if (present) entries.erase(at);
    return OkStatus();
  }
  if (present && at->record.version == record->version) return OkStatus();  // Our own write.
  auto parsed = parse(*record);
  if (!parsed.has_value()) {
    spdlog::error("skipping {}/{}: {}", key.account, key.name, parsed.error().message);
    if (present) entries.erase(at);
    return OkStatus();
  }
  Entry entry{std::move(record).value(), std::move(parsed).value()};
  if (present) {
    *at = std::move(entry);
  } else {
    entries.insert(at, std::move(entry));
  }
  return OkStatus();
}

}  // namespace

Status SageMakerService::ReloadAll() {
  CARVE_ASSIGN_OR_RETURN(auto endpoints, LoadEndpoints());
  CARVE_ASSIGN_OR_RETURN(auto components, LoadComponents());
  records_read_ += static_cast<int64_t>(endpoints.size() + components.size());
  endpoints_ = std::move(endpoints);
  components_ = std::move(components);
  return OkStatus();
}

Status SageMakerService::Refresh(PassChanges& changes) {
  if (options_.registry != nullptr) {
    if (registry_cursor_ < 0) registry_cursor_ = options_.registry->Subscribe();
    nodes::RegistryChanges taken = options_.registry->TakeChanges(registry_cursor_);
    if (taken.everything) {
      nodes::SyncFromRegistry(*options_.registry, claims_);
    } else {
      nodes::SyncFromRegistry(*options_.registry, claims_, taken);
    }
    auto& into = changes.registry;
    into.everything = into.everything || taken.everything;
    into.nodes.merge(taken.nodes);
    into.workloads.merge(taken.workloads);
    into.gpus.merge(taken.gpus);
  }
  store::Changes written = store_.TakeChanges(feed_);
  if (written.everything || reload_all_) {
    reload_all_ = true;
    unread_.clear();
    CARVE_RETURN_IF_ERROR(ReloadAll());
    reload_all_ = false;
    changes.everything = true;
    return OkStatus();
  }
  // Simulated mode has no reports to say what changed under a component, so it looks at all.
  if (options_.registry == nullptr || changes.registry.everything) changes.everything = true;
  written.keys.merge(unread_);
  unread_.clear();
  Status failed = OkStatus();
  for (const store::Key& key : written.keys) {
    Status st = OkStatus();
    ++records_read_;
    if (key.kind == kEndpoint) {
      changes.endpoints.insert({key.account, key.name});
      st = ReloadOne(store_, endpoints_, key, EndpointRecord::FromRecord);
    } else if (key.kind == kInferenceComponent) {
      changes.components.insert({key.account, key.name});
      st = ReloadOne(store_, components_, key, ComponentRecord::FromRecord);
    }
    if (!st.ok()) {
      unread_.insert(key);
      failed = st;
    }
  }
  return failed;
}

Status SageMakerService::Recover() {
  std::lock_guard lock(mu_);
  PassChanges changes;
  CARVE_RETURN_IF_ERROR(Refresh(changes));
  CARVE_RETURN_IF_ERROR(MigrateEndpoints(store_, endpoints_));
  CARVE_RETURN_IF_ERROR(MigrateModelContainers(store_, components_));
  CARVE_RETURN_IF_ERROR(lifecycle_.Recover(endpoints_));
  CARVE_RETURN_IF_ERROR(placement_.Recover(endpoints_, components_));
  placement_.SyncPools(endpoints_, claims_, changes);
  // Agents that reconnect find their copies still desired.
  if (publisher_) publisher_->Publish(endpoints_, components_, placement_, changes);
  spdlog::info("recovered {} endpoints and {} inference components from the store",
               endpoints_.size(), components_.size());
  return OkStatus();
}

http::ApiResponse SageMakerService::Handle(const http::ApiRequest& request) {
  Handler handler = FindHandler(request.operation);
  if (handler == nullptr) {
    return ToAwsError(Unimplemented("Unknown operation SageMaker." + request.operation));
  }
  // Bounded: nesting past kMaxJsonDepth or a repeated key is refused here, before any
  // validator walks the value (issue 35).
  Result<nlohmann::json> parsed = request.body.empty()
                                      ? Result<nlohmann::json>(nlohmann::json::object())
                                      : ParseJson(request.body);
  if (!parsed.has_value()) {
    return ToAwsError(InvalidArgument("Request body " + parsed.error().message));
  }
  const nlohmann::json& body = *parsed;
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
    return ToAwsError(out.error(), request.operation);
  }
  return JsonOk(*out);
}

void SageMakerService::Start() { loop_.Start(); }

void SageMakerService::Stop() {
  loop_.Stop();
  lifecycle_.Abort();
  WaitForCarves();
}

SageMakerService::PassStats SageMakerService::LastPass() const {
  std::lock_guard lock(mu_);
  return last_pass_;
}

void SageMakerService::ReconcileOnce() {
  if (options_.registry != nullptr) options_.registry->Sweep();
  std::lock_guard lock(mu_);
  const auto start = std::chrono::steady_clock::now();
  const int64_t read_before = records_read_;
  PassChanges changes;
  changes.everything = false;  // Refresh says when it is.
  // A pass cut short by a failed read drops the changes it took (the registry's among them), so
  // the next one looks at everything.
  auto refresh = [&] {
    Status st = Refresh(changes);
    if (st.ok()) return true;
    spdlog::warn("reconcile: cannot read endpoints and inference components: {}",
                 st.error().message);
    reload_all_ = true;
    return false;
  };
  if (!refresh()) return;
  lifecycle_.Reconcile(endpoints_);
  // What the lifecycle wrote (claims, status) is part of this pass's changes.
  if (!refresh()) return;
  placement_.SyncPools(endpoints_, claims_, changes);
  PassStats stats;
  stats.everything = changes.everything;
  stats.components_reconciled = placement_.Reconcile(endpoints_, components_, changes);
  ScaleManagedVariants(endpoints_);
  if (publisher_)
    stats.published = publisher_->Publish(endpoints_, components_, placement_, changes);
  stats.records_read = records_read_ - read_before;
  stats.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  last_pass_ = stats;
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
