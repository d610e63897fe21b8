#include "server/nodes/node_registry.h"

#include <openssl/rand.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <future>
#include <unordered_set>

#include "catalog/catalog.h"

namespace carve::server::nodes {
namespace {

constexpr std::string_view kNodeKind = "Node";

std::string RandomEpoch() {
  unsigned char bytes[8];
  if (RAND_bytes(bytes, sizeof bytes) != 1) {
    return std::to_string(std::chrono::steady_clock::now().time_since_epoch().count());
  }
  return fmt::format("{:02x}{:02x}{:02x}{:02x}{:02x}{:02x}{:02x}{:02x}", bytes[0], bytes[1],
                     bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7]);
}

// What the control plane reacts to in a report: workload states and GPU carve outcomes, not
// the utilization figures that change every heartbeat.
bool SameOutcome(const protocol::StatusReport& a, const protocol::StatusReport& b) {
  if (a.workloads != b.workloads || a.gpus.size() != b.gpus.size() ||
      a.applied_version != b.applied_version) {
    return false;
  }
  for (size_t i = 0; i < a.gpus.size(); ++i) {
    const auto& x = a.gpus[i];
    const auto& y = b.gpus[i];
    if (x.index != y.index || x.mig != y.mig || x.applied != y.applied || x.error != y.error ||
        x.pending_reset != y.pending_reset || x.partitions.size() != y.partitions.size()) {
      return false;
    }
    for (size_t p = 0; p < x.partitions.size(); ++p) {
      if (x.partitions[p].uuid != y.partitions[p].uuid) return false;
    }
  }
  return true;
}

}  // namespace

// A subscriber that falls this far behind is told `everything` instead of a list.
constexpr size_t kMaxListedChanges = 100000;

NodeRegistry::NodeRegistry(store::Store& store, NodeRegistryOptions options)
    : store_(store),
      options_(options),
      clock_(options.clock != nullptr ? *options.clock : SystemClock::Get()),
      epoch_(RandomEpoch()) {
  deadline_thread_ = std::thread([this] { DeadlineLoop(); });
}

NodeRegistry::~NodeRegistry() {
  Fired fired;
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    for (auto& [id, w] : waiters_) {
      fired.emplace_back(std::move(w.done), Unavailable("the server is stopping"));
    }
    waiters_.clear();
    deadlines_.clear();
  }
  deadline_cv_.notify_all();
  deadline_thread_.join();
  Fire(fired);
}

void NodeRegistry::Fire(Fired& fired) {
  for (auto& [done, result] : fired) done(std::move(result));
  fired.clear();
}

void NodeRegistry::BumpLocked(Entry& e, Fired& fired) {
  ++e.version;
  if (e.waiters.empty()) return;
  std::optional<protocol::DesiredState> state;
  std::vector<uint64_t> still;
  for (uint64_t id : e.waiters) {
    auto it = waiters_.find(id);
    if (it == waiters_.end()) continue;  // Answered at its deadline.
    if (it->second.after >= e.version) {
      still.push_back(id);
      continue;
    }
    if (!state) state = DesiredLocked(e);
    fired.emplace_back(std::move(it->second.done), *state);
    waiters_.erase(it);
  }
  e.waiters = std::move(still);
}

void NodeRegistry::DeadlineLoop() {
  std::unique_lock lock(mu_);
  while (!stopping_) {
    if (deadlines_.empty()) {
      deadline_cv_.wait(lock);
      continue;
    }
    const auto first = deadlines_.begin()->first;
    if (std::chrono::steady_clock::now() < first) {
      deadline_cv_.wait_until(lock, first);
      continue;
    }
    Fired fired;
    const auto now = std::chrono::steady_clock::now();
    while (!deadlines_.empty() && deadlines_.begin()->first <= now) {
      const uint64_t id = deadlines_.begin()->second;
      deadlines_.erase(deadlines_.begin());
      auto w = waiters_.find(id);
      if (w == waiters_.end()) continue;  // Answered by a change already.
      auto node = nodes_.find(w->second.node);
      if (node == nodes_.end()) {
        fired.emplace_back(std::move(w->second.done),
                           NotFound("node " + w->second.node + " is not registered"));
      } else {
        std::erase(node->second.waiters, id);
        fired.emplace_back(std::move(w->second.done), DesiredLocked(node->second));
      }
      waiters_.erase(w);
    }
    lock.unlock();
    Fire(fired);
    lock.lock();
  }
}

