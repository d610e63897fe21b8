// The fragmentation page's rows, from GET /v1/fragmentation: the core placement engine's
// metric (core::PlacementEngine::Fragmentation) for each request shape in use, shown as is.
// The page computes nothing of its own here; it checks that each row keeps the metric's
// identities (free = usable + stranded, all whole numbers >= 0) and says which one breaks.

const UNITS = new Set(['compute slices', 'GPUs', 'core percent']);

export function shapeLabel(shape) {
  if (!shape || typeof shape !== 'object') return String(shape);
  switch (shape.kind) {
    case 'partition':
      return shape.profile;
    case 'whole_gpus':
      return `${shape.gpus} whole GPU${shape.gpus === 1 ? '' : 's'}`;
    case 'share':
      return `mGPU ${shape.core_percent}%${shape.memory_mib ? ` · ${shape.memory_mib} MiB` : ''}`;
    default:
      return JSON.stringify(shape);
  }
}

export function scopeLabel(scope) {
  if (!scope) return 'fleet';
  if (scope.kind === 'endpoint') return `endpoint ${scope.endpoint}${scope.variant ? ` (${scope.variant})` : ''}`;
  if (scope.kind === 'queue') return `queue ${scope.queue}`;
  return scope.kind ?? 'fleet';
}

// {rows, problems}: rows sorted by stranded share, worst first.
export function fragmentationRows(body) {
  const problems = [];
  const rows = [];
  const shapes = Array.isArray(body?.shapes) ? body.shapes : null;
  if (!shapes) {
    problems.push(`shapes=${JSON.stringify(body?.shapes)}: must be an array of request shapes`);
    return { rows, problems };
  }
  shapes.forEach((s, i) => {
    const where = `shapes[${i}] (${shapeLabel(s.shape)})`;
    if (!UNITS.has(s.unit)) {
      problems.push(`${where}: unit=${JSON.stringify(s.unit)}: must be one of ${[...UNITS].join(', ')}`);
      return;
    }
    for (const f of ['free', 'usable', 'stranded', 'copies']) {
      if (!Number.isInteger(s[f]) || s[f] < 0) {
        problems.push(`${where}: ${f}=${JSON.stringify(s[f])}: must be a whole number >= 0`);
        return;
      }
    }
    if (s.usable + s.stranded !== s.free) {
      problems.push(
        `${where}: free=${s.free} but usable=${s.usable} + stranded=${s.stranded} = ` +
          `${s.usable + s.stranded}: free capacity is either usable or stranded`,
      );
      return;
    }
    rows.push({
      ...s,
      label: shapeLabel(s.shape),
      scopeLabel: scopeLabel(s.scope),
      strandedFraction: s.free > 0 ? s.stranded / s.free : 0,
    });
  });
  rows.sort((a, b) => b.strandedFraction - a.strandedFraction || a.label.localeCompare(b.label));
  return { rows, problems };
}
