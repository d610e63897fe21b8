// The queue page's rows, from /v1/queues/{q}/jobs and /v1/queues/{q}/gpu (docs/mgpu.md).

const FINISHED = new Set(['Succeeded', 'Failed', 'Cancelled']);

export function isFinished(job) {
  return FINISHED.has(job.state);
}

// A task's card and share as placed, or as requested while it waits.
export function taskPlacement(task) {
  const a = task.allocation;
  if (a) {
    const card = `${a.node} GPU ${(a.gpus ?? []).join(', ')}`;
    if (a.whole || a.core_percent >= 100) {
      const n = (a.gpus ?? []).length || Math.max(1, Math.floor(a.core_percent / 100));
      return { card, placed: true, corePercent: 100 * n, memoryMib: null, whole: n };
    }
    return { card, placed: true, corePercent: a.core_percent, memoryMib: a.memory_mib, whole: 0 };
  }
  if (task.core_percent === undefined) return { card: null, placed: false, corePercent: null, memoryMib: null, whole: 0 };
  return {
    card: null,
    placed: false,
    corePercent: task.core_percent,
    memoryMib: task.memory_mib ?? null, // null: proportional to core (docs/mgpu.md)
    whole: task.core_percent >= 100 ? Math.floor(task.core_percent / 100) : 0,
  };
}

// Why a task is not running yet, or null. A Pending job's reason names the first task that
// does not fit; the queue is strict FIFO per priority, so the job's other waiting tasks wait
// behind it and later jobs wait behind the job.
export function waitReason(job, task) {
  if (task.state !== 'Pending') return null;
  if (task.rescheduled) return `${task.rescheduled}${job.reason ? `; ${job.reason}` : ''}`;
  if (job.reason) return job.reason;
  if (job.state === 'Submitted') return 'submitted; the next reconcile pass places it';
  return 'waiting for the next placement pass';
}

export function taskCounts(job) {
  const out = {};
  for (const t of job.tasks ?? []) out[t.state] = (out[t.state] ?? 0) + 1;
  return out;
}

// Jobs in the order the queue serves them: unfinished first by priority (higher first) then
// submission order; finished ones after, newest first.
export function orderJobs(jobs) {
  return [...jobs].sort((a, b) => {
    const fa = isFinished(a);
    const fb = isFinished(b);
    if (fa !== fb) return fa ? 1 : -1;
    if (!fa) return (b.priority ?? 0) - (a.priority ?? 0) || (a.seq ?? 0) - (b.seq ?? 0);
    return (b.seq ?? 0) - (a.seq ?? 0);
  });
}

// The GPU view reports a figure nobody measured as the string "not measured".
export function measured(v) {
  return typeof v === 'number' && Number.isFinite(v) ? v : null;
}
