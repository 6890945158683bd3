// The runs the server answers about (`/api/runs`), each with its colour; the chosen ones live in the URL (`runs=`).
import { getJson } from './api.ts';
import { store } from './store.ts';
import { SERIES_COLORS } from './theme.ts';
import type { RunListing, RunsAnswer } from '../src/wire/index.ts';

export const runList = store<RunListing[] | null>(null);

let inflight: Promise<void> | null = null;

/** Loads the run list once (a server without `/api/runs` counts as one run). */
export function loadRuns(): Promise<void> {
  inflight ??= getJson<RunsAnswer>('runs')
    .then((r) => runList.set(r.runs))
    .catch(() => runList.set([]));
  return inflight;
}

/** A run's colour: by its place in the server's list, so it keeps it whichever runs are chosen. */
export function runColor(runs: readonly RunListing[], id: string): string {
  const i = Math.max(0, runs.findIndex((r) => r.id === id));
  return SERIES_COLORS[i % SERIES_COLORS.length]!;
}

/** The chosen runs from the `runs` parameter (known ids, in list order); the primary run when none is chosen. */
export function chosenRuns(runs: readonly RunListing[], param: string | null): RunListing[] {
  const wanted = new Set((param ?? '').split(',').filter(Boolean));
  const picked = runs.filter((r) => wanted.has(r.id));
  if (picked.length) return picked;
  const primary = runs.find((r) => r.primary) ?? runs[0];
  return primary ? [primary] : [];
}

/** The API path of `path` for one run. */
export function runPath(run: RunListing, path: string): string {
  return `runs/${encodeURIComponent(run.id)}/${path}`;
}
