// One GPU of the fleet page, by mode: a MIG GPU's placement-unit strip, a whole GPU and its
// occupant, an mGPU card's workers (allocated against measured), or an unassigned GPU.

import { gpuMode } from '../model/fleet.js';
import { mib, mibExact, percent, NOT_MEASURED } from '../model/format.js';
import { mgpuBars, migStrip, occupantOf } from '../model/strip.js';
import { Badge, stateKind } from './Badge.jsx';
import { Notice } from './Notice.jsx';

// The occupant on one line ("summarizer #0"), its state on the next (`stacked`) or beside it.
function OccupantText({ partition, stacked = false }) {
  const occ = occupantOf(partition);
  if (!occ) return <span class="cell-free-text">free</span>;
  const copy = occ.copyIndex !== null && occ.copyIndex !== undefined ? ` #${occ.copyIndex}` : '';
  const name = (
    <span class="occupant" title={`${occ.component}${copy ? `, copy ${occ.copyIndex}` : ''}`}>
      {occ.component}
      {copy}
    </span>
  );
  if (!occ.state) return name;
  return stacked ? (
    <>
      {name}
      <span class="occupant-state">
        <Badge state={occ.state} />
      </span>
    </>
  ) : (
    <span>
      {name} <Badge state={occ.state} />
    </span>
  );
}

function PartitionCell({ cell }) {
  const p = cell.partition;
  const occ = occupantOf(p);
  const state = occ ? occ.state ?? 'placed' : 'free';
  const cls = occ ? `cell cell-used cell-${stateKind(occ.state ?? 'placed')}` : 'cell cell-idle';
  const profile = p.profile ?? (p.partition_type ?? '').replace(/^mig-/, '');
  return (
    <div
      class={cls}
      style={{ gridColumn: `${cell.start + 1} / span ${cell.size}` }}
      data-testid="partition"
      data-profile={p.partition_type ?? ''}
      data-start={cell.start}
      data-size={cell.size}
      data-component={occ?.component ?? ''}
      data-copy={occ?.copyIndex ?? ''}
      data-state={state}
      title={`${p.partition_type} at units ${cell.start}..${cell.start + cell.size - 1}`}
    >
      <span class="cell-profile">{profile}</span>
      <OccupantText partition={p} stacked />
    </div>
  );
}

function UnitCell({ cell }) {
  const stranded = cell.kind === 'stranded';
  const label = stranded ? 'stranded' : cell.classified === false ? 'not in a partition' : 'free';
  return (
    <div
      class={stranded ? 'cell cell-stranded' : 'cell cell-free'}
      style={{ gridColumn: `${cell.start + 1} / span ${cell.size}` }}
      data-testid={stranded ? 'stranded' : 'free'}
      data-start={cell.start}
      data-size={cell.size}
      title={
        stranded
          ? `units ${cell.start}..${cell.start + cell.size - 1}: free, but no profile of the layout can use them`
          : `units ${cell.start}..${cell.start + cell.size - 1}: free`
      }
    >
      <span class="cell-profile">{label}</span>
      <span class="cell-units">
        {cell.size} unit{cell.size === 1 ? '' : 's'}
      </span>
    </div>
  );
}

function MigGpu({ gpu, where }) {
  const strip = migStrip(gpu, where);
  if (!strip.positioned) {
    // A server that does not say where partitions sit: list them, never invent positions.
    return (
      <div>
        <div class="chips">
          {(gpu.partitions ?? []).map((p, i) => (
            <span
              key={i}
              class="chip"
              data-testid="partition"
              data-profile={p.partition_type ?? ''}
              data-component={occupantOf(p)?.component ?? ''}
            >
              {p.partition_type}: <OccupantText partition={p} />
            </span>
          ))}
        </div>
        <Notice items={strip.problems} title="The server's data breaks the fleet contract" />
      </div>
    );
  }
  return (
    <div>
      <div
        class="strip"
        style={{ gridTemplateColumns: `repeat(${strip.units}, minmax(0, 1fr))` }}
        data-testid="strip"
        data-units={strip.units}
      >
        {strip.cells.map((c) =>
          c.kind === 'partition' ? (
            <PartitionCell key={`p${c.start}`} cell={c} />
          ) : (
            <UnitCell key={`${c.kind}${c.start}`} cell={c} />
          ),
        )}
      </div>
      <div class="strip-ticks" style={{ gridTemplateColumns: `repeat(${strip.units}, minmax(0, 1fr))` }}>
        {Array.from({ length: strip.units }, (_, u) => (
          <span key={u}>{u}</span>
        ))}
      </div>
      <Notice items={strip.problems} title="The server's data breaks the fleet contract" />
    </div>
  );
}

