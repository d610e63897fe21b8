#include "server/sagemaker/endpoint_lifecycle.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <nlohmann/json.hpp>

#include "server/sagemaker/resources.h"

namespace carve::server::sagemaker {
namespace {

using nlohmann::json;

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

Status EndpointLifecycle::Recover(std::span<const EndpointEntry> endpoints) {
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
  CARVE_ASSIGN_OR_RETURN(std::vector<store::Record> resets,
                         store_.List("", std::string(kNodeReset), {}));
  for (const store::Record& rec : resets) {
    json body = json::parse(rec.body, nullptr, false);
    if (!body.is_object() || !body["gpus"].is_number_integer()) {
      spdlog::warn("pending reset of node {} is unreadable; it is dropped", rec.key.name);
      continue;
    }
    PendingReset& r = resets_[rec.key.name];
    r.gpus = body["gpus"].get<int>();
    r.endpoint = body.value("endpoint", "");
    r.version = rec.version;
    const NodeId node(rec.key.name);
    if (Status st = claims_.ClaimSpecific(nodes::Owner::Reset(node), {&node, 1}); !st.ok()) {
      spdlog::warn("node {}: cannot hold it for its pending GPU reset: {}", rec.key.name,
                   st.error().message);
    }
  }
  return OkStatus();
}

void EndpointLifecycle::Reconcile(std::vector<EndpointEntry>& endpoints) {
  for (EndpointEntry& e : endpoints) {
    Key key{e.record.key.account, e.endpoint.name};
    if (carving_.contains(key)) continue;
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
        StartWorker(std::move(key), &EndpointLifecycle::Uncarve);
        break;
      default:
        break;
    }
  }
  StartResets();
}

std::vector<NodeId> EndpointLifecycle::PendingResets() const {
  std::vector<NodeId> out;
  for (const auto& [node, r] : resets_) out.emplace_back(node);
  return out;
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
  StartWorker({account, e.endpoint.name}, &EndpointLifecycle::Carve);
}

void EndpointLifecycle::Fail(EndpointRecord& ep, std::string reason) {
  ep.status = EndpointStatus::kFailed;
  ep.failure_reason = std::move(reason);
  ep.status_since_ms = clock_.UnixMillis();
}

void EndpointLifecycle::StartWorker(Key key, void (EndpointLifecycle::*work)(Key)) {
  carving_.insert(key);
  workers_.emplace_back([this, key = std::move(key), work] { (this->*work)(key); });
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

void EndpointLifecycle::Uncarve(Key key) {
  struct Job {
    std::vector<NodeId> ready;
    int gpus = 0;
  };
  std::vector<Job> jobs;
  std::map<std::string, int> not_ready;  // node -> its GPU count
  const store::Key record_key{key.first, std::string(kEndpoint), key.second};
  {
    std::lock_guard lock(state_mu_);
    auto rec = store_.Get(record_key);
    auto ep = rec.has_value() ? EndpointRecord::FromRecord(*rec)
                              : Result<EndpointRecord>(rec.error());
    if (ep.has_value()) {
      for (const auto& v : ep->variants) {
        auto hw = VariantHardware(v);
        Job job;
        job.gpus = hw.has_value() ? hw->first->gpu_count : 0;
        for (const auto& n : v.nodes) {
          auto claimed = claims_.Find(NodeId(n));
          if (claimed && claimed->ready) {
            job.ready.emplace_back(n);
          } else {
            not_ready[n] = job.gpus;
          }
        }
        jobs.push_back(std::move(job));
      }
    }
  }
  // Outside the state lock: the agents stop the copies no longer desired, then clear the GPUs.
  Status uncarved = OkStatus();
  for (const Job& job : jobs) {
    if (abort_) break;
    uncarved = driver_.CarveNodes(job.ready, job.gpus, core::Layout{}, abort_);
    if (!uncarved.ok()) break;
  }
  {
    std::lock_guard lock(state_mu_);
    carving_.erase(key);
    if (abort_) return;  // Shutting down: the record stays Deleting and resumes on restart.
    if (!uncarved.ok() && uncarved.error().code == ErrorCode::kUnavailable) {
      // A node went NotReady or is slow: the next pass tries again, without the NotReady ones.
      spdlog::info("endpoint {}/{}: deleting waits: {}", key.first, key.second,
                   uncarved.error().message);
      return;
    }
    auto rec = store_.Get(record_key);
    if (!rec.has_value()) return;
    auto ep = EndpointRecord::FromRecord(*rec);
    if (!ep.has_value() || ep->status != EndpointStatus::kDeleting) return;
    if (!uncarved.ok()) {
      // An agent refused the reset (its own error): the endpoint still goes, and every one of
      // its nodes keeps a pending reset, retried when the reason may have cleared.
      spdlog::warn("endpoint {}/{}: an agent refused to reset its GPUs: {}", key.first, key.second,
                   uncarved.error().message);
      for (const auto& v : ep->variants) {
        auto hw = VariantHardware(v);
        for (const auto& n : v.nodes) not_ready[n] = hw.has_value() ? hw->first->gpu_count : 0;
      }
    }
    const std::string endpoint = key.first + "/" + key.second;
    std::vector<store::Mutation> batch{store::Remove{rec->key, rec->version}};
    for (const auto& [node, gpus] : not_ready) {
      batch.push_back(store::Put{{"", std::string(kNodeReset), node},
                                 json{{"gpus", gpus}, {"endpoint", endpoint}}.dump(), int64_t{0}});
    }
    auto written = store_.Commit(std::move(batch));
    if (!written.has_value()) {
      spdlog::warn("endpoint {}: cannot remove the record: {}", endpoint,
                   written.error().message);
      return;  // Still Deleting: the next pass uncarves (a no-op now) and commits again.
    }
    for (const auto& v : ep->variants) claims_.Release(OwnerOf(key.first, *ep, v));
    // A refused reset waits for its reason to clear; a NotReady node is reset once it is back.
    const auto next_try = uncarved.ok() ? std::chrono::steady_clock::time_point{}
                                        : clock_.Now() + kResetRetry;
    for (const store::Record& r : *written) {
      const NodeId node(r.key.name);
      resets_[r.key.name] = PendingReset{not_ready[r.key.name], endpoint, r.version, next_try};
      (void)claims_.ClaimSpecific(nodes::Owner::Reset(node), {&node, 1});
      spdlog::warn("node {} is NotReady or refused its GPU reset: it is held until its agent "
                   "reports every GPU whole (endpoint {} is deleted)",
                   r.key.name, endpoint);
    }
  }
  notify_();
}

void EndpointLifecycle::StartResets() {
  const auto now = clock_.Now();
  for (auto& [node, r] : resets_) {
    if (resetting_.contains(node) || now < r.next_try) continue;
    auto claimed = claims_.Find(NodeId(node));
    if (!claimed || !claimed->ready) continue;
    resetting_.insert(node);
    workers_.emplace_back([this, node = node, gpus = r.gpus] { ResetNode(node, gpus); });
  }
}

void EndpointLifecycle::ResetNode(const std::string& node, int gpus) {
  Status st = driver_.CarveNodes({NodeId(node)}, gpus, core::Layout{}, abort_);
  {
    std::lock_guard lock(state_mu_);
    resetting_.erase(node);
    if (abort_) return;
    auto it = resets_.find(node);
    if (it == resets_.end()) return;
    if (st.ok()) {
      auto removed =
          store_.Commit({store::Remove{{"", std::string(kNodeReset), node}, it->second.version}});
      if (!removed.has_value()) st = removed.error();
    }
    if (!st.ok()) {
      it->second.next_try = clock_.Now() + kResetRetry;
      spdlog::warn("node {}: GPU reset for deleted endpoint {} failed (retried in {} s): {}", node,
                   it->second.endpoint, kResetRetry.count(), st.error().message);
      return;
    }
    spdlog::info("node {}: every GPU is whole again; it is free", node);
    resets_.erase(it);
    claims_.Release(nodes::Owner::Reset(NodeId(node)));
  }
  notify_();
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
