// The dashboard from another machine (issue 34, deliverable 5). The browser offers WebCrypto,
// which the dashboard signs every request with, only in a secure context: https, or http on
// localhost. So a page reached by a name that is not localhost must come over https, which
// `carve server --tls on` serves with a certificate it generates.
//
// Chromium reaches the server by the name carve.test, which it resolves to 127.0.0.1
// (--host-resolver-rules), so to the browser this is a remote host while no packet leaves
// loopback. It trusts the generated certificate only by the pin the server printed:
// --ignore-certificate-errors-spki-list takes the same SHA-256 of the SubjectPublicKeyInfo
// that `carve agent --server-cert-sha256` does, in base64.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import { ACCOUNT_A, CarveServer, launchBrowser, login, newPage, pollUntil, screenshot } from './harness.mjs';

const NAME = 'carve.test';
const RESOLVE = `--host-resolver-rules=MAP ${NAME} 127.0.0.1`;

function spkiList(pin) {
  return Buffer.from(pin.slice('sha256:'.length), 'hex').toString('base64');
}

describe('the dashboard at a name that is not localhost', { timeout: 3 * 60 * 1000 }, () => {
  let https; // carve server --tls on, its certificate naming carve.test
  let plain; // carve server --tls off
  let browser; // trusts https's certificate by its pin

  before(async () => {
    https = await new CarveServer({ args: ['--tls', 'on', '--tls-san', NAME] }).start();
    plain = await new CarveServer({ args: ['--tls', 'off'] }).start();
    assert.equal(https.scheme, 'https');
    assert.match(https.pin ?? '', /^sha256:[0-9a-f]{64}$/, 'the server prints its certificate pin');
    assert.equal(plain.scheme, 'http');
    browser = await launchBrowser([RESOLVE, `--ignore-certificate-errors-spki-list=${spkiList(https.pin)}`]);
  });

  after(async () => {
    await browser?.close();
    for (const s of [https, plain]) {
      await s?.stop();
      s?.cleanup();
    }
  });

  test('over https it is a secure context: the user signs in and the fleet is read', async () => {
    const base = `https://${NAME}:${https.port}`;
    const { context, page, seen } = await newPage(browser, https, base);
    try {
      await login(page, https, 'default', base);
      assert.equal(await page.evaluate(() => window.isSecureContext), true);
      const account = await page.getByTestId('account').innerText();
      assert.ok(account.split(/\s+/).includes(ACCOUNT_A), `signed in as ${account}`);
      // The fleet page's first signed read comes after the sign-in.
      await pollUntil(() => seen.some((r) => new URL(r.url).pathname === '/v1/fleet' && r.status === 200), {
        timeoutMs: 15000,
        what: 'a signed GET /v1/fleet answered 200 over https',
      });
      assert.ok(seen.every((r) => r.url.startsWith('https://')), 'every request went over https');
      await screenshot(page, 'tls-dashboard');
    } finally {
      await context.close();
    }
  });

  test('a browser without the pin refuses the generated certificate', async () => {
    const untrusting = await launchBrowser([RESOLVE]);
    try {
      const page = await (await untrusting.newContext()).newPage();
      await assert.rejects(page.goto(`https://${NAME}:${https.port}/ui/`), /ERR_CERT_AUTHORITY_INVALID/);
    } finally {
      await untrusting.close();
    }
  });

  test('over plain http it is not, and the page says so instead of a form that cannot sign', async () => {
    const base = `http://${NAME}:${plain.port}`;
    const { context, page } = await newPage(browser, plain, base);
    try {
      await page.goto(`${base}/ui/`);
      assert.equal(await page.evaluate(() => window.isSecureContext), false);
      const alert = page.getByRole('alert');
      await alert.waitFor();
      const text = await alert.innerText();
      assert.match(text, /not a secure context/);
      assert.match(text, /--tls/, 'the notice names the server flag that fixes it');
      assert.equal(await page.getByTestId('access-key').count(), 0);
      await screenshot(page, 'tls-plain-http-notice');
    } finally {
      await context.close();
    }
  });
});
