// Figures the pages derive from GET /v1/fleet (contract: docs/dashboard.md): fleet totals, and
// each of the caller's components' copies with where they run.

import { occupantOf, migStrip } from './strip.js';

// What holds a node, as the page labels it. `account` is the caller's: a claim that names
// another account is shown as "another account" even where a server reports its names.
export function claimLabel(claim, account) {
  if (!claim) return { kind: 'free', text: 'unclaimed' };
  // A deleted endpoint's node that was away: held by no account until its agent reports every
  // GPU whole (docs/endpoint-lifecycle.md).
  if (claim.kind === 'reset') return { kind: 'reset', text: 'held until its GPUs are reset' };
  if (account && claim.account && claim.account !== account) {
    return { kind: 'other', text: 'another account' };
  }
  switch (claim.kind) {
    case 'endpoint':
      return { kind: 'endpoint', text: `endpoint ${claim.endpoint} (${claim.variant})` };
    case 'queue':
      return { kind: 'queue', text: `queue ${claim.queue}` };
    case 'other':
      return { kind: 'other', text: 'another account' };
    default: {
      // Servers before the `kind` field: a queue holds its nodes as {account: "", endpoint:
      // "queue/<account>/<queue>"}, an endpoint as {account, endpoint, variant}.
      const q = /^queue\/([^/]*)\/(.+)$/.exec(claim.endpoint ?? '');
      if (q) {
        if (account && q[1] !== account) return { kind: 'other', text: 'another account' };
        return { kind: 'queue', text: `queue ${q[2]}` };
      }
      if (claim.endpoint) return { kind: 'endpoint', text: `endpoint ${claim.endpoint} (${claim.variant})` };
      return { kind: 'other', text: 'claimed' };
    }
  }
}

// The GPU's mode; servers before the `mode` field are read from their partitions.
export function gpuMode(gpu) {
  if (gpu.mode) return gpu.mode;
  const parts = gpu.partitions ?? [];
  if (parts.some((p) => p.partition_type)) return 'mig';
  return 'whole';
}

export function fleetTotals(fleet) {
  const t = {
    nodes: 0,
    nodesReady: 0,
    gpus: 0,
    byMode: { mig: 0, whole: 0, mgpu: 0, unassigned: 0 },
    partitions: 0,
    partitionsOccupied: 0,
    wholeOccupied: 0,
    freeUnits: 0,
    strandedUnits: 0,
    unitsKnown: false,
    vcpus: 0,
    vcpusUsed: 0,
    memoryMib: 0,
    memoryUsedMib: 0,
  };
  for (const n of fleet.nodes ?? []) {
    t.nodes += 1;
    if (n.ready) t.nodesReady += 1;
    t.vcpus += n.vcpus ?? 0;
    t.vcpusUsed += n.vcpus_used ?? 0;
    t.memoryMib += n.memory_mib ?? 0;
    t.memoryUsedMib += n.memory_used_mib ?? 0;
    for (const g of n.gpus ?? []) {
      t.gpus += 1;
      const mode = gpuMode(g);
      t.byMode[mode] = (t.byMode[mode] ?? 0) + 1;
      if (mode === 'mig') {
        for (const p of g.partitions ?? []) {
          t.partitions += 1;
          if (p.occupant || p.copy) t.partitionsOccupied += 1;
        }
        if (Array.isArray(g.free_units)) {
          t.unitsKnown = true;
          t.freeUnits += g.free_units.length;
          t.strandedUnits += (g.stranded_units ?? []).length;
        }
      } else if (mode === 'whole') {
        if ((g.partitions ?? []).some((p) => p.occupant || p.copy)) t.wholeOccupied += 1;
      }
    }
  }
  return t;
}

// Every copy of `component` on the caller's nodes (claimed by `endpoint`), with its place:
// [{node, gpu, gpuModel, partitionType, start, size, copyIndex, copyId, state}].
export function copiesOf(fleet, endpoint, component) {
  const out = [];
  for (const n of fleet.nodes ?? []) {
    if (n.claim?.endpoint !== endpoint) continue;
    for (const g of n.gpus ?? []) {
      for (const p of g.partitions ?? []) {
        const occ = occupantOf(p);
        if (!occ || occ.component !== component) continue;
        out.push({
          node: n.name,
          instanceType: n.instance_type,
          gpu: g.index,
          gpuModel: g.gpu,
          partitionType: p.partition_type ?? null,
          start: p.start ?? null,
          size: p.size ?? null,
          copyIndex: occ.copyIndex,
          copyId: occ.copyId ?? null,
          state: occ.state,
        });
      }
    }
  }
  out.sort((a, b) => (a.copyIndex ?? 0) - (b.copyIndex ?? 0) || a.node.localeCompare(b.node) || a.gpu - b.gpu);
  return out;
}

// {state: count} over copies; a copy whose state the server does not report counts as "placed".
export function copiesByState(copies) {
  const out = {};
  for (const c of copies) {
    const s = c.state ?? 'placed';
    out[s] = (out[s] ?? 0) + 1;
  }
  return out;
}

// Problems of every MIG strip in the fleet, for one notice on the page.
export function fleetProblems(fleet) {
  const out = [];
  for (const n of fleet.nodes ?? []) {
    for (const g of n.gpus ?? []) {
      if (gpuMode(g) === 'mig' && g.placement_units !== undefined) {
        out.push(...migStrip(g, `${n.name} GPU ${g.index}`).problems);
      }
    }
  }
  return out;
}
