// A server's first request readies one decode worker for the first step read: one per process, for the first
// run opened, however many runs it serves (each run its own would be a thread and its heap per run).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { foreground } from '../src/run/foreground.ts';
import { openMilesRun } from '../src/run/miles/index.ts';
import { copyFixtureRun } from './support/fixtures.ts';

test('the first request readies one decode worker at once, for the first run opened only', async () => {
  const copies = [copyFixtureRun(), copyFixtureRun(), copyFixtureRun()];
  try {
    const runs = [];
    for (const c of copies) runs.push(await openMilesRun(c.dir, { reader: { decodeOffThreadAbove: 0 } }));
    assert.deepEqual(runs.map((r) => r.decodeWorkerWaiting), [false, false, false], 'none before a request');
    foreground.noteRequest();
    // at once, not after a listing of the run's steps on the thread pool: a first request's answer holds this
    // thread, and the worker's start would wait behind it
    for (let i = 0; i < 3; i++) await Promise.resolve();
    assert.equal(runs[0].decodeWorkerWaiting, true, 'started at the first request');
    await new Promise((r) => setTimeout(r, 200));
    assert.deepEqual(runs.map((r) => r.decodeWorkerWaiting), [true, false, false]);
    for (const r of runs) await r.close();
  } finally {
    for (const c of copies) c.dispose();
  }
});
