// The runs the server answers about (`/api/runs`), each with its colour; the chosen ones live in the URL (`runs=`).
import { getJson } from './api.ts';
import { chosenRun } from './chosenRun.ts';
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

/**
 * A run's name as plain text: its id (the header, the runs table and every `run=` URL use it), then its
 * meta.json name in parentheses when that differs — so a legend or a picker names the same run the header does.
 */
export function runLabel(run: Pick<RunListing, 'id' | 'name'>): string {
  return run.name && run.name !== run.id ? `${run.id} (${run.name})` : run.id;
}

/** The id of the run the app shows: the `run=` choice, else the server's primary run (null without a listing). */
export function shownRunId(runs: readonly RunListing[] | null): string | null {
  return chosenRun.get() ?? runs?.find((r) => r.primary)?.id ?? runs?.[0]?.id ?? null;
}

/** The chosen runs from the `runs` parameter (known ids, the shown run first, then list order); the shown run when none is chosen. */
export function chosenRuns(runs: readonly RunListing[], param: string | null): RunListing[] {
  const wanted = new Set((param ?? '').split(',').filter(Boolean));
  const shown = shownRunId(runs);
  const picked = runs.filter((r) => wanted.has(r.id)).sort((a, b) => Number(b.id === shown) - Number(a.id === shown));
  if (picked.length) return picked;
  const first = runs.find((r) => r.id === shown) ?? runs[0];
  return first ? [first] : [];
}

/** The API path of `path` for one run. */
export function runPath(run: RunListing, path: string): string {
  return `runs/${encodeURIComponent(run.id)}/${path}`;
}
