// What the fleet page draws for one GPU of GET /v1/fleet (the contract is in docs/dashboard.md):
//
//   migStrip(gpu)   a MIG GPU's placement units as a strip: every unit 0..placement_units-1 in
//                   exactly one cell, a partition [start, start+size), a run of free units, or a
//                   run of stranded units (free, but no profile of the layout can use them);
//   mgpuBars(gpu)   an mGPU card's workers: core % and memory MiB allocated, against measured.
//
// Both take the server's JSON as is and never guess: a field that breaks the contract becomes a
// problem that names the field, its value and the rule (the page shows it), and the cells that
// are still well-defined are drawn. The server computes free and stranded units (the layout
// engine knows which profiles fit where); only when a server predates those fields are the
// units no partition covers shown as free, unclassified.
//
// Worked example: A100-40GB, 8 units, layout [4g.20gb, 2g.10gb, 1g.5gb] placed at 0, 4 and 6:
// unit 7 is free, and stranded (no 1g profile of the layout is left to place there):
//   cells = [partition 0+4, partition 4+2, partition 6+1, stranded 7+1]

const MAX_PLACEMENT_UNITS = 64; // The layout engine's masks are 64-bit.

function isCount(v) {
  return Number.isInteger(v) && v >= 0;
}

function partitionName(p) {
  return p.profile ?? p.partition_type ?? 'partition';
}

// Merges sorted unit numbers into [{start, size}] runs.
function runs(units) {
  const out = [];
  for (const u of units) {
    const last = out[out.length - 1];
    if (last && last.start + last.size === u) last.size += 1;
    else out.push({ start: u, size: 1 });
  }
  return out;
}

// `where` prefixes every problem ("p4d.24xlarge-0 GPU 3").
export function migStrip(gpu, where = `GPU ${gpu?.index}`) {
  const problems = [];
  const units = gpu.placement_units;
  const partitions = Array.isArray(gpu.partitions) ? gpu.partitions : [];
  // A server that does not report the geometry: nothing can be drawn at a position.
  if (units === undefined && partitions.every((p) => p.start === undefined)) {
    return { positioned: false, units: 0, cells: [], problems };
  }
  if (!Number.isInteger(units) || units < 1 || units > MAX_PLACEMENT_UNITS) {
    problems.push(
      `${where}: placement_units=${JSON.stringify(units)}: must be a whole number from 1 to ` +
        `${MAX_PLACEMENT_UNITS}`,
    );
    return { positioned: false, units: 0, cells: [], problems };
  }
  const owner = new Array(units).fill(-1);
  const cells = [];
  partitions.forEach((p, i) => {
    const field = `${where}: partitions[${i}] (${partitionName(p)})`;
    if (!isCount(p.start) || !Number.isInteger(p.size) || p.size < 1) {
      problems.push(
        `${field}: start=${JSON.stringify(p.start)} size=${JSON.stringify(p.size)}: start must ` +
          'be a whole number >= 0 and size one >= 1',
      );
      return;
    }
    const end = p.start + p.size;
    if (end > units) {
      problems.push(
        `${field}: start=${p.start} size=${p.size} ends at unit ${end - 1}, past the GPU's ` +
          `placement_units=${units} (units 0..${units - 1})`,
      );
      return;
    }
    for (let u = p.start; u < end; u++) {
      if (owner[u] >= 0) {
        const other = partitions[owner[u]];
        problems.push(
          `${field}: units ${p.start}..${end - 1} overlap partitions[${owner[u]}] ` +
            `(${partitionName(other)}, units ${other.start}..${other.start + other.size - 1}): ` +
            'partitions of one GPU never share a unit',
        );
        return;
      }
    }
    for (let u = p.start; u < end; u++) owner[u] = i;
    cells.push({ kind: 'partition', start: p.start, size: p.size, partition: p, index: i });
  });

  const classified = Array.isArray(gpu.free_units);
  const free = new Set();
  const stranded = new Set();
  if (classified) {
    for (const u of gpu.free_units) {
      if (!isCount(u) || u >= units) {
        problems.push(`${where}: free_units contains ${JSON.stringify(u)}: not a unit 0..${units - 1}`);
      } else if (owner[u] >= 0) {
        problems.push(
          `${where}: free_units contains ${u}, which partitions[${owner[u]}] ` +
            `(${partitionName(partitions[owner[u]])}) occupies`,
        );
      } else {
        free.add(u);
      }
    }
    for (const u of gpu.stranded_units ?? []) {
      if (!free.has(u)) {
        problems.push(
          `${where}: stranded_units contains ${JSON.stringify(u)}, which is not in free_units: ` +
            'a stranded unit is a free unit no profile can use',
        );
      } else {
        stranded.add(u);
      }
    }
    for (let u = 0; u < units; u++) {
      if (owner[u] < 0 && !free.has(u)) {
        problems.push(`${where}: unit ${u} is in no partition and not in free_units`);
      }
    }
  } else {
    for (let u = 0; u < units; u++) if (owner[u] < 0) free.add(u);
  }
  const sorted = (set) => [...set].sort((a, b) => a - b);
  for (const r of runs(sorted(stranded))) cells.push({ kind: 'stranded', ...r });
  for (const r of runs(sorted(free).filter((u) => !stranded.has(u)))) {
    cells.push({ kind: 'free', classified, ...r });
  }
  cells.sort((a, b) => a.start - b.start);
  return { positioned: true, units, cells, problems, classified };
}

