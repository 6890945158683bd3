// Which training step a lifecycle row's sample belongs to, asked of the steps' trajectory answers (the server knows, the strip does not).
import { getJson } from '../../api.ts';
import type { Bubble, Trajectories, Trajectory } from '../../../src/wire/index.ts';

export interface SampleStep {
  rolloutId: number;
  lane: Trajectory;
}

// A step's sample set is fixed once dumped; one answer per step for the page's life.
const lanesByStep = new Map<number, Promise<Map<number, Trajectory>>>();
const found = new Map<number, SampleStep>();
// Samples no step listed, with the number of steps asked (a new step in a live run is asked again).
const missed = new Map<number, number>();

function stepLanes(rolloutId: number): Promise<Map<number, Trajectory>> {
  let p = lanesByStep.get(rolloutId);
  if (!p) {
    p = getJson<Trajectories>(`rollout/${rolloutId}/trajectories`).then((t) => new Map(t.lanes.map((l) => [l.sample_index, l])));
    // A failed answer (a step still being written) is asked again next time.
    p.catch(() => lanesByStep.delete(rolloutId));
    lanesByStep.set(rolloutId, p);
  }
  return p;
}

/**
 * Steps to ask, likeliest first: a sample is consumed by the first step whose batch closes at or
 * after its last event, so those come in closing order, then earlier steps nearest first, then steps without a bubble.
 */
export function candidateSteps(stepIds: readonly number[], bubbles: readonly Bubble[], t: number): number[] {
  const closes = new Map(bubbles.map((b) => [b.step, b.ts]));
  const rank = (id: number) => {
    const ts = closes.get(id);
    if (ts === undefined) return Number.POSITIVE_INFINITY;
    return ts >= t ? ts - t : 1e12 + (t - ts);
  };
  return [...stepIds].sort((a, b) => rank(a) - rank(b) || a - b);
}

/** The step that holds `sampleIndex` and the sample's lifecycle (status, attempts), or null when no step lists it. */
export async function findSampleStep(sampleIndex: number, stepIds: readonly number[], bubbles: readonly Bubble[], t: number): Promise<SampleStep | null> {
  const known = found.get(sampleIndex);
  if (known) return known;
  if (missed.get(sampleIndex) === stepIds.length) return null;
  for (const rolloutId of candidateSteps(stepIds, bubbles, t)) {
    let lanes: Map<number, Trajectory>;
    try {
      lanes = await stepLanes(rolloutId);
    } catch {
      continue;
    }
    const lane = lanes.get(sampleIndex);
    if (lane) {
      const hit = { rolloutId, lane };
      found.set(sampleIndex, hit);
      return hit;
    }
  }
  missed.set(sampleIndex, stepIds.length);
  return null;
}

/** An already resolved sample for hover text without waiting: its step, `'none'` when no step lists it, null when not yet asked. */
export function knownSampleStep(sampleIndex: number, stepIds: readonly number[]): SampleStep | 'none' | null {
  return found.get(sampleIndex) ?? (missed.get(sampleIndex) === stepIds.length ? 'none' : null);
}
