// Queues: for each queue its mGPU core and memory, allocated against used, over time; its
// cards and workers now; jobs and tasks with state, card and share, and why a waiting task
// waits (the queue's own rule-named reason).

import { Badge } from '../components/Badge.jsx';
import { ApiErrorNotice } from '../components/Notice.jsx';
import { TimeChart } from '../components/TimeChart.jsx';
import { useApi, usePoll } from '../hooks.js';
import * as fmt from '../model/format.js';
import { measured, orderJobs, taskCounts, taskPlacement, waitReason } from '../model/queues.js';

async function loadQueues(client) {
  const { queues } = await client.get(['v1', 'queues']);
  return Promise.all(
    queues.map(async (q) => {
      const [gpu, jobs] = await Promise.all([
        client.get(['v1', 'queues', q.name, 'gpu']).catch((e) => ({ error: e })),
        client.get(['v1', 'queues', q.name, 'jobs']).catch((e) => ({ error: e, jobs: [] })),
      ]);
      return { queue: q, gpu, jobs: jobs.jobs ?? [], jobsError: jobs.error };
    }),
  );
}

function shareText(p) {
  if (p.corePercent === null) return '—';
  if (p.whole) return `${p.whole} whole card${p.whole === 1 ? '' : 's'}`;
  return `${fmt.percent(p.corePercent)} core · ${p.memoryMib === null ? 'memory ∝ core' : fmt.mibExact(p.memoryMib)}`;
}

function History({ name, history }) {
  const h = history?.queues?.find((q) => q.queue === name);
  if (!h || !h.points.length) return <p class="muted small">No history yet (the server samples every {((history?.step_ms ?? 5000) / 1000).toFixed(0)} s).</p>;
  const from = history.now_ms - history.window_ms;
  const last = h.points[h.points.length - 1];
  const pts = (pick) => h.points.map((p) => [p.t_ms, pick(p)]);
  return (
    <div class="charts">
      <div>
        <h4>core: allocated vs used (% of one card)</h4>
        <TimeChart
          testid="chart-core"
          from={from}
          to={history.now_ms}
          format={(v) => `${v.toFixed(0)}%`}
          yMax={Math.max(100, last.core_capacity_percent)}
          series={[
            { label: 'capacity', cls: 'line-cap', points: pts((p) => p.core_capacity_percent), latest: fmt.percent(last.core_capacity_percent) },
            { label: 'allocated', cls: 'line-a', points: pts((p) => p.core_allocated_percent), latest: fmt.percent(last.core_allocated_percent) },
            {
              label: 'used (measured)',
              cls: 'line-b',
              points: pts((p) => p.core_used_percent),
              latest: last.core_used_percent === null ? fmt.NOT_MEASURED : `${fmt.percent(last.core_used_percent, 1)} (${last.workers_core_measured} of ${last.workers} workers)`,
            },
          ]}
        />
      </div>
      <div>
        <h4>memory: allocated vs used (MiB)</h4>
        <TimeChart
          testid="chart-memory"
          from={from}
          to={history.now_ms}
          format={(v) => (v >= 10240 ? `${(v / 1024).toFixed(0)} Gi` : v.toFixed(0))}
          yMax={Math.max(1, last.memory_capacity_mib)}
          series={[
            { label: 'capacity', cls: 'line-cap', points: pts((p) => p.memory_capacity_mib), latest: fmt.mib(last.memory_capacity_mib) },
            { label: 'allocated', cls: 'line-a', points: pts((p) => p.memory_allocated_mib), latest: fmt.mibExact(last.memory_allocated_mib) },
            {
              label: 'used (measured)',
              cls: 'line-b',
              points: pts((p) => p.memory_used_mib),
              latest: last.memory_used_mib === null ? fmt.NOT_MEASURED : `${fmt.mibExact(last.memory_used_mib)} (${last.workers_memory_measured} of ${last.workers} workers)`,
            },
          ]}
        />
      </div>
    </div>
  );
}

