// A state, told apart by shape and text as well as colour (Okabe-Ito palette; see styles.css):
// ok = filled circle, progress = half circle on stripes, bad = cross on hatching, idle = ring.

const KIND = {
  running: 'ok', inservice: 'ok', ready: 'ok', succeeded: 'ok', placed: 'progress',
  starting: 'progress', creating: 'progress', updating: 'progress', pending: 'progress',
  submitted: 'progress', systemupdating: 'progress', rollingback: 'progress',
  backoff: 'bad', failed: 'bad', notready: 'bad', unhealthy: 'bad', exited: 'bad', lost: 'bad',
  cancelled: 'idle', stopped: 'idle', deleting: 'idle', outofservice: 'bad',
};
const ICON = { ok: '●', progress: '◐', bad: '✕', idle: '○' };

export function stateKind(state) {
  return KIND[String(state ?? '').toLowerCase().replace(/[^a-z]/g, '')] ?? 'idle';
}

export function Badge({ state, label }) {
  const kind = stateKind(state);
  return (
    <span class={`badge badge-${kind}`} data-state={state}>
      <span aria-hidden="true">{ICON[kind]}</span> {label ?? state}
    </span>
  );
}
