// Stream-ordered and graph memory hooks. cuMemAllocAsync / cuMemAllocFromPoolAsync charge the
// pool they draw from; on a capturing stream they make an allocation node instead, whose memory
// comes from the device's graph pool (cuda.h: graph allocations "can be freed by passing the
// allocation to cuMemFreeAsync or cuMemFree" or by a free node), as do cuGraphAddMemAllocNode
// and cuGraphAddNode with CU_GRAPH_NODE_TYPE_MEM_ALLOC. Graphs and executable graphs that may
// hold graph allocations are tracked until destroyed, so that a trim never releases graph memory
// a later launch could map again (memory_account.h).
#include "interposer/shell/hook_support.h"

namespace carve::interposer::shell {
namespace {

// The pool a stream-ordered allocation on `stream` draws from, as its ledger key.
uint64_t PoolKeyFor(CuMemoryPool pool, CuStream stream) {
  if (pool != nullptr) return reinterpret_cast<uint64_t>(pool);
  // cuMemAllocAsync: the pool current to the stream's device, not to the calling context.
  static const auto get_pool = Real<PfnDeviceGetMemPool>(Fn::k_cuDeviceGetMemPool);
  const CuDevice dev = StreamDevice(stream);
  if (get_pool == nullptr || dev < 0 || get_pool(&pool, dev) != kCudaSuccess) return 0;
  return reinterpret_cast<uint64_t>(pool);
}

CuResult PoolAlloc(CuDevicePtr* dptr, size_t bytes, CuMemoryPool pool, CuStream stream,
                   bool per_thread, Fn fn) {
  Runtime* rt = GetRuntime();
  auto call = [&]() -> CuResult {
    if (fn == Fn::k_cuMemAllocAsync || fn == Fn::k_cuMemAllocAsync_ptsz) {
      return CallReal<PfnMemAllocAsync>(fn, dptr, bytes, stream);
    }
    return CallReal<PfnMemAllocFromPoolAsync>(fn, dptr, bytes, pool, stream);
  };
  if (rt == nullptr) return call();
  if (rt->broken) return ToCuResult(FailedPrecondition(rt->broken_reason));
  if (pool != nullptr && rt->account->IsHostPool(reinterpret_cast<uint64_t>(pool))) return call();
  const CuStream effective = EffectiveStream(stream, per_thread);
  uint64_t key = 0;
  if (std::optional<CuGraph> graph = CapturedGraph(effective)) {
    // An allocation node of the graph being captured: graph-pool memory, owned by that graph
    // (a null graph when the driver cannot say which: a sentinel owner that never goes away).
    rt->account->NoteGraphOwner(reinterpret_cast<uint64_t>(*graph));
    key = MemoryAccount::GraphPoolKey(StreamDevice(effective));
  } else {
    key = PoolKeyFor(pool, effective);
  }
  return ChargedFromPool(*rt, key, bytes, dptr, call);
}

// After a freed pointer's driver call succeeded: back to its pool's cache, or, for memory from
// cuMemAlloc (cuMemFreeAsync frees that too), released.
void ForgetFreed(CuDevicePtr dptr) {
  Runtime* rt = GetRuntime();
  if (rt == nullptr || rt->account == nullptr) return;
  if (!rt->account->ForgetToPool(dptr)) rt->account->Forget(AllocationKind::kDevicePointer, dptr);
}

CuResult FreeAsync(CuDevicePtr dptr, CuStream stream, Fn fn) {
  CuResult r = CallReal<PfnMemFreeAsync>(fn, dptr, stream);
  if (r == kCudaSuccess) ForgetFreed(dptr);
  return r;
}

// An allocation node added to `graph` explicitly (cuGraphAddMemAllocNode, cuGraphAddNode).
template <typename Add>
CuResult GraphAlloc(CuGraph graph, CuMemAllocNodeParams* params, Add&& add) {
  Runtime* rt = GetRuntime();
  if (rt == nullptr || params == nullptr) return add();
  if (rt->broken) return ToCuResult(FailedPrecondition(rt->broken_reason));
  if (!ChargedLocation(params->poolProps.location)) return add();
  const uint64_t key = MemoryAccount::GraphPoolKey(params->poolProps.location.id);
  CuResult r = ChargedFromPool(*rt, key, params->bytesize, &params->dptr, add);
  if (r == kCudaSuccess) rt->account->NoteGraphOwner(reinterpret_cast<uint64_t>(graph));
  return r;
}

// An executable graph instantiated from a graph that may own graph allocations owns them too.
CuResult Instantiated(CuResult r, CuGraphExec* exec, CuGraph graph) {
  Runtime* rt = GetRuntime();
  if (r == kCudaSuccess && rt != nullptr && rt->account != nullptr && exec != nullptr &&
      rt->account->IsGraphOwner(reinterpret_cast<uint64_t>(graph))) {
    rt->account->NoteGraphOwner(reinterpret_cast<uint64_t>(*exec));
  }
  return r;
}

CuResult Destroyed(CuResult r, uint64_t handle) {
  Runtime* rt = GetRuntime();
  if (r == kCudaSuccess && rt != nullptr && rt->account != nullptr) {
    rt->account->ForgetGraphOwner(handle);
  }
  return r;
}

}  // namespace
}  // namespace carve::interposer::shell

