// Number formatting: every figure the dashboard shows carries its unit, and a figure nobody
// measured reads "not measured", never 0.

export const NOT_MEASURED = 'not measured';

function isNum(v) {
  return typeof v === 'number' && Number.isFinite(v);
}

function trim(v, digits) {
  return Number(v.toFixed(digits)).toLocaleString('en-US', { maximumFractionDigits: digits, useGrouping: false });
}

export function mib(v) {
  if (!isNum(v)) return NOT_MEASURED;
  if (Math.abs(v) >= 1024) return `${trim(v / 1024, 1)} GiB`;
  return `${trim(v, 0)} MiB`;
}

// Memory in MiB, exactly and without digit grouping, as shares are written
// (emr.serverless.mgpu.memory=1000 is "1000 MiB", not "0.98 GiB").
export function mibExact(v) {
  return isNum(v) ? `${Math.round(v)} MiB` : NOT_MEASURED;
}

export function percent(v, digits = 0) {
  return isNum(v) ? `${trim(v, digits)}%` : NOT_MEASURED;
}

export function usdPerHour(v) {
  if (!isNum(v)) return 'no price';
  return `$${v < 1 ? v.toFixed(3) : v.toFixed(2)}/h`;
}

export function usdPerMillionTokens(v) {
  return isNum(v) ? `$${v < 1 ? v.toFixed(3) : v.toFixed(2)}/M tok` : 'tokens not counted';
}

export function perSecond(v, what = 'req') {
  if (!isNum(v)) return NOT_MEASURED;
  return `${trim(v, v < 10 ? 2 : 1)} ${what}/s`;
}

export function ms(v) {
  if (!isNum(v)) return '–';
  if (v >= 1000) return `${trim(v / 1000, 2)} s`;
  return `${trim(v, v < 10 ? 1 : 0)} ms`;
}

export function vcpus(used, total) {
  return `${trim(used ?? 0, 1)} / ${trim(total ?? 0, 0)} vCPUs`;
}

export function count(v, one, many = `${one}s`) {
  return `${v} ${v === 1 ? one : many}`;
}

// "3 s ago", "2 min ago" for an age in milliseconds.
export function age(msAgo) {
  if (!isNum(msAgo)) return '';
  const s = Math.max(0, Math.round(msAgo / 1000));
  if (s < 60) return `${s} s ago`;
  const m = Math.round(s / 60);
  if (m < 60) return `${m} min ago`;
  return `${Math.round(m / 60)} h ago`;
}

export function clock(tMs) {
  const d = new Date(tMs);
  return d.toTimeString().slice(0, 8);
}
