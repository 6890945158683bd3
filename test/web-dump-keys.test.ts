// The app's list of dump/* aggregates agrees with what the server derives (the app may import types only).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { STEP_AGGREGATE_METRICS } from '../src/queries/rollouts.ts';
import { DUMP_KEYS } from '../web/views/metrics/catalog.ts';

test('the app lists the same dump/* aggregates the server derives', () => {
  assert.deepEqual([...DUMP_KEYS].sort(), STEP_AGGREGATE_METRICS.map((c) => `dump/${c}`).sort());
});