// The occupant of a partition (or whole GPU) as the page labels it. The caller's own copies
// carry `copy`; `occupant` alone ("<account>/<component>") comes from servers before the copy
// field; null means free.
export function occupantOf(partition) {
  if (partition.copy) {
    const c = partition.copy;
    return { component: c.component, copyIndex: c.index, copyId: c.id, state: c.state ?? null };
  }
  if (partition.occupant) {
    const slash = partition.occupant.indexOf('/');
    return {
      component: slash < 0 ? partition.occupant : partition.occupant.slice(slash + 1),
      account: slash < 0 ? null : partition.occupant.slice(0, slash),
      copyIndex: null,
      state: null,
    };
  }
  return null;
}

// An mGPU card's workers as two stacked bars. Allocated figures are the shares placement
// reserved; used ones are what the enforcement layer measured, null where nothing measures
// them (drawn as "not measured", never as 0).
export function mgpuBars(gpu, where = `GPU ${gpu?.index}`) {
  const problems = [];
  const workers = Array.isArray(gpu.workers) ? gpu.workers : [];
  const capacity = gpu.memory_capacity_mib;
  if (!Number.isInteger(capacity) || capacity <= 0) {
    problems.push(
      `${where}: memory_capacity_mib=${JSON.stringify(capacity)}: must be a whole number of MiB > 0`,
    );
  }
  const segments = [];
  workers.forEach((w, i) => {
    const field = `${where}: workers[${i}] (${w.job ?? '?'} task ${w.task ?? '?'})`;
    if (!Number.isInteger(w.core_percent) || w.core_percent < 0 || w.core_percent > 100) {
      problems.push(`${field}: core_percent=${JSON.stringify(w.core_percent)}: must be 0..100`);
      return;
    }
    if (!isCount(w.memory_mib)) {
      problems.push(`${field}: memory_mib=${JSON.stringify(w.memory_mib)}: must be a whole number >= 0`);
      return;
    }
    const measured = (v) => (typeof v === 'number' && Number.isFinite(v) && v >= 0 ? v : null);
    segments.push({
      worker: w,
      label: `${w.job} task ${w.task}`,
      core: { allocated: w.core_percent, used: measured(w.core_used_percent) },
      memory: { allocated: w.memory_mib, used: measured(w.memory_used_mib) },
    });
  });
  const coreAllocated = segments.reduce((s, x) => s + x.core.allocated, 0);
  const memoryAllocated = segments.reduce((s, x) => s + x.memory.allocated, 0);
  if (coreAllocated > 100) {
    problems.push(`${where}: workers' core_percent sum to ${coreAllocated}: a card holds at most 100`);
  }
  if (Number.isInteger(capacity) && memoryAllocated > capacity) {
    problems.push(
      `${where}: workers' memory_mib sum to ${memoryAllocated} MiB, over memory_capacity_mib=${capacity}`,
    );
  }
  const sumMeasured = (pick) => {
    const vals = segments.map(pick).filter((v) => v !== null);
    return { value: vals.length ? vals.reduce((a, b) => a + b, 0) : null, of: vals.length };
  };
  return {
    segments,
    problems,
    core: { allocated: coreAllocated, capacity: 100, used: sumMeasured((s) => s.core.used) },
    memory: { allocated: memoryAllocated, capacity, used: sumMeasured((s) => s.memory.used) },
  };
}
