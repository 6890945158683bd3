// What each served run holds (its `/api/runs/{id}/meta`), and from it which runs a comparison can show: Rollouts
// needs rollout dumps on both sides, Compute a timeline on the shown run and step times on the other.
import { getJson, isAbort } from './api.ts';
import type { Meta } from '../src/wire/index.ts';
import { leastStepCoverage, useStepwiseApi } from './components/coverage.tsx';

/** Each run's meta by id; null when it could not be read. */
export type RunMetas = ReadonlyMap<string, Meta | null>;

/**
 * The metas of the runs `ids` (one request each, asked again when `refresh` changes, and while one is partial: a
 * slime or collected run's keys grow as its steps are read); null until all have answered.
 */
export function useRunMetas(ids: readonly string[], refresh: unknown = 0): RunMetas | null {
  const res = useStepwiseApi(
    ids.length ? `metas|${ids.join(',')}` : null,
    (signal) =>
      Promise.all(
        ids.map((id) =>
          getJson<Meta>(`runs/${encodeURIComponent(id)}/meta`, {}, signal).catch((e: unknown) => {
            if (isAbort(e)) throw e;
            return null;
          }),
        ),
      ).then((metas) => new Map(ids.map((id, i) => [id, metas[i]!] as const))),
    refresh,
    (metas) => leastStepCoverage([...metas.values()].map((m) => m?.coverage)),
  );
  return ids.length ? res.data : new Map();
}

/** The metric a step anatomy is scaled by: a run that logs it can be set beside another on Compute. */
export const STEP_TIME_KEY = 'perf/step_time';

/** What a compared run must hold. */
export type Need = 'dumps' | 'timeline' | 'step times';

/** Why a run's meta does not give what `need` asks (in words), or null when it does. */
export function lacking(need: Need, meta: Meta | null | undefined): string | null {
  if (!meta) return 'what it holds could not be read';
  if (need === 'dumps') return meta.rollout_ids.train.length ? null : 'no rollout dumps';
  if (need === 'timeline') return meta.capabilities.has_timeline && meta.time_range ? null : 'no compute timeline';
  return meta.metric_keys.includes(STEP_TIME_KEY) ? null : `no ${STEP_TIME_KEY}`;
}

/** Two views that set two runs side by side, and what each side must hold. */
export const PAIR_NEEDS = {
  rollout: { label: 'Rollouts', first: 'dumps', second: 'dumps' },
  diff: { label: 'Diff', first: 'dumps', second: 'dumps' },
  timeline: { label: 'Compute', first: 'timeline', second: 'step times' },
} as const satisfies Record<string, { label: string; first: Need; second: Need }>;

export type PairView = keyof typeof PAIR_NEEDS;

export interface Pair {
  /** The runs compared, in the order chosen: two, or fewer when fewer can show the view. */
  ids: string[];
  /** The chosen runs left out, each with why. */
  left: { id: string; why: string }[];
}

/** The first two of `chosen` (in order) that can show `view`: the first holding what the shown side needs, then the next holding what the other needs. */
export function comparedPair(view: PairView, chosen: readonly string[], metas: RunMetas): Pair {
  const need = PAIR_NEEDS[view];
  const first = chosen.find((id) => lacking(need.first, metas.get(id)) === null);
  const second = first === undefined ? undefined : chosen.find((id) => id !== first && lacking(need.second, metas.get(id)) === null);
  const ids = [first, second].filter((id): id is string => id !== undefined);
  const left = chosen
    .filter((id) => !ids.includes(id))
    .map((id) => ({ id, why: (first === undefined ? lacking(need.first, metas.get(id)) : lacking(need.second, metas.get(id))) ?? 'two runs at most are compared' }));
  return { ids, left };
}

/** What a pair compares and leaves out, in one sentence; null when it is two runs and nothing is left out. */
export function pairNote(view: PairView, pair: Pair): string | null {
  const { label } = PAIR_NEEDS[view];
  const { ids, left } = pair;
  if (ids.length === 2 && left.length === 0) return null;
  const what =
    ids.length === 2
      ? `${label} compares ${ids[0]} with ${ids[1]}`
      : view === 'timeline'
        ? ids.length === 0
          ? `${label} needs a run with a compute timeline`
          : `${label} needs a second run with ${STEP_TIME_KEY} to set beside ${ids[0]}`
        : `${label} needs two runs with rollout dumps${ids.length ? ` (only ${ids[0]} has them)` : ''}`;
  return `${what}${left.length ? `; left out: ${left.map((l) => `${l.id} (${l.why})`).join(', ')}` : ''}.`;
}

/** The step of another run set beside step `step`: that step when the run has it, else its nearest (the later one of two as near). */
export function nearestStep(steps: readonly number[], step: number): number | undefined {
  let best: number | undefined;
  for (const s of steps) if (best === undefined || Math.abs(s - step) < Math.abs(best - step) || (Math.abs(s - step) === Math.abs(best - step) && s > best)) best = s;
  return best;
}
