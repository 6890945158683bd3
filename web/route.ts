// The whole screen state lives in the URL hash: `#/<view path>?<params>`, so every screen is a permalink.
import { chosenRun } from './chosenRun.ts';
import { store, useStore } from './store.ts';

export type View = 'metrics' | 'timeline' | 'rollout' | 'sample' | 'trace' | 'health' | 'diff' | 'sample-diff' | 'runs';

export interface Route {
  view: View;
  rolloutId: number | null;
  sampleIndex: number | null;
  params: URLSearchParams;
  /** Path segments that did not parse (shown as an error, never guessed). */
  invalid: string | null;
}

export function parseHash(hash: string): Route {
  const raw = hash.replace(/^#/, '');
  const qi = raw.indexOf('?');
  const path = (qi >= 0 ? raw.slice(0, qi) : raw).split('/').filter(Boolean);
  const params = new URLSearchParams(qi >= 0 ? raw.slice(qi + 1) : '');
  const base = { rolloutId: null, sampleIndex: null, params, invalid: null };
  const int = (s: string | undefined) => (s !== undefined && /^\d+$/.test(s) ? Number(s) : null);
  if (path[0] === 'timeline') return { ...base, view: 'timeline' };
  if (path[0] === 'trace') {
    const id = path[1] === undefined ? null : int(path[1]);
    if (path[1] !== undefined && id === null) return { ...base, view: 'trace', invalid: `“${path[1]}” is not a step number` };
    return { ...base, view: 'trace', rolloutId: id };
  }
  if (path[0] === 'health') return { ...base, view: 'health' };
  if (path[0] === 'runs') return { ...base, view: 'runs' };
  if (path[0] === 'diff') return { ...base, view: path[1] === 'sample' ? 'sample-diff' : 'diff' };
  if (path[0] === 'rollout') {
    const id = path[1] === undefined ? null : int(path[1]);
    if (path[1] !== undefined && id === null) return { ...base, view: 'rollout', invalid: `“${path[1]}” is not a step number` };
    if (path[2] === 'sample') {
      const idx = path[3] === undefined ? null : int(path[3]);
      if (path[3] !== undefined && idx === null)
        return { ...base, view: 'sample', rolloutId: id, invalid: `“${path[3]}” is not a sample index` };
      return { ...base, view: 'sample', rolloutId: id, sampleIndex: idx };
    }
    return { ...base, view: 'rollout', rolloutId: id };
  }
  // the Metrics view is the app's home (`#/`); any other path names no view, which the home says above itself
  if (path.length > 0 && path[0] !== 'metrics') return { ...base, view: 'metrics', invalid: `there is no view “${path.join('/')}”` };
  return { ...base, view: 'metrics' };
}

export const route = store<Route>(parseHash(location.hash));
chosenRun.set(route.get().params.get('run') || null);

function sync() {
  const r = parseHash(location.hash);
  chosenRun.set(r.params.get('run') || null);
  route.set(r);
}
window.addEventListener('hashchange', sync);
window.addEventListener('popstate', sync);

export function useRoute(): Route {
  return useStore(route);
}

type ParamValue = string | number | boolean | null | undefined;

/** Builds `#/path?params`, dropping empty values and `false`; the chosen run (`run=`) goes along unless `params` names one. */
export function href(path: string, params: Record<string, ParamValue> | URLSearchParams = {}): string {
  const q = new URLSearchParams();
  const entries = params instanceof URLSearchParams ? [...params.entries()] : Object.entries(params);
  const run = chosenRun.get();
  if (run !== null && !entries.some(([k]) => k === 'run')) entries.push(['run', run]);
  for (const [k, v] of entries) {
    if (v === undefined || v === null || v === '' || v === false) continue;
    q.set(k, v === true ? '1' : String(v));
  }
  const s = q.toString();
  return `#${path.startsWith('/') ? path : `/${path}`}${s ? `?${s}` : ''}`;
}

export function routePath(r: Route): string {
  if (r.view === 'timeline') return '/timeline';
  if (r.view === 'health') return '/health';
  if (r.view === 'runs') return '/runs';
  if (r.view === 'trace') return `/trace/${r.rolloutId ?? ''}`;
  if (r.view === 'diff') return '/diff';
  if (r.view === 'sample-diff') return '/diff/sample';
  if (r.view === 'rollout') return `/rollout/${r.rolloutId ?? ''}`;
  if (r.view === 'sample') return `/rollout/${r.rolloutId}/sample/${r.sampleIndex ?? ''}`;
  return '/';
}

/** Navigates; `replace` for continuous changes (zoom, typing) so Back steps over screens, not pixels. */
export function navigate(to: string, replace = false): void {
  if (to === location.hash) return;
  if (replace) {
    history.replaceState(history.state, '', to);
    sync();
  } else {
    location.hash = to.replace(/^#/, '');
  }
}

/** Changes some parameters of the current screen. */
export function setParams(patch: Record<string, ParamValue>, replace = true): void {
  const r = route.get();
  const p = new URLSearchParams(r.params);
  for (const [k, v] of Object.entries(patch)) {
    if (v === undefined || v === null || v === '' || v === false) p.delete(k);
    else p.set(k, v === true ? '1' : String(v));
  }
  navigate(href(routePath(r), p), replace);
}

export function numParam(p: URLSearchParams, k: string): number | null {
  const v = p.get(k);
  if (v === null || v === '') return null;
  const n = Number(v);
  return Number.isFinite(n) ? n : null;
}
