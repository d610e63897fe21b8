// The browser's SigV4 signer against the AWS documentation's vectors and against botocore,
// the signer carve's server is verified against (src/server/sigv4_test.cc).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { webcrypto } from 'node:crypto';
import { test } from 'node:test';

import {
  amzDate,
  canonicalQuery,
  canonicalUri,
  deriveSigningKey,
  encodePath,
  signingKeyBytes,
  signRequest,
} from '../../src/lib/sigv4.js';

const { subtle } = webcrypto;
const SECRET = 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY';
const hex = (b) => Buffer.from(b).toString('hex');

test('derives the documented signing key for 20150830/us-east-1/iam', async () => {
  const key = await signingKeyBytes(subtle, SECRET, '20150830', 'us-east-1', 'iam');
  assert.equal(hex(key), 'c4afb1cc5771d871763a393e44b703571b55cc28424d1a5e86da6ed3c154a4b9');
});

test('rejects a day that is not YYYYMMDD, naming it', async () => {
  await assert.rejects(signingKeyBytes(subtle, SECRET, '2015-08-30', 'us-east-1', 'iam'), {
    message: 'day=2015-08-30: must be YYYYMMDD',
  });
});

test('produces the get-vanilla Authorization header of the AWS test suite', async () => {
  const key = await deriveSigningKey(subtle, SECRET, '20150830', 'us-east-1', 'service');
  assert.equal(key.extractable, false);
  const { headers, canonicalRequest } = await signRequest(
    subtle,
    { method: 'GET', path: '/', headers: { Host: 'example.amazonaws.com' } },
    { accessKeyId: 'AKIDEXAMPLE', key, region: 'us-east-1', service: 'service' },
    new Date(Date.UTC(2015, 7, 30, 12, 36, 0)),
  );
  assert.equal(
    canonicalRequest,
    'GET\n/\n\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z\n\nhost;x-amz-date\n' +
      'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855',
  );
  assert.equal(headers['X-Amz-Date'], '20150830T123600Z');
  assert.equal(
    headers.Authorization,
    'AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, ' +
      'SignedHeaders=host;x-amz-date, ' +
      'Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31',
  );
});

test('normalises the canonical URI as the server does (non-S3, encoded twice)', () => {
  assert.equal(canonicalUri('/'), '/');
  assert.equal(canonicalUri('/v1/queues/a%20b/gpu'), '/v1/queues/a%2520b/gpu');
  assert.equal(canonicalUri('/a/./b/../c//d/'), '/a/c/d/');
  assert.equal(encodePath(['v1', 'queues', "q (1)!"]), '/v1/queues/q%20%281%29%21');
});

test('sorts and re-encodes the canonical query', () => {
  assert.equal(canonicalQuery('b=2&a=x+y&a=%41&c'), 'a=A&a=x%20y&b=2&c=');
  assert.equal(canonicalQuery(''), '');
});

test('formats X-Amz-Date without separators or milliseconds', () => {
  assert.equal(amzDate(new Date(Date.UTC(2026, 0, 2, 3, 4, 5, 678))), '20260102T030405Z');
});

// botocore is what the aws CLI signs with and what the server's own tests check against: the
// same request signed here and there must carry the same signature, for a POST with a body,
// a path that needs encoding, and a query.
test('agrees with botocore on a signed POST with a path and a query', async (t) => {
  const python = `
import datetime, json
import botocore.auth
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

class Fixed(datetime.datetime):
    @classmethod
    def utcnow(cls):
        return cls(2026, 3, 15, 10, 11, 12)
    @classmethod
    def now(cls, tz=None):
        return cls(2026, 3, 15, 10, 11, 12, tzinfo=tz)

botocore.auth.datetime.datetime = Fixed  # botocore stamps X-Amz-Date from the clock
req = AWSRequest(method="POST", url="http://127.0.0.1:8080/v1/queues/a%20b/jobs?z=1&a=b%2Fc",
                 data='{"x": "y  z"}', headers={"Content-Type": "application/json"})
SigV4Auth(Credentials("AKIDEXAMPLE", "${SECRET}"), "sagemaker", "eu-west-1").add_auth(req)
print(json.dumps(dict(req.headers.items())))
`;
  let botocore;
  try {
    botocore = JSON.parse(execFileSync('python3', ['-c', python], { encoding: 'utf8' }));
  } catch (e) {
    t.skip(`python3 with botocore is not available here: ${e.message.split('\n')[0]}`);
    return;
  }
  const key = await deriveSigningKey(subtle, SECRET, '20260315', 'eu-west-1', 'sagemaker');
  const { headers } = await signRequest(
    subtle,
    {
      method: 'POST',
      path: '/v1/queues/a%20b/jobs',
      query: 'z=1&a=b%2Fc',
      body: '{"x": "y  z"}',
      headers: { Host: '127.0.0.1:8080', 'Content-Type': 'application/json' },
    },
    { accessKeyId: 'AKIDEXAMPLE', key, region: 'eu-west-1', service: 'sagemaker' },
    new Date(Date.UTC(2026, 2, 15, 10, 11, 12)),
  );
  assert.equal(headers.Authorization, botocore.Authorization);
});
