// Endpoints and components: status, layout, desired and current copies, copies by state and
// where they run; per component over the last minutes requests/s, p50 and p99 latency and
// errors (the server's history of its /metrics); all of it in one request, GET /v1/ui/endpoints; cost per hour from the
// catalog price and the partition's share of the instance, and per million output tokens
// where tokens are counted.

import { Badge } from '../components/Badge.jsx';
import { ApiErrorNotice, Notice } from '../components/Notice.jsx';
import { TimeChart } from '../components/TimeChart.jsx';
import { useApi, usePoll } from '../hooks.js';
import { componentCostPerHour, costPerMillionTokens, indexCatalog, instancePrice } from '../model/cost.js';
import { shapeView } from '../model/endpoints.js';
import { copiesByState, copiesOf } from '../model/fleet.js';
import * as fmt from '../model/format.js';

function variantOf(endpoint, name) {
  return (endpoint.config?.ProductionVariants ?? []).find((v) => v.VariantName === name) ?? {};
}

function layoutOf(variant) {
  return variant.AcceleratorPartitionLayouts?.[0]?.AcceleratorPartitionTypes ?? null;
}

function Where({ copies }) {
  if (!copies.length) return <span class="muted">no copy placed</span>;
  return (
    <ul class="where">
      {copies.map((c) => (
        <li key={`${c.node}/${c.gpu}/${c.start}/${c.copyIndex}`} data-testid="copy-place">
          {c.copyIndex !== null && `copy ${c.copyIndex}: `}
          {c.node} GPU {c.gpu}
          {c.start !== null ? ` units ${c.start}..${c.start + c.size - 1}` : ''} {c.state && <Badge state={c.state} />}
        </li>
      ))}
    </ul>
  );
}

function ComponentRow({ c, endpoint, fleet, history, catalog }) {
  const name = c.InferenceComponentName;
  const crr = c.Specification?.ComputeResourceRequirements ?? {};
  const variant = variantOf(endpoint, c.VariantName);
  const copies = fleet ? copiesOf(fleet, endpoint.EndpointName, name) : [];
  const states = copiesByState(copies);
  const h = history?.components?.find((x) => x.endpoint === endpoint.EndpointName && x.component === name);
  const lm = h?.last_minute;
  const costPerHour = catalog
    ? componentCostPerHour(
        catalog,
        variant.InstanceType,
        crr.AcceleratorPartitionType,
        crr.NumberOfAcceleratorDevicesRequired ?? 1,
        copies.length,
      )
    : null;
  const perToken = costPerMillionTokens(costPerHour, lm?.output_tokens_per_s ?? null);
  return (
    <tr data-testid="component" data-component={name}>
      <td>
        <strong>{name}</strong>
        <div>
          <Badge state={c.InferenceComponentStatus} />
        </div>
        {c.StatusMessage && <div class="muted small">{c.StatusMessage}</div>}
      </td>
      <td>{crr.AcceleratorPartitionType ?? `${crr.NumberOfAcceleratorDevicesRequired ?? 1} whole GPU(s)`}</td>
      <td class="num" data-testid="copies">
        {c.RuntimeConfig?.CurrentCopyCount ?? 0} / {c.RuntimeConfig?.DesiredCopyCount ?? 0}
        <div class="small">
          {Object.entries(states).map(([s, n]) => (
            <span key={s} class="state-count">
              {n} {s}
            </span>
          ))}
        </div>
      </td>
      <td>
        <Where copies={copies} />
      </td>
      <td class="num">{fmt.perSecond(lm?.requests_per_s)}</td>
      <td class="num">{fmt.ms(lm?.p50_ms)}</td>
      <td class="num">{fmt.ms(lm?.p99_ms)}</td>
      <td class="num">
        {fmt.perSecond(lm?.errors_per_s, 'err')}
        {lm && lm.requests > 0 && <div class="small muted">{fmt.percent((lm.errors / lm.requests) * 100, 1)} of requests</div>}
      </td>
      <td class="num" data-testid="cost">
        {fmt.usdPerHour(costPerHour)}
        <div class="small muted">{copies.length} cop{copies.length === 1 ? 'y' : 'ies'} placed</div>
      </td>
      <td class="num">{fmt.usdPerMillionTokens(perToken)}</td>
    </tr>
  );
}

function ComponentCharts({ components, endpoint, history }) {
  if (!history) return null;
  const from = history.now_ms - history.window_ms;
  const mine = components
    .map((c) => history.components?.find((x) => x.endpoint === endpoint && x.component === c.InferenceComponentName))
    .filter(Boolean);
  if (!mine.length) return null;
  const classes = ['line-a', 'line-b', 'line-c', 'line-d', 'line-e'];
  const series = (pick) =>
    mine.map((h, i) => ({ label: h.component, cls: classes[i % classes.length], points: h.points.map((p) => [p.t_ms, pick(p)]) }));
  return (
    <div class="charts">
      <div>
        <h4>requests/s</h4>
        <TimeChart series={series((p) => p.requests_per_s)} from={from} to={history.now_ms} format={(v) => v.toFixed(v < 10 ? 1 : 0)} />
      </div>
      <div>
        <h4>p99 latency (ms)</h4>
        <TimeChart series={series((p) => p.p99_ms)} from={from} to={history.now_ms} format={(v) => v.toFixed(0)} />
      </div>
      <div>
        <h4>errors/s</h4>
        <TimeChart series={series((p) => p.errors_per_s)} from={from} to={history.now_ms} format={(v) => v.toFixed(v < 10 ? 1 : 0)} />
      </div>
    </div>
  );
}

