#include "server/sagemaker/endpoint_lifecycle.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "server/sagemaker/resources.h"
#include "store/commit_in_steps.h"

namespace carve::server::sagemaker {
namespace {

using nlohmann::json;

nodes::Owner OwnerOf(const std::string& account, const EndpointRecord& ep, const VariantSpec& v) {
  return nodes::Owner::Endpoint(account, ep.name, v.name);
}

std::vector<NodeId> Ids(const std::vector<std::string>& names) {
  return {names.begin(), names.end()};
}

VariantSpec* FindVariantIn(EndpointRecord& ep, const std::string& name) {
  for (VariantSpec& v : ep.variants) {
    if (v.name == name) return &v;
  }
  return nullptr;
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
      case EndpointStatus::kUpdating:
        Update(e);
        break;
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
    auto written = CommitWithResets(store::Remove{rec->key, rec->version}, not_ready, endpoint);
    if (!written.has_value()) {
      spdlog::warn("endpoint {}: cannot remove the record: {}", endpoint,
                   written.error().message);
      return;  // Still Deleting: the next pass uncarves (a no-op now) and commits again.
    }
    for (const auto& v : ep->variants) claims_.Release(OwnerOf(key.first, *ep, v));
    HoldForReset(*written, not_ready, endpoint, !uncarved.ok());
  }
  notify_();
}

Result<std::vector<store::Record>> EndpointLifecycle::CommitWithResets(
    store::Mutation endpoint_write, const std::map<std::string, int>& nodes,
    const std::string& endpoint) {
  // Upserts, so a step redone after a failure writes the same records again.
  std::vector<store::Mutation> resets;
  resets.reserve(nodes.size());
  for (const auto& [node, gpus] : nodes) {
    resets.push_back(store::Put{{"", std::string(kNodeReset), node},
                                json{{"gpus", gpus}, {"endpoint", endpoint}}.dump(),
                                int64_t{0}});
  }
  return store::CommitInSteps(store_, std::move(resets), std::move(endpoint_write));
}

void EndpointLifecycle::HoldForReset(std::span<const store::Record> written,
                                     const std::map<std::string, int>& nodes,
                                     const std::string& endpoint, bool refused) {
  // A refused reset waits for its reason to clear; a NotReady node is reset once it is back.
  const auto next_try =
      refused ? clock_.Now() + kResetRetry : std::chrono::steady_clock::time_point{};
  for (const store::Record& r : written) {
    if (r.key.kind != kNodeReset) continue;
    const NodeId node(r.key.name);
    auto gpus = nodes.find(r.key.name);
    resets_[r.key.name] =
        PendingReset{gpus == nodes.end() ? 0 : gpus->second, endpoint, r.version, next_try};
    (void)claims_.ClaimSpecific(nodes::Owner::Reset(node), {&node, 1});
    spdlog::warn("node {} is NotReady or refused its GPU reset: it is held until its agent "
                 "reports every GPU whole (it left endpoint {})",
                 r.key.name, endpoint);
  }
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

// -- Capacity: UpdateEndpointWeightsAndCapacities / UpdateEndpoint changing instance counts ----

void EndpointLifecycle::Update(EndpointEntry& e) {
  const std::string& account = e.record.key.account;
  EndpointRecord ep = e.endpoint;
  bool record_changed = false;
  bool settled = true;
  std::vector<Growth> grows;
  std::vector<Drain> drains;
  for (VariantSpec& v : ep.variants) {
    const nodes::Owner owner = OwnerOf(account, ep, v);
    auto hw = VariantHardware(v);
    const int gpus = hw.has_value() ? hw->first->gpu_count : 0;
    const int staying = static_cast<int>(v.nodes.size() - v.draining.size());
    if (!v.draining.empty()) {
      settled = false;
      // Released only once no copy is placed on any of them; their copies move meanwhile.
      const auto copies = copies_per_node_(owner);
      bool empty = true;
      for (const auto& n : v.draining) empty = empty && !copies.contains(n);
      if (!empty) continue;
      Drain d{v.name, {}, {}, gpus};
      for (const auto& n : v.draining) {
        auto claimed = claims_.Find(NodeId(n));
        (claimed && claimed->ready ? d.ready : d.not_ready).emplace_back(n);
      }
      drains.push_back(std::move(d));
    } else if (staying < v.instance_count) {
      auto ids = claims_.Claim(owner, v.instance_type, v.instance_count - staying);
      if (!ids.has_value()) {
        if (ids.error().code == ErrorCode::kUnavailable) {  // Some NotReady: wait.
          settled = false;
          continue;
        }
        // Too few free instances: the variant keeps the capacity it has, and says why.
        ep.failure_reason = fmt::format("Variant {} could not grow to {} instances: {}", v.name,
                                        v.instance_count, ids.error().message);
        spdlog::warn("endpoint {}/{}: {}", account, ep.name, ep.failure_reason);
        v.instance_count = staying;
        record_changed = true;
        continue;
      }
      settled = false;
      core::Layout layout = v.layout;
      if (hw.has_value()) layout.gpu = hw->second;
      grows.push_back(Growth{v.name, *ids, gpus, std::move(layout)});
    } else if (staying > v.instance_count) {
      settled = false;
      // Leave the instances that hold the fewest copies (fewest to move), the last-named first.
      const auto copies = copies_per_node_(owner);
      std::vector<std::pair<size_t, std::string>> by_load;
      for (const auto& n : v.nodes) {
        auto c = copies.find(n);
        by_load.emplace_back(c == copies.end() ? 0 : c->second, n);
      }
      std::sort(by_load.begin(), by_load.end(), [](const auto& a, const auto& b) {
        return a.first != b.first ? a.first < b.first : a.second > b.second;
      });
      for (int i = 0; i < staying - v.instance_count; ++i) v.draining.push_back(by_load[i].second);
      std::sort(v.draining.begin(), v.draining.end());
      record_changed = true;
    }
  }
  if (settled) {
    for (VariantSpec& v : ep.variants) v.weight = v.desired_weight;
    ep.status = EndpointStatus::kInService;
    ep.status_since_ms = clock_.UnixMillis();
    record_changed = true;
  }
  if (record_changed) {
    auto r = store_.Update(e.record.key, ep.ToJson().dump(), e.record.version);
    if (!r.has_value()) {
      for (const Growth& g : grows) {
        claims_.ReleaseNodes(nodes::Owner::Endpoint(account, ep.name, g.variant), g.nodes);
      }
      return;  // Not recorded: the next pass decides again.
    }
    e = EndpointEntry{*r, ep};
  }
  if (grows.empty() && drains.empty()) return;
  Key key{account, ep.name};
  carving_.insert(key);
  workers_.emplace_back([this, key, grows = std::move(grows), drains = std::move(drains)] {
    Resize(key, grows, drains);
  });
}

void EndpointLifecycle::Resize(Key key, std::vector<Growth> grows, std::vector<Drain> drains) {
  // Outside the state lock: new instances are carved with the variant's layout, and leaving
  // ones (their copies gone) carved back to whole.
  std::vector<Status> grown;
  std::vector<Status> drained;
  for (const Growth& g : grows) {
    grown.push_back(abort_ ? Unavailable("aborted")
                           : driver_.CarveNodes(g.nodes, g.gpus, g.layout, abort_));
  }
  for (const Drain& d : drains) {
    std::vector<NodeId> ready(d.ready.begin(), d.ready.end());
    drained.push_back(abort_ ? Unavailable("aborted")
                             : driver_.CarveNodes(ready, d.gpus, core::Layout{}, abort_));
  }
  {
    std::lock_guard lock(state_mu_);
    carving_.erase(key);
    const store::Key record_key{key.first, std::string(kEndpoint), key.second};
    auto rec = store_.Get(record_key);
    auto ep = rec.has_value() ? EndpointRecord::FromRecord(*rec)
                              : Result<EndpointRecord>(rec.error());
    auto owner_of = [&](const std::string& variant) {
      return nodes::Owner::Endpoint(key.first, key.second, variant);
    };
    auto release_grown = [&] {
      for (const Growth& g : grows) claims_.ReleaseNodes(owner_of(g.variant), g.nodes);
    };
    // Added instances are recorded only once carved: after an abort or a restart they are
    // simply not the endpoint's, and the next pass claims and carves again.
    if (abort_ || !ep.has_value() || ep->status != EndpointStatus::kUpdating) {
      release_grown();
      return;
    }
    const std::string endpoint = key.first + "/" + key.second;
    std::map<std::string, int> pending_reset;
    std::vector<std::pair<std::string, std::vector<NodeId>>> released;
    for (size_t i = 0; i < grows.size(); ++i) {
      VariantSpec* v = FindVariantIn(*ep, grows[i].variant);
      if (v == nullptr) continue;
      if (grown[i].ok()) {
        for (const NodeId& n : grows[i].nodes) v->nodes.push_back(n.value());
        continue;
      }
      released.emplace_back(v->name, grows[i].nodes);
      for (const NodeId& n : grows[i].nodes) pending_reset[n.value()] = grows[i].gpus;
      v->instance_count = static_cast<int>(v->nodes.size() - v->draining.size());
      ep->failure_reason = fmt::format("Variant {}: carving the added instances failed: {}",
                                       v->name, grown[i].error().message);
    }
    bool refused = false;
    for (size_t i = 0; i < drains.size(); ++i) {
      if (!drained[i].ok() && drained[i].error().code == ErrorCode::kUnavailable) continue;
      VariantSpec* v = FindVariantIn(*ep, drains[i].variant);
      if (v == nullptr) continue;
      refused = refused || !drained[i].ok();
      // NotReady ones, and all of them when an agent refused, keep a pending reset.
      for (const auto& n : drains[i].not_ready) pending_reset[n] = drains[i].gpus;
      if (!drained[i].ok()) {
        for (const auto& n : drains[i].ready) pending_reset[n] = drains[i].gpus;
      }
      std::vector<NodeId> gone;
      for (const auto& n : v->draining) gone.emplace_back(n);
      std::erase_if(v->nodes, [&](const std::string& n) {
        return std::find(v->draining.begin(), v->draining.end(), n) != v->draining.end();
      });
      v->draining.clear();
      released.emplace_back(v->name, std::move(gone));
    }
    // A grown instance whose carve failed was never the endpoint's: it is released, and reset
    // like a leaving one (its GPUs may be half carved).
    auto written = CommitWithResets(store::Put{rec->key, ep->ToJson().dump(), rec->version},
                                    pending_reset, endpoint);
    if (!written.has_value()) {
      spdlog::warn("endpoint {}: cannot record its new instances: {}", endpoint,
                   written.error().message);
      release_grown();
      return;
    }
    for (const auto& [variant, nodes] : released) claims_.ReleaseNodes(owner_of(variant), nodes);
    HoldForReset(*written, pending_reset, endpoint, refused);
  }
  notify_();
}

}  // namespace carve::server::sagemaker
