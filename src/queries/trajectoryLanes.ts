// Trajectory lifecycle lanes: one lane per sample, its attempts and gen/tool segments (backend §7.10).
import type { MetricsRecord, TrajectoryEvent } from '../run/model.ts';
import { bubbles } from './bubbles.ts';
import type { Trajectories, Trajectory, TrajectoryAttempt, TrajectorySegment } from '../wire/rollout.ts';



/** One sample's lifecycle lane, as answered. */
export type TrajectoryLane = Trajectory;

const DIGITS = /^[0-9]+$/;

/** Kind of the span an event opens or closes, or null for attempt boundaries and unknown kinds. */
function spanKind(kind: string): 'gen' | 'tool' | null {
  if (kind === 'gen_start' || kind === 'gen_end') return 'gen';
  if (kind === 'tool_start' || kind === 'tool_end') return 'tool';
  return null;
}

/** One sample's lane from its events (any order; same-ts events keep their given order). */
export function assembleTrajectoryLane(sampleEvents: readonly TrajectoryEvent[]): TrajectoryLane {
  // Stable: same-ts gen_end/tool_start pairs must keep file order.
  const events = sampleEvents.slice().sort((a, b) => a.ts - b.ts);
  const versionSet = new Set<number>();
  const segments: TrajectorySegment[] = [];
  const attempts: TrajectoryAttempt[] = [];
  const open = new Map<string, TrajectorySegment>();
  let attemptT0: number | null = null;
  let status: string | null = null;
  for (const e of events) {
    if (DIGITS.test(e.weight_version)) versionSet.add(parseInt(e.weight_version, 10));
    if (e.kind === 'attempt_start') {
      attemptT0 = e.ts;
    } else if (e.kind === 'attempt_end') {
      attempts.push({ t0: attemptT0, t1: e.ts });
      attemptT0 = null;
      status = e.detail || status;
      for (const seg of open.values()) {
        seg.t1 = e.ts;
        if (!seg.weight_version) seg.weight_version = e.weight_version;
      }
      open.clear();
    } else {
      const kind = spanKind(e.kind);
      if (kind === null) continue;
      const key = `${kind}\u0000${e.turn}`;
      if (e.kind.endsWith('_start')) {
        const seg: TrajectorySegment = { kind, t0: e.ts, t1: null, turn: e.turn, weight_version: e.weight_version };
        segments.push(seg);
        open.set(key, seg); // a repeated start leaves the older segment open-ended
      } else {
        const seg = open.get(key);
        if (seg === undefined) {
          segments.push({ kind, t0: null, t1: e.ts, turn: e.turn, weight_version: e.weight_version });
        } else {
          open.delete(key);
          seg.t1 = e.ts;
          seg.weight_version = e.weight_version || seg.weight_version;
        }
      }
    }
  }
  if (attemptT0 !== null) attempts.push({ t0: attemptT0, t1: null });
  // Per-turn gen spans supersede the coarse attempt-level one (turn -1).
  const perTurn = segments.some((s) => s.kind === 'gen' && s.turn > 0);
  const kept = perTurn ? segments.filter((s) => !(s.kind === 'gen' && s.turn < 0)) : segments;
  return {
    sample_index: events[0].sample_index,
    group_index: events[0].group_index,
    first_ts: events[0].ts,
    last_ts: events[events.length - 1].ts,
    segments: kept,
    attempts,
    status,
    versions: [...versionSet].sort((a, b) => a - b),
  };
}

/**
 * `trajectory_lanes`: events grouped per sample (optionally only `sampleIndices`), one lane each,
 * sorted by first event time (ties keep first-appearance order).
 */
export function assembleTrajectoryLanes(
  events: Iterable<TrajectoryEvent>,
  sampleIndices?: ReadonlySet<number> | null,
): TrajectoryLane[] {
  const bySample = new Map<number, TrajectoryEvent[]>();
  for (const e of events) {
    if (sampleIndices && !sampleIndices.has(e.sample_index)) continue;
    let list = bySample.get(e.sample_index);
    if (list === undefined) bySample.set(e.sample_index, (list = []));
    list.push(e);
  }
  const lanes: TrajectoryLane[] = [];
  for (const list of bySample.values()) lanes.push(assembleTrajectoryLane(list));
  return lanes.sort((a, b) => a.first_ts - b.first_ts);
}

/** What trajectory queries read from the telemetry store. */
/** How far before a step's consume time its samples' events are looked for (4 h). */
export const TRAJECTORY_SCAN_S = 14400;

export interface TrajectorySource {
  trajectoryEvents(t0?: number | null, t1?: number | null): TrajectoryEvent[];
  metricsRecords(): readonly MetricsRecord[];
  timeRange(): [number, number] | null;
}

export interface TrajectoryLaneQuery {
  t0?: number | null;
  t1?: number | null;
  /** Only these samples; null/absent = every sample with events in the window. */
  sampleIndices?: ReadonlySet<number> | null;
}

/** `trajectory_lanes(t0, t1, sample_indices)`: lanes of the samples with events in `[t0, t1]`. */
export function trajectoryLanes(store: TrajectorySource, q: TrajectoryLaneQuery = {}): TrajectoryLane[] {
  return assembleTrajectoryLanes(store.trajectoryEvents(q.t0, q.t1), q.sampleIndices);
}


/**
 * `GET /api/rollout/{id}/trajectories`: the batch anatomy of one step. Events are scanned over the 4 h
 * before the step's consume time (its first bubble, else the end of the data). The caller passes the
 * step's sample indices (from the dump summary) or the one requested sample.
 */
export function rolloutTrajectories(store: TrajectorySource, rolloutId: number, sampleIndices: Iterable<number> | null): Trajectories {
  const bubble = bubbles(store).find((b) => b.step === rolloutId);
  const consume = bubble !== undefined ? bubble.ts : (store.timeRange()?.[1] ?? null);
  // The reference fails (500) without any data; an empty answer says the same thing plainly.
  if (consume === null) return { lanes: [], consume_ts: null, t0: null };
  const t0 = consume - TRAJECTORY_SCAN_S;
  const indices = sampleIndices === null ? null : new Set(sampleIndices);
  // A step no record says the trainer took (no perf/step_time on rollout/step) is scanned up to the data's edge,
  // but that edge is no moment of its own: its consume line is left out (the reference draws it at the edge,
  // which moves as a followed run writes).
  return { lanes: trajectoryLanes(store, { t0, t1: consume, sampleIndices: indices }), consume_ts: bubble !== undefined ? consume : null, t0 };
}
