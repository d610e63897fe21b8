// Fleet totals, claims and each component's copies, from fixture JSON in the fleet contract.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';

import { claimLabel, copiesByState, copiesOf, fleetProblems, fleetTotals, gpuMode } from '../../src/model/fleet.js';

const fleet = JSON.parse(readFileSync(new URL('../fixtures/fleet.json', import.meta.url)));

test('counts nodes, GPUs by mode, partitions and free and stranded units', () => {
  const t = fleetTotals(fleet);
  assert.equal(t.nodes, 3);
  assert.equal(t.nodesReady, 2);
  assert.equal(t.gpus, 6);
  assert.deepEqual(t.byMode, { mig: 3, whole: 1, mgpu: 1, unassigned: 1 });
  assert.equal(t.partitions, 7);
  assert.equal(t.partitionsOccupied, 3);
  assert.equal(t.wholeOccupied, 1);
  assert.equal(t.freeUnits, 2);
  assert.equal(t.strandedUnits, 2);
});

test("lists a component's copies with node, GPU, start and state, in copy order", () => {
  const copies = copiesOf(fleet, 'multi-model-partitioned', 'summarizer');
  assert.deepEqual(
    copies.map((c) => [c.copyIndex, c.node, c.gpu, c.start, c.size, c.state]),
    [
      [0, 'p4d.24xlarge-0', 0, 0, 4, 'running'],
      [1, 'p4d.24xlarge-0', 1, 0, 4, 'running'],
    ],
  );
  assert.deepEqual(copiesByState(copies), { running: 2 });
  assert.deepEqual(copiesOf(fleet, 'other-endpoint', 'summarizer'), []);
});

test('labels claims, and hides another account behind "another account"', () => {
  assert.equal(claimLabel(fleet.nodes[0].claim, '111122223333').text, 'endpoint multi-model-partitioned (AllTraffic)');
  assert.equal(claimLabel(fleet.nodes[1].claim, '111122223333').text, 'queue q');
  assert.equal(claimLabel(fleet.nodes[2].claim, '111122223333').kind, 'other');
  assert.equal(claimLabel(fleet.nodes[0].claim, '999999999999').kind, 'other');
  assert.equal(claimLabel(null).text, 'unclaimed');
  const reset = { kind: 'reset', account: null, endpoint: null, variant: null };
  assert.deepEqual(claimLabel(reset, '111122223333'),
    { kind: 'reset', text: 'held until its GPUs are reset' });
});

test('reads the mode of a GPU from servers without the mode field', () => {
  assert.equal(gpuMode({ partitions: [{ partition_type: 'mig-1g.5gb' }] }), 'mig');
  assert.equal(gpuMode({ partitions: [{ partition_type: null }] }), 'whole');
  assert.equal(gpuMode({ mode: 'mgpu', partitions: [] }), 'mgpu');
});

test('the fixture fleet keeps the contract', () => {
  assert.deepEqual(fleetProblems(fleet), []);
});

test("reads a queue's claim from servers before the claim kind", () => {
  const claim = { account: '', endpoint: 'queue/111122223333/gpuq', variant: '' };
  assert.deepEqual(claimLabel(claim, '111122223333'), { kind: 'queue', text: 'queue gpuq' });
  assert.deepEqual(claimLabel(claim, '444455556666'), { kind: 'other', text: 'another account' });
});
