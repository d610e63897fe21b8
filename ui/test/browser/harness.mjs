// The browser tests' harness: a real `carve server` ($CARVE_BIN) on a free loopback port with a
// temporary data dir, driven by the stock aws CLI and the carve CLI as a user would, and
// Debian's Chromium driven by playwright-core. Nothing sleeps to wait: every wait polls with a
// deadline. Screenshots go to $CARVE_UI_ARTIFACTS (CTest: build/ui/artifacts).

import { execFile, spawn } from 'node:child_process';
import { randomInt } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';

import { chromium } from 'playwright-core';

const run = promisify(execFile);

export const SOURCE_DIR = process.env.CARVE_SOURCE_DIR ?? resolve(new URL('../../..', import.meta.url).pathname);
export const CARVE_BIN = process.env.CARVE_BIN ?? join(SOURCE_DIR, 'build', 'carve');
export const ARTIFACTS = process.env.CARVE_UI_ARTIFACTS ?? join(SOURCE_DIR, 'build', 'ui', 'artifacts');
const CHROMIUM = process.env.CARVE_CHROMIUM ?? '/usr/bin/chromium';

export const ACCOUNT_A = '111122223333';
export const ACCOUNT_B = '444455556666';

// One fleet for the whole suite: the seed's p4d for the endpoint, a g5 for the mGPU queue.
const FLEET = `fleet:
  carve_time_ms: 20
  nodes:
    - instance_type: ml.p4d.24xlarge
      count: 1
    - instance_type: ml.g5.48xlarge
      count: 1
runtimes:
  default_runtime: carve/testmodel
`;

function randomKey(alphabet, n) {
  return Array.from({ length: n }, () => alphabet[randomInt(alphabet.length)]).join('');
}

function newCredential(profile, account) {
  const upper = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ';
  return {
    profile,
    account,
    accessKeyId: 'AKIA' + randomKey(upper + '234567', 16),
    secret: randomKey(upper + upper.toLowerCase() + '0123456789', 40),
  };
}

