// Live data without reloading: each page polls the read APIs it shows. A poll never overlaps
// itself, pauses while the tab is hidden and resumes at once when it is shown again.

import { createContext } from 'preact';
import { useContext, useEffect, useRef, useState } from 'preact/hooks';

// {client, session, catalog, logout, reportAuthError}
export const Api = createContext(null);

export function useApi() {
  return useContext(Api);
}

// Calls `fetcher()` now and then every `intervalMs`; returns {data, error, at} where `data` is
// the last good answer (kept while a later poll fails), `error` the last failure (cleared by
// the next success) and `at` the time of the last good answer. An authentication failure ends
// the session.
export function usePoll(fetcher, intervalMs, deps = []) {
  const api = useApi();
  const [state, setState] = useState({ data: undefined, error: null, at: 0 });
  const fetcherRef = useRef(fetcher);
  fetcherRef.current = fetcher;
  useEffect(() => {
    let stopped = false;
    let timer = null;
    let running = false;
    const tick = async () => {
      clearTimeout(timer);
      if (stopped || running) return;
      if (document.hidden) {
        timer = setTimeout(tick, intervalMs);
        return;
      }
      running = true;
      try {
        const data = await fetcherRef.current();
        if (!stopped) setState({ data, error: null, at: Date.now() });
      } catch (error) {
        if (!stopped) setState((s) => ({ ...s, error }));
        if (error?.isAuth) api?.reportAuthError(error);
      } finally {
        running = false;
      }
      if (!stopped) timer = setTimeout(tick, intervalMs);
    };
    const onVisible = () => {
      if (!document.hidden) tick();
    };
    document.addEventListener('visibilitychange', onVisible);
    tick();
    return () => {
      stopped = true;
      clearTimeout(timer);
      document.removeEventListener('visibilitychange', onVisible);
    };
  }, deps);
  return state;
}

// Re-renders every `ms` (for "updated 3 s ago").
export function useNow(ms = 1000) {
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    const t = setInterval(() => setNow(Date.now()), ms);
    return () => clearInterval(t);
  }, [ms]);
  return now;
}