function EndpointSection({ e, components, fleet, history, catalog }) {
  const mine = components.filter((c) => c.EndpointName === e.EndpointName);
  const nodes = (fleet?.nodes ?? []).filter((n) => n.claim?.endpoint === e.EndpointName);
  return (
    <section class="endpoint" data-testid="endpoint" data-endpoint={e.EndpointName}>
      <header class="node-head">
        <h3>{e.EndpointName}</h3>
        <Badge state={e.EndpointStatus} />
        <span class="spacer" />
      </header>
      {e.FailureReason && <Notice title="Failure reason">{e.FailureReason}</Notice>}
      <table class="compact">
        <thead>
          <tr>
            <th>variant</th>
            <th>instances</th>
            <th>layout per GPU</th>
            <th class="num">instance price</th>
            <th class="num">endpoint cost</th>
          </tr>
        </thead>
        <tbody>
          {(e.ProductionVariants ?? []).map((pv) => {
            const v = variantOf(e, pv.VariantName);
            const layout = layoutOf(v);
            const price = catalog ? instancePrice(catalog, v.InstanceType) : { usdPerHour: null };
            const held = nodes.filter((n) => n.claim?.variant === pv.VariantName).length;
            return (
              <tr key={pv.VariantName}>
                <td>
                  {pv.VariantName}
                  {(pv.VariantStatus ?? []).map((s) => (
                    <div key={s.Status} class="small muted">
                      {s.Status}: {s.StatusMessage}
                    </div>
                  ))}
                </td>
                <td>
                  {pv.CurrentInstanceCount ?? 0} / {pv.DesiredInstanceCount ?? v.InitialInstanceCount ?? 0} × {v.InstanceType}
                </td>
                <td>{layout ? layout.join(' + ') : 'whole GPUs (no partitions)'}</td>
                <td class="num" title={price.source}>
                  {fmt.usdPerHour(price.usdPerHour)}
                </td>
                <td class="num">{fmt.usdPerHour(price.usdPerHour === null ? null : price.usdPerHour * held)}</td>
              </tr>
            );
          })}
        </tbody>
      </table>
      {mine.length === 0 ? (
        <p class="muted">No inference components on this endpoint.</p>
      ) : (
        <>
          <table class="compact components">
            <thead>
              <tr>
                <th>component</th>
                <th>needs</th>
                <th class="num">copies current / desired</th>
                <th>where</th>
                <th class="num">requests/s (1 min)</th>
                <th class="num">p50</th>
                <th class="num">p99</th>
                <th class="num">errors (1 min)</th>
                <th class="num">cost (placed copies)</th>
                <th class="num">per M output tokens</th>
              </tr>
            </thead>
            <tbody>
              {mine.map((c) => (
                <ComponentRow key={c.InferenceComponentName} c={c} endpoint={e} fleet={fleet} history={history} catalog={catalog} />
              ))}
            </tbody>
          </table>
          <ComponentCharts components={mine} endpoint={e.EndpointName} history={history} />
        </>
      )}
    </section>
  );
}

export function EndpointsPage() {
  const { client, catalog } = useApi();
  const view = usePoll(async () => shapeView(await client.get(['v1', 'ui', 'endpoints'])), 2000);
  const index = catalog ? indexCatalog(catalog) : null;
  const data = view.data;
  return (
    <div>
      <ApiErrorNotice error={view.error} what="GET /v1/ui/endpoints" />
      {data === undefined && !view.error && <p class="muted">Loading endpoints…</p>}
      {data && data.unreadable.length > 0 && (
        <Notice title="Records the server cannot read">
          <ul data-testid="unreadable">
            {data.unreadable.map((u) => (
              <li key={`${u.kind}/${u.name}`}>
                {u.kind} {u.name}: {u.error}
              </li>
            ))}
          </ul>
        </Notice>
      )}
      {data && data.endpoints.length === 0 && <p class="muted">This account has no endpoints.</p>}
      {data?.endpoints.map((e) => (
        <EndpointSection key={e.EndpointName} e={e} components={data.components} fleet={data.fleet} history={data.history} catalog={index} />
      ))}
      <p class="muted small">
        Latency percentiles are estimated from the router's histogram buckets
        (carve_runtime_request_duration_seconds), as Prometheus's histogram_quantile does. Cost is the
        catalog's on-demand price times each placed copy's share of its instance: max(compute, memory)
        fraction of its GPU, divided by the instance's GPUs.
      </p>
    </div>
  );
}
