// PlacementEngine: the fleet's free capacity and the decisions that use it.
//
// It places N copies of a request (a MIG partition type, K whole GPUs on one node, or an mGPU
// share, each plus host CPU, in thousandths of a vCPU, and host memory) with SageMaker's
// SchedulingConfig.PlacementStrategy:
//   BINPACK  fill the node (then the GPU) with the least free capacity of that kind first;
//   SPREAD   use the node (then the GPU) with the most free capacity of that kind first.
// Placing is all-or-nothing: either every copy gets an allocation or none does and the engine is
// as before. "Does not fit" is a Placement with kNoCapacity and a reason, not an error; errors
// are for requests that are invalid in themselves (bad share, unknown profile).
//
// Example: a node with 2 mGPU cards (A10G, 24 GiB each), request core=30% memory=1000 MiB:
//   BINPACK x4 -> cards 0,0,0,1 (card 0 ends at 90% core); SPREAD x4 -> cards 0,1,0,1.
//
// Allocation ids are stable and may be persisted; a control plane rebuilds the engine after a
// restart by creating it from the same fleet and calling Restore() with each persisted record.
//
// Speed: each shape of request has a ScoreBuckets index over nodes, ids are integers, and a
// decision does not allocate beyond the returned id vector. Not thread-safe: callers serialize.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/ids.h"
#include "common/result.h"
#include "core/fleet.h"
#include "core/score_buckets.h"
#include "core/share.h"

namespace carve::core {

// Bits 0..23: the engine's slot; bits 24..63: a sequence number never reused by one engine.
using AllocationId = StrongId<struct AllocationIdTag, uint64_t>;

enum class RequestKind { kPartition, kWholeGpus, kShare };
enum class Strategy { kSpread, kBinpack };
std::string_view StrategyName(Strategy s);  // "SPREAD", "BINPACK"
// Parses SageMaker's spelling, case-insensitively; InvalidArgument names the accepted values.
Result<Strategy> ParseStrategy(std::string_view text);

// What one copy needs.
struct Request {
  RequestKind kind = RequestKind::kShare;
  std::string profile;    // kPartition: "mig-1g.10gb" (SageMaker) or "1g.10gb" (NVML).
  int gpus = 1;           // kWholeGpus: this many whole GPUs on one node.
  MgpuShare share;        // kShare: core >= 100 takes core/100 idle mGPU cards on one node.
  int64_t cpu_milli = 0;  // Host CPU, thousandths of a vCPU.
  int64_t host_memory_mib = 0;

  static Request Partition(std::string profile, int64_t cpu_milli = 0, int64_t host_memory_mib = 0);
  static Request WholeGpus(int gpus, int64_t cpu_milli = 0, int64_t host_memory_mib = 0);
  static Request Share(MgpuShare share, int64_t cpu_milli = 0, int64_t host_memory_mib = 0);
};

// A request checked against the fleet and reduced to index terms. Resolve once, place many times.
struct ResolvedRequest {
  RequestKind kind = RequestKind::kShare;
  uint16_t shape = 0;
  int units = 1;  // Score a node needs: partitions, whole GPUs, idle cards, or core percent.
  int core_percent = 0;
  int64_t memory_mib = 0;  // 0 for "proportional to core" (see MgpuShare).
  int64_t cpu_milli = 0;
  int64_t host_memory_mib = 0;
  std::string description;  // "1 x mig-1g.10gb + 4 vCPUs + 8192 MiB host memory"
};

struct Placement {
  enum class Outcome { kPlaced, kNoCapacity };
  Outcome outcome = Outcome::kPlaced;
  std::vector<AllocationId> allocations;  // One per copy when placed, empty otherwise.
  std::string reason;                     // When kNoCapacity: what was asked and what is free.

  bool placed() const { return outcome == Outcome::kPlaced; }
};

// An allocation in persistable form: names and NVML positions, never engine indexes.
struct AllocationRecord {
  AllocationId id;
  std::string node;
  RequestKind kind = RequestKind::kShare;
  std::vector<int> gpu_indexes;  // Positions on the node.
  std::string profile;           // kPartition: NVML spelling.
  int partition_start = 0;       // kPartition: placement start on the GPU.
  int core_percent = 0;          // kShare.
  int64_t memory_mib = 0;        // kShare: card memory reserved (0 for whole cards).
  int64_t cpu_milli = 0;
  int64_t host_memory_mib = 0;