using namespace carve;                     // NOLINT: C ABI shell
using namespace carve::interposer;         // NOLINT
using namespace carve::interposer::shell;  // NOLINT

CARVE_EXPORT CuResult cuMemAllocAsync(CuDevicePtr* dptr, size_t bytes, CuStream stream) {
  return Guard(
      [&] { return PoolAlloc(dptr, bytes, nullptr, stream, false, Fn::k_cuMemAllocAsync); });
}
CARVE_EXPORT CuResult cuMemAllocAsync_ptsz(CuDevicePtr* dptr, size_t bytes, CuStream stream) {
  return Guard(
      [&] { return PoolAlloc(dptr, bytes, nullptr, stream, true, Fn::k_cuMemAllocAsync_ptsz); });
}
CARVE_EXPORT CuResult cuMemAllocFromPoolAsync(CuDevicePtr* dptr, size_t bytes, CuMemoryPool pool,
                                              CuStream stream) {
  return Guard(
      [&] { return PoolAlloc(dptr, bytes, pool, stream, false, Fn::k_cuMemAllocFromPoolAsync); });
}
CARVE_EXPORT CuResult cuMemAllocFromPoolAsync_ptsz(CuDevicePtr* dptr, size_t bytes,
                                                   CuMemoryPool pool, CuStream stream) {
  return Guard([&] {
    return PoolAlloc(dptr, bytes, pool, stream, true, Fn::k_cuMemAllocFromPoolAsync_ptsz);
  });
}
CARVE_EXPORT CuResult cuMemFreeAsync(CuDevicePtr dptr, CuStream stream) {
  return Guard([&] { return FreeAsync(dptr, stream, Fn::k_cuMemFreeAsync); });
}
CARVE_EXPORT CuResult cuMemFreeAsync_ptsz(CuDevicePtr dptr, CuStream stream) {
  return Guard([&] { return FreeAsync(dptr, stream, Fn::k_cuMemFreeAsync_ptsz); });
}

CARVE_EXPORT CuResult cuMemPoolTrimTo(CuMemoryPool pool, size_t keep) {
  return Guard([&] {
    CuResult r = CallReal<PfnMemPoolTrimTo>(Fn::k_cuMemPoolTrimTo, pool, keep);
    Runtime* rt = GetRuntime();
    auto get = Real<PfnMemPoolGetAttribute>(Fn::k_cuMemPoolGetAttribute);
    CuUint64 reserved = 0;
    if (r == kCudaSuccess && rt != nullptr && rt->account != nullptr && get != nullptr &&
        get(pool, kCuMempoolAttrReservedMemCurrent, &reserved) == kCudaSuccess) {
      rt->account->SyncPool(reinterpret_cast<uint64_t>(pool), reserved);
    }
    return r;
  });
}

// A pool placed in host memory (pinned host allocations) is none of the GPU quota's business.
CARVE_EXPORT CuResult cuMemPoolCreate(CuMemoryPool* pool, const CuMemPoolProps* props) {
  return Guard([&] {
    CuResult r = CallReal<PfnMemPoolCreate>(Fn::k_cuMemPoolCreate, pool, props);
    Runtime* rt = GetRuntime();
    if (r == kCudaSuccess && rt != nullptr && rt->account != nullptr && props != nullptr &&
        !ChargedLocation(props->location)) {
      rt->account->NoteHostPool(reinterpret_cast<uint64_t>(*pool));
    }
    return r;
  });
}

CARVE_EXPORT CuResult cuGraphAddMemAllocNode(CuGraphNode* node, CuGraph graph,
                                             const CuGraphNode* deps, size_t num_deps,
                                             CuMemAllocNodeParams* params) {
  return Guard([&] {
    return GraphAlloc(graph, params, [&] {
      return CallReal<PfnGraphAddMemAllocNode>(Fn::k_cuGraphAddMemAllocNode, node, graph, deps,
                                               num_deps, params);
    });
  });
}

CARVE_EXPORT CuResult cuGraphAddMemFreeNode(CuGraphNode* node, CuGraph graph,
                                            const CuGraphNode* deps, size_t num_deps,
                                            CuDevicePtr dptr) {
  return Guard([&] {
    CuResult r = CallReal<PfnGraphAddMemFreeNode>(Fn::k_cuGraphAddMemFreeNode, node, graph, deps,
                                                  num_deps, dptr);
    if (r == kCudaSuccess) ForgetFreed(dptr);
    return r;
  });
}

