// Every number carries its unit; nothing measured reads "not measured", never 0.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import * as fmt from '../../src/model/format.js';
import { parseCredentialsFile } from '../../src/lib/credentials_file.js';
import { loginProblems } from '../../src/pages/login_rules.js';

test('formats figures with their units', () => {
  assert.equal(fmt.mibExact(1000), '1000 MiB');
  assert.equal(fmt.mibExact(23552), '23552 MiB');
  assert.equal(fmt.mib(23552), '23 GiB');
  assert.equal(fmt.mib(812), '812 MiB');
  assert.equal(fmt.mib(4096), '4 GiB');
  assert.equal(fmt.mib(1179648), '1152 GiB');
  assert.equal(fmt.percent(30), '30%');
  assert.equal(fmt.percent(27.54, 1), '27.5%');
  assert.equal(fmt.usdPerHour(37.688), '$37.69/h');
  assert.equal(fmt.usdPerHour(0.2691), '$0.269/h');
  assert.equal(fmt.ms(95.5), '96 ms');
  assert.equal(fmt.ms(1250), '1.25 s');
  assert.equal(fmt.perSecond(2.5), '2.5 req/s');
  assert.equal(fmt.vcpus(1, 96), '1 / 96 vCPUs');
});

test('a missing figure says so instead of printing 0', () => {
  for (const f of [fmt.mib, fmt.mibExact, fmt.percent, fmt.perSecond]) {
    assert.equal(f(null), 'not measured');
    assert.equal(f(undefined), 'not measured');
  }
  assert.equal(fmt.usdPerMillionTokens(null), 'tokens not counted');
  assert.equal(fmt.usdPerHour(null), 'no price');
});

test('reads profiles from a shared-credentials file', () => {
  const { profiles, problems } = parseCredentialsFile(
    '[default]\naws_access_key_id = AKIAAAAAAAAAAAAAAAAA\naws_secret_access_key = s1\ncarve_account_id = 111122223333\n' +
      '\n# comment\n[other]\naws_access_key_id=AKIABBBBBBBBBBBBBBBB\n[bad]\nnonsense\n',
  );
  assert.deepEqual(profiles, [
    { profile: 'default', accessKeyId: 'AKIAAAAAAAAAAAAAAAAA', secretAccessKey: 's1', accountId: '111122223333' },
  ]);
  assert.deepEqual(problems, ['[other]: aws_access_key_id without aws_secret_access_key', 'line 10: expected "[profile]" or "key = value"']);
});

test('login fields name the field, the value and the rule, never the secret', () => {
  assert.deepEqual(loginProblems({ accessKeyId: 'akia lower', secret: 'has space', region: 'mars' }), [
    'access key id "akia lower": must be 16 to 128 capital letters and digits (e.g. AKIA…)',
    'secret access key: must not contain spaces or line breaks',
    'region "mars": must look like us-east-1',
  ]);
  assert.deepEqual(loginProblems({ accessKeyId: 'AKIAAAAAAAAAAAAAAAAA', secret: 'x', region: 'us-east-1' }), []);
});