  friend bool operator==(const AllocationRecord&, const AllocationRecord&) = default;
};

// Free capacity of the kind a shape uses, and the part of it no copy of that shape can use
// (too small a remainder on a GPU, the 16-worker cap, or no host CPU/memory left on the node).
struct FragmentationReport {
  std::string_view unit;  // "compute slices" (MIG), "GPUs" (whole), "core percent" (mGPU)
  int64_t free = 0;
  int64_t usable = 0;
  int64_t stranded = 0;             // free - usable
  int64_t stranded_permille = 0;    // stranded * 1000 / free, 0 when nothing is free
  int64_t free_memory_mib = 0;      // mGPU shapes: free card memory
  int64_t stranded_memory_mib = 0;  // mGPU shapes: free card memory no copy can use
  int64_t copies = 0;               // How many more copies of the shape fit right now.
};

// Per-GPU state, for monitoring and tests.
struct GpuUsage {
  std::string_view node;
  int index = 0;
  GpuMode mode = GpuMode::kWhole;
  const catalog::GpuModel* model = nullptr;
  bool busy = false;            // Whole GPU, or mGPU card taken whole.
  int workers = 0;              // mGPU fractional workers.
  int core_used = 0;            // mGPU percent.
  int64_t memory_used_mib = 0;  // mGPU.
  int64_t memory_capacity_mib = 0;
  int partitions = 0;  // MIG.
  int partitions_used = 0;

  friend bool operator==(const GpuUsage&, const GpuUsage&) = default;
};

// One MIG partition and what holds it, for views.
struct PartitionUsage {
  std::string_view node;
  int gpu = 0;  // Index on the node.
  PlacedInstance instance;
  AllocationId allocation;  // 0 when free.
};

// A node's host CPU and memory: what it has and what allocations take.
struct HostUsage {
  int64_t cpu_milli = 0;
  int64_t cpu_used_milli = 0;
  int64_t memory_mib = 0;
  int64_t memory_used_mib = 0;
};

class PlacementEngine {
 public:
  // InvalidArgument when a spec is unusable: duplicate or empty node name, negative host
  // figures, a GPU without a model, more than kMaxGpusPerNode GPUs, a MIG GPU whose layout is
  // for another model, an mGPU card whose memory does not exceed the reserve.
  static Result<PlacementEngine> Create(std::vector<NodeSpec> nodes, FleetOptions options = {});

  // InvalidArgument for an invalid share or K < 1; NotFound for a profile no GPU carries.
  Result<ResolvedRequest> Resolve(const Request& request) const;

  // All-or-nothing placement of `copies` copies (copies < 1 places nothing).
  Placement Place(const ResolvedRequest& request, int copies, Strategy strategy);
  Result<Placement> Place(const Request& request, int copies, Strategy strategy);

  // NotFound for an id that is not live (never issued, or released already).
  Status Release(AllocationId id);

  Result<AllocationRecord> Describe(AllocationId id) const;
  std::vector<AllocationRecord> Allocations() const;  // Live ones, by id.
  // Re-applies a persisted allocation with its id. NotFound for an unknown node, GPU or
  // partition; FailedPrecondition when the capacity is taken or does not match the GPU's mode;
  // AlreadyExists when the id or its slot is live.
  Status Restore(const AllocationRecord& record);
  // The same under a fresh id (record.id is ignored), for owners that persist where an
  // allocation sits but not the engine's id: they rebuild their engine and adopt each record.
  Result<AllocationId> Adopt(const AllocationRecord& record);

  // Takes a node out of placement (false) or returns it (true): an unschedulable node keeps its
  // live allocations (they can be released or restored) but gets no new ones, as when its agent
  // stopped reporting. NotFound for an unknown node.
  Status SetSchedulable(const std::string& node, bool schedulable);
  bool schedulable(const std::string& node) const;  // False for an unknown node.

