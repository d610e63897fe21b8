// The pure parts of ComponentPlacement's pass over one component (component_reconcile.cc):
// which copies stay, why none can be placed, what the component's status becomes, and the one
// Store transaction that records it. Each is a function of what it is given: no Store, no pool
// change, no clock. The pass itself places and stops copies in the variant's pool (a copy placed
// later in the pass may take a partition freed earlier) and commits; these decide the rest.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "server/nodes/node_pool.h"
#include "server/sagemaker/component_placement.h"
#include "server/sagemaker/component_record.h"
#include "server/sagemaker/endpoint_record.h"
#include "store/store.h"

namespace carve::server::sagemaker {

// Which live copies stay: placed, of a specification the component still runs, on a Ready node
// of its variant's pool (`pool` nullptr: none is built yet). A stopped component (Deleting or
// Failed) keeps none.
struct CopyTriage {
  std::vector<size_t> keep;  // Indexes into the copies, in copy-number order.
  std::vector<size_t> release;
  // "copy N on NODE" for each current copy that goes because its node stopped reporting or left
  // the endpoint: it is placed again.
  std::vector<std::string> lost;
};
CopyTriage TriageCopies(const ComponentRecord& c, std::span<const LiveCopy> copies,
                        const nodes::NodePool* pool, bool stopped);

// Why no copy of c can be placed at all; "" when copies can be.
std::string BlockedReason(const EndpointEntry* ep, const ComponentRecord& c, bool has_pool);

// What the status of a component follows from, after its copies were placed and stopped.
struct StatusInputs {
  bool all_released = false;  // Deleting: every copy is released by this pass.
  std::string fail_now{};     // Why the component fails in this pass; "" when it does not.
  int count = 0;              // Copies placed after the pass.
  std::string reason{};       // Why copies wait to be placed.
  std::string progress{};     // A deployment's, for StatusMessage.
  std::string starting{};     // Why placed copies do not serve yet (the first one found).
};
// Sets c's status, StatusMessage and FailureReason (c.running is the caller's, from the copies'
// reports). Returns true when the record itself goes: Deleting, with every copy released.
bool SetStatus(ComponentRecord& c, const StatusInputs& in);

// The pass's one transaction: the released copies' records removed, the placed ones' created,
// and the component's record written when it changed (or removed with `remove_record`).
std::vector<store::Mutation> PassWrites(const store::Record& record, const std::string& before,
                                        const ComponentRecord& after, bool remove_record,
                                        std::span<const LiveCopy> copies,
                                        std::span<const size_t> release,
                                        std::span<const LiveCopy> placed);

}  // namespace carve::server::sagemaker
