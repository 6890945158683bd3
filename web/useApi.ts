// Fetch-in-a-hook: aborts superseded requests, keeps showing the last answer while a refresh loads.
import { useLayoutEffect, useRef, useState } from 'preact/hooks';
import { isAbort } from './api.ts';

export interface Loaded<T> {
  data: T | null;
  error: unknown;
  loading: boolean;
}

/** Runs `load` whenever `key` changes; `refresh` changes (e.g. the live tick) reload without clearing. */
export function useApi<T>(
  key: string | null,
  load: (signal: AbortSignal) => Promise<T>,
  refresh: unknown = 0,
  /** Keep showing the previous key's answer until the new one lands (zoom and pan). */
  keep = false,
): Loaded<T> {
  const [state, setState] = useState<Loaded<T>>({ data: null, error: null, loading: key !== null });
  const lastKey = useRef<string | null>(null);
  // asked as soon as the view is rendered, not after the browser's next paint: a first screen's answers start sooner
  useLayoutEffect(() => {
    if (key === null) {
      setState({ data: null, error: null, loading: false });
      lastKey.current = null;
      return;
    }
    const ctrl = new AbortController();
    const sameKey = lastKey.current === key || (keep && lastKey.current !== null);
    lastKey.current = key;
    setState((s) => (sameKey ? { ...s, loading: true } : { data: null, error: null, loading: true }));
    load(ctrl.signal).then(
      (data) => !ctrl.signal.aborted && setState({ data, error: null, loading: false }),
      (error) => {
        if (ctrl.signal.aborted || isAbort(error)) return;
        // A failed background refresh keeps the last good answer on screen.
        setState((s) => (sameKey && s.data !== null ? { ...s, loading: false } : { data: null, error, loading: false }));
      },
    );
    return () => ctrl.abort();
  }, [key, refresh]);
  return state;
}
