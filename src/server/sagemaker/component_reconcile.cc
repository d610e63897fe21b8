// ComponentPlacement's pass: each component toward its desired copy count, its status, and one
// Store transaction for what changed.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <limits>
#include <random>
#include <set>
#include <string_view>

#include "common/utf8.h"
#include "server/sagemaker/component_pass.h"
#include "server/sagemaker/component_placement.h"
#include "server/sagemaker/component_plan.h"
#include "server/sagemaker/resources.h"

namespace carve::server::sagemaker {
namespace {

// A fresh copy id: 12 hex digits, random (unique among a component's copies in practice; the
// workload id also carries the account and component).
std::string NewCopyId() {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  return fmt::format("{:012x}", rng() & 0xffffffffffffULL);
}

// The lowest copy number not in use, so a replaced copy takes its predecessor's number.
// The lowest index not in `used`, searching from `from` (every index below it is taken; the
// caller passes the last answer + 1, so filling N copies is O(N log N), not O(N^2)).
int FreeCopyIndex(const std::set<int>& used, int from) {
  int i = from;
  while (used.contains(i)) ++i;
  return i;
}

// "a mig-1g.5gb partition", "3 whole GPUs".
std::string WhatACopyNeeds(const ComponentRecord& c) {
  if (!c.partition_type.empty()) return "a " + c.partition_type + " partition";
  return fmt::format("{} whole GPU{}", c.devices, c.devices == 1 ? "" : "s");
}

// The startup health-check timeout of a component's copies: its own StartupParameters, else
// its variant's, else carve's default.
std::chrono::seconds StartupTimeout(const EndpointEntry* ep, const ComponentRecord& c) {
  const nlohmann::json& spec = c.specification;
  if (spec.is_object() && spec.contains("StartupParameters")) {
    const nlohmann::json& sp = spec["StartupParameters"];
    if (sp.is_object() && sp.contains("ContainerStartupHealthCheckTimeoutInSeconds") &&
        sp["ContainerStartupHealthCheckTimeoutInSeconds"].is_number_integer()) {
      return std::chrono::seconds(sp["ContainerStartupHealthCheckTimeoutInSeconds"].get<int>());
    }
  }
  if (ep != nullptr) {
    for (const VariantSpec& v : ep->endpoint.variants) {
      if (v.name == c.variant && v.startup_timeout_s > 0) {
        return std::chrono::seconds(v.startup_timeout_s);
      }
    }
  }
  return ComponentPlacement::kDefaultStartupTimeout;
}

// At most this many copies are released by one transaction of a deletion, so that deleting a
// very large component never becomes one unbounded write.
constexpr size_t kDeleteBatch = 100;

}  // namespace

int ComponentPlacement::Reconcile(std::span<const EndpointEntry> endpoints,
                                  std::span<ComponentEntry> components,
                                  const PassChanges& changes) {
  int reconciled = 0;
  std::map<std::pair<std::string, std::string>, const EndpointEntry*> eps;
  for (const auto& e : endpoints) eps[{e.record.key.account, e.endpoint.name}] = &e;
  // Components whose copies' agents reported something.
  std::set<ComponentKey> reported;
  for (const std::string& id : changes.registry.workloads) {
    if (auto key = ComponentOfWorkload(id)) reported.insert(*key);
  }
  for (auto& entry : components) {
    const std::string& account = entry.record.key.account;
    const ComponentRecord& c = entry.component;
    if (!changes.everything && !changes.components.contains({account, c.name}) &&
        !changes.endpoints.contains({account, c.endpoint}) &&
        !reported.contains({account, c.name}) &&
        !touched_pools_.contains(nodes::Owner::Endpoint(account, c.endpoint, c.variant))) {
      auto cc = copies_.find({account, c.name});
      if (cc != copies_.end() && cc->second.steady) continue;
    }
    auto ep = eps.find({account, c.endpoint});
    ReconcileOne(ep == eps.end() ? nullptr : ep->second, entry);
    ++reconciled;
  }
  DropRemoved(components);
  return reconciled;
}

void ComponentPlacement::DropRemoved(std::span<const ComponentEntry> components) {
  std::set<ComponentKey> present;
  for (const auto& e : components) present.insert({e.record.key.account, e.component.name});
  for (auto it = copies_.begin(); it != copies_.end();) {
    if (present.contains(it->first)) {
      ++it;
      continue;
    }
    std::vector<store::Mutation> removes;
    for (auto& copy : it->second.copies) {
      ReleaseCopy(copy, it->second.variant);
      removes.push_back(store::Remove{copy.record.Key(it->first.first), copy.version});
    }
    if (!removes.empty()) (void)store_.Commit(std::move(removes));  // Orphans: best effort.
    it = copies_.erase(it);
  }
}

ComponentPlacement::ServingState ComponentPlacement::Serving(const std::string& account,
                                                             const ComponentRecord& c,
                                                             std::span<const LiveCopy> copies,
                                                             std::chrono::seconds startup,
                                                             bool judge) const {
  ServingState out;
  const int placed = static_cast<int>(copies.size());
  if (registry_ == nullptr) {
    out.running = placed;
    return out;
  }
  // After a server restart, nodes whose agents have not reconnected yet are in their grace
  // period: what their copies do is unknown, so the last recorded count stands until they
  // report (or time out and their copies are rescheduled).
  std::set<std::string_view> seen;  // Copies share nodes: each node is asked once.
  for (const auto& copy : copies) {
    if (!seen.insert(copy.record.placement.node).second) continue;
    auto node = registry_->Brief(NodeId(copy.record.placement.node));
    if (node && node->ready && !node->connected) {
      out.running = std::min(c.running, placed);
      out.starting = "waiting for the agents of its nodes to reconnect after a server restart";
      out.reconnecting = true;
      return out;
    }
  }
  const int64_t now_ms = clock_.UnixMillis();
  for (const auto& copy : copies) {
    auto w = registry_->Workload(ComponentRecord::WorkloadId(account, c.name, copy.record.id));
    if (w && w->state == protocol::WorkloadState::kRunning) {
      ++out.running;
      continue;
    }
    const std::string where =
        fmt::format("copy {} on {}", copy.record.index, copy.record.placement.node);
    const std::string says =
        w ? std::string(NameOf(w->state)) + (w->message.empty() ? "" : ": " + w->message)
          : "being started by its agent";
    if (out.starting.empty()) out.starting = fmt::format("{} is {}", where, says);
    // Only copies being judged fail, and only one that never served.
    if (!judge || !out.failure.empty() || (w && w->ever_healthy)) continue;
    const bool crashed =
        w &&
        (w->state == protocol::WorkloadState::kFailed ||
         (w->state == protocol::WorkloadState::kBackoff && w->restarts + 1 >= kStartupCrashLimit));
    const int64_t waited_ms = copy.placed_ms > 0 ? now_ms - copy.placed_ms : 0;
    if (crashed) {
      out.failure = fmt::format("{} could not start ({})", where, says);
    } else if (waited_ms > std::chrono::milliseconds(startup).count()) {
      out.failure = fmt::format(
          "{} did not pass its health check (GET /ping) within the {} s "
          "startup health-check timeout; it is {}",
          where, startup.count(), says);
    } else {
      continue;
    }
    if (w && !w->log_tail.empty()) out.failure += ". Last lines of its log: " + w->log_tail;
  }
  return out;
}

std::string ComponentPlacement::DeletedModel(const std::string& account,
                                             const ComponentRecord& c) const {
  const std::string model = c.ModelName();
  if (model.empty()) return "";
  auto rec = store_.Get({account, std::string(kModel), model});
  if (rec.has_value() || rec.error().code != ErrorCode::kNotFound) return "";
  return fmt::format(
      "its model {} was deleted (DeleteModel): the copies that run keep serving, and no new "
      "copy can start until UpdateInferenceComponent names a model that exists",
      model);
}

ComponentPlacement::CopyPass::CopyPass(ComponentPlacement& placement, const ComponentRecord& c,
                                       ComponentCopies& cc, VariantPool* vp,
                                       std::vector<size_t> keep_, std::vector<size_t> release_,
                                       int64_t now_ms)
    : keep(std::move(keep_)),
      release(std::move(release_)),
      placement_(placement),
      c_(c),
      cc_(cc),
      vp_(vp),
      now_ms_(now_ms) {
  for (size_t i : keep) used_.insert(cc_.copies[i].record.index);
}

void ComponentPlacement::CopyPass::Stop(size_t i) {
  std::erase(keep, i);
  release.push_back(i);
  placement_.ReleaseCopy(cc_.copies[i], cc_.variant);
}

int ComponentPlacement::CopyPass::Budget() const {
  const size_t limit = placement_.store_.max_commit_keys();
  if (limit == SIZE_MAX) return std::numeric_limits<int>::max();
  return std::max(0,
                  static_cast<int>(limit) - 1 - static_cast<int>(release.size() + placed.size()));
}

int ComponentPlacement::CopyPass::Place(int n) {
  const core::Request request = c_.CopyRequest();
  if (Budget() < n) {
    n = Budget();
    reason = fmt::format("placing at most {} copies a pass (the store's transaction limit)",
                         placement_.store_.max_commit_keys() - 1);
  }
  int done = 0;
  for (; done < n; ++done) {
    auto out = vp_->pool.PlaceOne(request, c_.strategy);
    if (!out.has_value() || !out->allocation) {
      reason = fmt::format("waiting for {}: {}", WhatACopyNeeds(c_),
                           out.has_value() ? out->reason : out.error().message);
      break;
    }
    const int index = FreeCopyIndex(used_, next_index_);
    next_index_ = index + 1;
    used_.insert(index);
    core::AllocationRecord where = *out->allocation;
    const core::AllocationId id = where.id;
    where.id = core::AllocationId(0);
    placed.push_back(
        LiveCopy{CopyRecord{c_.name, NewCopyId(), index, std::move(where), c_.spec_version}, 0, id,
                 now_ms_});
  }
  return done;
}

void ComponentPlacement::ReconcileOne(const EndpointEntry* ep, ComponentEntry& entry) {
  ComponentRecord c = entry.component;
  const std::string& account = entry.record.key.account;
  const auto owner = nodes::Owner::Endpoint(account, c.endpoint, c.variant);
  ComponentCopies& cc = copies_[{account, c.name}];
  cc.variant = owner;
  auto pool = pools_.find(owner);
  VariantPool* vp = pool == pools_.end() ? nullptr : &pool->second;
  const bool deleting = c.status == ComponentStatus::kDeleting;
  // A failed component runs nothing: its copies could not start, and their partitions are
  // better given to others.
  const bool stopped = deleting || c.status == ComponentStatus::kFailed;

  CopyTriage triage = TriageCopies(c, cc.copies, vp != nullptr ? &vp->pool : nullptr, stopped);
  if (deleting && triage.release.size() > std::min(kDeleteBatch, store_.max_commit_keys() - 1)) {
    triage.release.resize(std::min(kDeleteBatch, store_.max_commit_keys() - 1));
  }
  if (!triage.lost.empty()) {
    spdlog::warn("component {}/{}: rescheduling {} (node NotReady or leaving the endpoint)",
                 account, c.name, fmt::join(triage.lost, ", "));
  }
  for (size_t i : triage.release) ReleaseCopy(cc.copies[i], owner);
  CopyPass pass(*this, c, cc, vp, std::move(triage.keep), std::move(triage.release),
                clock_.UnixMillis());

  std::string blocked = BlockedReason(ep, c, vp != nullptr);
  StatusInputs status;
  if (ep != nullptr && ep->endpoint.status == EndpointStatus::kFailed && !stopped) {
    status.fail_now = blocked;
  }
  const std::chrono::seconds startup = StartupTimeout(ep, c);
  if (!stopped && c.deployment && blocked.empty()) {
    status.progress = RollOut(account, c, cc, startup, pass);
  }
  if (!stopped && !c.deployment) {
    // Copies beyond the count are released, the highest numbers first (keep is in index order).
    while (static_cast<int>(pass.keep.size()) > c.desired && pass.Budget() > 0) {
      pass.Stop(pass.keep.back());
    }
    pass.wanted = c.desired - static_cast<int>(pass.keep.size());
    if (pass.wanted > 0 && blocked.empty()) blocked = DeletedModel(account, c);
    if (pass.wanted > 0 && blocked.empty()) pass.Place(pass.wanted);
  }
  status.reason = blocked.empty() ? pass.reason : blocked;

  std::vector<LiveCopy> after;
  for (size_t i : pass.keep) after.push_back(cc.copies[i]);
  for (const auto& p : pass.placed) after.push_back(p);
  std::sort(after.begin(), after.end(),
            [](const LiveCopy& a, const LiveCopy& b) { return a.record.index < b.record.index; });
  status.count = static_cast<int>(after.size());
  status.all_released = pass.release.size() == cc.copies.size();
  cc.waiting = stopped ? 0 : std::max(0, pass.wanted - static_cast<int>(pass.placed.size()));
  const ServingState serving = Serving(account, c, after, startup, !c.ever_in_service);
  c.running = serving.running;
  status.starting = serving.starting;
  if (status.fail_now.empty()) status.fail_now = serving.failure;
  const bool was_failed = c.status == ComponentStatus::kFailed;
  const bool remove_record = SetStatus(c, status);
  if (!was_failed && c.status == ComponentStatus::kFailed) {
    spdlog::warn("component {}/{} failed: {}", account, c.name, c.failure_reason);
  }

  auto writes = PassWrites(entry.record, entry.component.ToJson().dump(), c, remove_record,
                           cc.copies, pass.release, pass.placed);
  // Steady: nothing to write and nothing pending (no copy waiting, starting, judged against a
  // timeout or on a node in its grace period), so the next pass has nothing to do unless
  // something it depends on changes (Reconcile).
  cc.steady = writes.empty() && !deleting && !c.deployment && cc.waiting == 0 &&
              !serving.reconnecting &&
              ((c.status == ComponentStatus::kInService && status.count == c.desired &&
                c.running == c.desired) ||
               (c.status == ComponentStatus::kFailed && after.empty()));
  if (writes.empty()) return;
  CommitPass(entry, std::move(c), pass, std::move(writes), remove_record, std::move(after));
}

void ComponentPlacement::CommitPass(ComponentEntry& entry, ComponentRecord c, CopyPass& pass,
                                    std::vector<store::Mutation> writes, bool remove_record,
                                    std::vector<LiveCopy> after) {
  const std::string& account = entry.record.key.account;
  ComponentCopies& cc = copies_[{account, c.name}];
  auto pool = pools_.find(cc.variant);
  VariantPool* vp = pool == pools_.end() ? nullptr : &pool->second;
  cc.generation = next_generation_++;
  auto written = store_.Commit(std::move(writes));
  if (!written.has_value()) {
    // Not recorded: memory goes back to what the Store holds; the next pass tries again.
    spdlog::warn("component {}/{}: cannot record placement: {}", account, c.name,
                 written.error().message);
    for (const auto& p : pass.placed) vp->pool.Release(p.allocation);
    for (size_t i : pass.release) {
      if (vp != nullptr) AdoptInto(*vp, cc.variant, account, cc.copies[i]);
    }
    return;
  }
  std::map<std::string, int64_t> versions;
  for (const auto& r : *written) versions[r.key.name] = r.version;
  for (auto& p : pass.placed) {
    p.version = versions[p.record.Key(account).name];
    vp->occupants[p.allocation.value()] =
        CopyOccupant{account, c.name, p.record.id, p.record.index};
  }
  for (auto& a : after) {
    if (a.version == 0) a.version = versions[a.record.Key(account).name];
  }
  if (remove_record) {
    copies_.erase({account, c.name});
    entry.component = c;
    return;
  }
  if (auto it = versions.find(entry.record.key.name); it != versions.end()) {
    entry.record.version = it->second;
  }
  const bool deleting = c.status == ComponentStatus::kDeleting;
  entry.component = std::move(c);
  if (deleting) {
    std::vector<LiveCopy> left;
    std::set<size_t> gone(pass.release.begin(), pass.release.end());
    for (size_t i = 0; i < cc.copies.size(); ++i) {
      if (!gone.contains(i)) left.push_back(cc.copies[i]);
    }
    cc.copies = std::move(left);
  } else {
    cc.copies = std::move(after);
  }
}

}  // namespace carve::server::sagemaker
