// A small SVG time-series chart: lines over the last minutes, gaps where a value is missing
// (null: not measured, or nothing happened to measure), each line told apart by its dash
// pattern as well as its colour, and the unit on the axis.

import { clock } from '../model/format.js';

const W = 560;
const H = 150;
const PAD = { left: 52, right: 10, top: 10, bottom: 22 };

function niceMax(v) {
  if (!(v > 0)) return 1;
  const p = 10 ** Math.floor(Math.log10(v));
  for (const m of [1, 2, 2.5, 5, 10]) if (m * p >= v) return m * p;
  return 10 * p;
}

function paths(points, x, y) {
  const out = [];
  let d = '';
  for (const [t, v] of points) {
    if (v === null || v === undefined || !Number.isFinite(v)) {
      if (d) out.push(d);
      d = '';
      continue;
    }
    d += `${d ? 'L' : 'M'}${x(t).toFixed(1)},${y(v).toFixed(1)}`;
  }
  if (d) out.push(d);
  return out;
}

function lastPoint(points) {
  for (let i = points.length - 1; i >= 0; i--) {
    if (points[i][1] !== null && points[i][1] !== undefined && Number.isFinite(points[i][1])) return points[i];
  }
  return null;
}

// series: [{label, points: [[tMs, value|null]], cls: 'line-a'|'line-b'|..., latest: text}].
// The time axis runs from the first point (at most `from`, the window's start) to `to`, so a
// history shorter than the window fills the chart. The unit goes in the caption.
export function TimeChart({ series, from: windowFrom, to, yMax, format = (v) => String(v), testid }) {
  const first = Math.min(to, ...series.flatMap((s) => s.points.map((p) => p[0])));
  const from = Math.max(windowFrom, Math.min(first, to - 10000));
  const max = yMax ?? niceMax(Math.max(0, ...series.flatMap((s) => s.points.map((p) => p[1] ?? 0))));
  const x = (t) => PAD.left + ((t - from) / Math.max(1, to - from)) * (W - PAD.left - PAD.right);
  const y = (v) => H - PAD.bottom - (Math.min(v, max) / max) * (H - PAD.top - PAD.bottom);
  const ticks = [0, max / 2, max];
  const xticks = [from, from + (to - from) / 2, to];
  return (
    <figure class="chart" data-testid={testid}>
      <svg viewBox={`0 0 ${W} ${H}`} role="img" aria-label={series.map((s) => s.label).join(', ')}>
        {ticks.map((v) => (
          <g key={v}>
            <line class="grid" x1={PAD.left} x2={W - PAD.right} y1={y(v)} y2={y(v)} />
            <text class="axis" x={PAD.left - 6} y={y(v) + 4} text-anchor="end">
              {format(v)}
            </text>
          </g>
        ))}
        {xticks.map((t, i) => (
          <text key={t} class="axis" x={x(t)} y={H - 6} text-anchor={i === 0 ? 'start' : i === 2 ? 'end' : 'middle'}>
            {clock(t)}
          </text>
        ))}
        {series.map((s) =>
          paths(s.points, x, y).map((d, i) => <path key={`${s.label}${i}`} class={`line ${s.cls}`} d={d} />),
        )}
        {series.map((s) => {
          const p = lastPoint(s.points);
          return p && <circle key={`${s.label}-last`} class={`dot ${s.cls}`} cx={x(p[0])} cy={y(p[1])} r="3" />;
        })}
      </svg>
      <figcaption class="legend">
        {series.map((s) => (
          <span key={s.label} class="legend-item">
            <svg width="28" height="10" aria-hidden="true">
              <line class={`line ${s.cls}`} x1="0" x2="28" y1="5" y2="5" />
            </svg>
            {s.label}
            {s.latest !== undefined && <strong> {s.latest}</strong>}
          </span>
        ))}
      </figcaption>
    </figure>
  );
}
