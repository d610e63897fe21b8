// ComponentPlacement: where every inference-component copy runs, and the component statuses that
// follow from it.
//
// It keeps one nodes::NodePool per carved endpoint variant (built from the variant's claimed
// instances and the layout its endpoint config fixed), and a mirror of every copy record. A pass
// moves each component toward its desired copy count:
//   - copies beyond the count are released, the highest copy number first;
//   - copies on a node that stopped reporting are released and placed again (on the variant's
//     other instances, or they wait); when the node returns its agent stops the old process,
//     because that copy's workload id is no longer desired;
//   - missing copies are placed one at a time with the component's SPREAD or BINPACK; a copy
//     that does not fit waits, and StatusMessage says for what ("2 of 10 copies are not placed:
//     ..."); it takes a partition as soon as one frees.
// A component marked Deleting has its copies released and then its record removed.
// The copy records that changed and the component's record are written in one Store
// transaction; pools and mirror change only once it committed, so memory never runs ahead of
// the Store, and a restart finds every copy on the partition it had.
//
// Status: Creating until every desired copy is placed and serving once, then InService;
// Updating while the count is not met after that; Failed when its endpoint failed. In agent
// mode a copy serves once its agent reports it running (its /ping answered); in simulated mode
// (no registry) once placed.
//
// A component that has never been InService fails when one of its copies cannot start: the
// agent reports it failed, or in backoff after kStartupCrashLimit exits with no health check
// passed, or it has not answered GET /ping within the startup health-check timeout of being
// placed (the component's StartupParameters, else the variant's
// ContainerStartupHealthCheckTimeoutInSeconds, else kDefaultStartupTimeout). FailureReason names
// the copy, its node, what its agent says and the last lines of its log; its copies are then
// released. A copy of a component that was InService, or one that has passed a health check
// before, keeps restarting with backoff instead.
//
// Not thread-safe: the service calls it with its state lock held.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "common/result.h"
#include "server/nodes/node_claims.h"
#include "server/nodes/node_pool.h"
#include "server/nodes/node_registry.h"
#include "server/sagemaker/component_record.h"
#include "server/sagemaker/copy_record.h"
#include "server/sagemaker/endpoint_record.h"
#include "server/sagemaker/pass_changes.h"
#include "store/store.h"

namespace carve::server::sagemaker {

struct LiveCopy {
  CopyRecord record;
  int64_t version = 0;            // Its Store record's version.
  core::AllocationId allocation;  // In its variant's pool; 0 while that pool is not built.
  int64_t placed_ms = 0;          // Unix millis it was placed (its record's creation).
};

// Who occupies a pool's allocation, for views.
struct CopyOccupant {
  std::string account;
  std::string component;
  std::string copy_id;
  int index = 0;
};

class ComponentPlacement {
 public:
  // Exits with no health check passed after which a new component's copy has failed.
  static constexpr int kStartupCrashLimit = 3;
  // The startup health-check timeout when neither the component nor the variant gives one.
  static constexpr std::chrono::seconds kDefaultStartupTimeout{600};
  // SageMaker's FailureReason holds at most this many characters.
  static constexpr size_t kMaxFailureReason = 1024;

  // `registry` is null in simulated mode. All must outlive this.
  ComponentPlacement(store::Store& store, nodes::NodeRegistry* registry, const Clock& clock);

  // Loads every copy record, and migrates placements that records written before issue 13 kept
  // inside the component record, by slot index, to copy records naming profile and start. Call
  // once, before the first pass, with every endpoint and component.
  Status Recover(std::span<const EndpointEntry> endpoints, std::span<ComponentEntry> components);

  // Builds a pool for every carved variant whose instances changed (re-applying its copies),
  // drops pools of variants no longer carved, and tells each pool which nodes are Ready (a
  // draining node is not: its copies are placed again elsewhere and none is placed on it).
  // Readiness is re-read for every node of a pool only when its endpoint changed or
  // `changes.everything`; otherwise for the nodes the registry says changed.
  void SyncPools(std::span<const EndpointEntry> endpoints, const nodes::NodeClaims& claims,
                 const PassChanges& changes);

  // One pass; entries are updated to what was committed. Copies of components that no longer
  // exist are released. A component is left alone when its last pass found it steady (InService
  // with every copy serving, or Failed with none) and nothing that pass depends on changed since:
  // its record, its endpoint's, its pool (rebuilt, or a node's readiness), or its copies'
  // reported states.
  // Returns how many components it reconciled.
  int Reconcile(std::span<const EndpointEntry> endpoints, std::span<ComponentEntry> components,
                const PassChanges& changes);

