// AWS Signature Version 4 (AWS4-HMAC-SHA256, header form) in the browser, with WebCrypto.
//
// carve's server verifies requests exactly as botocore signs them (src/server/sigv4.h): the
// non-S3 canonical URI (dot and empty segments removed, then encoded once more on top of the
// wire encoding), the sorted query, the signed headers with trimmed values, and the SHA-256 of
// the body. This module produces the same signature, so the dashboard needs no server-side
// session: every request carries its own signature, as the AWS console's SDK does.
//
// The secret is used once, at login, to derive the day's signing key
// (HMAC chain "AWS4"+secret -> date -> region -> service -> "aws4_request"); that key is
// imported as a non-extractable CryptoKey, so neither the secret nor the key's bytes are kept.
// A derived key signs only requests dated that UTC day, for one region and one service.
//
// `subtle` is passed in (window.crypto.subtle in the page, node:crypto's webcrypto in tests).

const encoder = new TextEncoder();

export const ALGORITHM = 'AWS4-HMAC-SHA256';

function hex(buffer) {
  return Array.from(new Uint8Array(buffer), (b) => b.toString(16).padStart(2, '0')).join('');
}

// RFC 3986 percent-encoding of every byte outside the unreserved set (A-Z a-z 0-9 - . _ ~),
// and '/' too unless keepSlash.
export function uriEncode(text, keepSlash = false) {
  let out = '';
  for (const byte of encoder.encode(text)) {
    const c = String.fromCharCode(byte);
    if (/[A-Za-z0-9\-._~]/.test(c) || (keepSlash && c === '/')) {
      out += c;
    } else {
      out += '%' + byte.toString(16).toUpperCase().padStart(2, '0');
    }
  }
  return out;
}

// A path built from raw segments, each encoded for the wire: ['v1', 'queues', 'a b'] ->
// '/v1/queues/a%20b'. The browser sends such a path unchanged.
export function encodePath(segments) {
  return '/' + segments.map((s) => uriEncode(String(s))).join('/');
}

function uriDecode(text, plusIsSpace) {
  const bytes = [];
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '%' && /^[0-9A-Fa-f]{2}$/.test(text.slice(i + 1, i + 3))) {
      bytes.push(parseInt(text.slice(i + 1, i + 3), 16));
      i += 2;
    } else if (plusIsSpace && c === '+') {
      bytes.push(0x20);
    } else {
      bytes.push(...encoder.encode(c));
    }
  }
  return new TextDecoder().decode(new Uint8Array(bytes));
}

// `path` as on the wire (already percent-encoded). Mirrors sigv4::CanonicalUri.
export function canonicalUri(path) {
  const segments = [];
  for (const seg of path.split('/')) {
    if (seg === '..') segments.pop();
    else if (seg !== '.' && seg !== '') segments.push(seg);
  }
  const trailingSlash = path.length > 1 && path.endsWith('/') && segments.length > 0;
  return '/' + segments.map((s) => uriEncode(s)).join('/') + (trailingSlash ? '/' : '');
}

// `query` as on the wire, without '?'. Mirrors sigv4::CanonicalQuery: decoded, re-encoded,
// sorted by name then value.
export function canonicalQuery(query) {
  const pairs = [];
  for (const item of query.split('&')) {
    if (item === '') continue;
    const eq = item.indexOf('=');
    const k = eq < 0 ? item : item.slice(0, eq);
    const v = eq < 0 ? '' : item.slice(eq + 1);
    pairs.push([uriEncode(uriDecode(k, true)), uriEncode(uriDecode(v, true))]);
  }
  pairs.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0));
  return pairs.map(([k, v]) => `${k}=${v}`).join('&');
}

// "20150830T123600Z" for a Date.
export function amzDate(date) {
  return date.toISOString().replace(/[-:]/g, '').replace(/\.\d{3}/, '');
}

async function hmac(subtle, keyBytes, data) {
  const key = await subtle.importKey('raw', keyBytes, { name: 'HMAC', hash: 'SHA-256' }, false, [
    'sign',
  ]);
  return subtle.sign('HMAC', key, encoder.encode(data));
}

// The signing key for one UTC day ("20150830"), region and service, as raw bytes. Only tests
// need the bytes; the dashboard calls deriveSigningKey.
export async function signingKeyBytes(subtle, secret, day, region, service) {
  if (!/^\d{8}$/.test(day)) throw new Error(`day=${day}: must be YYYYMMDD`);
  let k = await hmac(subtle, encoder.encode('AWS4' + secret), day);
  k = await hmac(subtle, k, region);
  k = await hmac(subtle, k, service);
  return hmac(subtle, k, 'aws4_request');
}

// The signing key as a non-extractable CryptoKey that can only sign.
export async function deriveSigningKey(subtle, secret, day, region, service) {
  const bytes = await signingKeyBytes(subtle, secret, day, region, service);
  return subtle.importKey('raw', bytes, { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
}

export async function sha256Hex(subtle, data) {
  return hex(await subtle.digest('SHA-256', typeof data === 'string' ? encoder.encode(data) : data));
}

// Signs one request. `headers` holds every header to sign (Host included: the browser sends
// location.host); the result adds X-Amz-Date and Authorization. `key` is the CryptoKey for the
// UTC day of `now`. Returns {headers, canonicalRequest, stringToSign} (the last two for tests).
export async function signRequest(subtle, request, credential, now) {
  const { method, path, query = '', body = '' } = request;
  const { accessKeyId, key, region, service } = credential;
  const date = amzDate(now);
  const day = date.slice(0, 8);
  const headers = { ...request.headers, 'X-Amz-Date': date };
  const names = Object.keys(headers)
    .map((n) => n.toLowerCase())
    .sort();
  const lower = Object.fromEntries(Object.entries(headers).map(([n, v]) => [n.toLowerCase(), v]));
  const canonicalHeaders = names
    .map((n) => `${n}:${String(lower[n]).trim().replace(/\s+/g, ' ')}\n`)
    .join('');
  const signedHeaders = names.join(';');
  const canonicalRequest = [
    method,
    canonicalUri(path),
    canonicalQuery(query),
    canonicalHeaders,
    signedHeaders,
    await sha256Hex(subtle, body),
  ].join('\n');
  const scope = `${day}/${region}/${service}/aws4_request`;
  const stringToSign = [ALGORITHM, date, scope, await sha256Hex(subtle, canonicalRequest)].join(
    '\n',
  );
  const signature = hex(await subtle.sign('HMAC', key, encoder.encode(stringToSign)));
  headers.Authorization =
    `${ALGORITHM} Credential=${accessKeyId}/${scope}, ` +
    `SignedHeaders=${signedHeaders}, Signature=${signature}`;
  return { headers, canonicalRequest, stringToSign };
}
