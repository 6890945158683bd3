// Kept answers against answers computed afresh: what is served from memory is what the run says now.
import assert from 'node:assert/strict';
import { lutimesSync, rmSync, truncateSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { openRun } from '../src/commands/openRun.ts';
import { startServer } from '../src/server/listen.ts';
import { copyFixtureRun } from './support/fixtures.ts';

const OLD = new Date('2024-01-01T00:00:00Z');

test('a kept fleet answer lists the damage found after it was computed, as the same answer computed afresh does', async () => {
  const run = copyFixtureRun();
  try {
    const dump = join(run.dir, 'rollout_data', '2.pt');
    truncateSync(dump, 100);
    lutimesSync(dump, OLD, OLD);
    rmSync(join(run.dir, 'dashboard_columns', 'rollout_2.parquet'), { force: true });
    const fleetPath = '/api/timeline/fleet?x_buckets=100';
    const server = await startServer(await openRun(run.dir), { port: 0 });
    let served: unknown;
    try {
      await (await fetch(new URL(fleetPath, server.url))).json();
      const step = await fetch(new URL('/api/rollout/2/summary', server.url));
      served = await (await fetch(new URL(fleetPath, server.url))).json();
    } finally {
      await server.close();
    }
    const fresh = await startServer(await openRun(run.dir), { port: 0 });
    try {
      await (await fetch(new URL('/api/rollout/2/summary', fresh.url))).arrayBuffer();
      const now = (await (await fetch(new URL(fleetPath, fresh.url))).json()) as { warnings?: string[] };
      assert.deepEqual(served, now);
    } finally {
      await fresh.close();
    }
  } finally {
    run.dispose();
  }
});