  // Moves each time a component's copies are written, so the publisher rebuilds a component's
  // workloads only when they may differ; 0 for an unknown component.
  uint64_t CopiesGeneration(const std::string& account, const std::string& component) const;

  // How many copies are placed on each node of a variant's pool (nodes with none are absent):
  // one walk over the copies, whatever the number of nodes asked about.
  std::map<std::string, size_t> CopiesPerNode(const nodes::Owner& variant) const;
  // Copies of the variant's components that the last pass could not place (no room).
  int WaitingCopies(const nodes::Owner& variant) const;
  // A component's live copies (empty for an unknown one).
  std::span<const LiveCopy> CopiesOf(const std::string& account,
                                     const std::string& component) const;
  // The pool of a carved variant; nullptr otherwise.
  const nodes::NodePool* PoolOf(const nodes::Owner& variant) const;
  // Calls f(variant, pool) for every carved variant.
  template <typename F>
  void ForEachPool(F&& f) const {
    for (const auto& [owner, vp] : pools_) f(owner, vp.pool);
  }
  // Who holds an allocation of a variant's pool; nullptr when free or unknown.
  const CopyOccupant* OccupantOf(const nodes::Owner& variant, core::AllocationId id) const;

 private:
  struct VariantPool {
    nodes::NodePool pool;
    std::vector<std::string> node_names;                   // As the endpoint record lists them.
    std::unordered_set<std::string> members;               // The same, to look one up.
    std::unordered_map<uint64_t, CopyOccupant> occupants;  // By allocation id.
  };
  struct ComponentCopies {
    nodes::Owner variant;
    std::vector<LiveCopy> copies;  // By copy index.
    int waiting = 0;               // Desired but not placed, as of the last pass.
    bool steady = false;           // The last pass changed nothing and found nothing pending.
    uint64_t generation = 0;       // CopiesGeneration.
  };
  using ComponentKey = std::pair<std::string, std::string>;  // (account, component)

  void RebuildPool(const nodes::Owner& owner, const VariantSpec& variant);
  void AdoptInto(VariantPool& pool, const nodes::Owner& owner, const std::string& account,
                 LiveCopy& copy);
  void ReleaseCopy(LiveCopy& copy, const nodes::Owner& owner);
  Status MigrateV1(const EndpointRecord* endpoint, ComponentEntry& entry);
  // One component's copies in one pass (component_pass.h).
  class CopyPass;
  void ReconcileOne(const EndpointEntry* endpoint, ComponentEntry& entry);
  // Records a pass: its one transaction, then memory (copies, versions, occupants); when the
  // commit fails, the pool goes back to what the Store holds and the next pass tries again.
  void CommitPass(ComponentEntry& entry, ComponentRecord c, CopyPass& pass,
                  std::vector<store::Mutation> writes, bool remove_record,
                  std::vector<LiveCopy> after);
  // Why no new copy of c can start because its model was deleted; "" when it can.
  std::string DeletedModel(const std::string& account, const ComponentRecord& c) const;
  void DropRemoved(std::span<const ComponentEntry> components);
  // Placed copies that serve, why the others do not yet (the first one found), and, for a
  // component never InService, why it failed ("" when it has not).
  struct ServingState {
    int running = 0;
    std::string starting;
    std::string failure;
    bool reconnecting = false;  // Some copies' agents have not reported since a restart.
  };
  // `judge`: whether a copy that cannot start is a failure (a component never InService, or the
  // new copies of a deployment).
  ServingState Serving(const std::string& account, const ComponentRecord& c,
                       std::span<const LiveCopy> copies, std::chrono::seconds startup,
                       bool judge) const;
  // One step of c's deployment (deployment.h) over the pass's kept copies: stops old copies and
  // places new ones through `pass`, which records the copies it tried to place and why the rest
  // wait. Updates c (a rollback swaps its specifications; the end clears the deployment) and
  // returns the progress for StatusMessage ("" once it ended).
  std::string RollOut(const std::string& account, ComponentRecord& c, const ComponentCopies& cc,
                      std::chrono::seconds startup, CopyPass& pass);

  store::Store& store_;
  nodes::NodeRegistry* const registry_;
  const Clock& clock_;
  std::map<nodes::Owner, VariantPool> pools_;
  std::map<ComponentKey, ComponentCopies> copies_;
  std::set<nodes::Owner> touched_pools_;  // Rebuilt, dropped or re-readied by the last SyncPools.
  uint64_t next_generation_ = 1;
};

}  // namespace carve::server::sagemaker
