// The queue page's task rows: card and share as placed (or requested), and why a task waits.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { orderJobs, taskPlacement, waitReason } from '../../src/model/queues.js';

test("a placed share task shows its card, core and memory", () => {
  const t = { state: 'Running', core_percent: 30, memory_mib: 1000, allocation: { node: 'g5-0', gpus: [3], core_percent: 30, memory_mib: 1000, whole: false } };
  assert.deepEqual(taskPlacement(t), { card: 'g5-0 GPU 3', placed: true, corePercent: 30, memoryMib: 1000, whole: 0 });
});

test('a whole-card task shows cards, not a memory quota', () => {
  const t = { state: 'Running', core_percent: 200, allocation: { node: 'g5-0', gpus: [0, 1], core_percent: 200, memory_mib: 0, whole: true } };
  assert.deepEqual(taskPlacement(t), { card: 'g5-0 GPU 0, 1', placed: true, corePercent: 200, memoryMib: null, whole: 2 });
});

test('a waiting task shows what it asked for and the queue\'s reason', () => {
  const job = { state: 'Pending', reason: 'waiting for cards: task 4 (task, core=30% memory=1000 MiB) does not fit yet' };
  const t = { state: 'Pending', core_percent: 30, memory_mib: null };
  assert.deepEqual(taskPlacement(t), { card: null, placed: false, corePercent: 30, memoryMib: null, whole: 0 });
  assert.equal(waitReason(job, t), job.reason);
  assert.equal(waitReason(job, { state: 'Running' }), null);
  assert.equal(
    waitReason(job, { state: 'Pending', rescheduled: 'node n1 stopped reporting; rescheduled' }),
    `node n1 stopped reporting; rescheduled; ${job.reason}`,
  );
});

test('orders jobs as the queue serves them: priority, then submission; finished last', () => {
  const jobs = [
    { id: 'a', state: 'Succeeded', seq: 1 },
    { id: 'b', state: 'Pending', seq: 3, priority: 0 },
    { id: 'c', state: 'Running', seq: 2, priority: 0 },
    { id: 'd', state: 'Pending', seq: 4, priority: 5 },
  ];
  assert.deepEqual(orderJobs(jobs).map((j) => j.id), ['d', 'c', 'b', 'a']);
});
