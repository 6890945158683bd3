// The run the app shows (`?run=ID` after the hash path; none = the server's first run at the reference paths).
import { store } from './store.ts';

export const chosenRun = store<string | null>(null);

/** A path that names no run (`/api/runs…`) is asked as it is. */
const APP_WIDE = /^runs(\/|$)/;

/** The API path of a request: under `runs/{id}/` when a run is chosen, so no view can ask another run by mistake. */
export function scopedPath(path: string, run: string | null = chosenRun.get()): string {
  const p = path.replace(/^\/?(api\/)?/, '');
  return run === null || APP_WIDE.test(p) ? p : `runs/${encodeURIComponent(run)}/${p}`;
}
