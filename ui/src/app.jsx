// The dashboard shell: the session (login gate), navigation between the four pages (hash
// routes, so one server route serves them all), the account, and logout.

import { useEffect, useMemo, useState } from 'preact/hooks';

import { makeClient } from './lib/api.js';
import { clearSession, credentialAt, loadSession, login, serverClockOffset } from './lib/session.js';
import { ApiError } from './lib/api.js';
import { Api } from './hooks.js';
import { EndpointsPage } from './pages/Endpoints.jsx';
import { FleetPage } from './pages/Fleet.jsx';
import { FragmentationPage } from './pages/Fragmentation.jsx';
import { LoginPage } from './pages/Login.jsx';
import { QueuesPage } from './pages/Queues.jsx';

const PAGES = [
  { id: 'fleet', title: 'Fleet', component: FleetPage },
  { id: 'endpoints', title: 'Endpoints', component: EndpointsPage },
  { id: 'queues', title: 'Queues', component: QueuesPage },
  { id: 'fragmentation', title: 'Fragmentation', component: FragmentationPage },
];

function currentPage() {
  const id = location.hash.replace(/^#\/?/, '');
  return PAGES.find((p) => p.id === id) ?? PAGES[0];
}

function clientFor(session) {
  return makeClient({
    subtle: crypto.subtle,
    now: () => Date.now() + (session.clockOffsetMs ?? 0),
    credential: () => {
      const c = credentialAt(session, Date.now() + (session.clockOffsetMs ?? 0));
      if (!c) throw new ApiError(403, 'MissingAuthenticationToken', 'the session has ended; sign in again');
      return c;
    },
  });
}

function Shell({ session, onLogout, authError }) {
  const [page, setPage] = useState(currentPage());
  const [catalog, setCatalog] = useState(null);
  const client = useMemo(() => clientFor(session), [session]);
  useEffect(() => {
    const onHash = () => setPage(currentPage());
    window.addEventListener('hashchange', onHash);
    return () => window.removeEventListener('hashchange', onHash);
  }, []);
  useEffect(() => {
    client.get(['v1', 'catalog']).then(setCatalog, (e) => (e.isAuth ? authError(e) : setCatalog(null)));
  }, [client]);
  const api = useMemo(() => ({ client, session, catalog, reportAuthError: authError }), [client, session, catalog]);
  const Page = page.component;
  return (
    <Api.Provider value={api}>
      <header class="top">
        <span class="brand">carve</span>
        <nav>
          {PAGES.map((p) => (
            <a key={p.id} href={`#/${p.id}`} class={p.id === page.id ? 'active' : ''} data-testid={`nav-${p.id}`}>
              {p.title}
            </a>
          ))}
        </nav>
        <span class="spacer" />
        <span class="account" data-testid="account">
          account {session.accountId}
          {session.profile && <span class="muted"> [{session.profile}]</span>}
        </span>
        <span class="live" title="pages refresh on their own">● live</span>
        <button class="link" onClick={onLogout} data-testid="logout">
          Sign out
        </button>
      </header>
      <main class="content" data-testid={`page-${page.id}`}>
        <h2>{page.title}</h2>
        <Page key={page.id} />
      </main>
    </Api.Provider>
  );
}

export function App() {
  const [session, setSession] = useState(undefined);
  const [notice, setNotice] = useState('');
  useEffect(() => {
    loadSession().then((s) => setSession(s ?? null));
  }, []);
  const doLogin = async (input) => {
    const clockOffsetMs = await serverClockOffset();
    const s = await login({ ...input, clockOffsetMs }, (draft) => clientFor(draft).get(['v1', 'ui', 'whoami']));
    setNotice('');
    setSession(s);
  };
  const logout = async (message = '') => {
    await clearSession();
    setNotice(typeof message === 'string' ? message : '');
    setSession(null);
  };
  if (session === undefined) return null;
  if (!session) return <LoginPage onLogin={doLogin} notice={notice} />;
  return (
    <Shell
      session={session}
      onLogout={() => logout()}
      authError={(e) => logout(`Signed out: the server refused the signature (${e.type}: ${e.message}).`)}
    />
  );
}
