// A server that begins serving a miles run gets its first step read ready before anything is asked: the decode
// worker starts, and while it waits it reads the rank file catalog of the newest step the run shows (a file of
// its own: one such worker per process).
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, utimesSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { openMilesRun } from '../src/run/miles/index.ts';
import { copyFixtureRun } from './support/fixtures.ts';

test('a server that begins serving a run readies its decode worker, which reads the rank file catalog of the newest step the run shows before anything is asked', async () => {
  const copy = copyFixtureRun();
  const cacheDir = mkdtempSync(join(tmpdir(), 'rlsight-get-ready-'));
  try {
    const steps = readdirSync(join(copy.dir, 'rollout_data'))
      .map((n) => Number.parseInt(n, 10))
      .filter((n) => Number.isInteger(n))
      .sort((a, b) => a - b);
    // the newest step is still being written (a fresh rollout dump, no rank file yet): the run does not show it
    const writing = steps.at(-1)!;
    const shown = steps.at(-2)!;
    const now = new Date();
    utimesSync(join(copy.dir, 'rollout_data', `${writing}.pt`), now, now);
    for (const n of readdirSync(join(copy.dir, 'train_data'))) if (n.startsWith(`${writing}_`)) rmSync(join(copy.dir, 'train_data', n));
    const run = await openMilesRun(copy.dir, { cacheDir, reader: { decodeOffThreadAbove: 0 } });
    assert.deepEqual((await run.rolloutIds()).train.at(-1), shown);
    const kept = join(cacheDir, `train_${shown}.catalog.json`);
    assert.equal(existsSync(kept), false);
    assert.equal(run.getReady!(), true);
    assert.equal(run.decodeWorkerWaiting, true, 'started at once');
    assert.equal(run.getReady!(), false, 'once per process');
    // no request was made: the catalog was read (on the worker) and kept
    for (let i = 0; i < 200 && !existsSync(kept); i++) await new Promise((r) => setTimeout(r, 25));
    const catalog = JSON.parse(readFileSync(kept, 'utf8')) as { twinOf: number[] };
    const rankFiles = readdirSync(join(copy.dir, 'train_data')).filter((n) => n.startsWith(`${shown}_`));
    assert.equal(catalog.twinOf.length, rankFiles.length);
    assert.deepEqual(
      readdirSync(cacheDir).filter((n) => n.endsWith('.catalog.json')),
      [`train_${shown}.catalog.json`],
    );
    await run.close();
  } finally {
    copy.dispose();
    rmSync(cacheDir, { recursive: true, force: true });
  }
});
