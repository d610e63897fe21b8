// The dashboard's session: which access key signs, for which account, with which derived keys.
//
// Login takes the access key id and secret once, derives the SigV4 signing keys for today and
// tomorrow (UTC) as non-extractable CryptoKeys (sigv4.js), asks the server who the key belongs
// to (GET /v1/ui/whoami, signed), and keeps only {access key id, account, region, keys, expiry}
// in IndexedDB, which no other origin can read. The secret is never stored, logged or sent;
// the keys' bytes cannot be read back even by this page's own scripts. A session ends at
// logout, after SESSION_MS, or when the server refuses its signature.

import { amzDate, deriveSigningKey } from './sigv4.js';

export const SESSION_MS = 12 * 60 * 60 * 1000;
const SERVICE = 'sagemaker';
const DB = 'carve-dashboard';
const STORE = 'session';
const DAY_MS = 24 * 60 * 60 * 1000;

function openDb() {
  return new Promise((resolve, reject) => {
    const req = indexedDB.open(DB, 1);
    req.onupgradeneeded = () => req.result.createObjectStore(STORE);
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error);
  });
}

async function withStore(mode, fn) {
  const db = await openDb();
  try {
    return await new Promise((resolve, reject) => {
      const tx = db.transaction(STORE, mode);
      const req = fn(tx.objectStore(STORE));
      tx.oncomplete = () => resolve(req?.result);
      tx.onerror = () => reject(tx.error);
    });
  } finally {
    db.close();
  }
}

export function utcDay(tMs) {
  return amzDate(new Date(tMs)).slice(0, 8);
}

// The signing credential for time `tMs`, or null when the session holds no key for that day.
export function credentialAt(session, tMs) {
  if (!session || tMs >= session.expiresMs) return null;
  const key = session.keys[utcDay(tMs)];
  if (!key) return null;
  return { accessKeyId: session.accessKeyId, key, region: session.region, service: SERVICE };
}

export async function loadSession() {
  try {
    const s = await withStore('readonly', (st) => st.get('current'));
    if (!s || Date.now() + (s.clockOffsetMs ?? 0) >= s.expiresMs) return null;
    return s;
  } catch {
    return null; // IndexedDB unavailable (private mode): log in again.
  }
}

export async function saveSession(session) {
  await withStore('readwrite', (st) => st.put(session, 'current'));
}

export async function clearSession() {
  try {
    await withStore('readwrite', (st) => st.delete('current'));
  } catch {
    // Nothing stored.
  }
}

// How far the server's clock is from this one, in ms, from the Date header of a public,
// data-free response (the dashboard's own page). Signatures carry the server's time: it refuses
// an X-Amz-Date more than 15 minutes away from its own clock.
export async function serverClockOffset(fetchImpl = fetch) {
  try {
    const sent = Date.now();
    const res = await fetchImpl('/ui/', { method: 'GET', cache: 'no-store', credentials: 'omit' });
    const received = Date.now();
    const server = Date.parse(res.headers.get('Date') ?? '');
    if (!Number.isFinite(server)) return 0;
    const offset = server + 500 - (sent + received) / 2; // Date has 1 s resolution.
    return Math.abs(offset) < 2000 ? 0 : offset;
  } catch {
    return 0;
  }
}

// Derives the keys and checks them with the server. `whoami(draft)` performs the signed call
// with the draft session. Throws the server's ApiError when it refuses the key.
export async function login({ accessKeyId, secret, region, clockOffsetMs = 0 }, whoami,
  subtle = crypto.subtle) {
  const now = Date.now() + clockOffsetMs;
  const keys = {};
  for (const t of [now, now + DAY_MS]) {
    keys[utcDay(t)] = await deriveSigningKey(subtle, secret, utcDay(t), region, SERVICE);
  }
  const draft = { accessKeyId, region, keys, expiresMs: now + SESSION_MS, clockOffsetMs };
  const me = await whoami(draft);
  const session = { ...draft, accountId: me.account_id, profile: me.profile ?? '' };
  await saveSession(session);
  return session;
}