void NodeRegistry::NoteLocked(std::set<std::string> RegistryChanges::*what,
                              const std::string& key) {
  for (auto& [id, s] : subscribers_) {
    if (s.everything) continue;
    (s.*what).insert(key);
    if (s.nodes.size() + s.workloads.size() + s.gpus.size() > kMaxListedChanges) {
      s = RegistryChanges{};
      s.everything = true;
    }
  }
}

int NodeRegistry::Subscribe() {
  std::lock_guard lock(mu_);
  RegistryChanges first;
  first.everything = true;
  const int id = next_subscriber_++;
  subscribers_.emplace(id, std::move(first));
  return id;
}

void NodeRegistry::Unsubscribe(int subscriber) {
  std::lock_guard lock(mu_);
  subscribers_.erase(subscriber);
}

RegistryChanges NodeRegistry::TakeChanges(int subscriber) {
  std::lock_guard lock(mu_);
  RegistryChanges out;
  auto it = subscribers_.find(subscriber);
  if (it == subscribers_.end()) {
    out.everything = true;
    return out;
  }
  std::swap(out, it->second);
  return out;
}

void NodeRegistry::IndexWorkloadsLocked(const std::string& node,
                                        const protocol::StatusReport& before,
                                        const protocol::StatusReport& after) {
  std::unordered_map<std::string_view, const protocol::WorkloadStatus*> old;
  for (const auto& w : before.workloads) old.emplace(w.id, &w);
  for (const auto& w : after.workloads) {
    workload_node_[w.id] = node;
    auto it = old.find(w.id);
    if (it == old.end() || it->second->state != w.state || it->second->address != w.address ||
        it->second->message != w.message || it->second->restarts != w.restarts) {
      NoteLocked(&RegistryChanges::workloads, w.id);
    }
    if (it != old.end()) old.erase(it);
  }
  for (const auto& [id, w] : old) {  // No longer reported by this node.
    auto at = workload_node_.find(std::string(id));
    if (at != workload_node_.end() && at->second == node) workload_node_.erase(at);
    NoteLocked(&RegistryChanges::workloads, std::string(id));
  }
}

Status NodeRegistry::Recover() {
  CARVE_ASSIGN_OR_RETURN(auto records, store_.List("", std::string(kNodeKind), {}));
  std::lock_guard lock(mu_);
  for (const auto& rec : records) {
    auto parsed = nlohmann::json::parse(rec.body, nullptr, false);
    auto reg = protocol::RegistrationFromJson(parsed);
    if (!reg.has_value()) {
      spdlog::warn("node record {} is unreadable: {}", rec.key.name, reg.error().message);
      continue;
    }
    // Recovered nodes get a grace period to reconnect (agents back off up to ~10 s while the
    // server is down); declaring them lost at once would reschedule every copy after each
    // restart. Sweep counts node_timeout from last_report, so a last_report in the future
    // stretches the first timeout to the grace.
    Entry& e = nodes_[reg->node_id];
    e.registration = *reg;
    e.ready = true;
    e.not_ready_reason.clear();
    const auto grace = std::max(options_.node_timeout, options_.recovery_grace);
    e.last_report = clock_.Now() + (grace - options_.node_timeout);
  }
  spdlog::info(
      "recovered {} nodes from the store; each is NotReady unless its agent reports "
      "within {} ms",
      records.size(), std::max(options_.node_timeout, options_.recovery_grace).count());
  return OkStatus();
}

