// Cost per hour from the catalog's price and the partition's share of its instance, and cost
// per million output tokens (the arithmetic of src/loadgen/bench_cost.h).
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { componentCostPerHour, copyShare, costPerMillionTokens, indexCatalog, instancePrice } from '../../src/model/cost.js';

const catalog = indexCatalog({
  instance_types: [
    { id: 'ml.p4d.24xlarge', gpu: 'a100-40gb', gpu_count: 8, usd_per_hour: 37.688, price_source: 'test' },
    { id: 'ml.x.unpriced', gpu: 'a100-40gb', gpu_count: 8, usd_per_hour: 0, price_source: 'no public price' },
  ],
  gpus: [
    {
      id: 'a100-40gb',
      profiles: [
        { name: '4g.20gb', gpu_share: Math.max(4 / 7, 4 / 8) },
        { name: '1g.5gb', gpu_share: Math.max(1 / 7, 1 / 8) },
      ],
    },
  ],
});

test('a partition holds its GPU share divided by the instance GPUs', () => {
  assert.equal(copyShare(catalog, 'ml.p4d.24xlarge', 'mig-4g.20gb'), 4 / 7 / 8);
  assert.equal(copyShare(catalog, 'ml.p4d.24xlarge', '1g.5gb'), 1 / 7 / 8);
  assert.equal(copyShare(catalog, 'ml.p4d.24xlarge', null, 2), 2 / 8);
});

test('copies cost the instance price times their share', () => {
  const perHour = componentCostPerHour(catalog, 'ml.p4d.24xlarge', 'mig-4g.20gb', 1, 3);
  assert.ok(Math.abs(perHour - 37.688 * (4 / 7 / 8) * 3) < 1e-12);
  assert.equal(componentCostPerHour(catalog, 'ml.p4d.24xlarge', 'mig-4g.20gb', 1, 0), 0);
});

test('an unknown profile, instance type or price has no cost rather than 0', () => {
  assert.equal(copyShare(catalog, 'ml.p4d.24xlarge', 'mig-9g.99gb'), null);
  assert.equal(componentCostPerHour(catalog, 'ml.nope', 'mig-4g.20gb', 1, 1), null);
  assert.equal(componentCostPerHour(catalog, 'ml.x.unpriced', 'mig-4g.20gb', 1, 1), null);
  assert.deepEqual(instancePrice(catalog, 'ml.x.unpriced'), { usdPerHour: null, source: 'no public price' });
});

test('cost per million output tokens needs tokens that were counted and flowed', () => {
  // $3.6/h at 1000 tok/s: 3.6 / 3.6e6 tokens = $1 per million.
  assert.equal(costPerMillionTokens(3.6, 1000), 1);
  assert.equal(costPerMillionTokens(3.6, null), null);
  assert.equal(costPerMillionTokens(3.6, 0), null);
  assert.equal(costPerMillionTokens(null, 1000), null);
});
