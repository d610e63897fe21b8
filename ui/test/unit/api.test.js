// The signed client: what it puts on the wire, and how it reads the server's errors.
import assert from 'node:assert/strict';
import { webcrypto } from 'node:crypto';
import { test } from 'node:test';

import {makeClient} from '../../src/lib/api.js';
import { deriveSigningKey } from '../../src/lib/sigv4.js';

const { subtle } = webcrypto;
const SECRET = 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY';
const NOW = Date.UTC(2026, 2, 15, 10, 11, 12);

async function client(answers) {
  const key = await deriveSigningKey(subtle, SECRET, '20260315', 'us-east-1', 'sagemaker');
  const sent = [];
  const fetchImpl = async (url, init) => {
    sent.push({ url, ...init });
    const [status, body] = answers.shift();
    return {
      ok: status >= 200 && status < 300,
      status,
      statusText: '',
      json: async () => JSON.parse(body),
      text: async () => body,
    };
  };
  const c = makeClient({
    subtle,
    now: () => NOW,
    credential: () => ({ accessKeyId: 'AKIDEXAMPLE', key, region: 'us-east-1', service: 'sagemaker' }),
    fetchImpl,
    host: '127.0.0.1:8080',
  });
  return { c, sent };
}

test('signs a GET with its own headers, sends no cookie and no Host of its own', async () => {
  const { c, sent } = await client([[200, '{"nodes": []}']]);
  assert.deepEqual(await c.get(['v1', 'queues', 'a b', 'gpu'], { lines: 5 }), { nodes: [] });
  assert.equal(sent[0].url, '/v1/queues/a%20b/gpu?lines=5');
  assert.equal(sent[0].credentials, 'omit');
  assert.equal(sent[0].headers.Host, undefined);
  assert.equal(sent[0].headers['X-Amz-Date'], '20260315T101112Z');
  assert.match(
    sent[0].headers.Authorization,
    /^AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE\/20260315\/us-east-1\/sagemaker\/aws4_request, SignedHeaders=host;x-amz-date, Signature=[0-9a-f]{64}$/,
  );
  assert.ok(!JSON.stringify(sent).includes(SECRET));
});

test('calls a SageMaker operation with the awsJson1_1 target, signed', async () => {
  const { c, sent } = await client([[200, '{"Endpoints": []}']]);
  await c.sagemaker('ListEndpoints', { MaxResults: 1 });
  assert.equal(sent[0].method, 'POST');
  assert.equal(sent[0].body, '{"MaxResults":1}');
  assert.equal(sent[0].headers['X-Amz-Target'], 'SageMaker.ListEndpoints');
  assert.match(sent[0].headers.Authorization, /SignedHeaders=content-type;host;x-amz-date;x-amz-target,/);
});

test('reads the server\'s error shapes, and knows a refused signature', async () => {
  const { c } = await client([
    [403, '{"__type": "InvalidSignatureException", "message": "The request signature we calculated does not match"}'],
    [404, '{"error": "queue q not found", "code": "NotFound"}'],
    [500, 'oops'],
  ]);
  await assert.rejects(c.get(['v1', 'fleet']), (e) => e.isAuth && e.type === 'InvalidSignatureException' && e.status === 403);
  await assert.rejects(c.get(['v1', 'queues', 'q']), (e) => !e.isAuth && e.type === 'NotFound' && e.message === 'queue q not found');
  await assert.rejects(c.get(['v1', 'x']), (e) => e.type === 'HTTP500' && e.message === 'oops');
});
