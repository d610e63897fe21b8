// The fleet page's strip and share logic on fixture JSON in the fleet contract
// (docs/dashboard.md), and on JSON that breaks it.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';

import { mgpuBars, migStrip, occupantOf } from '../../src/model/strip.js';

const fleet = JSON.parse(readFileSync(new URL('../fixtures/fleet.json', import.meta.url)));
const p4dGpu0 = fleet.nodes[0].gpus[0];
const cells = (strip) => strip.cells.map((c) => `${c.kind}@${c.start}+${c.size}`);

test('draws every partition at its start and size and the stranded unit apart', () => {
  const s = migStrip(p4dGpu0, 'p4d GPU 0');
  assert.deepEqual(s.problems, []);
  assert.equal(s.positioned, true);
  assert.equal(s.units, 8);
  assert.deepEqual(cells(s), ['partition@0+4', 'partition@4+2', 'partition@6+1', 'stranded@7+1']);
  assert.equal(s.cells[0].partition.copy.component, 'summarizer');
});

test('covers every unit exactly once', () => {
  const s = migStrip(p4dGpu0);
  const covered = s.cells.flatMap((c) => Array.from({ length: c.size }, (_, i) => c.start + i));
  assert.deepEqual(covered, [0, 1, 2, 3, 4, 5, 6, 7]);
});

test('tells free units that a profile can still use from stranded ones', () => {
  const gpu = {
    placement_units: 8,
    free_units: [2, 3, 4, 5, 7],
    stranded_units: [7],
    partitions: [
      { partition_type: 'mig-2g.10gb', start: 0, size: 2 },
      { partition_type: 'mig-1g.5gb', start: 6, size: 1 },
    ],
  };
  assert.deepEqual(cells(migStrip(gpu)), ['partition@0+2', 'free@2+4', 'partition@6+1', 'stranded@7+1']);
});

test('merges adjacent stranded units into one run', () => {
  const gpu = { placement_units: 8, free_units: [5, 6, 7], stranded_units: [5, 6, 7], partitions: [{ start: 0, size: 5 }] };
  assert.deepEqual(cells(migStrip(gpu)), ['partition@0+5', 'stranded@5+3']);
});

test('names the partition, its values and the rule when it runs past the GPU', () => {
  const gpu = { placement_units: 8, free_units: [], partitions: [{ partition_type: 'mig-4g.20gb', profile: '4g.20gb', start: 6, size: 4 }] };
  const s = migStrip(gpu, 'p4d.24xlarge-0 GPU 3');
  assert.ok(
    s.problems.includes(
      "p4d.24xlarge-0 GPU 3: partitions[0] (4g.20gb): start=6 size=4 ends at unit 9, past the GPU's placement_units=8 (units 0..7)",
    ),
    s.problems.join('\n'),
  );
  assert.equal(s.cells.filter((c) => c.kind === 'partition').length, 0);
});

test('reports overlapping partitions and draws only the first', () => {
  const gpu = {
    placement_units: 8,
    partitions: [
      { profile: '4g.20gb', start: 0, size: 4 },
      { profile: '2g.10gb', start: 2, size: 2 },
    ],
  };
  const s = migStrip(gpu, 'g');
  assert.deepEqual(s.problems, [
    'g: partitions[1] (2g.10gb): units 2..3 overlap partitions[0] (4g.20gb, units 0..3): partitions of one GPU never share a unit',
  ]);
  assert.deepEqual(cells(s), ['partition@0+4', 'free@4+4']);
});

test('rejects a stranded unit that is not free, and a free unit inside a partition', () => {
  const gpu = { placement_units: 4, free_units: [1, 3], stranded_units: [2], partitions: [{ profile: '1g', start: 0, size: 2 }] };
  const s = migStrip(gpu, 'g');
  assert.ok(s.problems.includes('g: free_units contains 1, which partitions[0] (1g) occupies'), s.problems.join('\n'));
  assert.ok(
    s.problems.includes('g: stranded_units contains 2, which is not in free_units: a stranded unit is a free unit no profile can use'),
  );
  assert.ok(s.problems.includes('g: unit 2 is in no partition and not in free_units'));
});

test('rejects a placement-unit count outside 1..64', () => {
  for (const bad of [0, 65, 7.5, '8', null]) {
    const s = migStrip({ placement_units: bad, partitions: [{ start: 0, size: 1 }] }, 'g');
    assert.equal(s.positioned, false);
    assert.match(s.problems[0], /^g: placement_units=.*: must be a whole number from 1 to 64$/);
  }
});

test('does not invent positions when the server reports none', () => {
  const old = { index: 0, gpu: 'a100-40gb', partitions: [{ partition_type: 'mig-4g.20gb', occupant: 'a/x' }] };
  const s = migStrip(old);
  assert.equal(s.positioned, false);
  assert.deepEqual(s.problems, []);
});

test('shows units no partition covers as unclassified free when free_units is absent', () => {
  const s = migStrip({ placement_units: 8, partitions: [{ start: 0, size: 4 }] });
  assert.deepEqual(cells(s), ['partition@0+4', 'free@4+4']);
  assert.equal(s.cells[1].classified, false);
});

test('reads the occupant from the copy, or from the older occupant string', () => {
  assert.deepEqual(occupantOf(p4dGpu0.partitions[1]), {
    component: 'classifier',
    copyIndex: 1,
    copyId: '0f0f0f0f0f0f',
    state: 'starting',
  });
  assert.equal(occupantOf({ occupant: '111122223333/guardrail' }).component, 'guardrail');
  assert.equal(occupantOf({ occupant: null, copy: null }), null);
});

test('sums an mGPU card and keeps "not measured" apart from 0', () => {
  const b = mgpuBars(fleet.nodes[1].gpus[0], 'g5 GPU 0');
  assert.deepEqual(b.problems, []);
  assert.equal(b.core.allocated, 90);
  assert.equal(b.memory.allocated, 3000);
  assert.equal(b.memory.capacity, 23552);
  assert.deepEqual(b.core.used, { value: 27.5, of: 1 });
  assert.deepEqual(b.memory.used, { value: 1452, of: 2 });
  assert.equal(b.segments[1].core.used, null);
  assert.equal(b.segments[1].memory.used, null);
});

test('reports an mGPU card whose shares exceed it', () => {
  const b = mgpuBars(
    {
      memory_capacity_mib: 1000,
      workers: [
        { job: 'j', task: 0, core_percent: 60, memory_mib: 800 },
        { job: 'j', task: 1, core_percent: 60, memory_mib: 800 },
        { job: 'j', task: 2, core_percent: 130, memory_mib: 1 },
      ],
    },
    'g',
  );
  assert.deepEqual(b.problems, [
    'g: workers[2] (j task 2): core_percent=130: must be 0..100',
    "g: workers' core_percent sum to 120: a card holds at most 100",
    "g: workers' memory_mib sum to 1600 MiB, over memory_capacity_mib=1000",
  ]);
});
