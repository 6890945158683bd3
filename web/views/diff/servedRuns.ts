// The runs a diff can pick from.
import { useEffect } from 'preact/hooks';
import { getJson } from '../../api.ts';
import type { Meta, RunListing } from '../../../src/wire/index.ts';
import { loadRuns, runList, runPath, shownRunId } from '../../runs.ts';
import { useStore } from '../../store.ts';
import { useApi } from '../../useApi.ts';

/** The served runs when there are several (a single-run server shows no run picker), else null. */
export function useServedRuns(): RunListing[] | null {
  const all = useStore(runList);
  useEffect(() => void loadRuns(), []);
  return all && all.length > 1 ? all : null;
}

/** A run's train (or eval) steps: the shown run's from the app's meta (kept fresh when following), another's fetched. */
export function useSteps(runs: RunListing[] | null, run: string | null, meta: Meta, evaluation: boolean): { steps: number[] | null; error: unknown } {
  const listing = runs?.find((r) => r.id === run);
  const other = listing && listing.id !== shownRunId(runs) ? listing : null;
  const m = useApi(other ? `meta|${other.id}` : null, (signal) => getJson<Meta>(runPath(other!, 'meta'), {}, signal));
  const pick = (x: Meta) => (evaluation ? x.rollout_ids.eval : x.rollout_ids.train);
  if (!other) return { steps: pick(meta), error: null };
  return { steps: m.data ? pick(m.data) : null, error: m.error };
}
