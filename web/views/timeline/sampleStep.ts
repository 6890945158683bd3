// Which training step a lifecycle row's sample belongs to: one question to the server, which knows each step's samples.
import { ApiError, getJson } from '../../api.ts';
import type { Bubble, SampleStep as SampleStepAnswer, Trajectory } from '../../../src/wire/index.ts';

export interface SampleStep {
  rolloutId: number;
  lane: Trajectory;
}

const found = new Map<number, SampleStep>();
// Samples no step holds, with the number of steps there were (a new step in a live run is asked again).
const missed = new Map<number, number>();

/**
 * The step that holds `sampleIndex` and the sample's lifecycle (status, attempts), or null when no step holds
 * it. `t` (a time the sample was seen) lets the server look in the likeliest steps first.
 */
export async function findSampleStep(sampleIndex: number, stepIds: readonly number[], _bubbles: readonly Bubble[], t: number): Promise<SampleStep | null> {
  const known = found.get(sampleIndex);
  if (known) return known;
  if (missed.get(sampleIndex) === stepIds.length) return null;
  let answer: SampleStepAnswer;
  try {
    answer = await getJson<SampleStepAnswer>(`rlsight/samples/${sampleIndex}/step`, { near: t });
  } catch (e) {
    if (e instanceof ApiError && e.status === 404) missed.set(sampleIndex, stepIds.length);
    return null;
  }
  if (!answer.lane) return null;
  const hit = { rolloutId: answer.rollout_id, lane: answer.lane };
  found.set(sampleIndex, hit);
  return hit;
}

/** An already resolved sample for hover text without waiting: its step, `'none'` when no step holds it, null when not yet asked. */
export function knownSampleStep(sampleIndex: number, stepIds: readonly number[]): SampleStep | 'none' | null {
  return found.get(sampleIndex) ?? (missed.get(sampleIndex) === stepIds.length ? 'none' : null);
}
