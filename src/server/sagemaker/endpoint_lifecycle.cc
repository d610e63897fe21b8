#include "server/sagemaker/endpoint_lifecycle.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "server/sagemaker/resources.h"

namespace carve::server::sagemaker {
namespace {

nodes::Owner OwnerOf(const std::string& account, const EndpointRecord& ep, const VariantSpec& v) {
  return nodes::Owner::Endpoint(account, ep.name, v.name);
}

std::vector<NodeId> Ids(const std::vector<std::string>& names) {
  return {names.begin(), names.end()};
}

}  // namespace

EndpointLifecycle::EndpointLifecycle(store::Store& store, nodes::NodeClaims& claims,
                                     nodes::NodeDriver& driver, const Clock& clock,
                                     std::mutex& state_mu, std::function<void()> notify)
    : store_(store),
      claims_(claims),
      driver_(driver),
      clock_(clock),
      state_mu_(state_mu),
      notify_(std::move(notify)) {}

EndpointLifecycle::~EndpointLifecycle() {
  Abort();
  Wait();
}

void EndpointLifecycle::Recover(std::span<const EndpointEntry> endpoints) {
  for (const auto& e : endpoints) {
    for (const auto& v : e.endpoint.variants) {
      if (v.nodes.empty()) continue;
      Status st = claims_.ClaimSpecific(OwnerOf(e.record.key.account, e.endpoint, v), Ids(v.nodes));
      if (!st.ok()) {
        spdlog::warn("endpoint {}/{}: cannot re-claim its instances: {}", e.record.key.account,
                     e.endpoint.name, st.error().message);
      }
    }
  }
}

void EndpointLifecycle::Reconcile(std::vector<EndpointEntry>& endpoints) {
  for (auto it = endpoints.begin(); it != endpoints.end();) {
    EndpointEntry& e = *it;
    bool removed = false;
    if (!carving_.contains({e.record.key.account, e.endpoint.name})) {
      switch (e.endpoint.status) {
        case EndpointStatus::kCreating:
          Claim(e);
          break;
        case EndpointStatus::kUpdating: {
          EndpointRecord ep = e.endpoint;
          ep.status = EndpointStatus::kInService;
          ep.status_since_ms = clock_.UnixMillis();
          if (auto r = store_.Update(e.record.key, ep.ToJson().dump(), e.record.version);
              r.has_value()) {
            e = EndpointEntry{*r, std::move(ep)};
          }
          break;
        }
        case EndpointStatus::kDeleting:
          Delete(e, removed);
          break;
        default:
          break;
      }
    }
    it = removed ? endpoints.erase(it) : it + 1;
  }
}

void EndpointLifecycle::Claim(EndpointEntry& e) {
  const std::string& account = e.record.key.account;
  EndpointRecord ep = e.endpoint;
  bool need_claim = false;
  for (const auto& v : ep.variants) need_claim = need_claim || v.nodes.empty();
  if (need_claim) {
    auto release_all = [&] {
      for (const auto& v : ep.variants) claims_.Release(OwnerOf(account, ep, v));
    };
    Status claimed = OkStatus();
    for (auto& v : ep.variants) {
      auto ids = claims_.Claim(OwnerOf(account, ep, v), v.instance_type, v.instance_count);
      if (!ids.has_value()) {
        claimed = ids.error();
        break;
      }
      v.nodes.clear();
      for (const auto& id : *ids) v.nodes.push_back(id.value());
    }
    if (!claimed.ok() && claimed.error().code == ErrorCode::kUnavailable) {
      release_all();  // Enough instances exist but some are NotReady: try again next pass.
      return;
    }
    if (!claimed.ok()) {
      release_all();
      for (auto& v : ep.variants) v.nodes.clear();
      Fail(ep, claimed.error().message);
      if (auto r = store_.Update(e.record.key, ep.ToJson().dump(), e.record.version);
          r.has_value()) {
        e = EndpointEntry{*r, std::move(ep)};
      }
      return;
    }
    auto r = store_.Update(e.record.key, ep.ToJson().dump(), e.record.version);
    if (!r.has_value()) {
      release_all();  // Not recorded: retried next pass.
      return;
    }
    e = EndpointEntry{*r, std::move(ep)};
  }
  StartCarve(e);
}

void EndpointLifecycle::Fail(EndpointRecord& ep, std::string reason) {
  ep.status = EndpointStatus::kFailed;
  ep.failure_reason = std::move(reason);
  ep.status_since_ms = clock_.UnixMillis();
}

void EndpointLifecycle::StartCarve(const EndpointEntry& e) {
  Key key{e.record.key.account, e.endpoint.name};
  carving_.insert(key);
  workers_.emplace_back([this, key] { Carve(key); });
}

void EndpointLifecycle::Carve(Key key) {
  struct Job {
    std::vector<NodeId> nodes;
    int gpus;
    core::Layout layout;
  };
  std::vector<Job> jobs;
  std::string error;
  const store::Key record_key{key.first, std::string(kEndpoint), key.second};
  {
    std::lock_guard lock(state_mu_);
    auto rec = store_.Get(record_key);
    auto ep =
        rec.has_value() ? EndpointRecord::FromRecord(*rec) : Result<EndpointRecord>(rec.error());
    if (!ep.has_value()) {
      error = ep.error().message;
    } else {
      for (const auto& v : ep->variants) {
        auto hw = VariantHardware(v);
        if (!hw.has_value()) {
          error = hw.error().message;
          break;
        }
        Job job{{}, hw->first->gpu_count, v.layout};
        job.layout.gpu = hw->second;
        for (const auto& n : v.nodes) job.nodes.emplace_back(n);
        jobs.push_back(std::move(job));
      }
    }
  }
  // Outside the state lock: the driver waits for every node of each variant to report its carve.
  for (const Job& job : jobs) {
    if (!error.empty() || abort_) break;
    Status st = driver_.CarveNodes(job.nodes, job.gpus, job.layout, abort_);
    if (!st.ok()) error = st.error().message;
  }
  {
    std::lock_guard lock(state_mu_);
    carving_.erase(key);
    if (abort_) return;  // Shutting down: the record stays Creating and resumes on restart.
    auto rec = store_.Get(record_key);
    if (!rec.has_value()) return;
    auto ep = EndpointRecord::FromRecord(*rec);
    if (!ep.has_value() || ep->status != EndpointStatus::kCreating) return;  // Deleted meanwhile.
    if (error.empty()) {
      ep->status = EndpointStatus::kInService;
      ep->status_since_ms = clock_.UnixMillis();
    } else {
      for (auto& v : ep->variants) {
        claims_.Release(OwnerOf(key.first, *ep, v));
        v.nodes.clear();
      }
      Fail(*ep, error);
    }
    auto st = store_.Update(rec->key, ep->ToJson().dump(), rec->version);
    if (!st.has_value()) {
      spdlog::warn("endpoint {}/{}: cannot record the carve's outcome: {}", key.first, key.second,
                   st.error().message);
    }
  }
  notify_();
}

void EndpointLifecycle::Delete(EndpointEntry& e, bool& removed) {
  const std::string& account = e.record.key.account;
  for (const auto& v : e.endpoint.variants) {
    auto hw = VariantHardware(v);
    const int gpus = hw.has_value() ? hw->first->gpu_count : 0;
    for (const auto& node : v.nodes) {
      for (int g = 0; g < gpus; ++g) (void)driver_.ResetGpu(NodeId(node), GpuIndex(g));
    }
  }
  if (!store_.Commit({store::Remove{e.record.key, e.record.version}}).has_value()) return;
  for (const auto& v : e.endpoint.variants) claims_.Release(OwnerOf(account, e.endpoint, v));
  removed = true;
}

void EndpointLifecycle::Abort() { abort_ = true; }

void EndpointLifecycle::Wait() {
  std::vector<std::thread> workers;
  {
    std::lock_guard lock(state_mu_);
    workers.swap(workers_);
  }
  for (auto& w : workers) w.join();
}

}  // namespace carve::server::sagemaker