// NOLINTBEGIN(bugprone-macro-parentheses): the arguments are a parameter list and an argument list.
#define CARVE_GRAPH_ADD_NODE(name, Pfn, params_decl, call_args)                                    \
  CARVE_EXPORT CuResult name params_decl {                                                         \
    return Guard([&] {                                                                             \
      auto add = [&] { return CallReal<Pfn> call_args; };                                          \
      if (params == nullptr) return add();                                                         \
      if (params->type == kCuGraphNodeTypeMemAlloc) return GraphAlloc(graph, &params->alloc, add); \
      CuResult r = add();                                                                          \
      if (r == kCudaSuccess && params->type == kCuGraphNodeTypeMemFree) {                          \
        ForgetFreed(params->free.dptr);                                                            \
      }                                                                                            \
      return r;                                                                                    \
    });                                                                                            \
  }
CARVE_GRAPH_ADD_NODE(cuGraphAddNode, PfnGraphAddNodeV1,
                     (CuGraphNode * node, CuGraph graph, const CuGraphNode* deps, size_t num_deps,
                      CuGraphNodeParams* params),
                     (Fn::k_cuGraphAddNode, node, graph, deps, num_deps, params))
CARVE_GRAPH_ADD_NODE(cuGraphAddNode_v2, PfnGraphAddNodeV2,
                     (CuGraphNode * node, CuGraph graph, const CuGraphNode* deps,
                      const CuGraphEdgeData* edges, size_t num_deps, CuGraphNodeParams* params),
                     (Fn::k_cuGraphAddNode_v2, node, graph, deps, edges, num_deps, params))
// NOLINTEND(bugprone-macro-parentheses)

CARVE_EXPORT CuResult cuDeviceGraphMemTrim(CuDevice device) {
  return Guard([&] {
    CuResult r = CallReal<PfnDeviceGraphMemTrim>(Fn::k_cuDeviceGraphMemTrim, device);
    Runtime* rt = GetRuntime();
    auto get = Real<PfnDeviceGetGraphMemAttribute>(Fn::k_cuDeviceGetGraphMemAttribute);
    CuUint64 reserved = 0;
    if (r == kCudaSuccess && rt != nullptr && rt->account != nullptr && get != nullptr &&
        !rt->account->HasGraphOwners() &&
        get(device, kCuGraphMemAttrReservedMemCurrent, &reserved) == kCudaSuccess) {
      rt->account->SyncPool(MemoryAccount::GraphPoolKey(device), reserved);
    }
    return r;
  });
}

CARVE_EXPORT CuResult cuGraphInstantiate(CuGraphExec* exec, CuGraph graph, CuGraphNode* error_node,
                                         char* log, size_t log_size) {
  return Guard([&] {
    return Instantiated(CallReal<PfnGraphInstantiateLegacy>(Fn::k_cuGraphInstantiate, exec, graph,
                                                            error_node, log, log_size),
                        exec, graph);
  });
}
CARVE_EXPORT CuResult cuGraphInstantiate_v2(CuGraphExec* exec, CuGraph graph,
                                            CuGraphNode* error_node, char* log, size_t log_size) {
  return Guard([&] {
    return Instantiated(CallReal<PfnGraphInstantiateLegacy>(Fn::k_cuGraphInstantiate_v2, exec,
                                                            graph, error_node, log, log_size),
                        exec, graph);
  });
}
CARVE_EXPORT CuResult cuGraphInstantiateWithFlags(CuGraphExec* exec, CuGraph graph,
                                                  unsigned long long flags) {
  return Guard([&] {
    return Instantiated(CallReal<PfnGraphInstantiateWithFlags>(Fn::k_cuGraphInstantiateWithFlags,
                                                               exec, graph, flags),
                        exec, graph);
  });
}
CARVE_EXPORT CuResult cuGraphInstantiateWithParams(CuGraphExec* exec, CuGraph graph,
                                                   CuGraphInstantiateParams* params) {
  return Guard([&] {
    return Instantiated(CallReal<PfnGraphInstantiateWithParams>(Fn::k_cuGraphInstantiateWithParams,
                                                                exec, graph, params),
                        exec, graph);
  });
}
CARVE_EXPORT CuResult cuGraphInstantiateWithParams_ptsz(CuGraphExec* exec, CuGraph graph,
                                                        CuGraphInstantiateParams* params) {
  return Guard([&] {
    return Instantiated(CallReal<PfnGraphInstantiateWithParams>(
                            Fn::k_cuGraphInstantiateWithParams_ptsz, exec, graph, params),
                        exec, graph);
  });
}
CARVE_EXPORT CuResult cuGraphDestroy(CuGraph graph) {
  return Guard([&] {
    return Destroyed(CallReal<PfnGraphDestroy>(Fn::k_cuGraphDestroy, graph),
                     reinterpret_cast<uint64_t>(graph));
  });
}
CARVE_EXPORT CuResult cuGraphExecDestroy(CuGraphExec exec) {
  return Guard([&] {
    return Destroyed(CallReal<PfnGraphExecDestroy>(Fn::k_cuGraphExecDestroy, exec),
                     reinterpret_cast<uint64_t>(exec));
  });
}
