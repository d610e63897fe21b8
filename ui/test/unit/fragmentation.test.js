// The fragmentation page shows the placement engine's figures; it checks their identities.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { fragmentationRows, shapeLabel } from '../../src/model/fragmentation.js';

const body = {
  shapes: [
    { shape: { kind: 'partition', profile: 'mig-4g.20gb' }, scope: { kind: 'endpoint', endpoint: 'e', variant: 'AllTraffic' },
      unit: 'compute slices', free: 12, usable: 12, stranded: 0, copies: 3 },
    { shape: { kind: 'share', core_percent: 30, memory_mib: 1000 }, scope: { kind: 'queue', queue: 'q' },
      unit: 'core percent', free: 150, usable: 120, stranded: 30, copies: 4, free_memory_mib: 40000, stranded_memory_mib: 36000 },
    { shape: { kind: 'whole_gpus', gpus: 2 }, unit: 'GPUs', free: 3, usable: 2, stranded: 1, copies: 1 },
  ],
};

test('rows carry labels and come worst stranded share first', () => {
  const { rows, problems } = fragmentationRows(body);
  assert.deepEqual(problems, []);
  assert.deepEqual(rows.map((r) => r.label), ['2 whole GPUs', 'mGPU 30% · 1000 MiB', 'mig-4g.20gb']);
  assert.equal(rows[1].scopeLabel, 'queue q');
  assert.equal(rows[1].strandedFraction, 0.2);
});

test('a row whose free is not usable + stranded is reported, naming the figures', () => {
  const { rows, problems } = fragmentationRows({
    shapes: [{ shape: { kind: 'partition', profile: 'mig-1g.5gb' }, unit: 'compute slices', free: 5, usable: 3, stranded: 1, copies: 3 }],
  });
  assert.deepEqual(rows, []);
  assert.deepEqual(problems, [
    'shapes[0] (mig-1g.5gb): free=5 but usable=3 + stranded=1 = 4: free capacity is either usable or stranded',
  ]);
});

test('an unknown unit or a negative figure is reported', () => {
  const { problems } = fragmentationRows({
    shapes: [
      { shape: { kind: 'whole_gpus', gpus: 1 }, unit: 'slices', free: 1, usable: 1, stranded: 0, copies: 1 },
      { shape: { kind: 'whole_gpus', gpus: 1 }, unit: 'GPUs', free: 1, usable: 1, stranded: 0, copies: -1 },
    ],
  });
  assert.deepEqual(problems, [
    'shapes[0] (1 whole GPU): unit="slices": must be one of compute slices, GPUs, core percent',
    'shapes[1] (1 whole GPU): copies=-1: must be a whole number >= 0',
  ]);
  assert.match(fragmentationRows({}).problems[0], /^shapes=undefined: must be an array/);
});

test('labels each kind of shape', () => {
  assert.equal(shapeLabel({ kind: 'share', core_percent: 50 }), 'mGPU 50%');
  assert.equal(shapeLabel({ kind: 'whole_gpus', gpus: 1 }), '1 whole GPU');
});
