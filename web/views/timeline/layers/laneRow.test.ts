import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { LanePhases } from '../../../columns.ts';
import { laneTip, type LaneData, type LaneInfo } from './laneRow.ts';

const lane: LaneInfo = { key: '10.0.0.1:0', node: '10.0.0.1', gpu: 0, index: 0, ranks: [0], roles: ['train'] };

function data(unfinished: ReadonlySet<number> | null, open: ReadonlySet<number> | null = null): LaneData {
  const phases: LanePhases = {
    length: 2,
    t0: Float64Array.of(100, 128),
    t1: Float64Array.of(120, 140),
    name: Uint32Array.of(0, 1),
    role: Uint32Array.of(2, 2),
    rank: Int32Array.of(0, 0),
    strings: ['actor_train', 'update_weights', 'train'],
    unfinished,
    open,
  };
  return { phasesByLane: new Map([[lane.key, phases]]), gpu: {}, overlay: null, topology: null, showMem: false, memMax: 0, multiNode: false };
}

test('a phase never closed says so in the tooltip; a closed one does not', () => {
  const tip = (d: LaneData, t: number) => laneTip(d, lane, t, 'now', 100, null).find((l) => l.startsWith('phase:'))!;
  assert.match(tip(data(new Set([1])), 130), /^phase: update_weights \(rank 0\) .* \(never closed: ended where its rank next began a phase\)$/);
  assert.doesNotMatch(tip(data(new Set([1])), 110), /never closed/);
  assert.doesNotMatch(tip(data(null), 130), /never closed/);
});

test('a phase still open at the data edge says so, from its start on', () => {
  const tip = (d: LaneData, t: number) => laneTip(d, lane, t, 'now', 100, null).find((l) => l.startsWith('phase:'))!;
  // update_weights [128, 140] has no end yet: the newest data is its own last stamp
  assert.match(tip(data(null, new Set([1])), 150), /^phase: update_weights \(rank 0\) .* \(still open: no end written yet; running, or its trainer stopped with nothing written after it\)$/);
  assert.equal(tip(data(null), 150), 'phase: —');
});
