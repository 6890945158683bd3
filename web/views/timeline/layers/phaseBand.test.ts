import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Phase } from '../../../../src/wire/index.ts';
import { hasOverlap } from './phaseBand.ts';

const ph = (t0: number, t1: number, role = 'train'): Phase => ({ name: 'x', t0, t1, node: 'n', gpu: 0, rank: 0, role });

test('back-to-back phases do not overlap; a phase inside another does', () => {
  assert.equal(hasOverlap([ph(0, 10), ph(10, 20), ph(20, 30)]), false);
  assert.equal(hasOverlap([ph(0, 30, 'rollout_manager'), ph(5, 10)]), true);
  assert.equal(hasOverlap([ph(0, 10), ph(2, 4), ph(12, 20)]), true);
  assert.equal(hasOverlap([]), false);
});