  FragmentationReport Fragmentation(const ResolvedRequest& request) const;
  std::vector<GpuUsage> Gpus() const;
  // Every MIG partition, node by node and GPU by GPU, in layout order.
  std::vector<PartitionUsage> Partitions() const;
  // nullopt for an unknown node.
  std::optional<HostUsage> Host(const std::string& node) const;
  int live_allocations() const { return live_; }
  // Reserves room for this many live allocations, so that placing up to it never allocates.
  void ReserveAllocations(uint32_t count);

 private:
  // Shapes 0..2 are fixed; each distinct MIG profile name in the fleet adds one.
  static constexpr uint16_t kShapeWhole = 0;           // Score: free whole GPUs.
  static constexpr uint16_t kShapeMgpuIdle = 1;        // Score: mGPU cards with no worker.
  static constexpr uint16_t kShapeMgpuFraction = 2;    // Score: largest free core on a card.
  static constexpr uint16_t kFirstPartitionShape = 3;  // Score: free partitions of the profile.

  struct NodeState {
    bool schedulable = true;
    int64_t free_cpu_milli = 0;
    int64_t free_host_mib = 0;
    uint32_t first_gpu = 0;
    uint32_t gpu_count = 0;
  };
  struct GpuState {
    uint32_t node = 0;
    int index = 0;
    GpuMode mode = GpuMode::kWhole;
    const catalog::GpuModel* model = nullptr;
    bool busy = false;                // kWhole taken, or kMgpu taken as a whole card.
    int workers = 0;                  // kMgpu fractional workers.
    int free_core = 0;                // kMgpu.
    int64_t free_memory_mib = 0;      // kMgpu.
    int64_t memory_capacity_mib = 0;  // kMgpu: card memory less the reserve.
    uint32_t first_partition = 0;     // kMig.
    int partition_count = 0;
    int free_partitions = 0;
  };
  struct PartitionState {
    uint32_t gpu = 0;
    uint16_t shape = 0;
    bool busy = false;
    PlacedInstance instance;
  };
  // GPUs (or one partition) chosen for one copy, before anything changes.
  struct Choice {
    uint32_t node = 0;
    int count = 0;
    std::array<uint32_t, kMaxGpusPerNode> items{};  // GPU ids, or one partition id.
    int64_t memory_mib = 0;                         // Fractional share: card memory taken.
  };
  struct Slot {
    uint64_t id = 0;  // 0 while free.
    RequestKind kind = RequestKind::kShare;
    Choice choice;
    int core_percent = 0;
    int64_t cpu_milli = 0;
    int64_t host_memory_mib = 0;
  };

  PlacementEngine() = default;
  uint32_t FindNode(const ResolvedRequest& r, Strategy s, Choice& choice) const;
  bool ChooseOnNode(const ResolvedRequest& r, Strategy s, uint32_t node, Choice& choice) const;
  AllocationId Apply(const ResolvedRequest& r, const Choice& choice, uint64_t forced_id);
  void Undo(Slot& slot);
  void RefreshMgpuScores(uint32_t node);
  static int64_t CardShareMemory(const GpuState& g, int core_percent, int64_t memory_mib);
  int64_t CopiesOnGpus(const ResolvedRequest& r, uint32_t node) const;
  int64_t CopiesOnHost(const ResolvedRequest& r, uint32_t node) const;
  std::string NoCapacityReason(const ResolvedRequest& r, int copies, Strategy s) const;
  const Slot* LiveSlot(AllocationId id) const;
  // Restore's checks and application; id 0 issues a fresh id.
  Result<AllocationId> Reapply(const AllocationRecord& record, uint64_t id);

  FleetOptions options_;
  std::vector<NodeSpec> specs_;
  std::vector<NodeState> nodes_;
  std::vector<GpuState> gpus_;
  std::vector<PartitionState> partitions_;
  std::unordered_map<std::string, uint32_t> node_by_name_;
  std::vector<std::string> shape_names_;  // Partition shapes, NVML spelling, by shape - kFirst.
  std::unordered_map<std::string, uint16_t> shape_by_name_;
  std::vector<ScoreBuckets> buckets_;  // By shape.
  std::vector<Slot> slots_;
  std::vector<uint32_t> free_slots_;
  uint64_t next_seq_ = 1;
  int live_ = 0;
};

}  // namespace carve::core
