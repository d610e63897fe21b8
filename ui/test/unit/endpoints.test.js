// The Endpoints page's one answer (GET /v1/ui/endpoints) shaped as its sections read it.
import assert from 'node:assert/strict';
import {readFileSync} from 'node:fs';
import {test} from 'node:test';

import {shapeView} from '../../src/model/endpoints.js';
import {copiesOf} from '../../src/model/fleet.js';

const fleet = JSON.parse(readFileSync(new URL('../fixtures/fleet.json', import.meta.url)));

test(
    'each endpoint keeps its configuration, and its instances place the components\' copies',
    () => {
      const view = shapeView({
        Endpoints: [
          {
            EndpointName: 'multi-model-partitioned',
            EndpointConfig:
                {EndpointConfigName: 'cfg', ProductionVariants: [{VariantName: 'AllTraffic'}]},
            Nodes: [fleet.nodes[0]],
          },
          {EndpointName: 'orphan', EndpointConfig: null, Nodes: []},
        ],
        InferenceComponents:
            [{InferenceComponentName: 'summarizer', EndpointName: 'multi-model-partitioned'}],
        Unreadable: [{kind: 'InferenceComponent', name: 'torn', error: 'not JSON'}],
        History: {now_ms: 5, window_ms: 1, components: []},
      });
      assert.deepEqual(
          view.endpoints.map((e) => e.config?.EndpointConfigName ?? null), ['cfg', null]);
      assert.deepEqual(view.fleet.nodes.map((n) => n.name), ['p4d.24xlarge-0']);
      assert.deepEqual(
          copiesOf(view.fleet, 'multi-model-partitioned', 'summarizer')
              .map((c) => [c.copyIndex, c.gpu]),
          [[0, 0], [1, 1]],
      );
      assert.equal(view.components.length, 1);
      assert.deepEqual(view.unreadable.map((u) => u.name), ['torn']);
      assert.equal(view.history.now_ms, 5);
    });

test('an account with nothing gets empty sections, not undefined', () => {
  const view = shapeView({});
  assert.deepEqual(
      view, {endpoints: [], components: [], unreadable: [], fleet: {nodes: []}, history: null});
});
