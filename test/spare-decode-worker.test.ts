// A server's first request readies one decode worker for the first step read: one per process, for the first
// run opened, however many runs it serves (each run its own would be a thread and its heap per run).
import assert from 'node:assert/strict';
import { readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { foreground } from '../src/run/foreground.ts';
import { openMilesRun } from '../src/run/miles/index.ts';
import { copyFixtureRun } from './support/fixtures.ts';

test('the first request readies one decode worker at once, for the first run opened that has a step to read', async () => {
  const copies = [copyFixtureRun(), copyFixtureRun(), copyFixtureRun(), copyFixtureRun()];
  try {
    // the first run opened has no rollout dump yet: the thread goes to the next one
    for (const name of readdirSync(join(copies[0].dir, 'rollout_data'))) rmSync(join(copies[0].dir, 'rollout_data', name), { recursive: true });
    const runs = [];
    for (const c of copies) runs.push(await openMilesRun(c.dir, { reader: { decodeOffThreadAbove: 0 } }));
    assert.deepEqual(runs.map((r) => r.decodeWorkerWaiting), [false, false, false, false], 'none before a request');
    foreground.noteRequest();
    // at once, not after a listing of the run's steps on the thread pool: a first request's answer holds this
    // thread, and the worker's start would wait behind it
    for (let i = 0; i < 3; i++) await Promise.resolve();
    assert.equal(runs[1].decodeWorkerWaiting, true, 'started at the first request');
    await new Promise((r) => setTimeout(r, 200));
    assert.deepEqual(runs.map((r) => r.decodeWorkerWaiting), [false, true, false, false]);
    for (const r of runs) await r.close();
  } finally {
    for (const c of copies) c.dispose();
  }
});
