// The lifecycle engine: recovery from the Store, endpoint transitions (claim, carve, release)
// and component copy placement. Every function here runs with the service's state lock held,
// except the carve worker's driver calls, which are slow and run without it.
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <random>

#include "core/layout_validator.h"
#include "server/sagemaker/component_record.h"
#include "server/sagemaker/endpoint_record.h"
#include "server/sagemaker/ops.h"

namespace carve::server::sagemaker {
namespace {

using Ops = SageMakerService::Ops;

std::vector<NodeId> Ids(const std::vector<std::string>& names) {
  std::vector<NodeId> out;
  for (const auto& n : names) out.emplace_back(n);
  return out;
}

std::vector<std::string> SlotTypes(const VariantSpec& v) {
  return v.partition_types.value_or(std::vector<std::string>{});
}

// A fresh copy id: 12 hex digits, random (unique among a component's copies in practice; the
// workload id also carries the account and component).
std::string NewCopyId() {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  return fmt::format("{:012x}", rng() & 0xffffffffffffULL);
}

// The lowest copy number not in use, so a replaced copy takes its predecessor's number.
int FreeCopyIndex(const std::vector<fleet::CopyPlacement>& copies) {
  for (int i = 0;; ++i) {
    bool used = false;
    for (const auto& c : copies) used = used || c.index == i;
    if (!used) return i;
  }
}

}  // namespace

Status Ops::RecoverLocked(SageMakerService& s) {
  CARVE_ASSIGN_OR_RETURN(auto endpoints, s.store_.ListAllAccounts(std::string(kEndpoint)));
  for (const auto& rec : endpoints) {
    CARVE_ASSIGN_OR_RETURN(EndpointRecord ep, EndpointRecord::FromRecord(rec));
    for (const auto& var : ep.variants) {
      if (var.nodes.empty()) continue;
      auto ids = Ids(var.nodes);
      Status st = s.fleet_.ClaimSpecific({rec.key.account, ep.name, var.name}, ids);
      if (!st.ok()) {
        spdlog::warn("endpoint {}/{}: cannot re-claim nodes: {}", rec.key.account, ep.name,
                     st.error().message);
        continue;
      }
      if (ep.status == "InService" || ep.status == "Updating") {
        for (const auto& id : ids) (void)s.fleet_.SetCarve(id, SlotTypes(var));
      }
    }
  }
  CARVE_ASSIGN_OR_RETURN(auto components,
                         s.store_.ListAllAccounts(std::string(kInferenceComponent)));
  for (const auto& rec : components) {
    CARVE_ASSIGN_OR_RETURN(ComponentRecord c, ComponentRecord::FromRecord(rec));
    for (const auto& p : c.copies) {
      Status st = s.fleet_.Occupy(p, ComponentRecord::Occupant(rec.key.account, c.name));
      if (!st.ok()) {
        spdlog::warn("component {}/{}: cannot restore a copy: {}", rec.key.account, c.name,
                     st.error().message);
      }
    }
  }
  spdlog::info("recovered {} endpoints and {} inference components from the store",
               endpoints.size(), components.size());
  return OkStatus();
}

void Ops::ReconcileEndpoints(SageMakerService& s) {
  auto endpoints = s.store_.ListAllAccounts(std::string(kEndpoint));
  if (!endpoints.has_value()) {
    spdlog::warn("reconcile: cannot list endpoints: {}", endpoints.error().message);
    return;
  }
  for (const auto& rec : *endpoints) {
    auto parsed = EndpointRecord::FromRecord(rec);
    if (!parsed.has_value()) continue;
    EndpointRecord ep = std::move(parsed).value();
    const std::string& account = rec.key.account;
    if (s.carving_.contains({account, ep.name})) continue;
    if (ep.status == "Creating") {
      bool need_claim = false;
      for (const auto& v : ep.variants) need_claim = need_claim || v.nodes.empty();
      if (need_claim) {
        Status claimed = OkStatus();
        for (auto& v : ep.variants) {
          auto ids =
              s.fleet_.ClaimNodes({account, ep.name, v.name}, v.instance_type, v.instance_count);
          if (!ids.has_value()) {
            claimed = ids.error();
            break;
          }
          v.nodes.clear();
          for (const auto& id : *ids) v.nodes.push_back(id.value());
        }
        if (!claimed.ok() && claimed.error().code == ErrorCode::kUnavailable) {
          // Enough nodes exist but some are NotReady: stay Creating and try again next pass.
          s.fleet_.ReleaseEndpoint(account, ep.name);
          continue;
        }
        if (!claimed.ok()) {
          s.fleet_.ReleaseEndpoint(account, ep.name);
          for (auto& v : ep.variants) v.nodes.clear();
          ep.status = "Failed";
          ep.failure_reason = claimed.error().message;
          ep.status_since_ms = s.clock_.UnixMillis();
          (void)s.store_.Update(rec.key, ep.ToJson().dump(), rec.version);
          continue;
        }
        if (!s.store_.Update(rec.key, ep.ToJson().dump(), rec.version).has_value()) {
          s.fleet_.ReleaseEndpoint(account, ep.name);  // Retried next pass.
          continue;
        }
      }
      s.StartCarve(account, ep.name);
    } else if (ep.status == "Updating") {
      ep.status = "InService";
      ep.status_since_ms = s.clock_.UnixMillis();
      (void)s.store_.Update(rec.key, ep.ToJson().dump(), rec.version);
    } else if (ep.status == "Deleting") {
      for (const auto& id : s.fleet_.NodesOf(account, ep.name)) {
        const fleet::NodeState* n = s.fleet_.Find(id);
        for (size_t g = 0; n != nullptr && g < n->gpus.size(); ++g) {
          (void)s.driver_.ResetGpu(id, GpuIndex(static_cast<uint32_t>(g)));
        }
      }
      if (s.store_.Commit({store::Remove{rec.key, rec.version}}).has_value()) {
        s.fleet_.ReleaseEndpoint(account, ep.name);
      }
    }
  }
}

void SageMakerService::StartCarve(const std::string& account, const std::string& endpoint) {
  carving_.insert({account, endpoint});
  workers_.emplace_back([this, account, endpoint] { CarveWorker(account, endpoint); });
}

void SageMakerService::CarveWorker(std::string account, std::string endpoint) {
  struct Job {
    NodeId node;
    int gpus;
    core::Layout layout;
  };
  std::vector<Job> jobs;
  std::string error;
  {
    std::lock_guard lock(mu_);
    auto rec = store_.Get({account, std::string(kEndpoint), endpoint});
    auto ep =
        rec.has_value() ? EndpointRecord::FromRecord(*rec) : Result<EndpointRecord>(rec.error());
    if (ep.has_value()) {
      for (const auto& v : ep->variants) {
        auto hw = VariantHardware(v);
        if (!hw.has_value()) {
          error = hw.error().message;
          break;
        }
        core::Layout layout{hw->second, {}};
        if (v.partition_types) {
          core::LayoutOptions options;
          options.sagemaker_rules = true;
          auto l = core::ValidateLayout(*hw->second, *v.partition_types, options);
          if (!l.has_value()) {
            error = l.error().message;
            break;
          }
          layout = std::move(l).value();
        }
        for (const auto& n : v.nodes) jobs.push_back({NodeId(n), hw->first->gpu_count, layout});
      }
    } else {
      error = ep.error().message;
    }
  }
  // Nodes carve in parallel, each node's GPUs one after another (as one host's driver would).
  std::mutex err_mu;
  std::vector<std::thread> threads;
  bool aborted = false;
  if (error.empty()) {
    for (const auto& job : jobs) {
      threads.emplace_back([&, job] {
        for (int g = 0; g < job.gpus; ++g) {
          if (abort_carves_) return;
          Status st = driver_.CarveGpu(job.node, GpuIndex(static_cast<uint32_t>(g)), job.layout);
          if (!st.ok()) {
            std::lock_guard l(err_mu);
            if (error.empty()) {
              error = "carving GPU " + std::to_string(g) + " of " + job.node.value() +
                      " failed: " + st.error().message;
            }
            return;
          }
        }
      });
    }
    for (auto& t : threads) t.join();
    aborted = abort_carves_;
  }
  {
    std::lock_guard lock(mu_);
    carving_.erase({account, endpoint});
    if (aborted) return;  // Shutting down: the record stays Creating and resumes on restart.
    auto rec = store_.Get({account, std::string(kEndpoint), endpoint});
    if (!rec.has_value()) return;
    auto ep = EndpointRecord::FromRecord(*rec);
    if (!ep.has_value() || ep->status != "Creating") return;  // Deleted meanwhile.
    if (error.empty()) {
      for (const auto& v : ep->variants) {
        for (const auto& n : v.nodes) (void)fleet_.SetCarve(NodeId(n), SlotTypes(v));
      }
      ep->status = "InService";
    } else {
      fleet_.ReleaseEndpoint(account, endpoint);
      for (auto& v : ep->variants) v.nodes.clear();
      ep->status = "Failed";
      ep->failure_reason = error;
    }
    ep->status_since_ms = clock_.UnixMillis();
    auto st = store_.Update(rec->key, ep->ToJson().dump(), rec->version);
    if (!st.has_value()) {
      spdlog::warn("endpoint {}/{}: cannot record carve result: {}", account, endpoint,
                   st.error().message);
    }
  }
  Notify();
}

void Ops::ReconcileComponents(SageMakerService& s) {
  auto components = s.store_.ListAllAccounts(std::string(kInferenceComponent));
  if (!components.has_value()) return;
  for (const auto& rec : *components) {
    auto parsed = ComponentRecord::FromRecord(rec);
    if (!parsed.has_value()) continue;
    ComponentRecord c = std::move(parsed).value();
    const std::string& account = rec.key.account;
    const std::string occupant = ComponentRecord::Occupant(account, c.name);
    ComponentRecord before = c;
    std::vector<fleet::CopyPlacement> placed, released;
    std::string reason;
    while (static_cast<int>(c.copies.size()) > c.desired) {
      released.push_back(c.copies.back());
      s.fleet_.Release(c.copies.back());
      c.copies.pop_back();
    }
    // A copy on a NotReady node is lost capacity: free its slot record and place it again on
    // the endpoint's Ready instances (or let it wait). When the node returns, its agent stops
    // the stale process because that copy's id is no longer in the node's desired state.
    std::vector<std::string> lost;
    for (auto it = c.copies.begin(); it != c.copies.end();) {
      const fleet::NodeState* n = s.fleet_.Find(it->node);
      if (n != nullptr && n->ready) {
        ++it;
        continue;
      }
      lost.push_back(fmt::format("copy {} on {}", it->index, it->node.value()));
      released.push_back(*it);
      s.fleet_.Release(*it);
      it = c.copies.erase(it);
    }
    if (!lost.empty()) {
      spdlog::warn("component {}/{}: rescheduling {} (node NotReady)", account, c.name,
                   fmt::join(lost, ", "));
    }
    if (static_cast<int>(c.copies.size()) < c.desired) {
      auto ep_rec = s.store_.Get({account, std::string(kEndpoint), c.endpoint});
      auto ep = ep_rec.has_value() ? EndpointRecord::FromRecord(*ep_rec)
                                   : Result<EndpointRecord>(ep_rec.error());
      if (!ep.has_value()) {
        reason = "waiting for endpoint " + c.endpoint + ", which does not exist";
      } else if (ep->status == "Failed") {
        reason = "endpoint " + c.endpoint + " failed: " + ep->failure_reason;
        c.failure_reason = reason;
      } else if (ep->status != "InService" && ep->status != "Updating") {
        reason =
            "waiting for endpoint " + c.endpoint + " to be InService (it is " + ep->status + ")";
      } else {
        fleet::CopyRequest r{occupant,    c.partition_type, c.devices,
                             c.cpu_milli, c.memory_mib,     c.strategy};
        while (static_cast<int>(c.copies.size()) < c.desired) {
          auto out = s.fleet_.Place({account, c.endpoint, c.variant}, r);
          if (!out.placement) {
            reason = out.reason;
            break;
          }
          out.placement->id = NewCopyId();
          out.placement->index = FreeCopyIndex(c.copies);
          placed.push_back(*out.placement);
          c.copies.push_back(*out.placement);
        }
      }
    }
    const int placed_count = static_cast<int>(c.copies.size());
    std::string starting;  // Why placed copies are not serving yet (agent mode).
    c.running = placed_count;
    nodes::NodeRegistry* registry = Ops::registry(s);
    // After a server restart, nodes whose agents have not reconnected yet are in their grace
    // period: what their copies do is unknown, so the last recorded count stands until they
    // report (or time out and their copies are rescheduled).
    bool reconnecting = false;
    for (const auto& p : c.copies) {
      auto view = registry != nullptr ? registry->Node(p.node) : std::nullopt;
      reconnecting = reconnecting || (view && view->ready && !view->connected);
    }
    if (reconnecting) {
      c.running = std::min(before.running, placed_count);
      starting = "waiting for the agents of its nodes to reconnect after a server restart";
    } else if (registry != nullptr) {
      c.running = 0;
      for (const auto& p : c.copies) {
        auto w = registry->Workload(ComponentRecord::WorkloadId(account, c.name, p));
        if (w && w->state == "running") {
          ++c.running;
        } else if (starting.empty()) {
          starting = fmt::format("copy {} on {} is {}", p.index, p.node.value(),
                                 w ? w->state + (w->message.empty() ? "" : ": " + w->message)
                                   : "being started by its agent");
        }
      }
    }
    if (!c.failure_reason.empty()) {
      c.status = "Failed";
      c.status_message.clear();
    } else if (placed_count == c.desired && c.running == c.desired) {
      c.status = "InService";
      c.ever_in_service = true;
      c.status_message.clear();
    } else {
      c.status = c.ever_in_service ? "Updating" : "Creating";
      if (placed_count < c.desired) {
        c.status_message = std::to_string(c.desired - placed_count) + " of " +
                           std::to_string(c.desired) + " copies are not placed: " + reason;
      } else {
        c.status_message = std::to_string(c.desired - c.running) + " of " +
                           std::to_string(c.desired) + " copies are not serving yet: " + starting;
      }
    }
    const std::string body = c.ToJson().dump();
    if (body == before.ToJson().dump()) continue;
    if (!s.store_.Update(rec.key, body, rec.version).has_value()) {
      // Not recorded: undo in memory so the fleet matches the store; retried next pass.
      for (const auto& p : placed) s.fleet_.Release(p);
      for (const auto& p : released) (void)s.fleet_.Occupy(p, occupant);
    }
  }
}

}  // namespace carve::server::sagemaker

namespace carve::server::sagemaker {

SageMakerService::Snapshot SageMakerService::TakeSnapshot() {
  Snapshot snap;
  std::lock_guard lock(mu_);
  for (const auto& n : fleet_.nodes()) {
    for (const auto& g : n.gpus) {
      for (const auto& slot : g.slots) {
        auto& cell =
            snap.partitions[{std::string(n.type->gpu_id), slot.type.empty() ? "whole" : slot.type}];
        ++cell.first;
        cell.second += slot.occupant.empty() ? 0 : 1;
      }
    }
  }
  if (auto comps = store_.ListAllAccounts(std::string(kInferenceComponent)); comps.has_value()) {
    for (const auto& rec : *comps) {
      auto c = ComponentRecord::FromRecord(rec);
      if (c.has_value()) {
        snap.copies[{rec.key.account, c->name}] = {c->desired, c->running};
      }
    }
  }
  if (auto eps = store_.ListAllAccounts(std::string(kEndpoint)); eps.has_value()) {
    for (const auto& rec : *eps) {
      auto ep = EndpointRecord::FromRecord(rec);
      if (ep.has_value()) ++snap.endpoints_by_status[ep->status];
    }
  }
  return snap;
}

}  // namespace carve::server::sagemaker
