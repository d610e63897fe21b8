// The dashboard's only way to the server: every request SigV4-signed in the page (sigv4.js)
// with the session's derived key, to the server's own read APIs on the same origin:
//   GET  /v1/...   carve's native routes (fleet, queues, catalog, the dashboard's history)
//   POST /         the SageMaker awsJson1_1 API (X-Amz-Target: SageMaker.<Op>)
// No request goes out unsigned, and none carries the secret: only signatures.

import { encodePath, signRequest, uriEncode } from './sigv4.js';

export class ApiError extends Error {
  constructor(status, type, message, path) {
    super(message);
    this.status = status;
    this.type = type;
    this.path = path;
  }

  // The server did not accept the credentials: the session is over.
  get isAuth() {
    return (
      this.status === 403 &&
      ['UnrecognizedClientException', 'InvalidSignatureException', 'IncompleteSignature',
        'MissingAuthenticationToken'].includes(this.type)
    );
  }
}

async function errorOf(res, path) {
  const text = await res.text();
  let type = `HTTP${res.status}`;
  let message = text.slice(0, 500) || res.statusText;
  try {
    const j = JSON.parse(text);
    type = j.__type ?? j.code ?? type;
    message = j.message ?? j.error ?? message;
  } catch {
    // Not JSON: keep the text.
  }
  return new ApiError(res.status, type, message, path);
}

function queryString(params) {
  return Object.entries(params ?? {})
    .filter(([, v]) => v !== undefined && v !== null)
    .map(([k, v]) => `${uriEncode(k)}=${uriEncode(String(v))}`)
    .join('&');
}

// `credential()` returns {accessKeyId, key, region, service} for the current time, or throws
// an ApiError 403 when the session has no key for it. `now()` is the server-corrected clock.
export function makeClient({ subtle, credential, now, fetchImpl = fetch, host = location.host }) {
  async function send(method, path, query, headers, body) {
    const signed = await signRequest(
      subtle,
      { method, path, query, body, headers: { Host: host, ...headers } },
      credential(),
      new Date(now()),
    );
    delete signed.headers.Host; // The browser sends Host itself (it may not be set by a page).
    const url = path + (query ? `?${query}` : '');
    const res = await fetchImpl(url, {
      method,
      headers: signed.headers,
      body: method === 'GET' ? undefined : body,
      credentials: 'omit',
      cache: 'no-store',
    });
    if (!res.ok) throw await errorOf(res, path);
    return res.json();
  }

  return {
    // segments: ['v1', 'queues', name, 'gpu'] (each one encoded here).
    get(segments, params) {
      return send('GET', encodePath(segments), queryString(params), {}, '');
    },
    sagemaker(operation, input = {}) {
      return send(
        'POST',
        '/',
        '',
        { 'Content-Type': 'application/x-amz-json-1.1', 'X-Amz-Target': `SageMaker.${operation}` },
        JSON.stringify(input),
      );
    },
  };
}
