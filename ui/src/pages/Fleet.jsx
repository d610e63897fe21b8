// Fleet: nodes, then GPUs. Each MIG GPU as its placement-unit strip (partitions at their start
// and size with profile, occupant and copy state; free and stranded units apart), whole GPUs
// with their occupant, mGPU cards with each worker's share against what was measured.

import { ApiErrorNotice, Notice } from '../components/Notice.jsx';
import { Badge } from '../components/Badge.jsx';
import { GpuView } from '../components/GpuView.jsx';
import { usePoll, useApi } from '../hooks.js';
import { claimLabel, fleetTotals, gpuMode } from '../model/fleet.js';
import { mib, vcpus } from '../model/format.js';

function Tile({ label, value, sub, testid }) {
  return (
    <div class="tile" data-testid={testid}>
      <div class="tile-value">{value}</div>
      <div class="tile-label">{label}</div>
      {sub && <div class="tile-sub">{sub}</div>}
    </div>
  );
}

function Summary({ fleet }) {
  const t = fleetTotals(fleet);
  return (
    <div class="tiles">
      <Tile label="nodes ready" value={`${t.nodesReady} / ${t.nodes}`} testid="tile-nodes" />
      <Tile
        label="GPUs"
        value={t.gpus}
        sub={`${t.byMode.mig} MIG · ${t.byMode.whole} whole · ${t.byMode.mgpu} mGPU · ${t.byMode.unassigned} unassigned`}
      />
      <Tile label="MIG partitions occupied" value={`${t.partitionsOccupied} / ${t.partitions}`} testid="tile-partitions" />
      <Tile
        label="free placement units"
        value={t.unitsKnown ? `${t.freeUnits} units` : 'not reported'}
        sub={t.unitsKnown ? `${t.strandedUnits} stranded (no profile can use them)` : undefined}
        testid="tile-free"
      />
      <Tile label="host vCPUs" value={vcpus(t.vcpusUsed, t.vcpus)} />
      <Tile label="host memory" value={`${mib(t.memoryUsedMib)} / ${mib(t.memoryMib)}`} />
    </div>
  );
}

function Legend() {
  return (
    <div class="legend-row" aria-label="legend">
      <span class="legend-swatch cell-used cell-ok" /> running copy
      <span class="legend-swatch cell-used cell-progress" /> starting / placed
      <span class="legend-swatch cell-used cell-bad" /> failing
      <span class="legend-swatch cell-idle" /> empty partition
      <span class="legend-swatch cell-free" /> free units
      <span class="legend-swatch cell-stranded" /> stranded units
    </div>
  );
}

function NodeCard({ node, account }) {
  const claim = claimLabel(node.claim, account);
  const mine = claim.kind === 'endpoint' || claim.kind === 'queue';
  return (
    <section class={`node ${claim.kind === 'other' ? 'node-other' : ''}`} data-testid="node" data-node={node.name}>
      <header class="node-head">
        <h3>{node.name}</h3>
        <span class="muted">{node.instance_type}</span>
        <Badge state={node.ready ? 'Ready' : 'NotReady'} />
        <span class={`claim claim-${claim.kind}`}>{claim.text}</span>
        {node.carved === false && mine && <Badge state="Creating" label="carving" />}
        <span class="spacer" />
        <span class="muted">
          {vcpus(node.vcpus_used, node.vcpus)} · {mib(node.memory_used_mib)} / {mib(node.memory_mib)} host memory
        </span>
      </header>
      {claim.kind === 'other' ? (
        <p class="muted">{(node.gpus ?? []).length} GPUs in use by another account.</p>
      ) : (
        <div class="gpus">
          {(node.gpus ?? []).map((g) => (
            <GpuView key={g.index} gpu={g} node={node} />
          ))}
        </div>
      )}
    </section>
  );
}

// A MIG GPU whose partitions carry no placement (servers before the fleet contract).
function unplaced(fleet) {
  return (fleet.nodes ?? []).some((n) =>
    (n.gpus ?? []).some((g) => gpuMode(g) === 'mig' && (g.partitions ?? []).some((p) => p.start === undefined)),
  );
}

export function FleetPage() {
  const { client, session } = useApi();
  const fleet = usePoll(() => client.get(['v1', 'fleet']), 1000);
  return (
    <div>
      <ApiErrorNotice error={fleet.error} what="GET /v1/fleet" />
      {fleet.data === undefined && !fleet.error && <p class="muted">Loading the fleet…</p>}
      {fleet.data && (
        <>
          <Summary fleet={fleet.data} />
          {unplaced(fleet.data) && (
            <Notice kind="info">
              This server does not report where partitions sit (no start and size in /v1/fleet): MIG
              GPUs list their partitions instead of drawing them on the placement-unit strip.
            </Notice>
          )}
          <Legend />
          {(fleet.data.nodes ?? []).map((n) => (
            <NodeCard key={n.name} node={n} account={session.accountId} />
          ))}
        </>
      )}
    </div>
  );
}
