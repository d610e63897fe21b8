// Fragmentation: for each request shape in use, the free capacity no copy of that shape can
// use. This is the core placement engine's metric (core::PlacementEngine::Fragmentation),
// read from GET /v1/fragmentation and shown as is; the page computes none of it. Below it, the
// stranded placement units the fleet reports per GPU (free units no profile of the layout fits).

import { ApiErrorNotice, Notice } from '../components/Notice.jsx';
import { useApi, usePoll } from '../hooks.js';
import { fragmentationRows } from '../model/fragmentation.js';
import { gpuMode } from '../model/fleet.js';
import * as fmt from '../model/format.js';

function unitText(v, unit) {
  if (unit === 'core percent') return fmt.percent(v);
  if (unit === 'GPUs') return fmt.count(v, 'GPU');
  if (unit === 'compute slices') return fmt.count(v, 'compute slice');
  return `${v} ${unit}`;
}

function ShapeTable({ body }) {
  const { rows, problems } = fragmentationRows(body);
  return (
    <>
      <Notice title="The server's fragmentation data breaks its contract" items={problems} />
      {rows.length === 0 && problems.length === 0 && <p class="muted">No request shape in use.</p>}
      {rows.length > 0 && (
        <table class="compact">
          <thead>
            <tr>
              <th>shape</th>
              <th>where</th>
              <th class="num">free</th>
              <th class="num">usable by the shape</th>
              <th class="num">stranded</th>
              <th class="num">stranded share</th>
              <th class="num">more copies that fit</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((r, i) => (
              <tr key={i} data-testid="shape">
                <td>
                  <strong>{r.label}</strong>
                  {r.description && <div class="small muted">{r.description}</div>}
                </td>
                <td>{r.scopeLabel}</td>
                <td class="num">
                  {unitText(r.free, r.unit)}
                  {r.free_memory_mib !== undefined && <div class="small">{fmt.mib(r.free_memory_mib)}</div>}
                </td>
                <td class="num">{unitText(r.usable, r.unit)}</td>
                <td class="num">
                  <strong>{unitText(r.stranded, r.unit)}</strong>
                  {r.stranded_memory_mib !== undefined && <div class="small">{fmt.mib(r.stranded_memory_mib)}</div>}
                </td>
                <td class="num">{fmt.percent(r.strandedFraction * 100, 1)}</td>
                <td class="num">{fmt.count(r.copies, 'copy', 'copies')}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </>
  );
}

function StrandedUnits({ fleet }) {
  const rows = [];
  for (const n of fleet?.nodes ?? []) {
    for (const g of n.gpus ?? []) {
      if (gpuMode(g) !== 'mig' || !Array.isArray(g.free_units)) continue;
      rows.push({ node: n.name, gpu: g, free: g.free_units.length, stranded: (g.stranded_units ?? []).length });
    }
  }
  if (!fleet) return null;
  if (!rows.length) return <p class="muted">The fleet reports no free placement units per GPU (free_units) yet.</p>;
  return (
    <table class="compact">
      <thead>
        <tr>
          <th>GPU</th>
          <th class="num">free units</th>
          <th class="num">stranded units</th>
          <th>stranded at</th>
        </tr>
      </thead>
      <tbody>
        {rows.map((r) => (
          <tr key={`${r.node}/${r.gpu.index}`}>
            <td>
              {r.node} GPU {r.gpu.index} <span class="muted">{r.gpu.gpu}</span>
            </td>
            <td class="num">
              {r.free} of {r.gpu.placement_units} units
            </td>
            <td class="num">{r.stranded} units</td>
            <td>{(r.gpu.stranded_units ?? []).join(', ') || '—'}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

export function FragmentationPage() {
  const { client } = useApi();
  const frag = usePoll(() => client.get(['v1', 'fragmentation']), 5000);
  const fleet = usePoll(() => client.get(['v1', 'fleet']), 5000);
  const missing = frag.error?.status === 404;
  return (
    <div>
      <h3>Free capacity each request shape cannot use</h3>
      {missing ? (
        <Notice kind="info" title="This server does not expose the placement engine's fragmentation yet">
          <p>
            GET /v1/fragmentation answered 404. The page shows that route's figures as they come; it does not
            estimate them itself.
          </p>
        </Notice>
      ) : (
        <ApiErrorNotice error={frag.error} what="GET /v1/fragmentation" />
      )}
      {frag.data && <ShapeTable body={frag.data} />}
      <h3>Stranded placement units</h3>
      <ApiErrorNotice error={fleet.error} what="GET /v1/fleet" />
      <StrandedUnits fleet={fleet.data} />
    </div>
  );
}