Result<protocol::RegisterReply> NodeRegistry::Register(const protocol::Registration& reg) {
  auto type = catalog::FindInstanceType(reg.instance_type);
  if (!type.has_value()) {
    return InvalidArgument("registration of node " + reg.node_id + ": instance_type '" +
                           reg.instance_type + "': " + type.error().message);
  }
  if (!reg.gpus.empty() && static_cast<int>(reg.gpus.size()) != (*type)->gpu_count) {
    return InvalidArgument(
        fmt::format("registration of node {}: {} has {} GPUs but the agent found {}", reg.node_id,
                    reg.instance_type, (*type)->gpu_count, reg.gpus.size()));
  }
  {
    std::lock_guard lock(mu_);
    auto it = nodes_.find(reg.node_id);
    if (it != nodes_.end() && it->second.registration.instance_type != reg.instance_type) {
      return InvalidArgument("registration of node " + reg.node_id + ": instance_type '" +
                             reg.instance_type + "' differs from the registered '" +
                             it->second.registration.instance_type +
                             "'; remove the node before re-registering it as another type");
    }
  }
  // Durable before acknowledged: a restarted server knows the node before its agent returns.
  CARVE_RETURN_IF_ERROR(store_.Commit({store::Put{
      {"", std::string(kNodeKind), reg.node_id}, protocol::ToJson(reg).dump(), int64_t{0}}}));
  Fired fired;
  {
    std::lock_guard lock(mu_);
    Entry& e = nodes_[reg.node_id];
    const bool was_ready = e.ready;
    e.registration = reg;
    e.connected = true;
    e.ready = true;
    e.not_ready_reason.clear();
    e.last_report = clock_.Now();
    e.last_report_ms = clock_.UnixMillis();
    e.status.status_version = 0;  // A (re)started agent's status is not known yet.
    BumpLocked(e, fired);         // The agent (maybe restarted) must fetch the whole desired state.
    NoteLocked(&RegistryChanges::nodes, reg.node_id);
    if (!was_ready) spdlog::info("node {} ({}) is Ready", reg.node_id, reg.instance_type);
    for (const auto& diff : reg.catalog_diffs) {
      spdlog::warn("node {}: live NVML data differs from the catalog: {}", reg.node_id, diff);
    }
  }
  Fire(fired);
  changed_.notify_all();
  NotifyListeners();
  return protocol::RegisterReply{reg.node_id, epoch_, options_.heartbeat_interval.count(),
                                 options_.node_timeout.count()};
}

protocol::StatusReport NodeRegistry::OwnWorkloadsLocked(const Entry& e,
                                                        const protocol::StatusReport& reported) {
  std::unordered_set<std::string_view> placed;
  for (const auto& [source, list] : e.workloads) {
    for (const auto& w : list) placed.insert(w.id);
  }
  protocol::StatusReport own = reported;
  own.workloads.clear();
  size_t refused = 0;
  std::string_view first;
  for (const auto& w : reported.workloads) {
    auto at = workload_node_.find(w.id);
    const bool indexed_here = at != workload_node_.end() && at->second == reported.node_id;
    if (placed.contains(w.id) || indexed_here) {
      own.workloads.push_back(w);
    } else if (refused++ == 0) {
      first = w.id;
    }
  }
  if (refused > 0) {
    spdlog::warn("node {} reported {} workload(s) it does not hold (first: '{:.80}'); ignored",
                 reported.node_id, refused, first);
  }
  return own;
}

protocol::StatusReply NodeRegistry::ReportStatus(const protocol::StatusReport& reported) {
  protocol::StatusReply reply;
  reply.desired_epoch = epoch_;
  bool notify = false;
  {
    std::lock_guard lock(mu_);
    auto it = nodes_.find(reported.node_id);
    if (it == nodes_.end() || !it->second.connected || reported.epoch != epoch_) {
      reply.reregister = true;
      return reply;
    }
    Entry& e = it->second;
    const protocol::StatusReport report = OwnWorkloadsLocked(e, reported);
    notify = !SameOutcome(e.status, report) || !e.ready;
    if (!e.ready) {
      spdlog::info("node {} is Ready again", report.node_id);
      NoteLocked(&RegistryChanges::nodes, report.node_id);
    }
    for (const auto& event : report.events) {
      spdlog::info("node {}: {:.256}", report.node_id, event);
    }
    if (notify) {
      IndexWorkloadsLocked(report.node_id, e.status, report);
      NoteLocked(&RegistryChanges::gpus, report.node_id);
    }
    e.status = report;
    e.status.events.clear();
    e.ready = true;
    e.not_ready_reason.clear();
    e.last_report = clock_.Now();
    e.last_report_ms = clock_.UnixMillis();
    reply.desired_version = e.version;
  }
  if (notify) {
    changed_.notify_all();
    NotifyListeners();
  }
  return reply;
}