function Cards({ gpu }) {
  if (gpu?.error) return <ApiErrorNotice error={gpu.error} what="GPU view" />;
  const t = gpu?.totals;
  if (!t) return null;
  return (
    <>
      <p>
        <strong>{fmt.percent(t.core_allocated_percent)}</strong> of {fmt.percent(t.core_capacity_percent)} core allocated ·{' '}
        <strong>{fmt.mibExact(t.memory_allocated_mib)}</strong> of {fmt.mib(t.memory_capacity_mib)} memory allocated ·{' '}
        {fmt.count(t.workers, 'worker')} · enforcement {gpu.enforcement}
      </p>
      <table class="compact">
        <thead>
          <tr>
            <th>card</th>
            <th class="num">core allocated</th>
            <th class="num">utilization measured</th>
            <th class="num">memory allocated</th>
            <th class="num">memory measured</th>
            <th class="num">workers</th>
          </tr>
        </thead>
        <tbody>
          {gpu.cards.map((c) => (
            <tr key={`${c.node}/${c.gpu}`} data-testid="card">
              <td>
                {c.node} GPU {c.gpu} <span class="muted">{c.model}</span>
              </td>
              <td class="num">{fmt.percent(c.allocated.core_percent)}</td>
              <td class="num">{fmt.percent(measured(c.used.utilization_percent))}</td>
              <td class="num">
                {fmt.mibExact(c.allocated.memory_mib)} / {fmt.mib(c.memory_capacity_mib)}
              </td>
              <td class="num">{fmt.mibExact(measured(c.used.memory_mib))}</td>
              <td class="num">{c.allocated.workers}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </>
  );
}

function Job({ job }) {
  const counts = taskCounts(job);
  return (
    <details class="job" data-testid="job" data-job={job.id} open={job.state === 'Pending' || job.state === 'Running'}>
      <summary>
        <strong>{job.id}</strong> {job.name && <span>{job.name}</span>} <span class="muted">{job.type}</span> <Badge state={job.state} />{' '}
        <span class="small">
          {Object.entries(counts).map(([s, n]) => (
            <span key={s} class="state-count">
              {n} {s}
            </span>
          ))}
        </span>
        {job.priority ? <span class="muted"> · priority {job.priority}</span> : null}
      </summary>
      {job.reason && (
        <p class={job.state === 'Failed' ? 'reason reason-bad' : 'reason'} data-testid="job-reason">
          {job.reason}
        </p>
      )}
      <table class="compact">
        <thead>
          <tr>
            <th class="num">task</th>
            <th>role</th>
            <th>state</th>
            <th>card</th>
            <th>share</th>
            <th class="num">attempt</th>
            <th>why it waits / last message</th>
          </tr>
        </thead>
        <tbody>
          {(job.tasks ?? []).map((t) => {
            const p = taskPlacement(t);
            const why = waitReason(job, t);
            return (
              <tr key={t.index} data-testid="task" data-task={t.index}>
                <td class="num">{t.index}</td>
                <td>{t.role}</td>
                <td>
                  <Badge state={t.state} />
                </td>
                <td>{p.card ?? <span class="muted">not placed</span>}</td>
                <td data-testid="task-share">
                  {shareText(p)}
                  {!p.placed && p.corePercent !== null && <span class="muted"> (requested)</span>}
                </td>
                <td class="num">{t.attempt}</td>
                <td class="small">{why ?? t.message ?? ''}</td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </details>
  );
}

function QueueSection({ q, history }) {
  const { queue, gpu, jobs } = q;
  const ordered = orderJobs(jobs);
  return (
    <section class="queue" data-testid="queue" data-queue={queue.name}>
      <header class="node-head">
        <h3>{queue.name}</h3>
        <span class={queue.mgpu ? 'mode mode-mgpu' : 'mode mode-whole'}>{queue.mgpu ? 'mGPU' : 'whole cards'}</span>
        <span class="muted">
          {queue.strategy} · {queue.enforcement}
          {queue.gang ? ' · gang' : ''} · nodes {(queue.nodes ?? []).join(', ') || 'none'}
        </span>
      </header>
      <History name={queue.name} history={history} />
      <Cards gpu={gpu} />
      <h4>jobs</h4>
      <ApiErrorNotice error={q.jobsError} what="jobs" />
      {ordered.length === 0 && <p class="muted">No jobs.</p>}
      {ordered.map((j) => (
        <Job key={j.id} job={j} />
      ))}
    </section>
  );
}

export function QueuesPage() {
  const { client } = useApi();
  const queues = usePoll(() => loadQueues(client), 2000);
  const history = usePoll(() => client.get(['v1', 'ui', 'metrics']), 5000);
  return (
    <div>
      <ApiErrorNotice error={queues.error} what="GET /v1/queues" />
      <ApiErrorNotice error={history.error} what="GET /v1/ui/metrics" />
      {queues.data === undefined && !queues.error && <p class="muted">Loading queues…</p>}
      {queues.data?.length === 0 && <p class="muted">This account has no queues.</p>}
      {queues.data?.map((q) => (
        <QueueSection key={q.queue.name} q={q} history={history.data} />
      ))}
    </div>
  );
}