function WholeGpu({ gpu }) {
  const p = (gpu.partitions ?? [])[0] ?? {};
  const occ = occupantOf(p);
  return (
    <div
      class={occ ? `whole cell-used cell-${stateKind(occ.state ?? 'placed')}` : 'whole cell-idle'}
      data-testid="whole"
      data-component={occ?.component ?? ''}
    >
      <span class="cell-profile">whole GPU</span> <OccupantText partition={p} />
    </div>
  );
}

// Stacked per-worker segments of one resource: each worker's allocation as an outlined box,
// filled to what was measured (a hatched box says "not measured").
function ShareBar({ segments, pick, capacity, unitText }) {
  return (
    <div class="sharebar">
      {segments.map((s, i) => {
        const r = pick(s);
        const width = capacity > 0 ? (r.allocated / capacity) * 100 : 0;
        const usedFrac = r.used === null || r.allocated === 0 ? 0 : Math.min(1, r.used / r.allocated);
        return (
          <div
            key={i}
            class={r.used === null ? 'share share-unmeasured' : 'share'}
            style={{ width: `${width}%` }}
            title={`${s.label}: ${unitText(r.allocated)} allocated, ${r.used === null ? NOT_MEASURED : `${unitText(r.used)} measured`}`}
          >
            <div class="share-used" style={{ width: `${usedFrac * 100}%` }} />
          </div>
        );
      })}
    </div>
  );
}

function MgpuGpu({ gpu, where }) {
  const bars = mgpuBars(gpu, where);
  const measuredText = (u, f) => (u.value === null ? NOT_MEASURED : `${f(u.value)} measured (${u.of} of ${bars.segments.length} workers)`);
  return (
    <div class="mgpu" data-testid="mgpu">
      <div class="mgpu-row">
        <span class="mgpu-label">core</span>
        <ShareBar segments={bars.segments} pick={(s) => s.core} capacity={100} unitText={(v) => percent(v, 1)} />
        <span class="mgpu-figures">
          {percent(bars.core.allocated)} of 100% allocated · {measuredText(bars.core.used, (v) => percent(v, 1))}
        </span>
      </div>
      <div class="mgpu-row">
        <span class="mgpu-label">memory</span>
        <ShareBar segments={bars.segments} pick={(s) => s.memory} capacity={bars.memory.capacity} unitText={mibExact} />
        <span class="mgpu-figures">
          {mibExact(bars.memory.allocated)} of {mib(bars.memory.capacity)} allocated · {measuredText(bars.memory.used, mibExact)}
        </span>
      </div>
      {bars.segments.length > 0 && (
        <table class="compact workers">
          <thead>
            <tr>
              <th>worker</th>
              <th class="num">core allocated</th>
              <th class="num">core measured</th>
              <th class="num">memory allocated</th>
              <th class="num">memory measured</th>
            </tr>
          </thead>
          <tbody>
            {bars.segments.map((s, i) => (
              <tr key={i} data-testid="worker">
                <td>{s.label}</td>
                <td class="num">{percent(s.core.allocated)}</td>
                <td class={s.core.used === null ? 'num muted' : 'num'}>{percent(s.core.used, 1)}</td>
                <td class="num">{mibExact(s.memory.allocated)}</td>
                <td class={s.memory.used === null ? 'num muted' : 'num'}>{mibExact(s.memory.used)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <Notice items={bars.problems} title="The server's data breaks the fleet contract" />
    </div>
  );
}

export function GpuView({ gpu, node }) {
  const mode = gpuMode(gpu);
  const where = `${node.name} GPU ${gpu.index}`;
  return (
    <div class="gpu" data-testid="gpu" data-node={node.name} data-index={gpu.index} data-mode={mode}>
      <div class="gpu-head">
        <span class="gpu-title">GPU {gpu.index}</span>
        <span class="muted">{gpu.gpu}</span>
        <span class={`mode mode-${mode}`}>{mode === 'mgpu' ? 'mGPU' : mode === 'mig' ? 'MIG' : mode}</span>
      </div>
      {mode === 'mig' && <MigGpu gpu={gpu} where={where} />}
      {mode === 'whole' && <WholeGpu gpu={gpu} />}
      {mode === 'mgpu' && <MgpuGpu gpu={gpu} where={where} />}
      {mode === 'unassigned' && <div class="whole cell-idle">not assigned to an endpoint or queue</div>}
    </div>
  );
}