protocol::DesiredState NodeRegistry::DesiredLocked(const Entry& e) const {
  protocol::DesiredState d;
  d.node_id = e.registration.node_id;
  d.epoch = epoch_;
  d.version = e.version;
  for (const auto& [index, gpu] : e.gpus) d.gpus.push_back(gpu);
  for (const auto& [source, list] : e.workloads) {
    d.workloads.insert(d.workloads.end(), list.begin(), list.end());
  }
  d.logs_listed = true;
  for (const auto& [source, ids] : e.kept_logs) {
    d.kept_logs.insert(d.kept_logs.end(), ids.begin(), ids.end());
  }
  return d;
}

protocol::HeartbeatReply NodeRegistry::Heartbeat(const protocol::Heartbeat& hb) {
  protocol::HeartbeatReply reply;
  reply.desired_epoch = epoch_;
  bool notify = false;
  {
    std::lock_guard lock(mu_);
    auto it = nodes_.find(hb.node_id);
    if (it == nodes_.end() || !it->second.connected || hb.epoch != epoch_) {
      reply.reregister = true;
      return reply;
    }
    Entry& e = it->second;
    if (!e.ready) {
      spdlog::info("node {} is Ready again", hb.node_id);
      NoteLocked(&RegistryChanges::nodes, hb.node_id);
      notify = true;
    }
    e.ready = true;
    e.not_ready_reason.clear();
    e.last_report = clock_.Now();
    e.last_report_ms = clock_.UnixMillis();
    reply.desired_version = e.version;
    reply.send_status = e.status.status_version != hb.status_version || hb.status_version == 0;
  }
  if (notify) {
    changed_.notify_all();
    NotifyListeners();
  }
  return reply;
}

void NodeRegistry::WatchDesired(const std::string& node, const std::string& epoch, uint64_t after,
                                std::chrono::milliseconds wait, DesiredCallback done) {
  wait = std::clamp(wait, std::chrono::milliseconds(0), options_.max_long_poll);
  Result<protocol::DesiredState> now = NotFound("node " + node + " is not registered");
  {
    std::lock_guard lock(mu_);
    auto it = nodes_.find(node);
    if (it != nodes_.end()) {
      if (epoch == epoch_ && it->second.version <= after && wait.count() > 0 && !stopping_) {
        const uint64_t id = ++next_waiter_;
        const auto deadline = std::chrono::steady_clock::now() + wait;
        waiters_.emplace(id, Waiter{node, after, std::move(done)});
        it->second.waiters.push_back(id);
        const bool earliest = deadlines_.empty() || deadline < deadlines_.begin()->first;
        deadlines_.emplace(deadline, id);
        if (earliest) deadline_cv_.notify_one();
        return;
      }
      now = DesiredLocked(it->second);
    }
  }
  done(std::move(now));
}

Result<protocol::DesiredState> NodeRegistry::WaitDesired(const std::string& node,
                                                         const std::string& epoch, uint64_t after,
                                                         std::chrono::milliseconds wait) {
  auto promise = std::make_shared<std::promise<Result<protocol::DesiredState>>>();
  auto answer = promise->get_future();
  WatchDesired(node, epoch, after, wait,
               [promise](Result<protocol::DesiredState> r) { promise->set_value(std::move(r)); });
  return answer.get();
}

void NodeRegistry::SetGpuLayout(const NodeId& node, const protocol::GpuDesired& gpu) {
  Fired fired;
  {
    std::lock_guard lock(mu_);
    auto it = nodes_.find(node.value());
    if (it == nodes_.end()) {
      spdlog::warn("SetGpuLayout: node {} is not registered", node.value());
      return;
    }
    auto [slot, inserted] = it->second.gpus.try_emplace(gpu.index, gpu);
    if (!inserted && slot->second == gpu) return;
    slot->second = gpu;
    BumpLocked(it->second, fired);
  }
  Fire(fired);
  changed_.notify_all();
}

void NodeRegistry::SetGpuLayouts(const NodeId& node,
                                 const std::vector<protocol::GpuDesired>& gpus) {
  Fired fired;
  {
    std::lock_guard lock(mu_);
    auto it = nodes_.find(node.value());
    if (it == nodes_.end()) {
      spdlog::warn("SetGpuLayouts: node {} is not registered", node.value());
      return;
    }
    bool changed = false;
    for (const protocol::GpuDesired& gpu : gpus) {
      auto [slot, inserted] = it->second.gpus.try_emplace(gpu.index, gpu);
      if (!inserted && slot->second == gpu) continue;
      slot->second = gpu;
      changed = true;
    }
    if (!changed) return;
    BumpLocked(it->second, fired);
  }
  Fire(fired);
  changed_.notify_all();
}

