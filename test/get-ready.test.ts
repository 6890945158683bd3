// A server that begins serving a miles run gets its first step read ready before anything is asked: the decode
// worker starts, and while it waits it reads the newest step's rank file catalog (its own process: one such
// worker per process).
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { openMilesRun } from '../src/run/miles/index.ts';
import { copyFixtureRun } from './support/fixtures.ts';

test('a server that begins serving a run readies its decode worker, which reads the newest step\'s rank file catalog before anything is asked', async () => {
  const copy = copyFixtureRun();
  const cacheDir = mkdtempSync(join(tmpdir(), 'rlsight-get-ready-'));
  try {
    const run = await openMilesRun(copy.dir, { cacheDir, reader: { decodeOffThreadAbove: 0 } });
    const steps = readdirSync(join(copy.dir, 'rollout_data')).map((n) => Number.parseInt(n, 10)).filter((n) => Number.isInteger(n));
    const newest = Math.max(...steps);
    const kept = join(cacheDir, `train_${newest}.catalog.json`);
    assert.equal(existsSync(kept), false);
    assert.equal(run.getReady!(), true);
    assert.equal(run.decodeWorkerWaiting, true, 'started at once');
    assert.equal(run.getReady!(), false, 'once per process');
    // no request was made: the catalog was read (on the worker) and kept
    for (let i = 0; i < 200 && !existsSync(kept); i++) await new Promise((r) => setTimeout(r, 25));
    const catalog = JSON.parse(readFileSync(kept, 'utf8')) as { twinOf: number[] };
    const rankFiles = readdirSync(join(copy.dir, 'train_data')).filter((n) => n.startsWith(`${newest}_`));
    assert.equal(catalog.twinOf.length, rankFiles.length);
    await run.close();
  } finally {
    copy.dispose();
    rmSync(cacheDir, { recursive: true, force: true });
  }
});