export async function pollUntil(fn, { timeoutMs = 30000, intervalMs = 100, what = 'condition' } = {}) {
  const deadline = Date.now() + timeoutMs;
  let last;
  while (Date.now() < deadline) {
    last = await fn();
    if (last) return last;
    await new Promise((r) => setTimeout(r, intervalMs));
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}; last=${JSON.stringify(last)}`);
}

export class CarveServer {
  // `args`: more `carve server` flags (`--tls on`, say).
  constructor({ args = [] } = {}) {
    this.args = args;
    this.dir = mkdtempSync(join(tmpdir(), 'carve-ui-'));
    this.config = join(this.dir, 'carve.yaml');
    this.credentialsFile = join(this.dir, 'credentials');
    this.log = join(this.dir, 'server.log');
    writeFileSync(this.config, FLEET);
    // Two accounts, written before the first start (the server loads an existing file).
    this.users = { default: newCredential('default', ACCOUNT_A), other: newCredential('other', ACCOUNT_B) };
    writeFileSync(
      this.credentialsFile,
      Object.values(this.users)
        .map(
          (u) =>
            `[${u.profile}]\naws_access_key_id = ${u.accessKeyId}\naws_secret_access_key = ${u.secret}\n` +
            `carve_account_id = ${u.account}\n`,
        )
        .join('\n'),
      { mode: 0o600 },
    );
  }

  async start(timeoutMs = 30000) {
    if (!existsSync(CARVE_BIN)) throw new Error(`CARVE_BIN ${CARVE_BIN} does not exist: build carve first`);
    this.output = '';
    this.proc = spawn(
      CARVE_BIN,
      ['server', '--listen', '127.0.0.1:0', '--data-dir', this.dir, '--config', this.config, '--log-level', 'info', ...this.args],
      // The port guard (--sandbox-network) would edit the host's iptables: off in tests.
      { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, CARVE_SANDBOX_NETWORK: 'off' } },
    );
    const onData = (d) => {
      this.output += d.toString();
    };
    this.proc.stdout.on('data', onData);
    this.proc.stderr.on('data', onData);
    const m = await pollUntil(() => /listening on (https?):\/\/127\.0\.0\.1:(\d+)/.exec(this.output) ?? (this.proc.exitCode !== null ? 'exited' : null), {
      timeoutMs,
      what: 'carve server to listen',
    });
    if (m === 'exited') throw new Error(`carve server exited:\n${this.output}`);
    this.scheme = m[1];
    this.port = Number(m[2]);
    this.url = `${this.scheme}://127.0.0.1:${this.port}`;
    // Over https: the pin of its certificate as the server printed it (docs/security.md, "TLS").
    this.pin = /TLS: certificate \S+ \(.*\), pin (sha256:[0-9a-f]{64})/.exec(this.output)?.[1] ?? null;
    return this;
  }

  async stop() {
    if (this.proc && this.proc.exitCode === null) {
      const exited = new Promise((r) => this.proc.once('exit', r));
      this.proc.kill('SIGTERM');
      // The grace timer is cleared once the server exits: a pending timer keeps node's event
      // loop, and so the whole test process, alive for the rest of its 20 s.
      let grace;
      await Promise.race([exited, new Promise((r) => (grace = setTimeout(r, 20000)))]);
      clearTimeout(grace);
      if (this.proc.exitCode === null && this.proc.signalCode === null) this.proc.kill('SIGKILL');
    }
    writeFileSync(this.log, this.output ?? '');
  }

  cleanup() {
    if (!process.env.CARVE_TEST_KEEP) rmSync(this.dir, { recursive: true, force: true });
  }

  awsEnv(profile) {
    return {
      ...process.env,
      AWS_SHARED_CREDENTIALS_FILE: this.credentialsFile,
      AWS_DATA_PATH: join(SOURCE_DIR, 'contrib', 'aws'),
      AWS_DEFAULT_REGION: 'us-east-1',
      AWS_PROFILE: profile,
      AWS_CONFIG_FILE: '/dev/null',
      AWS_MAX_ATTEMPTS: '1',
    };
  }

  // `aws sagemaker <args>` as `profile`; the parsed JSON output.
  async aws(args, profile = 'default', service = 'sagemaker') {
    try {
      const { stdout } = await run('aws', [service, ...args, '--endpoint-url', this.url, '--output', 'json'], {
        env: this.awsEnv(profile),
        timeout: 60000,
      });
      return stdout.trim() ? JSON.parse(stdout) : {};
    } catch (e) {
      throw new Error(`aws ${service} ${args[0]} failed: ${e.stderr || e.message}`);
    }
  }

  // The carve CLI against this server.
  async carve(args) {
    try {
      const { stdout } = await run(
        CARVE_BIN,
        [...args, '--endpoint-url', this.url, '--credentials', this.credentialsFile, '--json'],
        { timeout: 60000 },
      );
      return stdout.trim() ? JSON.parse(stdout) : {};
    } catch (e) {
      throw new Error(`carve ${args.join(' ')} failed: ${e.stderr || e.message}`);
    }
  }

  // What the layout engine places on one GPU of `instanceType`: [{profile, start, size}].
  async layoutStarts(instanceType, profiles) {
    const { stdout } = await run(CARVE_BIN, ['layout', 'check', '--instance-type', instanceType, ...profiles, '--json']);
    return JSON.parse(stdout);
  }
}

// `args`: more Chromium switches (a host resolver rule, a trusted key's pin).
export async function launchBrowser(args = []) {
  if (!existsSync(CHROMIUM)) {
    throw new Error(`${CHROMIUM} is missing: scripts/setup.sh installs Debian's chromium (make test runs it)`);
  }
  // playwright-core passes --headless and a fresh --user-data-dir of its own (a temporary
  // profile per launch); the rest keep Chromium from reaching the network.
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    timeout: 30000,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      ...args,
    ],
  });
}

// A fresh context (its own storage) at 1280x800, recording every response from the server (at
// `base`: the server's own URL unless the page reaches it by another name).
export async function newPage(browser, server, base = server.url) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await context.newPage();
  page.setDefaultTimeout(15000);
  const seen = [];
  page.on('response', async (res) => {
    const url = res.url();
    if (!url.startsWith(base)) return;
    const entry = { url, status: res.status(), method: res.request().method(), headers: res.request().headers(), body: '' };
    seen.push(entry);
    try {
      entry.body = (await res.body()).toString('utf8');
    } catch {
      // A redirect or a body the page no longer holds.
    }
  });
  page.on('pageerror', (e) => seen.push({ url: 'pageerror', status: 0, body: String(e) }));
  return { context, page, seen };
}

export async function login(page, server, profile = 'default', base = server.url) {
  const u = server.users[profile];
  await page.goto(`${base}/ui/`);
  await page.getByTestId('access-key').fill(u.accessKeyId);
  await page.getByTestId('secret-key').fill(u.secret);
  await page.getByTestId('sign-in').click();
  await page.getByTestId('account').waitFor();
}

export async function screenshot(page, name) {
  mkdirSync(ARTIFACTS, { recursive: true });
  const path = join(ARTIFACTS, `${name}.png`);
  await page.screenshot({ path, fullPage: true });
  return path;
}

// Everything the server wrote to stdout and stderr so far (info level and above).
export function readLog(server) {
  return server.output ?? '';
}