void NodeRegistry::SetWorkloads(std::string_view source, const NodeId& node,
                                std::vector<protocol::WorkloadDesired> workloads) {
  Fired fired;
  {
    std::lock_guard lock(mu_);
    auto it = nodes_.find(node.value());
    if (it == nodes_.end()) return;
    auto& lists = it->second.workloads;
    auto cur = lists.find(source);
    if (cur == lists.end()) {
      if (workloads.empty()) return;
      lists.emplace(std::string(source), std::move(workloads));
    } else {
      if (cur->second == workloads) return;
      cur->second = std::move(workloads);
    }
    BumpLocked(it->second, fired);
  }
  Fire(fired);
  changed_.notify_all();
}

void NodeRegistry::SetKeptLogs(std::string_view source, const NodeId& node,
                               std::vector<std::string> ids) {
  Fired fired;
  {
    std::lock_guard lock(mu_);
    auto it = nodes_.find(node.value());
    if (it == nodes_.end()) return;
    auto& lists = it->second.kept_logs;
    auto cur = lists.find(source);
    if (cur == lists.end() ? ids.empty() : cur->second == ids) return;
    if (ids.empty()) {
      lists.erase(cur);
    } else {
      lists.insert_or_assign(std::string(source), std::move(ids));
    }
    BumpLocked(it->second, fired);
  }
  Fire(fired);
  changed_.notify_all();
}

void NodeRegistry::RetainWorkloadNodes(std::string_view source, const std::vector<NodeId>& keep) {
  bool changed = false;
  Fired fired;
  {
    std::set<std::string_view> kept;
    for (const auto& n : keep) kept.insert(n.value());
    std::lock_guard lock(mu_);
    for (auto& [name, e] : nodes_) {
      if (kept.contains(name)) continue;
      auto cur = e.workloads.find(source);
      if (cur == e.workloads.end()) continue;
      e.workloads.erase(cur);
      BumpLocked(e, fired);
      changed = true;
    }
  }
  Fire(fired);
  if (changed) changed_.notify_all();
}

std::vector<NodeId> NodeRegistry::Sweep() {
  std::vector<NodeId> lost;
  {
    std::lock_guard lock(mu_);
    const auto now = clock_.Now();
    for (auto& [name, e] : nodes_) {
      if (!e.ready || now - e.last_report < options_.node_timeout) continue;
      e.ready = false;
      e.not_ready_reason = fmt::format(
          "no status report for {} s",
          std::chrono::duration_cast<std::chrono::seconds>(now - e.last_report).count());
      spdlog::warn("node {} is NotReady: {}", name, e.not_ready_reason);
      NoteLocked(&RegistryChanges::nodes, name);
      lost.emplace_back(name);
    }
  }
  if (!lost.empty()) {
    changed_.notify_all();
    NotifyListeners();
  }
  return lost;
}

NodeRegistry::Subscription& NodeRegistry::Subscription::operator=(Subscription&& other) noexcept {
  if (this != &other) {
    Reset();
    listener_ = std::move(other.listener_);
  }
  return *this;
}

void NodeRegistry::Subscription::Reset() {
  if (listener_ == nullptr) return;
  std::lock_guard lock(listener_->mu);  // Waits out a call in flight.
  listener_->call = nullptr;
  listener_.reset();
}

NodeRegistry::Subscription NodeRegistry::AddListener(std::function<void()> listener) {
  auto l = std::make_shared<Subscription::Listener>();
  l->call = std::move(listener);
  std::lock_guard lock(mu_);
  listeners_.push_back(l);
  return Subscription(std::move(l));
}

void NodeRegistry::NotifyListeners() {
  std::vector<std::shared_ptr<Subscription::Listener>> live;
  {
    std::lock_guard lock(mu_);
    // A listener only its registry still holds has been detached: drop it.
    std::erase_if(listeners_, [](const auto& l) { return l.use_count() == 1; });
    live = listeners_;
  }
  for (const auto& l : live) {
    std::lock_guard lock(l->mu);
    if (l->call) l->call();
  }
}

}  // namespace carve::server::nodes
