// Sign in with an access key of the server's credentials file. The secret is typed (or read
// from the file, locally) and used once to derive the SigV4 signing keys; it is never stored,
// sent or put in a URL. The inputs carry no `name`, so even a form submitted without this
// script would send nothing.

import { useState } from 'preact/hooks';

import { parseCredentialsFile } from '../lib/credentials_file.js';
import { loginProblems } from './login_rules.js';

export function LoginPage({ onLogin, notice }) {
  const [accessKeyId, setAccessKeyId] = useState('');
  const [secret, setSecret] = useState('');
  const [region, setRegion] = useState('us-east-1');
  const [profiles, setProfiles] = useState([]);
  const [problems, setProblems] = useState([]);
  const [busy, setBusy] = useState(false);
  const secure = typeof window !== 'undefined' && window.isSecureContext && !!window.crypto?.subtle;

  const readFile = async (ev) => {
    const file = ev.currentTarget.files?.[0];
    if (!file) return;
    const parsed = parseCredentialsFile(await file.text());
    ev.currentTarget.value = '';
    setProfiles(parsed.profiles);
    setProblems(parsed.profiles.length ? parsed.problems : [...parsed.problems, `${file.name}: no profile with aws_access_key_id`]);
    if (parsed.profiles.length) pick(parsed.profiles[0]);
  };
  const pick = (p) => {
    setAccessKeyId(p.accessKeyId);
    setSecret(p.secretAccessKey);
  };
  const submit = async (ev) => {
    ev.preventDefault();
    const input = { accessKeyId: accessKeyId.trim(), secret, region: region.trim() };
    const found = loginProblems(input);
    setProblems(found);
    if (found.length) return;
    setBusy(true);
    try {
      await onLogin(input);
      setSecret('');
      setProfiles([]);
    } catch (e) {
      setProblems([e.type ? `${e.type}: ${e.message}` : String(e.message ?? e)]);
    } finally {
      setBusy(false);
    }
  };

  return (
    <main class="login">
      <h1>
        <span class="brand">carve</span> dashboard
      </h1>
      {!secure ? (
        <div class="notice notice-error" role="alert">
          <strong>This page is not a secure context.</strong>
          <p>
            The dashboard signs every request in the browser with WebCrypto, which browsers offer only over https or
            on http://localhost and http://127.0.0.1. Open it over https: <code>carve server --tls on</code> (the
            default off loopback) serves it with a certificate it generates, whose pin it prints. Or reach the server
            through a tunnel, e.g. <code>ssh -L 8080:127.0.0.1:8080 host</code>, then open http://127.0.0.1:8080/ui/.
          </p>
        </div>
      ) : (
        <form method="post" onSubmit={submit} autocomplete="off" data-testid="login">
          {notice && <p class="notice notice-info">{notice}</p>}
          <label>
            Access key id
            <input
              type="text"
              value={accessKeyId}
              onInput={(e) => setAccessKeyId(e.currentTarget.value)}
              autocomplete="username"
              spellcheck={false}
              data-testid="access-key"
            />
          </label>
          <label>
            Secret access key
            <input
              type="password"
              value={secret}
              onInput={(e) => setSecret(e.currentTarget.value)}
              autocomplete="current-password"
              data-testid="secret-key"
            />
          </label>
          <label>
            Region (signature scope)
            <input type="text" value={region} onInput={(e) => setRegion(e.currentTarget.value)} spellcheck={false} />
          </label>
          <label class="file">
            or read the server's credentials file (stays in this browser)
            <input type="file" onChange={readFile} />
          </label>
          {profiles.length > 1 && (
            <label>
              Profile
              <select onChange={(e) => pick(profiles[Number(e.currentTarget.value)])}>
                {profiles.map((p, i) => (
                  <option key={p.profile} value={i}>
                    [{p.profile}] {p.accountId && `account ${p.accountId}`}
                  </option>
                ))}
              </select>
            </label>
          )}
          {problems.length > 0 && (
            <ul class="notice notice-error" role="alert" data-testid="login-problems">
              {problems.map((p) => (
                <li key={p}>{p}</li>
              ))}
            </ul>
          )}
          <button type="submit" disabled={busy} data-testid="sign-in">
            {busy ? 'Signing in…' : 'Sign in'}
          </button>
          <p class="muted small">
            The secret derives today's and tomorrow's SigV4 signing keys in this browser (non-extractable WebCrypto
            keys, kept in this site's IndexedDB for 12 hours at most) and is then discarded. Requests carry
            signatures only.
          </p>
        </form>
      )}
    </main>
  );
}
